package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// explain returns the plan of q with args on one connection, with the
// given plan_cache_mode (custom plans use the values; generic plans are
// what a prepared statement settles on).
func explain(t *testing.T, pool *pgxpool.Pool, mode, q string, args ...any) string {
	t.Helper()
	var plan []string
	err := pool.AcquireFunc(t.Context(), func(c *pgxpool.Conn) error {
		if _, err := c.Exec(t.Context(), "SET plan_cache_mode = "+mode); err != nil {
			return err
		}
		defer func() { _, _ = c.Exec(context.Background(), "RESET plan_cache_mode") }()
		// EXPLAIN of the statement itself plans it with its parameters'
		// values, a custom plan whatever plan_cache_mode says; only a
		// prepared statement's EXECUTE follows the mode.
		if _, err := c.Exec(t.Context(), "PREPARE _sync_plan_probe AS "+q); err != nil {
			return err
		}
		defer func() { _, _ = c.Exec(context.Background(), "DEALLOCATE _sync_plan_probe") }()
		// A utility statement takes no bind parameters: the test's own
		// arguments are written as literals.
		ps := make([]string, len(args))
		for i, a := range args {
			ps[i] = planLiteral(t, a)
		}
		rows, err := c.Query(t.Context(), "EXPLAIN EXECUTE _sync_plan_probe("+strings.Join(ps, ", ")+")")
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	return strings.Join(plan, "\n")
}

// planLiteral writes one of the plan tests' arguments as a SQL literal.
func planLiteral(t *testing.T, a any) string {
	t.Helper()
	str := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	switch v := a.(type) {
	case string:
		return str(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case []string:
		if v == nil {
			return "NULL"
		}
		q := make([]string, len(v))
		for i, x := range v {
			q[i] = str(x)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	}
	t.Fatalf("planLiteral: no literal for %T", a)
	return ""
}

// TestPlansUseIndexes pins the plans of the hot reads on a loaded store
// (two partitions × 4,000 rows and 400 commits, analyzed): window reads
// come from the change-scope index (WIN-7) and scans from the row-scope
// index (SCAN-5), with no sequential scan of any table, for one value and
// for a list, with custom and generic plans. For scans the planner may
// drive from any index on a filtered scope column (the scope index, or a
// declared index with the same leading columns, e.g. by_owner), never
// from the primary key's range over the whole partition nor a heap scan.
func TestPlansUseIndexes(t *testing.T) {
	t.Parallel() // a database of its own; EXPLAIN reads statistics, not load
	c, _ := openTest(t)
	ctx := t.Context()
	for _, p := range []string{"p", "q"} {
		for i := range 400 {
			if _, err := pushTodos(ctx, c, p, i*10, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Many partitions and clients, written directly: the window's counters
	// and the client listings must use their indexes at that size.
	for _, q := range []string{
		`INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) SELECT 'x' || g, g, 0 FROM generate_series(1, 5000) AS g`,
		`INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
		SELECT 'p', 'c-' || lpad(g::text, 5, '0'), 'a', 1, g, g % 700, '[]' FROM generate_series(1, 5000) AS g`,
	} {
		if _, err := c.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	checks := []planCheck{
		{"window, one value", sqlWindow, []any{"p", "todos", "project", []string{"p7"}, int64(0), int64(400), int64(500), int64(0)}, "_sync_change_scopes_pkey"},
		{"window, value list", sqlWindow, []any{"p", "todos", "project", []string{"p1", "p7", "p9"}, int64(100), int64(400), int64(500), int64(100)}, "_sync_change_scopes_pkey"},
		{"window, empty value list", sqlWindow, []any{"p", "todos", "project", []string{}, int64(100), int64(400), int64(500), int64(100)}, "_sync_partitions_pkey"},
		{"client cursors, first page (CR-3)", sqlListClientCursors, []any{"p", "", int64(100)}, "_sync_clients_pkey"},
		{"client cursors, next page (CR-3)", sqlListClientCursors, []any{"p", "c-02500", int64(100)}, "_sync_clients_pkey"},
		{"client records, first page (ADM-2)", sqlAdminListClients, []any{"p", int64(100)}, "_sync_clients_by_time"},
		{"client records, next page (ADM-2)", sqlAdminListClientsAfter, []any{"p", int64(350), "c-02500", int64(100)}, "_sync_clients_by_time"},
		{"scan, one value", x.scans["project"][0], []any{"p", "p7", "", []string(nil), int64(100)}, "cover"},
		{"scan, value list", x.scans["project"][1], []any{"p", []string{"p1", "p7"}, "", []string{"o1", "o2"}, int64(100)}, "cover"},
		{"scan by owner", x.scans["owner"][0], []any{"p", "o7", "r", []string{"p7"}, int64(100)}, "cover"},
	}
	checkPlanUse(t, c, checks)
}

// planCheck is one statement whose plan must use the index want ("scope":
// any scope or declared index of the table; "cover": checkCoverScan).
type planCheck struct {
	name, q string
	args    []any
	want    string
}

// checkPlanUse checks every plan, custom and generic (see
// TestPlansUseIndexes).
func checkPlanUse(t *testing.T, c *Conn, checks []planCheck) {
	t.Helper()
	for _, ck := range checks {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s): sequential scan:\n%s", ck.name, mode, plan)
			}
			if ck.want == "cover" {
				checkCoverScan(t, ck.name+" ("+mode+")", plan)
			} else if !strings.Contains(plan, ck.want) && !(ck.want == "scope" && (strings.Contains(plan, "_sync_sx_") || strings.Contains(plan, "_sync_ix_"))) {
				t.Errorf("%s (%s): plan does not use %s:\n%s", ck.name, mode, ck.want, plan)
			}
			if strings.HasPrefix(ck.name, "window") && (!strings.Contains(plan, "_sync_changes_pkey") || !strings.Contains(plan, "_sync_commits_pkey")) {
				t.Errorf("%s (%s): changes and commits must be joined by primary key:\n%s", ck.name, mode, plan)
			}
			if strings.HasPrefix(ck.name, "window") && (!strings.Contains(plan, "_sync_partitions_pkey") || !strings.Contains(plan, "One-Time Filter")) {
				t.Errorf("%s (%s): the partition's counters must be read by primary key, and gate the candidates (HZ-4, WIN-8):\n%s",
					ck.name, mode, plan)
			}
			if strings.HasPrefix(ck.name, "window") {
				checkWindowBounded(t, ck.name+" ("+mode+")", plan)
			}
			if strings.HasPrefix(ck.name, "client") && (strings.Contains(plan, "Sort") || !strings.Contains(plan, "Limit")) {
				t.Errorf("%s (%s): a page must be an index walk that stops at the limit, without a sort:\n%s", ck.name, mode, plan)
			}
			t.Logf("%s (%s):\n%s", ck.name, mode, plan)
		}
	}
}

// checkWindowBounded fails unless every walk of the change-scope index in
// a window plan stops at the round's bound: the upper bound on seq is part
// of the index condition, not a filter applied to every entry after the
// cursor — which, when statistics made the planner join the bound instead
// of passing it in, made a pull of a partition's history O(N²/page)
// (measured: 20 heap hits per matched change at 5,000 commits, 170 at
// 50,000).
//
// And every walk is one value's range: the value is part of the index
// condition too, never a filter on a walk of every value's entries.
func checkWindowBounded(t *testing.T, what, plan string) {
	t.Helper()
	walks := 0
	for _, line := range strings.Split(plan, "\n") {
		if !strings.Contains(line, "Index Cond:") || !strings.Contains(line, "(variable = ") {
			continue
		}
		walks++
		if !strings.Contains(line, "(seq <= ") {
			t.Errorf("%s: the walk of the change-scope index has no upper bound: %s\n%s", what, strings.TrimSpace(line), plan)
		}
		if !strings.Contains(line, "(value = ") {
			t.Errorf("%s: the walk of the change-scope index is not one value's range: %s\n%s", what, strings.TrimSpace(line), plan)
		}
	}
	if walks == 0 {
		t.Errorf("%s: no walk of the change-scope index:\n%s", what, plan)
	}
}

// TestPlansUnanalyzed: on a store never analyzed (autovacuum off,
// or a bulk load it has not reached yet) of 20,000 commits, the window
// read (and the admin scope activity, which reads the same index) still
// walks each value's own range of the change-scope index, and HZ-3 uses
// _sync_commits_before,
// custom and generic plans, for one value and a list. With the
// candidates' walk written as one range over the variable with
// value = ANY($4), the planner made the value a filter on a walk of
// every value's entries from the first value on (docs/performance.md: a
// 500-change page at 500,000 commits took about 1 s, against 50 ms).
func TestPlansUnanalyzed(t *testing.T) {
	t.Parallel() // a database of its own; EXPLAIN reads statistics, not load
	c, _ := openTest(t)
	ctx := t.Context()
	for _, q := range []string{
		`INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES ('p', 20000, 0)`,
		`INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms)
SELECT 'p', s, 'c', 'k' || s, 'u', s FROM generate_series(1, 20000) AS s`,
		`INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT 'p', s, i, 'todos', 'r' || (s * 10 + i), 'upsert', '{}', '{}', 1 FROM generate_series(1, 20000) AS s, generate_series(0, 9) AS i`,
		`INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT 'p', 'todos', v, CASE v WHEN 'project' THEN 'p' || ((s * 10 + i) % 20) ELSE 'o' || ((s * 10 + i) % 50) END, s, i
FROM generate_series(1, 20000) AS s, generate_series(0, 9) AS i, (VALUES ('project'), ('owner')) AS vs(v)`,
	} {
		if _, err := c.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, ck := range []struct {
		name   string
		values []string
	}{{"one value", []string{"p7"}}, {"value list", []string{"p3", "p7", "p11"}}} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, sqlWindow, "p", "todos", "project", ck.values, int64(10000), int64(20000), int64(500), int64(10000))
			t.Logf("%s (%s):\n%s", ck.name, mode, plan)
			checkWindowBounded(t, ck.name+" ("+mode+")", plan)
			// ADM-1's scope activity walks the same index the same way.
			plan = explain(t, c.pool, mode, sqlAdminScopeActivity, "p", "todos", "project", ck.values, int64(10000), int64(20000))
			t.Logf("scope activity, %s (%s):\n%s", ck.name, mode, plan)
			checkWindowBounded(t, "scope activity, "+ck.name+" ("+mode+")", plan)
		}
	}
	// A scan page keeps the scope's index pair without statistics too:
	// each branch walks its own partial index (the rest's walk never
	// becomes a filter on every row of the scope).
	if _, err := c.pool.Exec(ctx, `INSERT INTO todos (_sync_partition, _sync_version, id, title, done, project_id, owner_id, updated_at)
SELECT 'p', 1, 'r' || lpad(n::text, 7, '0'), CASE WHEN n % 1000 = 7 THEN repeat('x', 3000) ELSE 'todo' END, false, 'p' || (n % 20), 'o' || (n % 50), n
FROM generate_series(1, 200000) AS n`); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, c.pool, mode, x.scans["project"][0], "p", "p7", "r0100000", []string(nil), int64(1000))
		t.Logf("scan (%s):\n%s", mode, plan)
		checkCoverScan(t, "scan ("+mode+")", plan)
		plan = explain(t, c.pool, mode, x.scans["project"][1], "p", []string{"p3", "p7"}, "r0100000", []string(nil), int64(1000))
		t.Logf("scan, value list (%s):\n%s", mode, plan)
		checkCoverScan(t, "scan, value list ("+mode+")", plan)
	}
	// HZ-3 keeps its index without statistics too.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, c.pool, mode, sqlCommitSeqBefore, "p", int64(100))
		if !strings.Contains(plan, "_sync_commits_before") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("HZ-3 (%s): want _sync_commits_before, no sequential scan:\n%s", mode, plan)
		}
	}
}

