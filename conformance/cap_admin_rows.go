package conformance

import (
	"fmt"
	"slices"
	"sort"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases of ADM-3 (admin capability): a table's current rows of a
// partition, whatever their scopes, paged by id.

func init() {
	c := driver.CapAdmin
	register(
		Case{Name: "ADM-3/rows-ascending-bytewise-every-row-once", Capability: c, Run: admRowsPages},
		Case{Name: "ADM-3/rows-whole-values-exact", Capability: c, Run: admRowsValues},
		Case{Name: "ADM-3/after-is-exclusive-and-validated", Capability: c, Run: admRowsAfter},
	)
}

// admRowIDs are row ids whose bytewise order differs from a locale's and
// from a case-insensitive one.
var admRowIDs = []string{"😀", "é", "e\u0301", "a b", "ab", "a", "Z", "B", "b", "10", "9", "-", "zz", "\u00e9a"}

// admListAll pages ListRows with limit and returns every row in order,
// checking that only the last page is short.
func admListAll(t T, adm driver.AdminConn, p, table string, limit int) []driver.Row {
	t.Helper()
	var all []driver.Row
	after := ""
	for pages := 0; ; pages++ {
		page, err := adm.ListRows(t.Context(), p, table, after, limit)
		must(t, fmt.Sprintf("ListRows(%s, after %q, limit %d)", table, after, limit), err)
		if len(page) > limit {
			t.Fatalf("ADM-3: ListRows(limit %d) returned %d rows", limit, len(page))
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		if pages > 1000 {
			t.Fatalf("ADM-3: ListRows never returned a short page")
		}
		after = page[len(page)-1].ID
	}
}

// Catches: rows filtered by a scope, listed in a locale's or a
// case-insensitive order, from another partition (a prefix match), a
// deleted row listed, a moved row listed under its old scopes or twice,
// pages that overlap or skip (an inclusive position, an offset), a limit
// ignored, rows of another table.
func admRowsPages(t T, h Harness) {
	conn := openStore(t, h)
	adm := admConn(t, conn)
	var want []driver.Row
	for i, id := range admRowIDs {
		r := todo(id, fmt.Sprintf("p%d", i%3), fmt.Sprintf("o%d", i%2))
		r.ServerVersion = int64(i + 1)
		push(t, conn, "p1", tTodos, r)
		want = append(want, r)
	}
	for _, p := range []string{"p", "p10", "P1"} {
		push(t, conn, p, tTodos, todo("a", "p0", "o0"), todo("c", "p0", "o0"), todo("zzz", "p9", "o9"))
	}
	push(t, conn, "p1", tUsers, user("a", "o1", "a@example.com"), user("m", "o1", "m@example.com"))
	// A delete and a scope move.
	tx := begin(t, conn, "p1")
	must(t, "DeleteRow", tx.DeleteRow(t.Context(), tTodos, "zz"))
	moved := todo("B", "p-new", "o-new")
	moved.ServerVersion = 99
	must(t, "UpsertRow", tx.UpsertRow(t.Context(), tTodos, moved))
	commit(t, tx)
	want = slices.DeleteFunc(want, func(r driver.Row) bool { return r.ID == "zz" || r.ID == "B" })
	want = append(want, moved)
	sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })

	for _, limit := range []int{1, 2, 3, 5, len(want), len(want) + 1, 10000} {
		got := admListAll(t, adm, "p1", tTodos, limit)
		expectEqual(t, fmt.Sprintf("ADM-3: todos of p1 paged %d at a time", limit), want, got)
	}
	expectEqual(t, "ADM-3: users of p1", []driver.Row{user("a", "o1", "a@example.com"), user("m", "o1", "m@example.com")},
		admListAll(t, adm, "p1", tUsers, 10))
	expectEqual(t, "ADM-3: kinds of p1 (none)", []driver.Row(nil), admListAll(t, adm, "p1", tKinds, 10))
	expectEqual(t, "ADM-3: todos of an unknown partition", []driver.Row(nil), admListAll(t, adm, "unknown", tTodos, 10))
	got := admListAll(t, adm, "p10", tTodos, 2)
	expectEqual(t, "ADM-3: ids of p10's todos", []string{"a", "c", "zzz"}, ids(got))
	_, err := adm.ListRows(t.Context(), "p1", "nope", "", 10)
	expectCode(t, "ADM-3: ListRows of a table not in the schema", err, driver.CodeUnknownTable)
}

