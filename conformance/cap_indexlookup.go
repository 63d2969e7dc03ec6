package conformance

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/driver"
)

// Cases of the index-lookup capability (docs/contract.md IXL-1…IXL-4): exact
// lookups through a declared index, bounded and resumable (IXL-1), inside
// a Tx over staged writes (IXL-3), never turning an index into a scope
// (IXL-4). The IXL-2 error-order cases are in cap_indexlookup_errors.go.
// The plan half of IXL-4 ("lookups use the index") is checked per driver
// against the engine's plan output.

func init() {
	c := driver.CapIndexLookup
	register(
		// Catches: a lookup that ignores the value, the partition, or orders by insertion.
		Case{Name: "IXL-1/exact-match-ascending-ids", Capability: c, Run: ixlExactMatch},
		// Catches: a driver that ignores AfterRowID or Limit, or skips a row between pages.
		Case{Name: "IXL-1/limit-and-after-row-id-page-through", Capability: c, Run: ixlPaging},
		// Catches: `col = ?` with a NULL value (never true in SQL), so NULL never matches NULL.
		Case{Name: "IXL-1/null-matches-null", Capability: c, Run: ixlNullMatchesNull},
		// Catches: values matched to the wrong index column, or only the first column compared.
		Case{Name: "IXL-1/multi-column-position-by-position", Capability: c, Run: ixlPositions},
		// Catches: integer, boolean, float and bytes values that do not match their stored form.
		Case{Name: "IXL-1/typed-values-match-exactly", Capability: c, Run: ixlTypedValues},
		// Catches: a Tx lookup that reads only committed rows.
		Case{Name: "IXL-3/tx-sees-staged-upserts-moves-deletes", Capability: c, Run: ixlTxStaged},
		// Catches: staged writes visible outside the Tx, or kept after its rollback.
		Case{Name: "IXL-3/staged-writes-invisible-outside-and-gone-after-rollback", Capability: c, Run: ixlTxRollback},
		// Catches: index columns reported as scopes, or made filterable like scopes.
		Case{Name: "IXL-4/rows-keep-their-own-scopes", Capability: c, Run: ixlOwnScopes},
	)
}

// ixlConn returns the index-lookup half of conn or fails the case.
func ixlConn(t T, conn driver.Conn) driver.IndexLookupConn {
	t.Helper()
	ix, ok := conn.(driver.IndexLookupConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.IndexLookupConn although the case runs for capability %s", driver.CapIndexLookup)
	}
	return ix
}

// ixlTx returns the index-lookup half of tx, rolling tx back and failing
// the case when it is missing (ERR-3 reports the half capability itself).
func ixlTx(t T, tx driver.Tx) driver.IndexLookupTx {
	t.Helper()
	ix, ok := tx.(driver.IndexLookupTx)
	if !ok {
		_ = tx.Rollback(context.Background())
		t.Fatalf("the Tx does not implement driver.IndexLookupTx: index-lookup is declared by halves (ERR-3)")
	}
	return ix
}

// ixlLookup runs q on partition p through the Conn, failing the case on error.
func ixlLookup(t T, conn driver.Conn, p string, q driver.IndexQuery) []driver.Row {
	t.Helper()
	rows, err := ixlConn(t, conn).ScanRowsByIndex(t.Context(), p, q)
	if err != nil {
		t.Fatalf("ScanRowsByIndex(%s.%s %v, after %q, limit %d): %v", q.Table, q.Index, q.Values, q.AfterRowID, q.Limit, err)
	}
	return rows
}

// ixlTxLookup runs q inside tx, rolling back and failing the case on error.
func ixlTxLookup(t T, tx driver.Tx, q driver.IndexQuery) []driver.Row {
	t.Helper()
	rows, err := ixlTx(t, tx).ScanRowsByIndex(t.Context(), q)
	if err != nil {
		_ = tx.Rollback(context.Background())
		t.Fatalf("Tx.ScanRowsByIndex(%s.%s %v): %v", q.Table, q.Index, q.Values, err)
	}
	return rows
}

// byOwner is a lookup of todos through by_owner.
func byOwner(owner string, limit int) driver.IndexQuery {
	return driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{owner}, Limit: limit}
}

