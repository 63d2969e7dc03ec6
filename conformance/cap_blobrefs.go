package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Cases of the blob-refs capability (docs/contract.md BLOB-1): Tx.SetBlobRefs
// replaces a row's set of referenced blob ids (empty clears; deleting the
// row clears), ListRowsReferencingBlob returns the existing rows with
// their current scopes, ListReferencedBlobIDs lists distinct ids, paged.
// ListRowsReferencingBlob promises no order, so cases compare its result
// sorted by (table, row id).

func init() {
	c := driver.CapBlobRefs
	register(
		// Catches: SetBlobRefs that adds to the set instead of replacing it.
		Case{Name: "BLOB-1/set-replaces-the-rows-set", Capability: c, Run: blobSetReplaces},
		// Catches: an empty set treated as "no change".
		Case{Name: "BLOB-1/empty-set-clears", Capability: c, Run: blobEmptyClears},
		// Catches: references that outlive their row (deleted in a later Tx or in the same one).
		Case{Name: "BLOB-1/deleting-the-row-clears", Capability: c, Run: blobDeleteClears},
		// Catches: stale scopes after a re-scope, or rows of another table mixed up.
		Case{Name: "BLOB-1/rows-carry-current-scopes", Capability: c, Run: blobRowsWithScopes},
		// Catches: duplicate ids, an inclusive cursor, unsorted pages, or a limit ignored.
		Case{Name: "BLOB-1/referenced-ids-distinct-and-paged", Capability: c, Run: blobIDsPaged},
		// Catches: references written outside the push transaction.
		Case{Name: "BLOB-1/rollback-discards-and-tx-sees-its-own", Capability: c, Run: blobRollback},
		// Catches: references shared between partitions.
		Case{Name: "BLOB-1/partitions-are-isolated", Capability: c, Run: blobPartitions},
		// Catches: SetBlobRefs on a table that is not in the schema accepted silently.
		Case{Name: "BLOB-1/unknown-table", Capability: c, Run: blobUnknownTable},
	)
}

// blobConn returns the blob-refs half of conn or fails the case.
func blobConn(t T, conn driver.Conn) driver.BlobRefsConn {
	t.Helper()
	b, ok := conn.(driver.BlobRefsConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.BlobRefsConn although the case runs for capability %s", driver.CapBlobRefs)
	}
	return b
}

// blobSet sets the refs of (table, id) inside tx, rolling back and failing
// the case on error.
func blobSet(t T, tx driver.Tx, table, id string, blobIDs ...string) {
	t.Helper()
	b, ok := tx.(driver.BlobRefsTx)
	if !ok {
		_ = tx.Rollback(context.Background())
		t.Fatalf("the Tx does not implement driver.BlobRefsTx: blob-refs is declared by halves (ERR-3)")
	}
	if err := b.SetBlobRefs(t.Context(), table, id, blobIDs); err != nil {
		_ = tx.Rollback(context.Background())
		t.Fatalf("SetBlobRefs(%s, %s, %v): %v", table, id, blobIDs, err)
	}
}

