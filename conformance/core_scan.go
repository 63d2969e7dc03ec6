package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Cases for SCAN-1…SCAN-4 (snapshot scans). SCAN-5 (candidates come from
// the row-scope index) is checked per driver against the engine's plan
// output, so it has no case here.
//
// Expected results are computed with scanModel from the rows the case
// wrote, ordered with Go's string comparison, which is bytewise. Only the
// SCAN-1 cases look at the order of a page; the paging cases (SCAN-2,
// SCAN-3) and SCAN-4 compare rows sorted by id and resume after the
// greatest id of a page, so an ordering bug is reported once, by SCAN-1.

func init() {
	register(
		Case{Name: "SCAN-1/bytewise-id-order", Run: scanBytewiseOrder},
		Case{Name: "SCAN-1/limit-and-after-row-id", Run: scanLimitAndAfter},
		Case{Name: "SCAN-1/filter-keys-and-values-or", Run: scanFilterAndOr},
		Case{Name: "SCAN-1/filter-empty-list-or-unknown-variable-matches-nothing", Run: scanFilterMatchesNothing},
		Case{Name: "SCAN-1/filter-thousands-of-values", Run: scanFilterThousands},
		Case{Name: "SCAN-1/filter-values-compare-bytewise", Run: scanValuesCompareBytewise},
		Case{Name: "SCAN-1/tables-named-like-sql-aliases", Run: scanAliasNamedTables},
		Case{Name: "SCAN-2/paging-returns-every-row-once", Run: scanPagingEveryRowOnce},
		Case{Name: "SCAN-3/short-page-means-exhausted", Run: scanShortPage},
		Case{Name: "SCAN-4/deleted-rows-vanish", Run: scanDeletedRowsVanish},
		Case{Name: "SCAN-4/rescoped-row-only-under-new-scope", Run: scanRescopedRow},
	)
}

// scanModel returns what ScanRows(q) must return when rows are the
// partition's current rows of q.Table (any order): rows matching q.Filter
// with id > q.AfterRowID, ascending bytewise, at most q.Limit (SCAN-1).
func scanModel(rows []driver.Row, q driver.ScanQuery) []driver.Row {
	sorted := scanSorted(rows)
	var out []driver.Row
	for _, r := range sorted {
		if len(out) == q.Limit {
			break
		}
		if r.ID > q.AfterRowID && winMatch(r.Scopes, q.Filter) {
			out = append(out, r)
		}
	}
	return out
}

// scanSorted returns a copy of rows sorted bytewise by id.
func scanSorted(rows []driver.Row) []driver.Row {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b driver.Row) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// scanRead calls ScanRows on partition p1 or fails the case.
func scanRead(t T, conn driver.Conn, q driver.ScanQuery) []driver.Row {
	t.Helper()
	got, err := conn.ScanRows(t.Context(), "p1", q)
	if err != nil {
		t.Fatalf("ScanRows(%s, %v, after %q, limit %d): %v", q.Table, winFmt(q.Filter), q.AfterRowID, q.Limit, err)
	}
	return got
}

// scanCheck reads q and compares the page, in order, with scanModel.
func scanCheck(t T, conn driver.Conn, rows []driver.Row, q driver.ScanQuery, rule string) {
	t.Helper()
	got := scanRead(t, conn, q)
	what := fmt.Sprintf("%s: ScanRows(%s, %v, after %+q, limit %d)", rule, q.Table, winFmt(q.Filter), q.AfterRowID, q.Limit)
	want := scanModel(rows, q)
	expectEqual(t, what+" ids", ids(want), ids(got))
	expectEqual(t, what, want, got)
}

// scanIDs are row ids whose bytewise order differs from case-insensitive,
// accent-insensitive, numeric, normalizing and UTF-16 orders. They are
// written in this (unsorted) order.
var scanIDs = []string{"B", "a", "aa", "\u00e9", "e\u0301", "z", "~", "😀", "Z", "0", "A", "ab", "\uE000", "\uFFFD",
	"\u007f", "\u0080", "a b", "a-b", "a_b", "aB", "Ab", "\U0010FFFF", "ß", "ss", "e", "f", "10", "9", "a\u00a0", "a "}

// Catches: an ORDER BY or an `id > ?` comparison under a collation (case-
// or accent-insensitive, locale, NFC, UTF-16 code units) instead of bytes,
// or rows returned in insertion or storage order.
func scanBytewiseOrder(t T, h Harness) {
	conn := openStore(t, h)
	var rows []driver.Row
	for _, id := range scanIDs {
		rows = append(rows, todo(id, "p1", "u1"))
	}
	push(t, conn, "p1", tTodos, rows...)
	want := slices.Clone(scanIDs)
	slices.Sort(want) // Go compares strings bytewise
	f := driver.ScopeFilter{"project": {"p1"}}
	got := scanRead(t, conn, driver.ScanQuery{Table: tTodos, Filter: f, Limit: 100})
	expectEqual(t, "SCAN-1: ids in bytewise order", want, ids(got))
	afters := append(slices.Clone(scanIDs), "b", "\u00e8", "a", "\U0010FFFF\U0010FFFF", "Y", "aa ")
	for _, after := range afters {
		scanCheck(t, conn, rows, driver.ScanQuery{Table: tTodos, Filter: f, AfterRowID: after, Limit: 100}, "SCAN-1")
	}
}

// Catches: a limit off by one, afterRowID inclusive, or afterRowID compared
// as a number or prefix.
func scanLimitAndAfter(t T, h Harness) {
	conn := openStore(t, h)
	var rows []driver.Row
	for _, i := range []int{7, 3, 11, 0, 9, 1, 5, 10, 2, 8, 4, 6} {
		rows = append(rows, todo(fmt.Sprintf("r%02d", i), "p1", "u1"))
	}
	push(t, conn, "p1", tTodos, rows...)
	f := driver.ScopeFilter{"project": {"p1"}}
	for _, c := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 1, []string{"r00"}},
		{"", 5, []string{"r00", "r01", "r02", "r03", "r04"}},
		{"r04", 5, []string{"r05", "r06", "r07", "r08", "r09"}},
		{"r09", 5, []string{"r10", "r11"}},
		{"r1", 5, []string{"r10", "r11"}},
		{"r0", 2, []string{"r00", "r01"}},
		{"r11", 5, []string{}},
		{"s", 5, []string{}},
		{"", 12, nil},
		{"", 13, nil},
		{"r05", 10000, nil},
	} {
		q := driver.ScanQuery{Table: tTodos, Filter: f, AfterRowID: c.after, Limit: c.limit}
		if c.want != nil {
			expectEqual(t, fmt.Sprintf("SCAN-1: ids after %q limit %d", c.after, c.limit), c.want, ids(scanRead(t, conn, q)))
		}
		scanCheck(t, conn, rows, q, "SCAN-1")
	}
}