// Catches: values that do not survive this read path (VAL-1): integers
// through floats, JSON re-encoded, empty bytes read as NULL.
func admRowsValues(t T, h Harness) {
	conn := openStore(t, h)
	adm := admConn(t, conn)
	rows, names := valRows("g1")
	for i := 0; i < len(rows); i += 25 {
		push(t, conn, "p1", tKinds, rows[i:min(i+25, len(rows))]...)
	}
	got := admListAll(t, adm, "p1", tKinds, 7)
	if len(got) != len(rows) {
		t.Fatalf("ADM-3: ListRows returned %d kinds rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		valCheck(t, "ADM-3: ListRows "+names[rows[i].ID], rows[i], g)
	}
}

// Catches: afterRowID treated as inclusive, required to be a stored row,
// compared under a collation; and, through the Store, bad input reaching
// the driver: a bad partition, an unknown table, a malformed afterRowID,
// a limit outside 1…10,000.
func admRowsAfter(t T, h Harness) {
	conn, s := vdStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	push(t, conn, "p1", tTodos, todo("a", "p1", "o1"), todo("b", "p2", "o1"), todo("d", "p1", "o2"), todo("é", "p1", "o1"))
	for _, c := range []struct {
		after string
		want  []string
	}{
		{"", []string{"a", "b", "d", "é"}}, {"a", []string{"b", "d", "é"}}, {"b", []string{"d", "é"}}, {"c", []string{"d", "é"}},
		{"A", []string{"a", "b", "d", "é"}}, {"e", []string{"é"}}, {"z", []string{"é"}}, {"é", nil}, {"😀", nil},
	} {
		got, err := adm.ListRows(ctx, "p1", tTodos, c.after, 10)
		must(t, "ListRows", err)
		expectEqual(t, fmt.Sprintf("ADM-3: ids after %q", c.after), c.want, ids(got))
		sgot, err := s.ListRows(ctx, "p1", tTodos, c.after, 10)
		must(t, "Store.ListRows", err)
		expectEqual(t, fmt.Sprintf("ADM-3: Store.ListRows ids after %q", c.after), c.want, ids(sgot))
	}
	for _, c := range []struct {
		name            string
		p, table, after string
		limit           int
		code            driver.Code
	}{
		{"empty partition", "", tTodos, "", 10, driver.CodeInvalidArgument},
		{"partition with NUL", "p\x00", tTodos, "", 10, driver.CodeInvalidArgument},
		{"unknown table", "p1", "nope", "", 10, driver.CodeUnknownTable},
		{"afterRowID not UTF-8", "p1", tTodos, "\xff", 10, driver.CodeInvalidArgument},
		{"afterRowID too long", "p1", tTodos, vdLong(syncstore.MaxIDBytes + 1), 10, driver.CodeInvalidArgument},
		{"limit 0", "p1", tTodos, "", 0, driver.CodeInvalidLimit},
		{"limit 10001", "p1", tTodos, "", 10001, driver.CodeInvalidLimit},
		{"limit -1", "p1", tTodos, "", -1, driver.CodeInvalidLimit},
	} {
		got, err := s.ListRows(ctx, c.p, c.table, c.after, c.limit)
		errExpectTyped(t, "ADM-3: Store.ListRows with "+c.name, err, c.code)
		if len(got) != 0 {
			t.Errorf("ADM-3: Store.ListRows with %s returned rows %v", c.name, ids(got))
		}
	}
	got, err := s.ListRows(ctx, "p1", tTodos, "", 10000)
	must(t, "Store.ListRows limit 10000", err)
	expectEqual(t, "ADM-3: Store.ListRows limit 10000", []string{"a", "b", "d", "é"}, ids(got))
}
