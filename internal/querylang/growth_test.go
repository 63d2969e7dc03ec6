package querylang

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// GrowthAttacks are the exponential shapes of AQ-6's static cost rule
// (name → text over table todos with columns id and title): each is a few
// hundred bytes and builds a value of gigabytes or more.
func growthAttacks() map[string]string {
	derived := func(level, core string, n int) string {
		q := core
		for range n {
			q = fmt.Sprintf(level, q)
		}
		return q
	}
	cteChain := func(body string, n int) string {
		var b strings.Builder
		b.WriteString("WITH c0 AS (SELECT substr(title, 1, 1) AS x FROM todos)")
		for i := 1; i <= n; i++ {
			if strings.Contains(body, " FROM ") {
				fmt.Fprintf(&b, ", c%d AS (SELECT "+strings.Replace(body, " FROM ", " AS x FROM ", 1)+")", i, i-1)
			} else {
				fmt.Fprintf(&b, ", c%d AS (SELECT "+body+" AS x FROM c%d)", i, i-1)
			}
		}
		fmt.Fprintf(&b, " SELECT length(x) AS n FROM c%d", n)
		return b.String()
	}
	base := "SELECT substr(title, 1, 1) AS x FROM todos"
	return map[string]string{
		"derived-doubling":    "SELECT length(x) AS n FROM (" + derived("SELECT x||x AS x FROM (%s)", base, 30) + ")",
		"derived-replace":     "SELECT length(x) AS n FROM (" + derived("SELECT replace(x, 'a', 'aaaaaaaaaa') AS x FROM (%s)", base, 9) + ")",
		"derived-concat":      "SELECT length(x) AS n FROM (" + derived("SELECT concat(x, x) AS x FROM (%s)", base, 30) + ")",
		"derived-two-columns": "SELECT length(a) AS n FROM (" + derived("SELECT a||b AS a, b||a AS b FROM (%s)", "SELECT title AS a, title AS b FROM todos", 30) + ")",
		"cte-chain-copies":    cteChain("a||b FROM (SELECT x AS a FROM c%[2]d), (SELECT x AS b FROM c%[2]d) WHERE 1 OR a", 30),
		"cte-chain-doubling":  cteChain("x||x", 30),
		"cte-chain-replace":   cteChain("replace(x, 'a', 'aaaaaaaaaa')", 9),
		"cte-self-join":       cteChain("c.x||d.x FROM c%[2]d AS c, c%[2]d AS d WHERE 1 OR c.x", 30),
		"recursive-doubling":  "WITH RECURSIVE r(n, s) AS (SELECT 1, title FROM todos UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) SELECT max(length(s)) AS m FROM r",
		"nested-replace":      "SELECT length(" + strings.Repeat("replace(", 9) + "title" + strings.Repeat(", 'a', 'aaaaaaaaaa')", 9) + ") AS n FROM todos",
		"flat-concatenation":  "SELECT " + strings.Repeat("title || ", 2000) + "id FROM todos",
		"repeat":              "SELECT length(repeat(title, 100000)) FROM todos",
		"group-concat-twice":  "SELECT group_concat(x) AS g FROM (SELECT group_concat(title) AS x FROM todos)",
		// No value grows, but an engine that flattens the derived tables
		// (PostgreSQL's planner, SQLite's flattener) copies each level's
		// expression into the next: 2^20 copies. PostgreSQL planned 18
		// levels for 51 s under a 20 s statement_timeout.
		"derived-numeric-copies":   "SELECT x AS n FROM (" + derived("SELECT abs(x)+abs(x) AS x FROM (%s)", "SELECT length(title) AS x FROM todos", 20) + ")",
		"cte-chain-numeric-copies": cteChain("length(x)+length(x)", 20),
	}
}

