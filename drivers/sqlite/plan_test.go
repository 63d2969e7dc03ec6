package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// queryPlan returns the EXPLAIN QUERY PLAN details of q, one per line.
func queryPlan(t *testing.T, c *Conn, q string, args ...any) string {
	t.Helper()
	return explainPlan(t, c.r, q, args...)
}

// explainPlan returns the EXPLAIN QUERY PLAN details of q run on db, one
// per line.
func explainPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// planCase is one statement whose plan must contain every want and none
// of the forbidden fragments.
type planCase struct {
	name      string
	query     string
	args      []any
	want      []string
	forbidden []string
}

func checkPlans(t *testing.T, c *Conn, cases []planCase) {
	t.Helper()
	for _, pc := range cases {
		plan := queryPlan(t, c, pc.query, pc.args...)
		for _, w := range pc.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: plan lacks %q:\n%s", pc.name, w, plan)
			}
		}
		for _, f := range pc.forbidden {
			if strings.Contains(plan, f) {
				t.Errorf("%s: plan contains %q:\n%s", pc.name, f, plan)
			}
		}
		t.Logf("%s:\n%s", pc.name, plan)
	}
}

// TestPlans pins the plans of the hot statements (WIN-7, SCAN-5, and
// docs/performance.md's "cost must not grow with the store"): every one is served by
// the index made for its access, never by a scan of the log or of a table.
// The store holds data, and ANALYZE ran, so the planner has statistics
// that could tempt it into a scan.
func TestPlans(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 50; i++ {
		pushRows(t, c, "P", todoRow(string(rune('a'+i%26))+string(rune('a'+i/26)), "p"+string(rune('0'+i%3)), "o1"))
	}
	for i := range 2000 { // enough client records for the planner to prefer an index walk
		rec := driver.ClientRecord{ClientID: fmt.Sprintf("c-%04d", i), ActorID: "a", Cursor: int64(i), UpdatedAtMs: int64(i % 700)}
		if err := c.PutClientRecord(ctx, "P", rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	one, err := x.ScanSQL("P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	list, err := x.ScanSQL("P", driver.ScanQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p1", "p2"}, "owner": {"o1", "o2", "o3"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if one.Bound != "" || list.Bound == "" {
		t.Fatalf("bound queries: one value %q, list %q", one.Bound, list.Bound)
	}
	const (
		csIndex    = "SEARCH cs USING PRIMARY KEY (partition=? AND tbl=? AND variable=? AND value=? AND seq>? AND seq<?)"
		chByPK     = "SEARCH ch USING PRIMARY KEY (partition=? AND seq=? AND idx=?)"
		commitByPK = "SEARCH c USING PRIMARY KEY (partition=? AND seq=?)"
		projectIx  = "USING COVERING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"
	)
	checkPlans(t, c, []planCase{
		{name: "window, one value (WIN-7)", query: sqlitesql.WindowSingle,
			args:      []any{"P", "todos", "project", "p1", 0, 100},
			want:      []string{csIndex, chByPK, commitByPK},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "window, value list (WIN-7, V-6)", query: sqlitesql.WindowList,
			args:      []any{"P", "todos", "project", `["p1","p2"]`, 0, 100},
			want:      []string{csIndex, chByPK, commitByPK},
			forbidden: []string{"SCAN _sync_change", "SCAN cs", "SCAN ch", "SCAN c\n"}},
		{name: "scan, one value (SCAN-5)", query: one.Query, args: one.Args,
			want:      []string{"SEARCH todos " + projectIx},
			forbidden: []string{"SCAN todos", "TEMP B-TREE"}},
		{name: "scan, value lists, bounded (SCAN-5)", query: list.BoundedQuery, args: append(list.Args, "zz"),
			want:      []string{"SEARCH todos USING COVERING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>? AND id<?)"},
			forbidden: []string{"SCAN todos"}},
		{name: "scan, value lists, unbounded (SCAN-5)", query: list.Query, args: list.Args,
			want:      []string{"SEARCH todos " + projectIx},
			forbidden: []string{"SCAN todos"}},
		{name: "scan bound, value lists (SCAN-5)", query: list.Bound, args: list.BoundArgs,
			want:      []string{"SEARCH todos " + projectIx},
			forbidden: []string{"SCAN todos", "TEMP B-TREE"}},
		{name: "window bound, value list (WIN-7)", query: sqlitesql.WindowBound,
			args:      []any{"P", "todos", "project", `["p1","p2"]`, 0, 100, 10},
			want:      []string{csIndex},
			forbidden: []string{"SCAN _sync_change", "SCAN cs", "TEMP B-TREE"}},
		{name: "get row", query: x.Get, args: []any{"P", "aa"},
			want:      []string{"SEARCH todos USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id=?)"},
			forbidden: []string{"SCAN"}},
		{name: "delete row", query: x.Delete, args: []any{"P", "aa"},
			want:      []string{"SEARCH todos USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id=?)"},
			forbidden: []string{"SCAN"}},
		{name: "change-scope maintenance on prune (HZ-2)", query: sqlitesql.PruneChangeScopes, args: []any{"P", 10},
			want:      []string{"SEARCH ch USING PRIMARY KEY (partition=? AND seq<?)", "_sync_change_scopes USING PRIMARY KEY (partition=? AND tbl=? AND variable=? AND value=? AND seq=? AND idx=?)"},
			forbidden: []string{"SCAN _sync_change_scopes", "SCAN ch"}},
		{name: "change-scope entries of a new change", query: sqlitesql.InsertChangeScopes,
			args:      []any{"P", 1, `[["todos","a","upsert",{"project":"p1"},"{}",1]]`},
			forbidden: []string{"SCAN _sync", "TEMP B-TREE"}},
		{name: "next seq", query: sqlitesql.NextSeq, args: []any{"P"},
			forbidden: []string{"SCAN _sync"}},
		{name: "prune changes", query: sqlitesql.PruneChanges, args: []any{"P", 10},
			want:      []string{"SEARCH _sync_changes USING PRIMARY KEY (partition=? AND seq<?)"},
			forbidden: []string{"SCAN"}},
		{name: "commit seq before (HZ-3)", query: sqlitesql.CommitSeqBefore, args: []any{"P", 10},
			want:      []string{"_sync_commits_by_time (partition=? AND created_at_ms<?)"},
			forbidden: []string{"SCAN _sync_commits "}},
		{name: "max seq", query: sqlitesql.SelectPartitionSeqs, args: []any{"P"},
			want: []string{"SEARCH _sync_partitions USING PRIMARY KEY (partition=?)"}},
		{name: "push result", query: sqlitesql.SelectPushResult, args: []any{"P", "c", "cc"},
			want: []string{"SEARCH _sync_push_results USING PRIMARY KEY (partition=? AND client_id=? AND client_commit_id=?)"}},
		{name: "window round, value list (WIN-7)", query: sqlitesql.WindowRound,
			args:      []any{"P", "todos", "project", `["p1","p2"]`, 0, 100, 10},
			want:      []string{csIndex, chByPK, commitByPK},
			forbidden: []string{"SCAN _sync_change", "SCAN cs", "SCAN ch", "SCAN c\n"}},
		{name: "client cursors, first page (CR-3)", query: sqlitesql.ListClientCursors, args: []any{"P", "", 10},
			want:      []string{"SEARCH _sync_clients USING PRIMARY KEY (partition=? AND client_id>?)"},
			forbidden: []string{"TEMP B-TREE", "SCAN"}},
		{name: "client cursors, next page (CR-3)", query: sqlitesql.ListClientCursors, args: []any{"P", "c-0500", 10},
			want:      []string{"SEARCH _sync_clients USING PRIMARY KEY (partition=? AND client_id>?)"},
			forbidden: []string{"TEMP B-TREE", "SCAN"}},
		{name: "client records, first page (ADM-2)", query: sqlitesql.AdminListClients, args: []any{"P", 10},
			want:      []string{"SEARCH _sync_clients USING INDEX _sync_clients_by_time (partition=?)"},
			forbidden: []string{"TEMP B-TREE", "SCAN"}},
		{name: "client records, next page (ADM-2)", query: sqlitesql.AdminListClientsAfter, args: []any{"P", 500, "c-0500", 10},
			want:      []string{"SEARCH _sync_clients USING INDEX _sync_clients_by_time (partition=? AND (updated_at_ms,client_id)<(?,?))"},
			forbidden: []string{"TEMP B-TREE", "SCAN"}},
		{name: "registry page", query: sqlitesql.ListRegistry, args: []any{"", 10},
			want:      []string{"SEARCH _sync_registry USING PRIMARY KEY (partition>?)"},
			forbidden: []string{"TEMP B-TREE"}},
	})
}

// TestPlansManyPartitions is the plan half of W8 (docs/performance.md): on a store of 1,000 small partitions, analyzed,
// a window read and a scan of one of them are served by the indexes that
// lead with the partition — a search of that partition's entries, never a
// scan — so their cost does not depend on the other partitions.
func TestPlansManyPartitions(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for k := range 1000 {
		p := fmt.Sprintf("tenant-%07d", k)
		for j := range 2 {
			var rows []driver.Row
			for i := range 5 {
				n := j*5 + i
				rows = append(rows, todoRow(fmt.Sprintf("r%04d", n), fmt.Sprintf("p%d", n%3), fmt.Sprintf("o%d", n%4)))
			}
			pushRows(t, c, p, rows...)
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	const tenant = "tenant-0000500"
	scan, err := x.ScanSQL(tenant, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	checkPlans(t, c, []planCase{
		{name: "window of one tenant, one value (WIN-7)", query: sqlitesql.WindowSingle,
			args: []any{tenant, "todos", "project", "p1", 0, 2},
			want: []string{"SEARCH cs USING PRIMARY KEY (partition=? AND tbl=? AND variable=? AND value=? AND seq>? AND seq<?)",
				"SEARCH ch USING PRIMARY KEY (partition=? AND seq=? AND idx=?)", "SEARCH c USING PRIMARY KEY (partition=? AND seq=?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "scan of one tenant, one value (SCAN-5)", query: scan.Query, args: scan.Args,
			want:      []string{"SEARCH todos USING COVERING INDEX _sync_sx_5_todos_project_id (_sync_partition=? AND project_id=? AND id>?)"},
			forbidden: []string{"SCAN todos", "TEMP B-TREE"}},
		{name: "max seq of one tenant", query: sqlitesql.SelectPartitionSeqs, args: []any{tenant},
			want: []string{"SEARCH _sync_partitions USING PRIMARY KEY (partition=?)"}},
	})
}