// TestPlansManyPartitions is the plan half of W8 (docs/performance.md): on a store of 1,000 small partitions and one of
// 200 commits, analyzed, a window read and a scan of one small partition
// use only indexes that lead with the partition — every index condition
// names it, nothing is scanned sequentially — custom and generic plans
// alike, so their cost does not depend on the other partitions.
//
// Each window candidate's commit is fetched by _sync_commits_pkey. Before
// format 5, HZ-3's index (partition, created_at_ms, seq) led with the bare
// partition too, and at this shape the planner fetched the commit through
// it with seq as a filter inside the partition's range — a walk of a
// large partition's whole range per candidate under a generic plan
// (upgradeFormat4).
func TestPlansManyPartitions(t *testing.T) {
	t.Parallel() // a database of its own; EXPLAIN reads statistics, not load
	c, _ := openTest(t)
	ctx := t.Context()
	for i := range 200 {
		if _, err := pushTodos(ctx, c, "big", i*10, 10); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 1000 {
		if _, err := pushTodos(ctx, c, fmt.Sprintf("tenant-%07d", k), 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	const tenant = "tenant-0000500"
	var byTime []string
	for _, ck := range []planCheck{
		{"window, one value", sqlWindow, []any{tenant, "todos", "project", []string{"p7"}, int64(0), int64(1), int64(500), int64(0)}, "_sync_change_scopes_pkey"},
		{"window, value list", sqlWindow, []any{tenant, "todos", "project", []string{"p1", "p7"}, int64(0), int64(1), int64(500), int64(0)}, "_sync_change_scopes_pkey"},
		{"scan, one value", x.scans["project"][0], []any{tenant, "p7", "", []string(nil), int64(1000)}, "_sync_sc_"},
		{"scan, value list", x.scans["project"][1], []any{tenant, []string{"p1", "p7"}, "", []string(nil), int64(1000)}, "_sync_sc_"},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			t.Logf("%s (%s):\n%s", ck.name, mode, plan)
			want := []string{ck.want}
			if strings.HasPrefix(ck.name, "window") {
				want = append(want, "_sync_changes_pkey", "_sync_partitions_pkey", "One-Time Filter")
				if !strings.Contains(plan, "_sync_commits_pkey") {
					byTime = append(byTime, ck.name+" ("+mode+")")
				}
				checkWindowBounded(t, ck.name+" ("+mode+")", plan)
			}
			for _, w := range want {
				if !strings.Contains(plan, w) {
					t.Errorf("%s (%s): plan lacks %s:\n%s", ck.name, mode, w, plan)
				}
			}
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s): sequential scan:\n%s", ck.name, mode, plan)
			}
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "Index Cond:") && !strings.Contains(line, "(partition = ") && !strings.Contains(line, "(_sync_partition = ") {
					t.Errorf("%s (%s): an index condition without the partition: %s\n%s", ck.name, mode, line, plan)
				}
			}
		}
	}
	if len(byTime) > 0 {
		t.Errorf("the commit of each candidate is not fetched by its primary key in %v", byTime)
	}
}

