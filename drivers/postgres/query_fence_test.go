package postgres

import (
	"strings"
	"testing"
)

// TestQueryFenceRewrite checks where fence puts OFFSET 0 (AQ-6): on
// every derived table, CTE body, scalar sub-query and parenthesized
// compound member that computes a result column (or is VALUES, or has a
// FULL JOIN), but not on one that only renames columns, the operands of
// EXISTS/IN/ANY/SOME/ALL, a body that has LIMIT or OFFSET, or a
// recursive CTE reading itself; and that AS NOT MATERIALIZED loses NOT
// MATERIALIZED. The rewritten text is
// compared with the driver's CTE prefix cut off and spaces collapsed.
func TestQueryFenceRewrite(t *testing.T) {
	cols := map[string][]string{"todos": {"id", "title", "done", "updated_at"}}
	rw := func(text string) string {
		t.Helper()
		q, err := rewriteQuery(text, nil, "s", []string{"todos"}, cols, "p1", nil)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		s := strings.Join(strings.Fields(q.sql), " ")
		if i := strings.Index(s, `= $1::text)`); i >= 0 {
			s = strings.TrimPrefix(strings.TrimSpace(s[i+len(`= $1::text)`):]), ", ")
		}
		return s
	}
	for _, c := range []struct{ sql, want string }{
		// A body that only renames columns is left to the planner.
		{`SELECT x FROM (SELECT title AS x, d.id, * FROM todos AS d WHERE done) d WHERE x = 'a'`,
			`SELECT x FROM (SELECT title AS x, d.id, * FROM todos AS d WHERE done) d`},
		{`SELECT x FROM (SELECT upper(title) AS x FROM todos) d`,
			`SELECT x FROM (SELECT upper(title) AS x FROM todos OFFSET 0 ) d`},
		{`SELECT x||x AS x FROM (SELECT x||x AS x FROM (SELECT substr(title, 1, 1) AS x FROM todos) a) b`,
			`SELECT x || x AS x FROM (SELECT x || x AS x FROM (SELECT substr(title, 1, 1) AS x FROM todos OFFSET 0 ) a OFFSET 0 ) b`},
		{`WITH a AS (SELECT title || 'x' AS x FROM todos), b AS NOT MATERIALIZED (SELECT x FROM a) SELECT x FROM b`,
			`a AS (SELECT title || 'x' COLLATE "C" AS x FROM todos OFFSET 0 ), b AS (SELECT x FROM a) SELECT x FROM b`},
		{`WITH a(x) AS MATERIALIZED (SELECT count(*) FROM todos) SELECT x FROM a`,
			`a(x) AS MATERIALIZED (SELECT count( * ) FROM todos OFFSET 0 ) SELECT x FROM a`},
		{`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), s AS (SELECT n * 2 AS n FROM r) SELECT n FROM s`,
			`r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), s AS (SELECT n * 2 AS n FROM r OFFSET 0 ) SELECT n FROM s`},
		{`SELECT id FROM todos WHERE EXISTS (SELECT 1 + 1 FROM todos t2 WHERE t2.id = todos.id) AND id IN (SELECT lower(id) FROM todos) AND id <> ALL (SELECT id || 'x' FROM todos WHERE done)`,
			`SELECT id FROM todos WHERE EXISTS (SELECT 1 + 1 FROM todos t2 WHERE t2.id = todos.id) AND id IN (SELECT lower(id) FROM todos) AND id <> ALL (SELECT id || 'x' COLLATE "C" FROM todos WHERE done)`},
		{`SELECT (SELECT max(title) FROM todos) AS m, x FROM (SELECT id || 'x' AS x FROM todos ORDER BY id LIMIT 2) d`,
			`SELECT (SELECT max(title) FROM todos OFFSET 0 ) AS m, x FROM (SELECT id || 'x' COLLATE "C" AS x FROM todos ORDER BY id NULLS FIRST LIMIT 2) d`},
		{`SELECT id FROM todos UNION ALL (SELECT lower(title) FROM todos) UNION ALL (SELECT title FROM todos)`,
			`SELECT id FROM todos UNION ALL (SELECT lower(title) FROM todos OFFSET 0 ) UNION ALL (SELECT title FROM todos)`},
		{`SELECT x FROM (SELECT id AS x FROM todos UNION SELECT upper(title) FROM todos) d`,
			`SELECT x FROM (SELECT id AS x FROM todos UNION SELECT upper(title) FROM todos OFFSET 0 ) d`},
		{`SELECT id FROM (SELECT a.id FROM todos a FULL JOIN todos b USING (id)) d`,
			`SELECT id FROM (SELECT a.id FROM todos a FULL JOIN todos b USING (id) OFFSET 0 ) d`},
		{`SELECT a FROM (VALUES (1), (2)) AS v(a)`,
			`SELECT a FROM (VALUES (1), (2) OFFSET 0 ) AS v(a)`},
		{`SELECT value FROM json_each((SELECT lower(title) FROM todos WHERE id = 't1'))`,
			`jsonb_typeof(((SELECT lower(title) FROM todos WHERE id = 't1' COLLATE "C" OFFSET 0 ))::jsonb)`},
	} {
		if got := rw(c.sql); !strings.Contains(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}
