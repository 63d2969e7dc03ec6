package postgres

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestQueryHostilePostgres runs PostgreSQL-specific attacks the shared
// corpus cannot name (AQ-1, AQ-2): catalog reads, session state, side
// effects, qualified bypasses and casts to catalog types. Each must be
// refused with CodeQueryInvalid, and a plain query must still return p1's
// rows only.
func TestQueryHostilePostgres(t *testing.T) {
	c, _ := openTest(t)
	ctx := t.Context()
	for _, p := range []string{"p1", "p2"} {
		if _, err := pushTodos(ctx, c, p, 0, 3); err != nil {
			t.Fatal(err)
		}
	}
	todos := []string{"todos"}
	for _, sql := range []string{
		`SELECT id FROM public.todos`,
		`SELECT id FROM "public"."todos"`,
		`SELECT id FROM todos, pg_class`,
		`SELECT relname FROM pg_class`,
		`SELECT id, (SELECT count(*) FROM pg_stat_activity) AS n FROM todos`,
		`SELECT id, version() AS v FROM todos`,
		`SELECT id, current_setting('search_path') AS s FROM todos`,
		`SELECT id, set_config('search_path', 'x', true) AS s FROM todos`,
		`SELECT id, pg_sleep(5) AS s FROM todos`,
		`SELECT id, pg_read_file('/etc/passwd') AS f FROM todos`,
		`SELECT id, current_user AS u FROM todos`,
		`SELECT id, user AS u FROM todos`,
		`SELECT id, txid_current() AS x FROM todos`,
		`SELECT id, nextval('s') AS x FROM todos`,
		`SELECT id, lo_import('/etc/passwd') AS x FROM todos`,
		`SELECT id, dblink('host=x', 'select 1') AS x FROM todos`,
		`SELECT id, CAST('_sync_commits' AS regclass) AS x FROM todos`,
		`SELECT id, "version"() AS x FROM todos`,
		`SELECT id FROM todos, generate_series(1, 3) AS g`,
		`SELECT id FROM todos FOR UPDATE`,
		`SELECT id INTO evil FROM todos`,
		`SELECT id, E'\'' AS x FROM todos`,
		`SELECT id FROM todos WHERE id = $1`,
		`SELECT id::text FROM todos`,
		`SELECT t.id FROM todos t, _sync_partitions p`,
		`SELECT id FROM users`,
		// Field notation: t.f is f(t) (AQ-1).
		`SELECT t.quote_literal AS q FROM todos t`,
		`SELECT t.to_json AS j FROM todos t`,
		`SELECT (t).row_to_json AS j FROM todos t`,
		`SELECT t."to_jsonb" AS j FROM todos t`,
		`SELECT 1 AS quote_literal, t.quote_literal FROM todos t`,
	} {
		_, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: sql, Tables: todos})
		if driver.CodeOf(err) != driver.CodeQueryInvalid {
			t.Errorf("%q: err %v, want %s", sql, err, driver.CodeQueryInvalid)
		}
	}
	res, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: `SELECT count(*) AS n, sum(done) AS d FROM todos`, Tables: todos})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != int64(3) || res.Rows[0][1] != int64(0) || res.MaxCommitSeq != 1 {
		t.Errorf("count over p1: %v (seq %d), want [[3 0]] (seq 1)", res.Rows, res.MaxCommitSeq)
	}
}

// TestQueryFunctionLookalikes checks that a function call written like a
// CTE column list (`f(…) AS (…)` after a comma) is still refused.
func TestQueryFunctionLookalikes(t *testing.T) {
	c, _ := openTest(t)
	for _, sql := range []string{
		`WITH a AS (SELECT 1 AS x), version() AS (SELECT 2) SELECT id FROM todos`,
		`SELECT t.id FROM todos t, txid_current_snapshot() AS (x text)`,
		`SELECT id, version() AS (x) FROM todos`,
	} {
		_, err := c.AuthoritativeQuery(t.Context(), "p1", driver.Query{SQL: sql, Tables: []string{"todos"}})
		if driver.CodeOf(err) != driver.CodeQueryInvalid {
			t.Errorf("%q: err %v, want %s", sql, err, driver.CodeQueryInvalid)
		}
	}
	res, err := c.AuthoritativeQuery(t.Context(), "p1", driver.Query{
		SQL: `WITH RECURSIVE n(x) AS NOT MATERIALIZED (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2), m(y) AS (SELECT 5) SELECT count(*) AS c FROM n, m, todos`, Tables: []string{"todos"}})
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != int64(0) {
		t.Errorf("CTE column lists: %v, %v; want [[0]]", res.Rows, err)
	}
}