func ixlExactMatch(t T, h Harness) {
	conn := openStore(t, h)
	// Written out of id order, in two commits, with a look-alike owner and
	// the same owner in another partition.
	push(t, conn, "p1", tTodos, todo("t5", "pa", "u1"), todo("t2", "pa", "u2"), todo("t9", "pb", "u1"))
	push(t, conn, "p1", tTodos, todo("t1", "pb", "u1"), todo("t3", "pa", "U1"), todo("t4", "pa", "u1 "))
	push(t, conn, "p2", tTodos, todo("t0", "pa", "u1"), todo("t7", "pa", "u1"))

	got := ixlLookup(t, conn, "p1", byOwner("u1", 100))
	expectEqual(t, "IXL-1: by_owner u1 in p1, ids ascending", []string{"t1", "t5", "t9"}, ids(got))
	want := []driver.Row{todo("t1", "pb", "u1"), todo("t5", "pa", "u1"), todo("t9", "pb", "u1")}
	expectEqual(t, "IXL-1: by_owner u1 rows (values, scopes, version)", want, got)

	expectEqual(t, "IXL-1/P-1: by_owner u1 in p2", []string{"t0", "t7"}, ids(ixlLookup(t, conn, "p2", byOwner("u1", 100))))
	expectEqual(t, "IXL-1: by_owner of an owner nobody has", []string(nil), ids(ixlLookup(t, conn, "p1", byOwner("u404", 100))))
	expectEqual(t, "IXL-1: unknown partition reads as empty (P-2)", []string(nil), ids(ixlLookup(t, conn, "p404", byOwner("u1", 100))))

	u := ixlLookup(t, conn, "p1", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"b@x"}, Limit: 1000})
	expectEqual(t, "IXL-1: unique by_email on users, limit 1000", []string(nil), ids(u))
	push(t, conn, "p1", tUsers, user("a", "o1", "a@x"), user("b", "o1", "b@x"))
	u = ixlLookup(t, conn, "p1", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"b@x"}, Limit: 1000})
	expectEqual(t, "IXL-1: unique by_email b@x", []driver.Row{user("b", "o1", "b@x")}, u)
}

func ixlPaging(t T, h Harness) {
	conn := openStore(t, h)
	var rows []driver.Row
	for _, id := range []string{"r07", "r03", "r11", "r01", "r05", "r09", "r13"} {
		rows = append(rows, todo(id, "pa", "u1"))
	}
	push(t, conn, "p1", tTodos, rows...)
	push(t, conn, "p1", tTodos, todo("r02", "pa", "u2"), todo("r12", "pa", "u2"))

	var pages [][]string
	after := ""
	for i := 0; i < 5; i++ {
		q := byOwner("u1", 3)
		q.AfterRowID = after
		page := ids(ixlLookup(t, conn, "p1", q))
		pages = append(pages, page)
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1]
	}
	want := [][]string{{"r01", "r03", "r05"}, {"r07", "r09", "r11"}, {"r13"}}
	expectEqual(t, "IXL-1: pages of 3 resumed by the last id", want, pages)

	q := byOwner("u1", 2)
	q.AfterRowID = "r06" // not a stored id: exclusive bound by value
	expectEqual(t, "IXL-1: after an id that is not stored", []string{"r07", "r09"}, ids(ixlLookup(t, conn, "p1", q)))
	q = byOwner("u1", 1)
	q.AfterRowID = "r13"
	expectEqual(t, "IXL-1: after the last id", []string(nil), ids(ixlLookup(t, conn, "p1", q)))
	expectEqual(t, "IXL-1: limit 1", []string{"r01"}, ids(ixlLookup(t, conn, "p1", byOwner("u1", 1))))
}

// ixlSchema is a schema of its own (version 1) with nullable and
// multi-column indexes over every indexable type.
func ixlSchema() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{{
		Name: "items",
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "grp", Type: driver.TypeString},
			{Name: "a", Type: driver.TypeString, Nullable: true},
			{Name: "c", Type: driver.TypeString, Nullable: true},
			{Name: "n", Type: driver.TypeInteger, Nullable: true},
			{Name: "flag", Type: driver.TypeBoolean, Nullable: true},
			{Name: "f", Type: driver.TypeFloat, Nullable: true},
			{Name: "x", Type: driver.TypeBytes, Nullable: true},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
		Indexes: []driver.Index{
			{Name: "by_a_n", Columns: []string{"a", "n"}},
			{Name: "by_a_c", Columns: []string{"a", "c"}},
			{Name: "by_flag_f", Columns: []string{"flag", "f"}},
			{Name: "by_x", Columns: []string{"x"}},
		},
	}}}
}

