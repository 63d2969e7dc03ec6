package d1http

import (
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestD1ReadPlans pins, on the D1 double, the plans of D1's text-integer
// variants of the window, whole-commit and client-record reads, the ack,
// the admin row page and a scan page (WIN-7, LOG-4, CR-3, CR-6, ADM-2,
// ADM-3, SCAN-5):
// each is served by the index its SQLite original uses (drivers/sqlite's
// TestPlans pins those on a loaded store). The store holds 2,000 client
// records and ANALYZE ran, so the planner has statistics that could
// tempt it into a scan.
func TestD1ReadPlans(t *testing.T) {
	srv, _ := newDouble(t)
	c := openOn(t, srv, "")
	ctx := t.Context()
	for i := range 2000 { // enough client records for the planner to prefer an index walk
		rec := driver.ClientRecord{ClientID: fmt.Sprintf("c-%04d", i), ActorID: "a", Cursor: int64(i), UpdatedAtMs: int64(i % 700)}
		if err := c.PutClientRecord(ctx, "P", rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.rows(ctx, "analyze", "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	todos, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	scan, err := todos.ScanSQL("P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	const (
		csIndex    = "SEARCH cs USING PRIMARY KEY (partition=? AND tbl=? AND variable=? AND value=? AND seq>? AND seq<?)"
		chByPK     = "SEARCH ch USING PRIMARY KEY (partition=? AND seq=? AND idx=?)"
		commitByPK = "SEARCH c USING PRIMARY KEY (partition=? AND seq=?)"
	)
	for _, pc := range []struct {
		name            string
		q               string
		args            []any
		want, forbidden []string
	}{
		{"window round, value list (WIN-7)", d1sql.D1Window(sqlitesql.WindowRound),
			[]any{"P", "todos", "project", `["p1","p2"]`, 0, 100, 10},
			[]string{csIndex, chByPK, commitByPK},
			[]string{"SCAN _sync_change", "SCAN cs", "SCAN ch", "SCAN c\n"}},
		{"client cursors (CR-3)", d1sql.D1ListClientCursors, []any{"P", "c-0500", 10},
			[]string{"SEARCH _sync_clients USING PRIMARY KEY (partition=? AND client_id>?)"},
			[]string{"TEMP B-TREE", "SCAN"}},
		{"client records, first page (ADM-2)", d1sql.D1AdminListClients, []any{"P", 10},
			[]string{"SEARCH _sync_clients USING INDEX _sync_clients_by_time (partition=?)"},
			[]string{"TEMP B-TREE", "SCAN"}},
		{"client records, next page (ADM-2)", d1sql.D1AdminListClientsAfter, []any{"P", 500, "c-0500", 10},
			[]string{"SEARCH _sync_clients USING INDEX _sync_clients_by_time (partition=? AND (updated_at_ms,client_id)<(?,?))"},
			[]string{"TEMP B-TREE", "SCAN"}},
		{"whole commits by seq range (LOG-4)", d1sql.D1ReadCommits, []any{"P", 10, 1 << 40, 25},
			[]string{"SEARCH ch USING PRIMARY KEY (partition=? AND seq>? AND seq<?)", commitByPK,
				"SEARCH b USING PRIMARY KEY (partition=? AND seq>? AND seq<?)"},
			[]string{"SCAN", "TEMP B-TREE"}},
		{"ack a client cursor (CR-6)", sqlitesql.AckClient, []any{"P", "c-0100", "a", "5", "1000"},
			[]string{"SEARCH _sync_clients USING PRIMARY KEY (partition=? AND client_id=?)",
				"SEARCH _sync_partitions USING PRIMARY KEY (partition=?)"},
			[]string{"SCAN"}},
		{"scan page, one value (SCAN-5): the scope index covers the row", d1sql.D1Rows(todos, scan.Query), scan.Args,
			[]string{"SEARCH todos USING COVERING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"},
			[]string{"SCAN todos", "TEMP B-TREE"}},
		{"admin rows (ADM-3)", d1sql.D1Rows(todos, todos.ListRows()), []any{"P", "r20", 10},
			[]string{"SEARCH todos USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id>?)"},
			[]string{"SCAN", "TEMP B-TREE"}},
	} {
		checkD1Plan(t, c, pc.name, pc.q, pc.args, pc.want, pc.forbidden)
	}
}

// TestD1ScanAfterAddColumn: on the D1 double, a migration appending a
// column (SCH-6) leaves the scope indexes as they were (no rebuild inside
// D1's one request: sqlitesql.MigrationSQL without rebuildCovers), and a
// scan page still walks its scope index — no table scan, no sort — and
// returns the new column's values, read from the table.
func TestD1ScanAfterAddColumn(t *testing.T) {
	srv, _ := newDouble(t)
	c := openOn(t, srv, "")
	ctx := t.Context()
	s := conformance.TestSchema()
	s.Version = 2
	s.Tables[0].Columns = append(s.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
	if err := c.EnsureSchema(ctx, s); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for i, note := range []any{"n0", nil} {
		id := fmt.Sprint("r", i)
		row := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "p1", "owner": "o1"},
			Values: driver.Values{"id": id, "title": "t", "done": false, "project_id": "p1", "owner_id": "o1", "updated_at": int64(1), "note": note}}
		if err := tx.UpsertRow(ctx, "todos", row); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	todos, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []driver.ScopeFilter{{"project": {"p1"}}, {"owner": {"o1"}}} {
		scan, err := todos.ScanSQL("P", driver.ScanQuery{Table: "todos", Filter: f, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkD1Plan(t, c, fmt.Sprintf("scan %v after ADD COLUMN", f), d1sql.D1Rows(todos, scan.Query), scan.Args,
			[]string{"SEARCH todos USING INDEX _sync_sx_5_todos_"}, []string{"SCAN todos", "TEMP B-TREE", "COVERING"})
		got, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: f, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Values["note"] != "n0" || got[1].Values["note"] != nil {
			t.Errorf("scan %v after ADD COLUMN: %v", f, got)
		}
	}
}