// scanFilterRows writes the rows the filter cases scan and returns the
// todos: r1 (project p7, owner u1), r2 (p7, u2), r3 (p8, u1), r4 (p9, u2),
// r5 (p8, owner "p7"); plus users x (org p7).
func scanFilterRows(t T, conn driver.Conn) []driver.Row {
	t.Helper()
	rows := []driver.Row{todo("r4", "p9", "u2"), todo("r1", "p7", "u1"), todo("r3", "p8", "u1"),
		todo("r5", "p8", "p7"), todo("r2", "p7", "u2")}
	push(t, conn, "p1", tTodos, rows...)
	push(t, conn, "p1", tUsers, user("x", "p7", "x@example.com"))
	return rows
}

// scanFilterCase is one filter of the SCAN-1 filter cases with the todos
// ids it must return (nil = none).
type scanFilterCase struct {
	filter driver.ScopeFilter
	want   []string
}

func scanRunFilterCases(t T, h Harness, cases []scanFilterCase) {
	conn := openStore(t, h)
	rows := scanFilterRows(t, conn)
	for _, c := range cases {
		q := driver.ScanQuery{Table: tTodos, Filter: c.filter, Limit: 100}
		want := c.want
		if want == nil {
			want = []string{}
		}
		expectEqual(t, fmt.Sprintf("SCAN-1: ids for filter %v", winFmt(c.filter)), want, ids(scanRead(t, conn, q)))
		scanCheck(t, conn, rows, q, "SCAN-1")
	}
}