// ixlItem returns an items row; vals sets a, c, n, flag, f, x (absent = NULL).
func ixlItem(id string, vals map[string]any) driver.Row {
	v := driver.Values{"id": id, "grp": "g", "a": nil, "c": nil, "n": nil, "flag": nil, "f": nil, "x": nil}
	for k, x := range vals {
		v[k] = x
	}
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: v}
}

// ixlOpenItems opens a store of its own with ixlSchema and writes rows to p1.
func ixlOpenItems(t T, h Harness, rows ...driver.Row) driver.Conn {
	t.Helper()
	conn := h.Open(t)
	must(t, "setup: EnsureSchema(items)", conn.EnsureSchema(t.Context(), ixlSchema()))
	push(t, conn, "p1", "items", rows...)
	return conn
}

func ixlItems(t T, conn driver.Conn, index string, values ...any) []string {
	t.Helper()
	return ids(ixlLookup(t, conn, "p1", driver.IndexQuery{Table: "items", Index: index, Values: values, Limit: 1000}))
}

func ixlNullMatchesNull(t T, h Harness) {
	conn := ixlOpenItems(t, h,
		ixlItem("i1", map[string]any{"a": "x", "n": int64(1)}),
		ixlItem("i2", map[string]any{"a": "x"}),
		ixlItem("i3", map[string]any{"n": int64(1)}),
		ixlItem("i4", nil),
		ixlItem("i5", map[string]any{"a": "", "n": int64(0)}),
	)
	expectEqual(t, "IXL-1: (x, 1)", []string{"i1"}, ixlItems(t, conn, "by_a_n", "x", int64(1)))
	expectEqual(t, "IXL-1: (x, NULL) matches only the NULL n", []string{"i2"}, ixlItems(t, conn, "by_a_n", "x", nil))
	expectEqual(t, "IXL-1: (NULL, 1)", []string{"i3"}, ixlItems(t, conn, "by_a_n", nil, int64(1)))
	expectEqual(t, "IXL-1: (NULL, NULL)", []string{"i4"}, ixlItems(t, conn, "by_a_n", nil, nil))
	expectEqual(t, "IXL-1: ('', 0) is not NULL", []string{"i5"}, ixlItems(t, conn, "by_a_n", "", int64(0)))
	expectEqual(t, "IXL-1: bytes NULL", []string{"i1", "i2", "i3", "i4", "i5"}, ixlItems(t, conn, "by_x", nil))
}

func ixlPositions(t T, h Harness) {
	conn := ixlOpenItems(t, h,
		ixlItem("i1", map[string]any{"a": "x", "c": "y"}),
		ixlItem("i2", map[string]any{"a": "y", "c": "x"}),
		ixlItem("i3", map[string]any{"a": "x", "c": "x"}),
		ixlItem("i4", map[string]any{"a": "x", "c": "y"}),
	)
	expectEqual(t, "IXL-1: (x, y)", []string{"i1", "i4"}, ixlItems(t, conn, "by_a_c", "x", "y"))
	expectEqual(t, "IXL-1: (y, x)", []string{"i2"}, ixlItems(t, conn, "by_a_c", "y", "x"))
	expectEqual(t, "IXL-1: (x, x)", []string{"i3"}, ixlItems(t, conn, "by_a_c", "x", "x"))
	expectEqual(t, "IXL-1: (y, y)", []string(nil), ixlItems(t, conn, "by_a_c", "y", "y"))
}

