package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestScanStoreBeforeCover: a store created before the scope indexes
// covered the row (each scope index on ("_sync_partition", column, pk)
// only) is scanned through those indexes, under the same names, with the
// same results as through the covers, before and after more writes; its
// plans name the plain index (rows looked up in the table), a new store's
// the cover (internal/sqlitesql, CreateSQL).
func TestScanStoreBeforeCover(t *testing.T) {
	ctx := context.Background()
	c, path := openTest(t)
	var rows []driver.Row
	for i := range 60 {
		rows = append(rows, todoRow(fmt.Sprintf("r%03d", i), fmt.Sprintf("p%d", i%3), fmt.Sprintf("o%d", i%4)))
	}
	pushRows(t, c, "P", rows...)
	queries := []driver.ScanQuery{
		{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 7},
		{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, AfterRowID: "r030", Limit: 100},
		{Table: "todos", Filter: driver.ScopeFilter{"project": {"p0", "p2"}, "owner": {"o1", "o2"}}, Limit: 5},
		{Table: "todos", Filter: driver.ScopeFilter{"owner": {"o3"}, "project": {"p0", "p1", "p2"}}, AfterRowID: "r011", Limit: 100},
	}
	scanAll := func(c *Conn) [][]driver.Row {
		t.Helper()
		var out [][]driver.Row
		for _, q := range queries {
			got, err := c.ScanRows(ctx, "P", q)
			if err != nil {
				t.Fatalf("ScanRows %+v: %v", q, err)
			}
			if len(got) == 0 {
				t.Fatalf("ScanRows %+v: no rows", q)
			}
			out = append(out, got)
		}
		return out
	}
	want := scanAll(c)
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	one, err := x.ScanSQL("P", queries[0])
	if err != nil {
		t.Fatal(err)
	}
	const cover = "SEARCH todos USING COVERING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"
	checkPlans(t, c, []planCase{{name: "scan of a new store", query: one.Query, args: one.Args, want: []string{cover}}})

	// The layout of a store created before the covers.
	plainScopeIndexes(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	old := openDSN(t, path)
	if err := old.EnsureSchema(ctx, testSchema()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, scanAll(old)); d != "" {
		t.Errorf("scans of the store before the covers (-through the covers +through the plain indexes):\n%s", d)
	}
	checkPlans(t, old, []planCase{{name: "scan of a store before the covers", query: one.Query, args: one.Args,
		want:      []string{"SEARCH todos USING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"},
		forbidden: []string{"COVERING", "SCAN todos", "TEMP B-TREE"}}})

	// Writes keep the plain indexes: a re-scoped row moves, a new row appears.
	moved := todoRow("r004", "p2", "o0")
	pushRows(t, old, "P", moved, todoRow("r100", "p1", "o3"))
	got, err := old.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	wantIDs := []string{"r001", "r007", "r010", "r013", "r016", "r019", "r022", "r025", "r028", "r031", "r034", "r037",
		"r040", "r043", "r046", "r049", "r052", "r055", "r058", "r100"}
	if d := cmp.Diff(wantIDs, ids); d != "" {
		t.Errorf("project p1 after writes (-want +got):\n%s", d)
	}
}

// TestScanCoverAfterAddColumn: a migration appending a column (SCH-6)
// re-creates the scope indexes as covers of the new row, on a new store
// and on one created before the covers (plain scope indexes), so a scan
// still walks the index alone and returns every column's current value;
// the store stays consistent (integrity_check). Plans are read on the
// writer: a reader may still hold the schema from before the migration
// and prepare the EXPLAIN against it.
func TestScanCoverAfterAddColumn(t *testing.T) {
	ctx := context.Background()
	for _, before := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain scope indexes before %v", before), func(t *testing.T) {
			c, _ := openTest(t)
			var rows []driver.Row
			for i := range 30 {
				rows = append(rows, todoRow(fmt.Sprintf("r%03d", i), fmt.Sprintf("p%d", i%3), fmt.Sprintf("o%d", i%2)))
			}
			pushRows(t, c, "P", rows...)
			if before {
				plainScopeIndexes(t, c)
			}
			s := testSchema()
			s.Version = 2
			s.Tables[0].Columns = append(s.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
			if err := c.EnsureSchema(ctx, s); err != nil {
				t.Fatal(err)
			}
			noted := todoRow("r004", "p1", "o0")
			noted.Values["note"] = "n4"
			pushRows(t, c, "P", noted)

			x, err := c.state.Table("todos")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				f     driver.ScopeFilter
				index string
			}{
				{driver.ScopeFilter{"project": {"p1"}}, "_sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"},
				{driver.ScopeFilter{"owner": {"o0"}}, "_sync_sx_5_todos_owner_id (_sync_partition=? AND owner_id=? AND id>?)"},
			} {
				plan, err := x.ScanSQL("P", driver.ScanQuery{Table: "todos", Filter: q.f, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				got := writerPlan(t, c, plan.Query, plan.Args...)
				if want := "SEARCH todos USING COVERING INDEX " + q.index; !strings.Contains(got, want) {
					t.Errorf("scan %v after ADD COLUMN: plan lacks %q:\n%s", q.f, want, got)
				}
			}
			got, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			notes := map[string]any{}
			for _, r := range got {
				notes[r.ID] = r.Values["note"]
			}
			want := map[string]any{"r001": nil, "r004": "n4", "r007": nil, "r010": nil, "r013": nil, "r016": nil, "r019": nil,
				"r022": nil, "r025": nil, "r028": nil}
			if d := cmp.Diff(want, notes); d != "" {
				t.Errorf("project p1 after ADD COLUMN, notes by id (-want +got):\n%s", d)
			}
			var check string
			if err := c.w.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
				t.Errorf("integrity_check: %q, %v", check, err)
			}
		})
	}
}

// writerPlan returns the EXPLAIN QUERY PLAN details of q prepared on the
// writer, one per line (queryPlan's readers may still hold the schema as
// it was before a migration).
func writerPlan(t *testing.T, c *Conn, q string, args ...any) string {
	t.Helper()
	return explainPlan(t, c.w, q, args...)
}

// plainScopeIndexes puts todos' scope indexes back to the layout of a
// store created before the covers: (partition, column, id).
func plainScopeIndexes(t *testing.T, c *Conn) {
	t.Helper()
	for _, col := range []string{"project_id", "owner_id"} {
		name := sqlitesql.Quote(sqlitesql.ScopeIndexName("todos", col))
		for _, q := range []string{"DROP INDEX " + name,
			"CREATE INDEX " + name + ` ON todos ("_sync_partition", ` + sqlitesql.Quote(col) + `, id)`} {
			if _, err := c.w.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
}