// Catches: keys joined with OR, only the first value of a list used, a
// value matched under any variable (r5's owner "p7" is not project p7), or
// rows required to have no scope keys beyond the filter's.
func scanFilterAndOr(t T, h Harness) {
	scanRunFilterCases(t, h, []scanFilterCase{
		{driver.ScopeFilter{"project": {"p7"}}, []string{"r1", "r2"}},
		{driver.ScopeFilter{"owner": {"u1"}}, []string{"r1", "r3"}},
		{driver.ScopeFilter{"project": {"p7"}, "owner": {"u1"}}, []string{"r1"}},
		{driver.ScopeFilter{"project": {"p7", "p9"}}, []string{"r1", "r2", "r4"}},
		{driver.ScopeFilter{"project": {"p9", "p8", "p7"}, "owner": {"u2"}}, []string{"r2", "r4"}},
		{driver.ScopeFilter{"owner": {"p7"}}, []string{"r5"}},
		{driver.ScopeFilter{"project": {"p9"}, "owner": {"u1"}}, nil},
	})
}

// Catches: a key with an empty value list treated as "any value" or
// dropped, an unknown variable treated as "no condition", another table's
// variable (org) matching todos, or an error instead of an empty result.
func scanFilterMatchesNothing(t T, h Harness) {
	scanRunFilterCases(t, h, []scanFilterCase{
		{driver.ScopeFilter{"project": {}}, nil},
		{driver.ScopeFilter{"project": nil}, nil},
		{driver.ScopeFilter{"project": {"p7"}, "owner": {}}, nil},
		{driver.ScopeFilter{"nosuch": {"p7"}}, nil},
		{driver.ScopeFilter{"project": {"p7"}, "nosuch": {"u1"}}, nil},
		{driver.ScopeFilter{"org": {"p7"}}, nil},
	})
}

// Catches: value lists bound as one parameter each (engine limits of 999,
// 100 or 65,535 parameters), truncated lists, or duplicate list values
// duplicating rows (V-6).
func scanFilterThousands(t T, h Harness) {
	scanRunFilterCases(t, h, []scanFilterCase{
		{driver.ScopeFilter{"project": winManyValues(3000, "p9", "p7")}, []string{"r1", "r2", "r4"}},
		{driver.ScopeFilter{"project": winManyValues(3000, "p7", "p8"), "owner": winManyValues(1500, "u2")},
			[]string{"r2"}},
		{driver.ScopeFilter{"owner": winManyValues(70000, "u1")}, []string{"r1", "r3"}},
	})
}

// Catches: scope values compared with a collation instead of bytewise
// (case, accents, trailing spaces, Unicode normalization).
func scanValuesCompareBytewise(t T, h Harness) {
	conn := openStore(t, h)
	var rows []driver.Row
	for i, v := range winTrickyValues {
		rows = append(rows, todo(fmt.Sprintf("t%02d", i), v, v))
	}
	push(t, conn, "p1", tTodos, rows...)
	for i, v := range winTrickyValues {
		for _, key := range []string{"project", "owner"} {
			q := driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{key: {v}}, Limit: 100}
			expectEqual(t, fmt.Sprintf("SCAN-1: ids for %s %+q", key, v), []string{fmt.Sprintf("t%02d", i)},
				ids(scanRead(t, conn, q)))
		}
	}
}

