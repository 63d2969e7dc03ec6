package mysql

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// Plan checks (WIN-7, SCAN-5; DESIGN "Cost must not grow with the
// store"): the statements of the hot read paths are served by the index
// built for them, never by a scan of the log or the table, and walk it in
// order where they stop at a limit. They pin what STRAIGHT_JOIN and FORCE
// INDEX promise; a planner change that broke it fails here.

// planStore returns a store with a few hundred commits in partition "p".
func planStore(t *testing.T) *Conn {
	c := openStore(t)
	for i := range 60 {
		var rows []driver.Row
		for k := range 5 {
			n := i*5 + k
			rows = append(rows, todoRow(fmt.Sprintf("r%04d", n), fmt.Sprintf("p%d", n%7), fmt.Sprintf("o%d", n%11)))
		}
		pushRows(t, c, "p", rows...)
	}
	if _, err := c.db.Exec("ANALYZE TABLE _sync_change_scopes, _sync_changes, _sync_commits, todos"); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectPlan fails unless every row of plan for one of tables uses want
// (table → index name) and no row of those tables is a full scan (type
// ALL or index); filesort fails when sorted is false.
func expectPlan(t *testing.T, what string, plan []planRow, want map[string]string, sorted bool) {
	t.Helper()
	t.Logf("%s: %v", what, plan)
	seen := map[string]bool{}
	for _, r := range plan {
		idx, ok := want[r.table]
		if !ok {
			continue
		}
		seen[r.table] = true
		if r.key != idx || r.typ == "ALL" || r.typ == "index" {
			t.Errorf("%s: table %s should be read through index %s, plan: %v", what, r.table, idx, plan)
		}
		if !sorted && strings.Contains(r.extra, "filesort") {
			t.Errorf("%s: table %s should be walked in index order (no filesort), plan: %v", what, r.table, plan)
		}
	}
	for table := range want {
		if !seen[table] {
			t.Errorf("%s: table %s is missing from the plan: %v", what, table, plan)
		}
	}
}

// TestPlanWindowReads pins the round statements as ReadCommitWindow runs
// them: the counters of the head (windowHead) by primary key, then the
// candidates, whose plan the head must not change (HZ-4, WIN-7, WIN-8).
func TestPlanWindowReads(t *testing.T) {
	c := planStore(t)
	if err := c.SetHorizonSeq(t.Context(), "p", 1); err != nil { // so _sync_horizons has p's row
		t.Fatal(err)
	}
	joins := map[string]string{"cs": "PRIMARY", "ch": "PRIMARY", "c": "PRIMARY",
		"_sync_partitions": "PRIMARY", "_sync_horizons": "PRIMARY"}
	expectPlan(t, "window, one value", explain(t, c, windowSingleRound, "p", "p",
		"p", "todos", "project", "p3", 0, 1000, 0, math.MaxInt32, 564), joins, false)

	args := []any{"p", "p"}
	for _, v := range []string{"p1", "p2", "p3"} {
		args = append(args, "p", "todos", "project", v, 0, 1000, 0, math.MaxInt32, 564)
	}
	expectPlan(t, "window, three values", explain(t, c, windowListRounds[3], append(args, 564)...), joins, true)

	expectPlan(t, "window, a long list as JSON", explain(t, c, withHead(c.windowJSON()), "p", "p",
		`["p1","p2","p3"]`, "p", "todos", "project", 0, 1000, 0, math.MaxInt32, 564), joins, true)

	expectPlan(t, "window counters (an empty value list)", explain(t, c, windowCounters, "p", "p"),
		map[string]string{"_sync_partitions": "PRIMARY", "_sync_horizons": "PRIMARY"}, false)
}

// TestPlanClientPages: client cursors (CR-3) and client records (ADM-2)
// are paged by a range read of an index in its order that stops at the
// limit, from just after the position, on a partition with thousands of
// clients.
func TestPlanClientPages(t *testing.T) {
	c := openStore(t)
	for _, p := range []string{"p", "q"} {
		for start := 0; start < 4000; start += 500 {
			var b strings.Builder
			var args []any
			for i := start; i < start+500; i++ {
				if i > start {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, 'a', 1, ?, ?, '[]')")
				args = append(args, p, fmt.Sprintf("c-%05d", i), i, i%700)
			}
			if _, err := c.db.Exec(`INSERT INTO _sync_clients (p, client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions) VALUES `+
				b.String(), args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.db.Exec("ANALYZE TABLE _sync_clients"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, q string
		args    []any
		index   string
	}{
		{"client cursors, first page", listClientCursors, []any{"p", "", 100}, "PRIMARY"},
		{"client cursors, next page", listClientCursors, []any{"p", "c-02500", 100}, "PRIMARY"},
		{"client records, first page", adminListClients, []any{"p", 100}, "_sync_clients_by_time"},
		{"client records, next page", adminListClientsAfter, []any{"p", 350, 350, "c-02500", 100}, "_sync_clients_by_time"},
	} {
		plan := explain(t, c, tc.q, tc.args...)
		expectPlan(t, tc.name, plan, map[string]string{"_sync_clients": tc.index}, false)
		// A page after a position must start there: a range over more
		// than the partition's key (ref on p alone would walk from the top).
		if strings.Contains(tc.name, "next page") {
			for _, r := range plan {
				if r.table == "_sync_clients" && r.typ != "range" {
					t.Errorf("%s: access type %s, want a range read from the position: %v", tc.name, r.typ, plan)
				}
			}
		}
	}
}

func TestPlanScans(t *testing.T) {
	c := planStore(t)
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	project := scopeIndexName(x.def, "project_id")
	for _, tc := range []struct {
		name   string
		filter driver.ScopeFilter
		key    string
		sorted bool
	}{
		{"one value", driver.ScopeFilter{"project": {"p3"}}, "project", false},
		{"one value and another key", driver.ScopeFilter{"project": {"p3"}, "owner": {"o1", "o2"}}, "project", false},
		{"three values", driver.ScopeFilter{"project": {"p1", "p2", "p3"}}, "project", true},
		{"a long list as JSON", driver.ScopeFilter{"project": manyValues(maxInlineValues + 8)}, "project", true},
	} {
		q, args, err := c.scanSQL(x, "p", driver.ScanQuery{Table: "todos", Filter: tc.filter, Limit: 100}, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		expectPlan(t, "scan, "+tc.name, explain(t, c, q, args...), map[string]string{"todos": project}, tc.sorted)
	}
}

// TestPlanScansOfAKeyScope: a scope on the primary-key column has no
// index of its own (SCH-1/scope-on-the-primary-key-column); its scans walk
// the primary key.
func TestPlanScansOfAKeyScope(t *testing.T) {
	c := openStore(t)
	ctx := t.Context()
	lists := driver.Table{Name: "lists", Columns: []driver.Column{{Name: "id", Type: driver.TypeString},
		{Name: "owner", Type: driver.TypeString}}, PrimaryKey: "id",
		Scopes: []driver.Scope{{Variable: "list", Column: "id"}, {Variable: "owner", Column: "owner"}}}
	schema := conformance.TestSchema()
	schema.Version++
	schema.Tables = append(schema.Tables, lists)
	if err := c.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		id, owner := fmt.Sprintf("l%04d", i), fmt.Sprintf("o%d", i%7)
		if err := tx.UpsertRow(ctx, "lists", driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"list": id, "owner": owner},
			Values: driver.Values{"id": id, "owner": owner}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "k", CreatedAtMs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.Exec("ANALYZE TABLE lists"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("lists")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		filter driver.ScopeFilter
		sorted bool
	}{
		{"one value", driver.ScopeFilter{"list": {"l0003"}}, false},
		{"one value and another key", driver.ScopeFilter{"list": {"l0003"}, "owner": {"o1", "o3"}}, false},
		{"three values", driver.ScopeFilter{"list": {"l0001", "l0002", "l0003"}}, true},
		{"a long list as JSON", driver.ScopeFilter{"list": manyValues(maxInlineValues + 8)}, true},
	} {
		q, args, err := c.scanSQL(x, "p", driver.ScanQuery{Table: "lists", Filter: tc.filter, Limit: 100}, "list")
		if err != nil {
			t.Fatal(err)
		}
		expectPlan(t, "scan by the key scope, "+tc.name, explain(t, c, q, args...), map[string]string{"lists": "PRIMARY"}, tc.sorted)
	}
}

// TestPlanPushRead pins BeginPush's reads (pushread.go): the rows by
// primary key, and the primary key the only index the optimizer weighs —
// MariaDB optimizes a prepared statement at every execution, and weighing
// the table's scope indexes (which lead with the partition too) cost
// more than reading the rows.
func TestPlanPushRead(t *testing.T) {
	c := planStore(t)
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	ids := []any{"r0001", "r0002", "absent"}
	for _, tc := range []struct {
		name  string
		q     string
		args  []any
		alias string
	}{
		{"the result and the rows", pushReadSQL(x, len(ids)), append([]any{"p", "c", "k", "p"}, ids...), "t"},
		{"the rows of a further table", pushReadRowsSQL(x, len(ids)), append([]any{"p"}, ids...), "todos"},
	} {
		what := "push read, " + tc.name
		plan := explain(t, c, tc.q, tc.args...)
		expectPlan(t, what, plan, map[string]string{tc.alias: "PRIMARY"}, true)
		for _, r := range plan {
			if r.table == tc.alias && r.possible != "PRIMARY" {
				t.Errorf("%s: the optimizer weighs %q for %s, want the primary key alone", what, r.possible, r.table)
			}
		}
	}
}

// TestPlanManyPartitions is the plan half of W8 (docs/performance.md): on a store of 1,000 small partitions besides
// planStore's, analyzed, a window read and a scan of one small partition
// are served by the indexes that lead with the partition, as on a store
// of one partition.
func TestPlanManyPartitions(t *testing.T) {
	c := planStore(t)
	for k := range 1000 {
		var rows []driver.Row
		for n := range 5 {
			rows = append(rows, todoRow(fmt.Sprintf("r%04d", n), fmt.Sprintf("p%d", n%3), fmt.Sprintf("o%d", n%4)))
		}
		pushRows(t, c, fmt.Sprintf("tenant-%07d", k), rows...)
	}
	if _, err := c.db.Exec("ANALYZE TABLE _sync_change_scopes, _sync_changes, _sync_commits, _sync_partitions, todos"); err != nil {
		t.Fatal(err)
	}
	const tenant = "tenant-0000500"
	joins := map[string]string{"cs": "PRIMARY", "ch": "PRIMARY", "c": "PRIMARY", "_sync_partitions": "PRIMARY"}
	expectPlan(t, "window of one tenant, one value", explain(t, c, windowSingleRound, tenant, tenant,
		tenant, "todos", "project", "p1", 0, 1000, 0, math.MaxInt32, 564), joins, false)
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	q, args, err := c.scanSQL(x, tenant, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 1000}, "project")
	if err != nil {
		t.Fatal(err)
	}
	expectPlan(t, "scan of one tenant, one value", explain(t, c, q, args...), map[string]string{"todos": scopeIndexName(x.def, "project_id")}, false)
}

// manyValues returns n distinct scope values p0, p1, ….
func manyValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("p%d", i)
	}
	return out
}

// TestPlanIndexLookup: a lookup walks its declared index (IXL-4), in id
// order — todos' by_owner (owner_id) through its twin, the owner scope's
// index (servingIndex).
func TestPlanIndexLookup(t *testing.T) {
	c := planStore(t)
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	ix, _ := x.def.Index("by_owner")
	for _, v := range []any{"o3"} {
		q, args, err := x.indexLookup("p", ix, driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{v}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		expectPlan(t, fmt.Sprintf("index lookup of %v", v), explain(t, c, q, args...), map[string]string{"todos": servingIndex(x.def, ix)}, false)
	}
}
