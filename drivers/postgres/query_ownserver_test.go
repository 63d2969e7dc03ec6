package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// TestAQPlannerEndsOnOwnServer runs the shapes that make PostgreSQL's
// planner copy expressions without checking for interrupts — nested
// derived tables and CTE chains naming the level below twice (x||x,
// abs(x)-abs(x)), one level naming a column 2,000 times of an expression
// of 2,000 terms, self-joins of NOT MATERIALIZED CTEs — straight into the
// driver with the static growth rule turned off
// (querylang.DisableGrowthCheckForTest, DisableRowWorkCheckForTest), on a PostgreSQL of the test's
// own (never the shared one: a runaway planner ignores cancel and
// terminate and, unbounded, grows until the kernel kills it and the
// postmaster restarts every backend). AQ-6's run-time promise is checked
// by counting: no backend of the store's database is still active 5 s
// after each call returned. Before them runs the control, which counts
// rather than times:
// EXPLAIN (VERBOSE) of the driver's rewritten text of 8 and 12 nested
// derived tables and chained CTEs of abs(x)-abs(x) holds 2^(levels+1)-2
// calls of abs without the fences (fenceQueries off: the planner merged
// every level, copying the expression below twice each time) and two a
// level with them; the test fails unless the unfenced count is at least
// 2^levels (else it no longer sees the runaway) and the fenced one at
// most 4·levels (else the fences do nothing), and sends no hostile shape
// after such a failure.
//
// Run with:
//
//	SYNCSTORE_TEST_POSTGRES_AQ="$(.ci/postgres-aq.sh start)" go test -run TestAQPlannerEndsOnOwnServer ./drivers/postgres
//	.ci/postgres-aq.sh stop
func TestAQPlannerEndsOnOwnServer(t *testing.T) {
	conn, leftAfter := ownServerStore(t, map[string]string{"t1": "one", "t2": "two", "t3": "three"})
	ctx := t.Context()
	nest := func(expr, core string, levels int) string {
		for range levels {
			core = `SELECT ` + expr + ` AS x FROM (` + core + `) AS d`
		}
		return core
	}
	chain := func(expr, core string, levels int) string {
		ctes := []string{`c0 AS (` + core + `)`}
		for i := 1; i <= levels; i++ {
			ctes = append(ctes, fmt.Sprintf(`c%d AS (SELECT %s AS x FROM c%d)`, i, expr, i-1))
		}
		return `WITH ` + strings.Join(ctes, ", ") + fmt.Sprintf(` SELECT x FROM c%d`, levels)
	}
	selfJoins := func(levels int) string {
		ctes := []string{`c0 AS NOT MATERIALIZED (SELECT id FROM todos)`}
		for i := 1; i <= levels; i++ {
			ctes = append(ctes, fmt.Sprintf(`c%d AS NOT MATERIALIZED (SELECT a.id FROM c%d a JOIN c%d b ON a.id = b.id)`, i, i-1, i-1))
		}
		return `WITH ` + strings.Join(ctes, ", ") + fmt.Sprintf(` SELECT count(*) AS n FROM c%d`, levels)
	}
	terms := func(term string, n int) string { return strings.TrimSuffix(strings.Repeat(term+" + ", n), " + ") }
	const doubling, count = `SELECT substr(title, 1, 1) AS x FROM todos`, `SELECT length(title) AS x FROM todos`
	// First the control, by counting: the planner's copies of abs( in the
	// rewritten query's plan (EXPLAIN VERBOSE deparses every expression it
	// kept), with and without the fences. Without them n levels of
	// abs(x)-abs(x) hold 2^(n+1)-2 copies (the planner merged every level);
	// with them two a level and the scan's own outputs. Small depths only:
	// the unfenced plan at 12 levels is 8,190 calls, planned in
	// milliseconds.
	c := conn.(*Conn)
	schema, err := c.storeSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	declared, cols, err := c.queryTables([]string{"todos"})
	if err != nil {
		t.Fatal(err)
	}
	procs, err := c.functionNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copies := func(sql string, fenced bool) int {
		t.Helper()
		fenceQueries = fenced
		defer func() { fenceQueries = true }()
		pq, err := rewriteQuery(sql, nil, schema, declared, cols, "p1", procs)
		if err != nil {
			t.Fatal(err)
		}
		var plan string
		if err := c.pool.QueryRow(ctx, "EXPLAIN (VERBOSE, FORMAT JSON) "+pq.sql, pq.args...).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		return strings.Count(plan, "abs(")
	}
	for _, levels := range []int{8, 12} {
		for _, s := range []struct{ name, sql string }{
			{"derived", nest(`abs(x) - abs(x)`, count, levels)},
			{"cte", chain(`abs(x) - abs(x)`, count, levels)},
		} {
			fenced, unfenced := copies(s.sql, true), copies(s.sql, false)
			t.Logf("%s-abs-%d: abs( in the plan: %d fenced, %d unfenced", s.name, levels, fenced, unfenced)
			if unfenced < 1<<levels {
				t.Errorf("control: %s-abs-%d without fences: %d copies of abs( in the plan, want ≥ 2^%d: the planner no longer merges the levels, so the test no longer sees its runaway",
					s.name, levels, unfenced, levels)
			}
			if fenced > 4*levels {
				t.Errorf("AQ-6: %s-abs-%d with fences: %d copies of abs( in the plan, want ≤ %d (linear in the levels): the fences no longer keep the planner from merging",
					s.name, levels, fenced, 4*levels)
			}
		}
	}
	if t.Failed() {
		t.Fatal("the hostile shapes are not sent: without working fences they would plan for minutes")
	}
	defer querylang.DisableGrowthCheckForTest()()
	defer querylang.DisableRowWorkCheckForTest()()
	aq := conn.(driver.AuthoritativeQueryConn)
	// call runs one shape under a 2 s Timeout and returns the backends
	// still active 5 s after it returned, and whether the server failed to
	// answer before the driver's own deadline (Timeout + 1 s).
	call := func(name, sql string) (int, bool) {
		start := time.Now()
		_, err := aq.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: sql, Tables: []string{"todos"},
			Limits: driver.QueryLimits{Timeout: 2 * time.Second}})
		took := time.Since(start)
		n := leftAfter()
		t.Logf("%s (%d bytes): %v after %.2f s; backends left 5 s after the call: %d", name, len(sql), err, took.Seconds(), n)
		return n, errors.Is(err, context.DeadlineExceeded)
	}
	for _, a := range []struct{ name, sql string }{
		{"derived-doubling-24", nest(`x || x`, doubling, 24)},
		{"derived-abs-40", nest(`abs(x) - abs(x)`, count, 40)},
		{"derived-replace-6", nest(`replace(x, 'a', 'aaaaaaaaaa')`, `SELECT 'aaaaaaaaaa' || title AS x FROM todos`, 6)},
		{"cte-doubling-24", chain(`x || x`, doubling, 24)},
		{"cte-abs-40", chain(`abs(x) - abs(x)`, count, 40)},
		{"cte-self-join-20", selfJoins(20)},
		{"derived-abs-30-renamed", nest(`x`, nest(`abs(x) - abs(x)`, nest(`x`, nest(`abs(x) - abs(x)`, nest(`x`, nest(`abs(x) - abs(x)`, count, 10), 3), 10), 3), 10), 3)},
		{"one-level-2000x2000", `SELECT ` + terms("x", 2000) + ` AS n FROM (SELECT ` + terms("length(title)", 2000) + ` AS x FROM todos) AS d`},
	} {
		if n, _ := call(a.name, a.sql); n > 0 {
			t.Errorf("AQ-6: %s: %d backend(s) of the query still active 5 s after the call returned", a.name, n)
		}
	}
}

// ownServerStore opens a store on the PostgreSQL of the test's own at
// SYNCSTORE_TEST_POSTGRES_AQ (skipping without it), holding p1's todos
// with the given ids and titles, and returns it with leftAfter: the
// store's backends still active 5 s after a call (20 polls 250 ms apart).
func ownServerStore(t *testing.T, titles map[string]string) (conn driver.Conn, leftAfter func() int) {
	t.Helper()
	base := os.Getenv("SYNCSTORE_TEST_POSTGRES_AQ")
	if base == "" {
		t.Skip("SYNCSTORE_TEST_POSTGRES_AQ is not set (a PostgreSQL of the test's own: .ci/postgres-aq.sh start)")
	}
	ctx := t.Context()
	dsn, _, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err = Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	for id, title := range titles {
		r := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "alpha", "owner": "u1"},
			Values: driver.Values{"id": id, "title": title, "done": false, "project_id": "alpha", "owner_id": "u1", "updated_at": int64(10)}}
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc" + id, ActorID: "a1", CreatedAtMs: 1,
			Changes: []driver.Change{{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return conn, func() int {
		n := 0
		for range 20 {
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = $1 AND state <> 'idle' AND pid <> pg_backend_pid()`, cfg.Database).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		return n
	}
}