// scanPageAll pages through q, resuming after the greatest id of each page,
// until stop(page) says so; it fails the case when a page exceeds the
// limit or paging does not end. It returns the pages.
func scanPageAll(t T, conn driver.Conn, q driver.ScanQuery, maxPages int, stop func([]driver.Row) bool) [][]driver.Row {
	t.Helper()
	var pages [][]driver.Row
	for range maxPages {
		page := scanRead(t, conn, q)
		if len(page) > q.Limit {
			t.Fatalf("ScanRows after %q returned %d rows, more than limit %d", q.AfterRowID, len(page), q.Limit)
		}
		pages = append(pages, page)
		if stop(page) {
			return pages
		}
		for _, r := range page {
			q.AfterRowID = max(q.AfterRowID, r.ID)
		}
	}
	t.Fatalf("paging ScanRows(%v, limit %d) did not end after %d pages", winFmt(q.Filter), q.Limit, maxPages)
	return nil
}

// Catches: a cursor that skips or repeats rows at page boundaries (an
// inclusive `id >= after`, a limit off by one, rows of another scope
// counted), so some row is returned twice or never.
func scanPagingEveryRowOnce(t T, h Harness) {
	conn := openStore(t, h)
	var rows, mine []driver.Row
	for i := range 257 {
		r := todo(fmt.Sprintf("r%d", (i*89)%257), "p1", "u1")
		rows, mine = append(rows, r), append(mine, r)
		if i%4 == 0 {
			rows = append(rows, todo(fmt.Sprintf("r%d-other", i), "p2", "u1"))
		}
	}
	push(t, conn, "p1", tTodos, rows...)
	want := scanSorted(mine)
	for _, limit := range []int{10, 1, 256, 257, 10000} {
		q := driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: limit}
		pages := scanPageAll(t, conn, q, len(mine)+2, func(p []driver.Row) bool { return len(p) == 0 })
		got := scanSorted(slices.Concat(pages...))
		expectEqual(t, fmt.Sprintf("SCAN-2: ids collected with pages of %d", limit), ids(want), ids(got))
		expectEqual(t, fmt.Sprintf("SCAN-2: rows collected with pages of %d", limit), want, got)
	}
}

// Catches: a limit applied before the second filter key (or before the
// scope is checked), so a page comes back short while matching rows remain.
func scanShortPage(t T, h Harness) {
	conn := openStore(t, h)
	var rows, mine []driver.Row
	for i := range 69 { // 23 rows of owner u1 among 46 of owner u2
		owner := "u2"
		if i%3 == 0 {
			owner = "u1"
		}
		r := todo(fmt.Sprintf("m%02d", i), "p1", owner)
		rows = append(rows, r)
		if owner == "u1" {
			mine = append(mine, r)
		}
	}
	rows = append(rows, todo("m00x", "p2", "u1"), todo("m99", "p2", "u1"))
	push(t, conn, "p1", tTodos, rows...)
	f := driver.ScopeFilter{"project": {"p1"}, "owner": {"u1"}}
	for _, limit := range []int{1, 4, 5, 22, 23, 24, 100} {
		q := driver.ScanQuery{Table: tTodos, Filter: f, Limit: limit}
		pages := scanPageAll(t, conn, q, len(mine)+2, func(p []driver.Row) bool { return len(p) < limit })
		last := pages[len(pages)-1]
		after := ""
		for _, r := range slices.Concat(pages...) {
			after = max(after, r.ID)
		}
		if left := scanModel(rows, driver.ScanQuery{Table: tTodos, Filter: f, AfterRowID: after, Limit: 10000}); len(left) > 0 {
			t.Errorf("SCAN-3: with limit %d a page of %d rows came back short after %q, but rows %v still match", limit,
				len(last), after, ids(left))
		}
		rest := scanRead(t, conn, driver.ScanQuery{Table: tTodos, Filter: f, AfterRowID: after, Limit: 10000})
		if len(rest) > 0 {
			t.Errorf("SCAN-3: with limit %d a short page ended at %q, but scanning on returns %v", limit, after, ids(rest))
		}
		expectEqual(t, fmt.Sprintf("SCAN-3: rows collected with pages of %d", limit), scanSorted(mine),
			scanSorted(slices.Concat(pages...)))
	}
}