// blobPushSet upserts rows of table in one commit and sets refs[id] for
// each row id in refs.
func blobPushSet(t T, conn driver.Conn, p, table string, refs map[string][]string, rows ...driver.Row) {
	t.Helper()
	tx := begin(t, conn, p)
	stage(t, tx, table, rows...)
	keys := make([]string, 0, len(refs))
	for id := range refs {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	for _, id := range keys {
		blobSet(t, tx, table, id, refs[id]...)
	}
	commit(t, tx)
}

// blobSetOnly sets refs of existing rows in a Tx of their own (no commit record).
func blobSetOnly(t T, conn driver.Conn, p, table, id string, blobIDs ...string) {
	t.Helper()
	tx := begin(t, conn, p)
	blobSet(t, tx, table, id, blobIDs...)
	commit(t, tx)
}

// blobRows lists the rows referencing blobID in p, sorted by (table, id).
func blobRows(t T, conn driver.Conn, p, blobID string, limit int) []driver.BlobRowRef {
	t.Helper()
	got, err := blobConn(t, conn).ListRowsReferencingBlob(t.Context(), p, blobID, limit)
	if err != nil {
		t.Fatalf("ListRowsReferencingBlob(%s, %d): %v", blobID, limit, err)
	}
	slices.SortFunc(got, func(a, b driver.BlobRowRef) int {
		if c := strings.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		return strings.Compare(a.RowID, b.RowID)
	})
	return got
}

// blobIDs lists referenced blob ids in p after `after`, at most limit.
func blobIDs(t T, conn driver.Conn, p, after string, limit int) []string {
	t.Helper()
	got, err := blobConn(t, conn).ListReferencedBlobIDs(t.Context(), p, after, limit)
	if err != nil {
		t.Fatalf("ListReferencedBlobIDs(after %q, %d): %v", after, limit, err)
	}
	return got
}

// blobRef is the BlobRowRef of a todos row.
func blobRef(id, project, owner string) driver.BlobRowRef {
	return driver.BlobRowRef{Table: tTodos, RowID: id, Scopes: driver.Scopes{"project": project, "owner": owner}}
}

func blobSetReplaces(t T, h Harness) {
	conn := openStore(t, h)
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1", "b2"}}, todo("r1", "pa", "u1"))
	expectEqual(t, "BLOB-1: rows referencing b1", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1: ids", []string{"b1", "b2"}, blobIDs(t, conn, "p1", "", 10))

	blobSetOnly(t, conn, "p1", tTodos, "r1", "b3", "b2")
	expectEqual(t, "BLOB-1: b1 after the set was replaced", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1: b3 after the set was replaced", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b3", 10))
	expectEqual(t, "BLOB-1: b2 kept", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b2", 10))
	expectEqual(t, "BLOB-1: ids after replace", []string{"b2", "b3"}, blobIDs(t, conn, "p1", "", 10))

	// Setting the same id twice in one set is one reference.
	blobSetOnly(t, conn, "p1", tTodos, "r1", "b4", "b4")
	expectEqual(t, "BLOB-1: a repeated id in one set", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b4", 10))
	expectEqual(t, "BLOB-1: ids after a set with a repeated id", []string{"b4"}, blobIDs(t, conn, "p1", "", 10))
}

func blobEmptyClears(t T, h Harness) {
	conn := openStore(t, h)
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1"}, "r2": {"b1", "b2"}}, todo("r1", "pa", "u1"), todo("r2", "pa", "u1"))
	blobSetOnly(t, conn, "p1", tTodos, "r2")
	expectEqual(t, "BLOB-1: b1 after r2's set was emptied", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1: b2 after r2's set was emptied", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b2", 10))
	expectEqual(t, "BLOB-1: ids after emptying", []string{"b1"}, blobIDs(t, conn, "p1", "", 10))
	tx := begin(t, conn, "p1")
	b, ok := tx.(driver.BlobRefsTx)
	if !ok {
		_ = tx.Rollback(context.Background())
		t.Fatalf("the Tx does not implement driver.BlobRefsTx (ERR-3)")
	}
	must(t, "SetBlobRefs(nil)", b.SetBlobRefs(t.Context(), tTodos, "r1", nil))
	commit(t, tx)
	expectEqual(t, "BLOB-1: ids after a nil set", []string(nil), blobIDs(t, conn, "p1", "", 10))
}

func blobDeleteClears(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1"}, "r2": {"b2"}, "r3": {"b1", "b3"}},
		todo("r1", "pa", "u1"), todo("r2", "pa", "u1"), todo("r3", "pa", "u1"))

	tx := begin(t, conn, "p1")
	must(t, "DeleteRow(r1)", tx.DeleteRow(ctx, tTodos, "r1"))
	commit(t, tx)
	expectEqual(t, "BLOB-1: b1 after r1 was deleted", []driver.BlobRowRef{blobRef("r3", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))

	// Deleted in the Tx that set the refs.
	tx = begin(t, conn, "p1")
	stage(t, tx, tTodos, todo("r4", "pa", "u1"))
	blobSet(t, tx, tTodos, "r4", "b4")
	must(t, "DeleteRow(r4)", tx.DeleteRow(ctx, tTodos, "r4"))
	must(t, "DeleteRow(r2)", tx.DeleteRow(ctx, tTodos, "r2"))
	commit(t, tx)
	expectEqual(t, "BLOB-1: b4 set then deleted in one Tx", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b4", 10))
	expectEqual(t, "BLOB-1: b2 after r2 was deleted", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b2", 10))
	expectEqual(t, "BLOB-1: ids after deletes", []string{"b1", "b3"}, blobIDs(t, conn, "p1", "", 10))

	// A row re-created with the same id starts with no references.
	push(t, conn, "p1", tTodos, todo("r1", "pa", "u1"), todo("r2", "pa", "u1"))
	expectEqual(t, "BLOB-1: b1 after r1 was re-created", []driver.BlobRowRef{blobRef("r3", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1: ids after re-creating rows", []string{"b1", "b3"}, blobIDs(t, conn, "p1", "", 10))
}

func blobRowsWithScopes(t T, h Harness) {
	conn := openStore(t, h)
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1"}, "r2": {"b1"}, "r3": {"b2"}},
		todo("r1", "pa", "u1"), todo("r2", "pb", "u2"), todo("r3", "pa", "u1"))
	blobPushSet(t, conn, "p1", tUsers, map[string][]string{"r1": {"b1"}}, user("r1", "o1", "a@x"))
	want := []driver.BlobRowRef{
		blobRef("r1", "pa", "u1"), blobRef("r2", "pb", "u2"),
		{Table: tUsers, RowID: "r1", Scopes: driver.Scopes{"org": "o1"}},
	}
	expectEqual(t, "BLOB-1: rows of two tables referencing b1", want, blobRows(t, conn, "p1", "b1", 10))

	// Re-scoping the row (an upsert, refs untouched) shows the new scopes.
	push(t, conn, "p1", tTodos, todo("r2", "pz", "u9"))
	want[1] = blobRef("r2", "pz", "u9")
	expectEqual(t, "BLOB-1: scopes after a re-scope", want, blobRows(t, conn, "p1", "b1", 10))

	got := blobRows(t, conn, "p1", "b1", 2)
	if len(got) != 2 {
		t.Errorf("BLOB-1: ListRowsReferencingBlob(b1, limit 2) returned %d rows, want 2", len(got))
	}
	for _, r := range got {
		if !slices.ContainsFunc(want, func(w driver.BlobRowRef) bool { return diff(w, r) == "" }) {
			t.Errorf("BLOB-1: limit 2 returned a row that does not reference b1: %+v", r)
		}
	}
	expectEqual(t, "BLOB-1: rows referencing an unknown blob", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b404", 10))
}

func blobIDsPaged(t T, h Harness) {
	conn := openStore(t, h)
	refs := map[string][]string{}
	var rows []driver.Row
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("r%d", i)
		rows = append(rows, todo(id, "pa", "u1"))
		// Every id is referenced by several rows; "B" < "a" < "b" bytewise.
		refs[id] = []string{"b" + fmt.Sprint(i%3), "a" + fmt.Sprint(i%2), "B"}
	}
	blobPushSet(t, conn, "p1", tTodos, refs, rows...)
	all := []string{"B", "a0", "a1", "b0", "b1", "b2"}
	expectEqual(t, "BLOB-1: every referenced id once, ascending bytewise", all, blobIDs(t, conn, "p1", "", 100))

	var pages [][]string
	after := ""
	for i := 0; i < 5; i++ {
		page := blobIDs(t, conn, "p1", after, 4)
		pages = append(pages, page)
		if len(page) < 4 {
			break
		}
		after = page[len(page)-1]
	}
	expectEqual(t, "BLOB-1: pages of 4 resumed by the last id", [][]string{all[:4], all[4:]}, pages)
	expectEqual(t, "BLOB-1: after an id that is not referenced", []string{"b0", "b1"}, blobIDs(t, conn, "p1", "a2", 2))
	expectEqual(t, "BLOB-1: after the last id", []string(nil), blobIDs(t, conn, "p1", "b2", 2))
}

func blobRollback(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1"}}, todo("r1", "pa", "u1"))

	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	stage(t, tx, tTodos, todo("r2", "pa", "u1"))
	blobSet(t, tx, tTodos, "r2", "b2")
	blobSet(t, tx, tTodos, "r1", "b9")
	expectEqual(t, "BLOB-1/TX-4: b1 outside the open Tx", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1/TX-4: b2 outside the open Tx", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b2", 10))
	must(t, "Rollback", tx.Rollback(ctx))
	expectEqual(t, "BLOB-1/TX-2: b1 after rollback", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1/TX-2: ids after rollback", []string{"b1"}, blobIDs(t, conn, "p1", "", 10))

	tx2 := begin(t, conn, "p1")
	defer func() { _ = tx2.Rollback(context.Background()) }()
	blobSet(t, tx2, tTodos, "r1", "b5")
	commit(t, tx2)
	expectEqual(t, "BLOB-1/TX-2: ids after commit", []string{"b5"}, blobIDs(t, conn, "p1", "", 10))
}

func blobPartitions(t T, h Harness) {
	conn := openStore(t, h)
	blobPushSet(t, conn, "p1", tTodos, map[string][]string{"r1": {"b1", "b2"}}, todo("r1", "pa", "u1"))
	blobPushSet(t, conn, "p2", tTodos, map[string][]string{"r1": {"b1"}, "r2": {"b3"}}, todo("r1", "px", "u1"), todo("r2", "px", "u2"))

	expectEqual(t, "BLOB-1/P-1: b1 in p1", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1/P-1: b1 in p2", []driver.BlobRowRef{blobRef("r1", "px", "u1")}, blobRows(t, conn, "p2", "b1", 10))
	expectEqual(t, "BLOB-1/P-1: b3 in p1", []driver.BlobRowRef(nil), blobRows(t, conn, "p1", "b3", 10))
	expectEqual(t, "BLOB-1/P-1: ids of p1", []string{"b1", "b2"}, blobIDs(t, conn, "p1", "", 10))
	expectEqual(t, "BLOB-1/P-1: ids of p2", []string{"b1", "b3"}, blobIDs(t, conn, "p2", "", 10))

	// Clearing p2's row leaves p1's references alone.
	blobSetOnly(t, conn, "p2", tTodos, "r1")
	expectEqual(t, "BLOB-1/P-1: p1 after clearing p2's row", []driver.BlobRowRef{blobRef("r1", "pa", "u1")}, blobRows(t, conn, "p1", "b1", 10))
	expectEqual(t, "BLOB-1/P-1: ids of p2 after clearing", []string{"b3"}, blobIDs(t, conn, "p2", "", 10))
	expectEqual(t, "BLOB-1/P-2: ids of an unknown partition", []string(nil), blobIDs(t, conn, "p404", "", 10))
}

func blobUnknownTable(t T, h Harness) {
	conn := openStore(t, h)
	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	b, ok := tx.(driver.BlobRefsTx)
	if !ok {
		t.Fatalf("the Tx does not implement driver.BlobRefsTx (ERR-3)")
	}
	err := b.SetBlobRefs(t.Context(), "nope", "r1", []string{"b1"})
	expectCode(t, "BLOB-1/SCH-8: SetBlobRefs on a table not in the schema", err, driver.CodeUnknownTable)
	must(t, "Rollback", tx.Rollback(t.Context()))
	expectEqual(t, "BLOB-1: ids after the failed set", []string(nil), blobIDs(t, conn, "p1", "", 10))
}
