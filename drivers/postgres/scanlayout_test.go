package postgres

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// TestScanRowsOfAnySize scans scopes whose rows are a mix of rows that fit
// in the scope's cover and rows too large for it (scanlayout.go: a title
// of 3,000 bytes), interleaved in id order, in pages small enough to
// split each run: every page holds the rows of both kinds in id order up
// to the limit, byte for byte (SCAN-1…SCAN-3), through the one-value scan,
// the value-list scan and a scan filtered by a second scope, in a Tx and
// outside one.
func TestScanRowsOfAnySize(t *testing.T) {
	t.Parallel()
	c, _ := openTest(t)
	ctx := t.Context()
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.covered) != 2 {
		t.Fatalf("todos is scanned through the index pairs of %v; want project and owner", x.covered)
	}
	title := func(n int) string {
		if n%3 == 1 || n%7 == 0 {
			return strings.Repeat(fmt.Sprintf("%d-", n%10), 1500) // 3,000 bytes: too large for the cover
		}
		return fmt.Sprintf("todo %d", n)
	}
	want := map[string][]string{} // project → ids in order
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var changes []driver.Change
	for n := range 60 {
		r := todoRow(fmt.Sprintf("r%03d", n), fmt.Sprintf("p%d", n%2), fmt.Sprintf("o%d", n%3))
		r.Values["title"] = title(n)
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
		want["p"+fmt.Sprint(n%2)] = append(want["p"+fmt.Sprint(n%2)], r.ID)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k", ActorID: "a", CreatedAtMs: 1, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	scanAll := func(f driver.ScopeFilter, limit int) []string {
		t.Helper()
		var ids []string
		after := ""
		for {
			rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "todos", Filter: f, AfterRowID: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				var n int
				fmt.Sscanf(r.ID, "r%d", &n)
				if r.Values["title"] != title(n) {
					t.Fatalf("%v: row %s read back with a title of %d bytes; want %d", f, r.ID, len(fmt.Sprint(r.Values["title"])), len(title(n)))
				}
				ids = append(ids, r.ID)
			}
			if len(rows) < limit {
				return ids
			}
			after = rows[len(rows)-1].ID
		}
	}
	for _, limit := range []int{1, 4, 7, 100} {
		if got := scanAll(driver.ScopeFilter{"project": {"p1"}}, limit); !slices.Equal(got, want["p1"]) {
			t.Errorf("project p1, pages of %d: %v; want %v", limit, got, want["p1"])
		}
		all := slices.Sorted(slices.Values(append(append([]string(nil), want["p0"]...), want["p1"]...)))
		if got := scanAll(driver.ScopeFilter{"project": {"p1", "p0"}}, limit); !slices.Equal(got, all) {
			t.Errorf("projects p0 and p1, pages of %d: %v; want %v", limit, got, all)
		}
		var o2 []string
		for _, id := range want["p0"] {
			var n int
			fmt.Sscanf(id, "r%d", &n)
			if n%3 == 2 {
				o2 = append(o2, id)
			}
		}
		if got := scanAll(driver.ScopeFilter{"project": {"p0"}, "owner": {"o2"}}, limit); !slices.Equal(got, o2) {
			t.Errorf("project p0 and owner o2, pages of %d: %v; want %v", limit, got, o2)
		}
	}
}

// TestScanIndexPairsFollowTheSchema: a table created by an earlier
// release (no index pairs) is scanned through its scope indexes, as
// before, until CreateScanIndexes builds its pairs; a migration that appends a column to a table replaces its pairs
// by pairs that include the column (the old pairs are dropped, the new
// ones used); and a pair left invalid is not used.
func TestScanIndexPairsFollowTheSchema(t *testing.T) {
	t.Parallel()
	c, dsn := openTest(t)
	ctx := t.Context()
	if _, err := pushTodos(ctx, c, "p", 0, 10); err != nil {
		t.Fatal(err)
	}
	pairs := func() []string {
		t.Helper()
		var names []string
		rows, err := c.pool.Query(ctx, `SELECT c.relname::text FROM pg_class AS c JOIN pg_index AS i ON i.indexrelid = c.oid
			WHERE i.indrelid = 'todos'::regclass AND (c.relname LIKE '\_sync\_sc\_%' OR c.relname LIKE '\_sync\_sr\_%') ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	scanned := func(c *Conn) []string {
		t.Helper()
		x, err := c.state.Table("todos")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p3"}}, Limit: 10})
		if err != nil || len(rows) != 1 || rows[0].ID != "r0000003" {
			t.Fatalf("scan of p3: %v, %v; want r0000003", rows, err)
		}
		return x.covered
	}
	before := pairs()
	if len(before) != 4 {
		t.Fatalf("todos' index pairs: %v; want 4 indexes", before)
	}
	// A store of an earlier release: no pairs.
	for _, n := range before {
		if _, err := c.pool.Exec(ctx, "DROP INDEX "+quote(n)); err != nil {
			t.Fatal(err)
		}
	}
	if got := scanned(openDSN(t, dsn)); len(got) != 0 {
		t.Fatalf("without index pairs, scans use pairs of %v", got)
	}
	// The pairs built on the live store (CreateScanIndexes): used at once
	// by the Conn that built them.
	c2 := openDSN(t, dsn)
	if err := c2.CreateScanIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := scanned(c2); len(got) != 2 || !slices.Equal(pairs(), before) {
		t.Fatalf("after CreateScanIndexes, scans use pairs of %v, the table has %v; want two, %v", got, pairs(), before)
	}
	// One left invalid (as by a cancelled build): its scope is scanned
	// without it, and the next CreateScanIndexes builds it again.
	if _, err := c.pool.Exec(ctx, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, before[0]); err != nil {
		t.Fatal(err)
	}
	if got := scanned(openDSN(t, dsn)); len(got) != 1 {
		t.Fatalf("with one pair valid, scans use pairs of %v; want one", got)
	}
	if err := c2.CreateScanIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := scanned(openDSN(t, dsn)); len(got) != 2 {
		t.Fatalf("with both pairs rebuilt, scans use pairs of %v; want two", got)
	}
	// A migration appending a column replaces the pairs.
	next := conformance.TestSchema()
	next.Version++
	for i := range next.Tables {
		if next.Tables[i].Name == "todos" {
			next.Tables[i].Columns = append(next.Tables[i].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
		}
	}
	if err := c.EnsureSchema(ctx, next); err != nil {
		t.Fatal(err)
	}
	after := pairs()
	if len(after) != 4 || slices.ContainsFunc(after, func(n string) bool { return slices.Contains(before, n) }) {
		t.Fatalf("after the migration, todos' pairs are %v; want 4 new ones in place of %v", after, before)
	}
	if got := scanned(c); len(got) != 2 {
		t.Fatalf("after the migration, scans use pairs of %v; want two", got)
	}
}
