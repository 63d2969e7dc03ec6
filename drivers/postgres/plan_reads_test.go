package postgres

import (
	"strings"
	"testing"
)

// TestPlansEngineReads pins the plans of the reads the SSP2 server makes
// on its hot paths, on a loaded, analyzed store (two partitions × 400
// commits of 10 changes, 5,000 partitions, 5,000 client records), custom
// and generic plans: a whole-commit read (LOG-4) walks the changes'
// primary key from the cursor up to the bound — the upper bound part of
// the index condition, never a filter on the rest of the partition's log
// — gated by the partition's counters and joined to each commit by
// primary key; an ack (CR-6) updates the record found by primary key; an
// admin row page (ADM-3) walks the table's primary key and stops at the
// limit, without a sort. Never a sequential scan.
func TestPlansEngineReads(t *testing.T) {
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
	for _, q := range []string{
		`INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) SELECT 'x' || g, g, 0 FROM generate_series(1, 5000) AS g`,
		`INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
		SELECT 'p', 'c-' || lpad(g::text, 5, '0'), 'a', 1, g % 400, g % 700, '[]' FROM generate_series(1, 5000) AS g`,
		`ANALYZE`,
	} {
		if _, err := c.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range []struct {
		name  string
		q     string
		args  []any
		want  []string
		check func(t *testing.T, what, plan string)
	}{
		{"whole commits by seq range (LOG-4)", sqlReadCommits, []any{"p", int64(100), int64(1 << 40), int64(25)},
			[]string{"_sync_changes_pkey", "_sync_commits_pkey", "_sync_partitions_pkey", "One-Time Filter"}, checkLogBounded},
		{"whole commits from the start (LOG-4)", sqlReadCommits, []any{"p", int64(0), int64(400), int64(500)},
			[]string{"_sync_changes_pkey", "_sync_commits_pkey", "_sync_partitions_pkey", "One-Time Filter"}, checkLogBounded},
		{"ack a client cursor (CR-6)", sqlAckClient, []any{"p", "c-02500", "a", int64(5), int64(1000)},
			[]string{"_sync_clients_pkey", "_sync_partitions_pkey"}, nil},
		{"admin rows, first page (ADM-3)", x.listRows(), []any{"p", "", int64(100)}, []string{"todos_pkey", "Limit"}, checkNoSort},
		{"admin rows, next page (ADM-3)", x.listRows(), []any{"p", "r01000", int64(100)}, []string{"todos_pkey", "Limit"}, checkNoSort},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			what := ck.name + " (" + mode + ")"
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s: sequential scan:\n%s", what, plan)
			}
			for _, w := range ck.want {
				if !strings.Contains(plan, w) {
					t.Errorf("%s: plan lacks %s:\n%s", what, w, plan)
				}
			}
			if ck.check != nil {
				ck.check(t, what, plan)
			}
			t.Logf("%s:\n%s", what, plan)
		}
	}
}

// checkLogBounded fails unless the walk of the changes' primary key that
// reads a page is cut at the bound, an InitPlan's output, in its index
// condition (seq <= $n), not filtered after a walk of the rest of the
// partition's log.
func checkLogBounded(t *testing.T, what, plan string) {
	t.Helper()
	lines := strings.Split(plan, "\n")
	for i, line := range lines {
		if strings.Contains(line, "on _sync_changes ch") && i+1 < len(lines) {
			cond := lines[i+1]
			if strings.Contains(cond, "Index Cond:") && strings.Contains(cond, "(seq > ") && strings.Contains(cond, "(seq <= $") &&
				strings.Contains(plan, "InitPlan") {
				return
			}
		}
	}
	t.Errorf("%s: no walk of the changes cut at the bound in its index condition:\n%s", what, plan)
}

// checkNoSort fails when a page is sorted instead of walked in order.
func checkNoSort(t *testing.T, what, plan string) {
	t.Helper()
	if strings.Contains(plan, "Sort") {
		t.Errorf("%s: a page must be an index walk that stops at the limit, without a sort:\n%s", what, plan)
	}
}