func ixlTypedValues(t T, h Harness) {
	const big = int64(1<<53 + 1)
	conn := ixlOpenItems(t, h,
		ixlItem("i1", map[string]any{"a": "k", "n": big, "flag": true, "f": 0.1, "x": []byte{0, 1, 2}}),
		ixlItem("i2", map[string]any{"a": "k", "n": big - 1, "flag": false, "f": 0.1, "x": []byte{}}),
		ixlItem("i3", map[string]any{"a": "k", "n": int64(-1 << 63), "flag": true, "f": 0.30000000000000004, "x": []byte{0, 1}}),
	)
	expectEqual(t, "IXL-1: integer 2^53+1 is not 2^53", []string{"i1"}, ixlItems(t, conn, "by_a_n", "k", big))
	expectEqual(t, "IXL-1: integer min int64", []string{"i3"}, ixlItems(t, conn, "by_a_n", "k", int64(-1<<63)))
	expectEqual(t, "IXL-1: (true, 0.1)", []string{"i1"}, ixlItems(t, conn, "by_flag_f", true, 0.1))
	expectEqual(t, "IXL-1: (false, 0.1)", []string{"i2"}, ixlItems(t, conn, "by_flag_f", false, 0.1))
	expectEqual(t, "IXL-1: (true, 0.30000000000000004)", []string{"i3"}, ixlItems(t, conn, "by_flag_f", true, 0.30000000000000004))
	expectEqual(t, "IXL-1: (true, 0.3) matches no float bits", []string(nil), ixlItems(t, conn, "by_flag_f", true, 0.3))
	expectEqual(t, "IXL-1: bytes 00 01 02", []string{"i1"}, ixlItems(t, conn, "by_x", []byte{0, 1, 2}))
	expectEqual(t, "IXL-1: empty bytes is not NULL", []string{"i2"}, ixlItems(t, conn, "by_x", []byte{}))
	got := ixlLookup(t, conn, "p1", driver.IndexQuery{Table: "items", Index: "by_x", Values: []any{[]byte{0, 1}}, Limit: 5})
	expectEqual(t, "IXL-1/VAL-1: row read through a lookup", []driver.Row{
		ixlItem("i3", map[string]any{"a": "k", "n": int64(-1 << 63), "flag": true, "f": 0.30000000000000004, "x": []byte{0, 1}}),
	}, got)
}

func ixlTxStaged(t T, h Harness) {
	conn := openStore(t, h)
	push(t, conn, "p1", tTodos, todo("a", "pa", "u1"), todo("b", "pa", "u1"), todo("c", "pa", "u2"))

	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	ctx := t.Context()
	must(t, "upsert d", tx.UpsertRow(ctx, tTodos, todo("d", "pa", "u1")))
	must(t, "move b to u2", tx.UpsertRow(ctx, tTodos, todo("b", "pb", "u2")))
	must(t, "delete a", tx.DeleteRow(ctx, tTodos, "a"))

	expectEqual(t, "IXL-3: u1 inside the Tx (a deleted, b moved away, d staged)", []string{"d"}, ids(ixlTxLookup(t, tx, byOwner("u1", 10))))
	got := ixlTxLookup(t, tx, byOwner("u2", 10))
	expectEqual(t, "IXL-3: u2 inside the Tx (b moved in)", []driver.Row{todo("b", "pb", "u2"), todo("c", "pa", "u2")}, got)
	q := byOwner("u2", 1)
	q.AfterRowID = "b"
	expectEqual(t, "IXL-3: paging inside the Tx", []string{"c"}, ids(ixlTxLookup(t, tx, q)))

	must(t, "move d back out", tx.UpsertRow(ctx, tTodos, todo("d", "pa", "u3")))
	expectEqual(t, "IXL-3: u1 after the staged row moved again", []string(nil), ids(ixlTxLookup(t, tx, byOwner("u1", 10))))
	_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("cc-%d", nextID()), CreatedAtMs: 1,
		Changes: []driver.Change{upsertChange(tTodos, todo("d", "pa", "u3")), upsertChange(tTodos, todo("b", "pb", "u2")),
			deleteChange(tTodos, todo("a", "pa", "u1"))}})
	must(t, "AppendCommit", err)
	commit(t, tx)

	expectEqual(t, "IXL-3: u1 after commit", []string(nil), ids(ixlLookup(t, conn, "p1", byOwner("u1", 10))))
	expectEqual(t, "IXL-3: u2 after commit", []string{"b", "c"}, ids(ixlLookup(t, conn, "p1", byOwner("u2", 10))))
	expectEqual(t, "IXL-3: u3 after commit", []string{"d"}, ids(ixlLookup(t, conn, "p1", byOwner("u3", 10))))
}