func TestCheckGrowthRefusesExponentialShapes(t *testing.T) {
	for name, sql := range growthAttacks() {
		_, err := CheckQueryText(sql)
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite || le.Limit != MaxQueryGrowth {
			t.Errorf("%s (%d bytes): %v; want the rewrite bound %d", name, len(sql), err, MaxQueryGrowth)
		}
	}
}

func TestCheckGrowthAdmitsOrdinaryQueries(t *testing.T) {
	for _, sql := range []string{
		"SELECT id, title || ' (' || id || ')' AS label FROM todos",
		"SELECT a || ' ' || b AS x FROM (SELECT title AS a, id AS b FROM (SELECT * FROM todos))",
		"WITH RECURSIVE path(id, p) AS (SELECT id, title FROM todos UNION ALL SELECT t.id, path.p || '/' || t.title FROM path JOIN todos t ON t.id > path.id) SELECT p FROM path",
		"SELECT group_concat(title, ', ') AS titles FROM todos",
		"SELECT '[' || g || ']' AS x FROM (SELECT group_concat(title) AS g FROM todos)",
		"SELECT count(*), max(length(title)), min(length(title)), sum(length(title)) FROM (SELECT title || title AS title FROM todos)",
		"SELECT replace(replace(replace(title, 'a', 'b'), 'c', 'd'), 'e', 'f') FROM todos",
		"SELECT printf('%05d-%s', id, title) FROM todos",
		"SELECT lpad(title, 20, ' '), hex(title) FROM todos",
		"SELECT x||x FROM (SELECT y||y AS x FROM (SELECT title||title AS y FROM todos))",
		"WITH a AS (SELECT title||title AS x FROM todos), b AS (SELECT x||x AS x FROM a) SELECT x FROM b",
		"SELECT * FROM todos WHERE EXISTS (SELECT 1 FROM users) AND id IN (SELECT id FROM todos) AND title = (SELECT max(title) FROM todos)",
		"SELECT t.*, u.* FROM todos t JOIN users u ON u.id = t.owner_id",
		// Context keywords, windows, VALUES, a recursive core's scalar
		// sub-query that does not grow, JSON and escaping calls once.
		"SELECT CASE WHEN done THEN 'y' ELSE NULL END AS a, CASE id WHEN 1 THEN title END AS b, CAST(id AS text) AS c FROM todos ORDER BY id DESC NULLS LAST",
		"SELECT row_number() OVER (PARTITION BY owner_id ORDER BY id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n, count(*) FILTER (WHERE done) OVER () AS d FROM todos",
		"SELECT x FROM (VALUES (1), (2), ((SELECT max(title) FROM todos))) v(x)",
		"WITH RECURSIVE p(id, s) AS (SELECT id, title FROM todos UNION ALL SELECT p.id + 1, p.s || '/' || (SELECT t.title FROM todos t WHERE t.id = p.id) FROM p WHERE p.id < 5) SELECT s FROM p",
		"SELECT json_object('id', id, 'title', title) AS j, printf('%q', title) AS q, quote_literal(title) AS l FROM (SELECT json_array(title) AS title, id FROM todos)",
	} {
		if _, err := CheckQueryText(sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	// Ten doublings are the limit; eleven are over it.
	q := "SELECT substr(title, 1, 1) AS x FROM todos"
	for i := range 11 {
		q = "SELECT x||x AS x FROM (" + q + ")"
		_, err := CheckQueryText(q)
		if (err == nil) != (i < 10) {
			t.Errorf("%d doublings: %v", i+1, err)
		}
	}
}

func TestCheckGrowthIsLinear(t *testing.T) {
	// A 100 KB text of many small scopes, CTEs and calls checks in one pass.
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT title AS x FROM todos)")
	for i := 1; b.Len() < 95_000; i++ {
		fmt.Fprintf(&b, ", c%d AS (SELECT replace(upper(x), 'a', 'b') AS x FROM c%d)", i, i-1)
	}
	b.WriteString(" SELECT 1")
	if _, err := CheckQueryText(b.String()); err != nil {
		t.Fatal(err)
	}
}