// Catches: scope-index entries left behind by a delete, so a scan still
// returns a row that no longer exists (or counts it against the limit).
// Whether DeleteRow removes the row is ROW-3's to check; this case checks
// that scans agree with the rows' existence as GetRow reports it.
func scanDeletedRowsVanish(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	var rows []driver.Row
	byID := map[string]driver.Row{}
	for i, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		rows = append(rows, todo(id, "p1", fmt.Sprintf("u%d", 1+i%2)))
		byID[id] = rows[i]
	}
	push(t, conn, "p1", tTodos, rows...)
	deleted := map[string]bool{}
	for _, batch := range [][]string{{"b", "d"}, {"g", "a"}} {
		tx := begin(t, conn, "p1")
		var changes []driver.Change
		for _, id := range batch {
			if err := tx.DeleteRow(ctx, tTodos, id); err != nil {
				_ = tx.Rollback(ctx)
				t.Fatalf("setup: DeleteRow(%q): %v", id, err)
			}
			deleted[id] = true
			changes = append(changes, deleteChange(tTodos, byID[id]))
		}
		if _, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 2, Changes: changes}); err != nil {
			_ = tx.Rollback(ctx)
			t.Fatalf("setup: AppendCommit: %v", err)
		}
		commit(t, tx)
	}
	var live []driver.Row
	for _, r := range rows {
		if deleted[r.ID] {
			_, found, err := conn.GetRow(ctx, "p1", tTodos, r.ID)
			must(t, "GetRow of a deleted row", err)
			if !found {
				continue
			}
			t.Logf("SCAN-4: DeleteRow(%q) left the row in place (ROW-3's case reports it); expecting scans to show it", r.ID)
		}
		live = append(live, r)
	}
	for _, f := range []driver.ScopeFilter{{"project": {"p1"}}, {"owner": {"u1"}}, {"owner": {"u2"}},
		{"project": {"p1"}, "owner": {"u1", "u2"}}} {
		for _, c := range []struct {
			after string
			limit int
		}{{"", 100}, {"", 1}, {"", 2}, {"", 3}} {
			q := driver.ScanQuery{Table: tTodos, Filter: f, AfterRowID: c.after, Limit: c.limit}
			expectEqual(t, fmt.Sprintf("SCAN-4: ids for %v after %q limit %d", winFmt(f), c.after, c.limit),
				ids(scanModel(live, q)), ids(scanSorted(scanRead(t, conn, q))))
		}
	}
}

// Catches: a re-scoped row still found under its old scope, found twice
// (old and new index entries), or returned with its old values.
func scanRescopedRow(t T, h Harness) {
	conn := openStore(t, h)
	s := todo("s", "p1", "u1")
	r1 := todo("r", "p1", "u1")
	push(t, conn, "p1", tTodos, r1, s)
	r2 := todo("r", "p2", "u2")
	r2.ServerVersion, r2.Values["title"] = 2, "moved"
	push(t, conn, "p1", tTodos, r2)
	check := func(stage string, current []driver.Row, filters ...driver.ScopeFilter) {
		for _, f := range filters {
			q := driver.ScanQuery{Table: tTodos, Filter: f, Limit: 100}
			expectEqual(t, fmt.Sprintf("SCAN-4: %s: rows for %v", stage, winFmt(f)), scanModel(current, q),
				scanSorted(scanRead(t, conn, q)))
		}
	}
	filters := []driver.ScopeFilter{{"project": {"p1"}}, {"project": {"p2"}}, {"project": {"p1", "p2"}},
		{"owner": {"u1"}}, {"owner": {"u2"}}, {"project": {"p1"}, "owner": {"u2"}}, {"project": {"p2"}, "owner": {"u1"}},
		{"project": {"p2"}, "owner": {"u2"}}}
	check("after moving r to p2/u2", []driver.Row{r2, s}, filters...)
	r3 := todo("r", "p1", "u2")
	r3.ServerVersion = 3
	push(t, conn, "p1", tTodos, r3)
	check("after moving r back to p1 with owner u2", []driver.Row{r3, s}, filters...)
}