// TestPlanPushRead: BeginPush's read of a push's rows (table.getIn) is a
// primary-key lookup per id — an index condition on the partition and the
// id — in custom and generic plans, on a table that was nearly empty and
// never analyzed when the plan was made (where a pushing store's first
// pushes make it) and on a loaded, analyzed one. Written as a join of
// the id list against the partition's rows, its generic plan on the
// small table was a hash join over every row of the partition: the read
// went from 0.3 ms to 4 ms over 3,000 pushes.
func TestPlanPushRead(t *testing.T) {
	t.Parallel() // a database of its own; EXPLAIN reads statistics, not load
	c, _ := openTest(t)
	ctx := t.Context()
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, x.getIn, "p", []string{"r1", "r2", "r3"})
			t.Logf("%s (%s):\n%s", what, mode, plan)
			lookups := 0
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "Index Cond:") && strings.Contains(line, "(_sync_partition = ") && strings.Contains(line, "(id = ") {
					lookups++
				}
			}
			if lookups == 0 || !strings.Contains(plan, "todos_pkey") || !strings.Contains(plan, "Nested Loop") {
				t.Errorf("%s (%s): want one lookup of todos_pkey by partition and id per id:\n%s", what, mode, plan)
			}
			for _, bad := range []string{"Seq Scan", "Hash", "Bitmap", "Merge"} {
				if strings.Contains(plan, bad) {
					t.Errorf("%s (%s): %s in the plan:\n%s", what, mode, bad, plan)
				}
			}
		}
	}
	if _, err := pushTodos(ctx, c, "p", 0, 3); err != nil {
		t.Fatal(err)
	}
	check("3 rows, never analyzed")
	for i := range 200 {
		if _, err := pushTodos(ctx, c, "p", 10+i*10, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	check("2,003 rows, analyzed")
}

// checkCoverScan checks a scan page's plan (scanlayout.go): the rows that
// fit are read from the scope's cover by an index-only scan, the others
// from the rest, each walk in id order up to the limit and merged (Merge
// Append), never a sequential scan nor the plain scope index.
func checkCoverScan(t *testing.T, what, plan string) {
	t.Helper()
	for _, w := range []string{"Index Only Scan using _sync_sc_", "Index Scan using _sync_sr_", "Merge Append", "Limit"} {
		if !strings.Contains(plan, w) {
			t.Errorf("%s: want %q:\n%s", what, w, plan)
		}
	}
	if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "_sync_sx_") {
		t.Errorf("%s: a sequential scan or the plain scope index:\n%s", what, plan)
	}
}