func ixlTxRollback(t T, h Harness) {
	conn := openStore(t, h)
	push(t, conn, "p1", tTodos, todo("a", "pa", "u1"), todo("b", "pa", "u1"))

	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	ctx := t.Context()
	must(t, "upsert c", tx.UpsertRow(ctx, tTodos, todo("c", "pa", "u1")))
	must(t, "move a", tx.UpsertRow(ctx, tTodos, todo("a", "pa", "u9")))
	must(t, "delete b", tx.DeleteRow(ctx, tTodos, "b"))
	expectEqual(t, "IXL-3: u1 inside the Tx", []string{"c"}, ids(ixlTxLookup(t, tx, byOwner("u1", 10))))
	expectEqual(t, "IXL-3/TX-4: u1 outside the Tx before it ends", []string{"a", "b"}, ids(ixlLookup(t, conn, "p1", byOwner("u1", 10))))
	expectEqual(t, "IXL-3/TX-4: u9 outside the Tx before it ends", []string(nil), ids(ixlLookup(t, conn, "p1", byOwner("u9", 10))))
	must(t, "Rollback", tx.Rollback(ctx))
	expectEqual(t, "IXL-3/TX-2: u1 after rollback", []string{"a", "b"}, ids(ixlLookup(t, conn, "p1", byOwner("u1", 10))))
	expectEqual(t, "IXL-3/TX-2: u9 after rollback", []string(nil), ids(ixlLookup(t, conn, "p1", byOwner("u9", 10))))
}

func ixlOwnScopes(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	seq := push(t, conn, "p1", tUsers, user("a", "o1", "a@x"), user("b", "o2", "b@x"))
	got := ixlLookup(t, conn, "p1", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"a@x"}, Limit: 10})
	if len(got) != 1 {
		t.Fatalf("IXL-4: lookup of a@x returned %d rows, want 1", len(got))
	}
	expectEqual(t, "IXL-4: scopes of a row found through an index", driver.Scopes{"org": "o1"}, got[0].Scopes)
	row, ok, err := conn.GetRow(ctx, "p1", tUsers, "a")
	must(t, "GetRow", err)
	if !ok {
		t.Fatalf("GetRow(a): not found")
	}
	expectEqual(t, "IXL-4: scopes after a lookup (GetRow)", driver.Scopes{"org": "o1"}, row.Scopes)

	// The index column is not a scope variable: filtering by it matches
	// nothing, in scans and in window reads alike.
	rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"email": {"a@x"}}, Limit: 10})
	must(t, "ScanRows by email", err)
	expectEqual(t, "IXL-4: ScanRows filtered by the index column", []string(nil), ids(rows))
	rows, err = conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"by_email": {"a@x"}}, Limit: 10})
	must(t, "ScanRows by index name", err)
	expectEqual(t, "IXL-4: ScanRows filtered by the index name", []string(nil), ids(rows))
	cs, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tUsers, Filter: driver.ScopeFilter{"email": {"a@x"}},
		AfterSeq: 0, ThroughSeq: seq, LimitChanges: 10})
	must(t, "ReadCommitWindow by email", err)
	expectEqual(t, "IXL-4: window filtered by the index column", []int64(nil), seqs(cs))
	cs, err = conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o1"}},
		AfterSeq: 0, ThroughSeq: seq, LimitChanges: 10})
	must(t, "ReadCommitWindow by org", err)
	if len(cs) == 1 && len(cs[0].Changes) == 1 {
		expectEqual(t, "IXL-4: change scopes", driver.Scopes{"org": "o1"}, cs[0].Changes[0].Scopes)
	} else {
		t.Errorf("IXL-4: window by org o1 returned %d commits, want 1 with 1 change", len(cs))
	}

	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	in := ixlTxLookup(t, tx, driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"b@x"}, Limit: 10})
	expectEqual(t, "IXL-4: rows found by a Tx lookup", []driver.Row{user("b", "o2", "b@x")}, in)
}
