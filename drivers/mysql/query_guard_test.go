package mysql

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// rewriteBody returns the rewritten SQL of text with the driver's
// partition CTE cut off and spaces collapsed.
func rewriteBody(t *testing.T, text string, args ...any) (string, myQuery) {
	t.Helper()
	q, err := rewriteForTest(t, text, args, "todos")
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	s := strings.Join(strings.Fields(q.sql), " ")
	if i := strings.Index(s, "`_sync_partition` = ?)"); i >= 0 {
		s = strings.TrimPrefix(strings.TrimSpace(s[i+len("`_sync_partition` = ?)"):]), ", ")
	}
	return s, q
}

// TestQueryFenceRewrite checks where fence puts LIMIT 18446744073709551615
// (AQ-6): on every derived table, CTE body, scalar sub-query and
// parenthesized compound member that computes a result column, but not
// on one that only renames columns, the operands of EXISTS/IN/ANY/ALL
// (through extra parentheses too: MariaDB refuses LIMIT there), a body
// that has LIMIT or OFFSET, a recursive CTE reading itself, or the
// driver's own partition CTEs.
func TestQueryFenceRewrite(t *testing.T) {
	const L = "LIMIT 18446744073709551615"
	for _, c := range []struct{ sql, want string }{
		{`SELECT x FROM (SELECT title AS x, d.id, * FROM todos AS d WHERE done) d WHERE x = 'a'`,
			"SELECT `x` FROM (SELECT `title` AS `x`, `d`.`id`, * FROM `todos` AS `d` WHERE `done`) `d`"},
		{`SELECT x FROM (SELECT title || 'x' AS x FROM todos) d`,
			"SELECT `x` FROM (SELECT `title` || 'x' AS `x` FROM `todos` " + L + " ) `d`"},
		{`SELECT x||x AS x FROM (SELECT x||x AS x FROM (SELECT substr(title, 1, 1) AS x FROM todos) a) b`,
			"SELECT `x`||`x` AS `x` FROM (SELECT `x`||`x` AS `x` FROM (SELECT SUBSTRING(`title`, 1, 1) AS `x` FROM `todos` " + L + " ) `a` " + L + " ) `b`"},
		{`WITH a AS (SELECT title || 'x' AS x FROM todos), b AS (SELECT x FROM a) SELECT x FROM b`,
			"`a` AS (SELECT `title` || 'x' AS `x` FROM `todos` " + L + " ), `b` AS (SELECT `x` FROM `a`) SELECT `x` FROM `b`"},
		{`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), s AS (SELECT n * 2 AS n FROM r) SELECT n FROM s, todos`,
			"`r`(`n`) AS (SELECT 1 UNION ALL SELECT `n` + 1 FROM `r` WHERE `n` < 3), `s` AS (SELECT `n` * 2 AS `n` FROM `r` " + L + " )"},
		{`SELECT id FROM todos WHERE EXISTS (SELECT 1 + 1 FROM todos t2) AND id IN (SELECT lower(id) FROM todos) AND id IN ((SELECT id || 'x' FROM todos)) AND id <> ALL (SELECT id || 'x' FROM todos)`,
			"WHERE EXISTS (SELECT 1 + 1 FROM `todos` `t2`) AND `id` IN (SELECT "},
		{`SELECT (SELECT max(title) FROM todos) AS m, x FROM (SELECT id || 'x' AS x FROM todos ORDER BY id LIMIT 2) d`,
			"SELECT (SELECT MAX(`title`) FROM `todos` " + L + " ) AS `m`, `x` FROM (SELECT `id` || 'x' AS `x` FROM `todos` ORDER BY `id` LIMIT 2) `d`"},
		{`SELECT x FROM (SELECT id AS x FROM todos UNION SELECT title || 'x' FROM todos) d`,
			"SELECT `x` FROM (SELECT `id` AS `x` FROM `todos` UNION SELECT `title` || 'x' FROM `todos` " + L + " ) `d`"},
	} {
		got, _ := rewriteBody(t, c.sql)
		if !strings.Contains(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
	// No LIMIT inside the operand of IN/ALL, however parenthesized, and
	// none in the partition CTE.
	got, q := rewriteBody(t, `SELECT id FROM todos WHERE id IN ((SELECT id || 'x' FROM todos)) AND id <> ALL (SELECT id || 'x' FROM todos)`)
	if strings.Contains(got, L) || strings.Contains(q.sql, L) {
		t.Errorf("a sub-link operand or the partition CTE got a LIMIT:\n%s", q.sql)
	}
}

// TestQueryGuardRewrite checks that every replace() and instr() call,
// nested ones included, is guarded by a cost check on its arguments'
// byte lengths against its share of guardCostBudget (AQ-6), each argument written once (the text grows by a
// constant per call, not by a factor per nesting level), the host's
// values bound in the same order, and that LIKE names NUL as its escape
// character instead of doubling backslashes with REPLACE.
func TestQueryGuardRewrite(t *testing.T) {
	got, q := rewriteBody(t, `SELECT replace(replace(replace(title, ?, 'bb'), 'b', 'c'), 'c', 'd'), instr(title, ?) FROM todos WHERE title LIKE ?`,
		"a", "z", `\%`)
	if q.guards != 4 {
		t.Errorf("guards = %d, want 4:\n%s", q.guards, got)
	}
	for _, want := range []string{
		"REPLACE((@_sync_g0s := REPLACE((@_sync_g1s := REPLACE((@_sync_g2s := `title`), CONCAT(COALESCE((@_sync_g2f := CAST(? AS CHAR) ), (@_sync_g2s := NULL)), IF(LENGTH(@_sync_g2f) > 0 OR (@_sync_g2s := NULL) IS NULL AND (@_sync_g2f := NULL) IS NULL, '', NULL)), CONCAT(COALESCE((@_sync_g2t := 'bb'), IF((@_sync_g2s := NULL) IS NULL AND (@_sync_g2f := NULL) IS NULL, NULL, '')), IF(LENGTH(@_sync_g2s) * LENGTH(@_sync_g2f) + IF(",
		"> 25000000, ((@_sync_guard := 1) + (SELECT 1 UNION ALL SELECT 2)), IF((@_sync_g2s := NULL) IS NULL AND (@_sync_g2f := NULL) IS NULL AND (@_sync_g2t := NULL) IS NULL, '', NULL))))",
		"INSTR((@_sync_g3s := `title`), CONCAT(COALESCE((@_sync_g3n := CAST(? AS CHAR) ), IF((@_sync_g3s := NULL) IS NULL, NULL, '')), IF(LENGTH(@_sync_g3s) * LENGTH(@_sync_g3n) > 25000000,",
		" ESCAPE X'00'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten SQL lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `'\\'`) {
		t.Errorf("LIKE still doubles backslashes:\n%s", got)
	}
	if want := []any{"p1", "a", "z", `\%`}; !equalArgs(q.args, want) {
		t.Errorf("args %v, want %v", q.args, want)
	}
	// Each argument once: three levels of replace grow the text by a
	// constant per call, the same as three calls side by side.
	nested, _ := rewriteBody(t, `SELECT replace(replace(replace(title, 'a', 'b'), 'a', 'b'), 'a', 'b') FROM todos`)
	flat, _ := rewriteBody(t, `SELECT replace(title, 'a', 'b') || replace(title, 'a', 'b') || replace(title, 'a', 'b') FROM todos`)
	if d := len(nested) - len(flat); d > 40 || d < -40 {
		t.Errorf("nested replace text %d bytes, side by side %d: an argument is written more than once", len(nested), len(flat))
	}
	// A call of literals and bound values is priced at rewrite: within
	// its share it is left to the engine (which folds it into an index
	// condition), past it guarded like any other.
	if got, q := rewriteBody(t, `SELECT id FROM todos WHERE id = replace(?, '-', '') AND instr('abc', 'b') > 0`, "a-b"); q.guards != 0 ||
		strings.Contains(got, "@_sync_g") {
		t.Errorf("constant calls within the budget were guarded:\n%s", got)
	}
	if _, q := rewriteBody(t, `SELECT id FROM todos WHERE id = replace(?, '-', '')`, strings.Repeat("-", 20_000)); q.guards != 1 {
		t.Errorf("replace('-' → '') of a 20,000-byte bound value (priced 4·10^8): guards = %d, want 1", q.guards)
	}
	if strings.Count(nested, "`title`") != 1 {
		t.Errorf("the innermost argument is written %d times:\n%s", strings.Count(nested, "`title`"), nested)
	}
}

// TestQueryFencePlans checks on the engine what fence leaves to the
// optimizer (AQ-6): EXPLAIN of an ordinary query, of a derived table or
// CTE that only renames columns and of an IN sub-query shows no DERIVED
// step (the partition CTE and the host's renaming bodies are merged, so
// conditions still reach the index), while a derived table or CTE that
// computes a column is one DERIVED step (materialized, not merged).
func TestQueryFencePlans(t *testing.T) {
	c := openStore(t)
	ctx := t.Context()
	declared, err := c.queryTables([]string{"kinds"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := c.aq.get(c)
	if err != nil {
		t.Fatal(err)
	}
	derived := func(text string) int {
		t.Helper()
		q, err := rewriteQuery(text, nil, c.cfg.DBName, c.coll, declared, "p1")
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rows, err := db.QueryContext(ctx, "EXPLAIN "+q.sql, q.args...)
		if err != nil {
			t.Fatalf("%q: EXPLAIN: %v", text, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, col := range cols {
				if b, ok := vals[i].([]byte); ok && col == "select_type" && string(b) == "DERIVED" {
					n++
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		sql  string
		want int
	}{
		{`SELECT id, s FROM kinds WHERE id = 'k1'`, 0},
		{`SELECT id FROM kinds WHERE id IN (SELECT lower(id) FROM kinds)`, 0},
		{`SELECT x FROM (SELECT s AS x, id FROM kinds) d WHERE id = 'k1'`, 0},
		{`WITH a AS (SELECT id, s FROM kinds) SELECT s FROM a WHERE id = 'k1'`, 0},
		{`SELECT x FROM (SELECT s || 'x' AS x, id FROM kinds) d WHERE id = 'k1'`, 1},
		{`WITH a AS (SELECT id, upper(s) AS u FROM kinds) SELECT u FROM a WHERE id = 'k1'`, 1},
	} {
		if got := derived(c.sql); got != c.want {
			t.Errorf("%q: %d DERIVED step(s), want %d", c.sql, got, c.want)
		}
	}
}

// TestQueryGuardLeavesNoValue checks that the guards' session variables
// hold no value after a query, whichever argument was NULL: the query
// pool's next query (another partition's, maybe) finds nothing of this
// one on the connection.
func TestQueryGuardLeavesNoValue(t *testing.T) {
	c := openStore(t)
	ctx := t.Context()
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "kinds", driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": "k1", "grp": "g", "s": "abc", "i": int64(7), "f": 1.5, "b": true, "j": driver.JSON(`[1]`), "x": []byte{}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	declared, err := c.queryTables([]string{"kinds"})
	if err != nil {
		t.Fatal(err)
	}
	conn := queryConn(t, c)
	for _, text := range []string{
		`SELECT replace(s, 'b', 'xx'), instr(s, 'b') FROM kinds`,
		`SELECT replace(s, NULL, 'xx'), instr(s, NULL) FROM kinds`,
		`SELECT replace(s, 'b', NULL), instr(NULL, s) FROM kinds`,
		`SELECT replace(NULL, s, 'b'), instr(s, 'b') FROM kinds`,
		`SELECT replace(s, '', 'xx'), instr(s, 'b') FROM kinds`,
		`SELECT replace(s, substr(s, 1, 0), 'xx'), instr(s, 'b') FROM kinds`,
	} {
		q, err := rewriteQuery(text, nil, c.cfg.DBName, c.coll, declared, "p1")
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rows, err := conn.QueryContext(ctx, q.sql, q.args...)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		rows.Close()
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT (@_sync_g0s IS NOT NULL) + (@_sync_g0f IS NOT NULL) + (@_sync_g0t IS NOT NULL) +
			(@_sync_g1s IS NOT NULL) + (@_sync_g1n IS NOT NULL)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%q: %d guard variable(s) still hold a value after the query", text, n)
		}
	}
}

// queryConn returns a connection of c's authoritative-query pool, closed
// at the test's end.
func queryConn(t *testing.T, c *Conn) *sql.Conn {
	t.Helper()
	db, err := c.aq.get(c)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