// Catches: a scan whose SQL names a list of values, or a derived table,
// with an alias an application table may also have (SCH-2 allows "v",
// "j", "k", "r"…), so that for a table of that name a reference meant for
// the alias resolves to the table's own column: rows outside the filter,
// rows repeated, rows skipped (a page bound taken from the wrong column),
// or an error. Value lists of 2 or 3 and of 40 (past a driver's
// switch to another form for long lists), with a second key, paged one
// row at a time.
func scanAliasNamedTables(t T, h Harness) {
	ctx := t.Context()
	conn := h.Open(t)
	names := slices.Concat(aliasTableNames, []string{"value"})
	must(t, "setup: EnsureSchema", conn.EnsureSchema(ctx, aliasNamedSchema(names,
		driver.Scope{Variable: "g", Column: "value"}, driver.Scope{Variable: "h", Column: "id"})))
	tx, err := conn.Begin(ctx, "p1")
	must(t, "setup: Begin", err)
	for _, name := range names {
		// Rows outside a filter lie between rows in it, so a page bound
		// computed over the wrong column ends a scan early.
		for _, r := range [][3]string{{"a", "g1", "i1"}, {"b", "g3", "i3"}, {"c", "g2", "i2"}, {"d", "g1", "i3"}} {
			key, g, id := r[0], r[1], r[2]
			must(t, "setup: UpsertRow", tx.UpsertRow(ctx, name, driver.Row{ID: key, ServerVersion: 1,
				Scopes: driver.Scopes{"g": g, "h": id}, Values: driver.Values{"key": key, "id": id, "value": g}}))
		}
	}
	must(t, "setup: Commit", tx.Commit(ctx))
	for _, name := range names {
		for _, c := range []scanFilterCase{
			{driver.ScopeFilter{"g": {"g1", "g2"}}, []string{"a", "c", "d"}},
			{driver.ScopeFilter{"g": winManyValues(40, "g2", "g1")}, []string{"a", "c", "d"}},
			{driver.ScopeFilter{"g": {"g1", "g2", "g3"}, "h": {"i2", "i3"}}, []string{"b", "c", "d"}},
			{driver.ScopeFilter{"h": winManyValues(40, "i3"), "g": {"g3", "g1"}}, []string{"b", "d"}},
		} {
			var got []string
			after := ""
			for page := 0; page < 6; page++ {
				rows := scanRead(t, conn, driver.ScanQuery{Table: name, Filter: c.filter, AfterRowID: after, Limit: 1})
				if len(rows) == 0 {
					break
				}
				got = append(got, ids(rows)...)
				after = rows[len(rows)-1].ID
			}
			expectEqual(t, fmt.Sprintf("SCAN-1: ids of table %q for filter %v, a row a page", name, winFmt(c.filter)), c.want, got)
			all := scanRead(t, conn, driver.ScanQuery{Table: name, Filter: c.filter, Limit: 100})
			expectEqual(t, fmt.Sprintf("SCAN-1: ids of table %q for filter %v, one page", name, winFmt(c.filter)), c.want, ids(all))
		}
	}
}

// aliasTableNames are table names SCH-2 allows that a driver's SQL may
// also use as aliases of a value list or a derived table.
var aliasTableNames = []string{"k", "v", "j", "r", "t", "u", "o", "x", "id"}

// aliasNamedSchema is a schema of one table per name, each with primary
// key "key", a column "id" that is not the key, a column "value", and the
// given scopes: a reference meant for an alias "k", "v"… (or its column
// "id", "value") that resolves to the table instead reads the wrong
// column.
func aliasNamedSchema(names []string, scopes ...driver.Scope) driver.Schema {
	var tables []driver.Table
	for _, name := range names {
		tables = append(tables, driver.Table{Name: name,
			Columns: []driver.Column{{Name: "key", Type: driver.TypeString}, {Name: "id", Type: driver.TypeString},
				{Name: "value", Type: driver.TypeString}},
			PrimaryKey: "key", Scopes: scopes})
	}
	return driver.Schema{Version: 1, Tables: tables}
}
