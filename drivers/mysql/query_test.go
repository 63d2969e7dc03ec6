package mysql

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// Tests of the authoritative-query capability beyond the conformance
// suite: the rewriter's refusals and output (no database), the engine
// side alone (the query pool's connections, fed hostile SQL straight past
// the rewriter), and the dialect gaps the rewrite closes.

// testQueryTables are the declared tables the rewriter tests use.
func testQueryTables(t testing.TB, names ...string) []queryTable {
	t.Helper()
	var out []queryTable
	for _, n := range names {
		for _, tb := range conformance.TestSchema().Tables {
			if tb.Name != n {
				continue
			}
			qt := queryTable{name: n, cols: tb.Columns, floats: map[string]string{}}
			for _, c := range tb.Columns {
				if c.Type == driver.TypeFloat {
					qt.floats[strings.ToLower(c.Name)] = c.Name
				}
			}
			out = append(out, qt)
		}
	}
	if len(out) != len(names) {
		t.Fatalf("unknown test table in %v", names)
	}
	return out
}

// rewriteForTest runs AdmitQuery, QueryArgs and rewriteQuery, as
// AuthoritativeQuery does.
func rewriteForTest(t testing.TB, text string, args []any, tables ...string) (myQuery, error) {
	t.Helper()
	qt, err := querylang.AdmitQuery(driver.Query{SQL: text, Args: args})
	if err != nil {
		return myQuery{}, err
	}
	a, err := querylang.QueryArgs(args, mysqlArgRules)
	if err != nil {
		return myQuery{}, err
	}
	return rewriteQuery(qt.SQL, a, "storedb", "utf8mb4_nopad_bin", testQueryTables(t, tables...), "p1")
}

func TestQueryRewriteRefuses(t *testing.T) {
	for _, text := range []string{
		`SELECT id FROM todos INTO OUTFILE '/tmp/x'`,
		`SELECT id FROM todos FOR UPDATE`,
		`SELECT id FROM todos LOCK IN SHARE MODE`,
		`SELECT id FROM todos PROCEDURE ANALYSE()`,
		`SELECT sleep(10) FROM todos`,
		`SELECT benchmark(1000000, md5('x')) FROM todos`,
		`SELECT get_lock('x', 1) FROM todos`,
		`SELECT load_file('/etc/passwd') FROM todos`,
		`SELECT user() FROM todos`,
		`SELECT database() FROM todos`,
		`SELECT version() FROM todos`,
		`SELECT "sleep"(1) FROM todos`,
		`SELECT id FROM todos, _sync_commits`,
		`SELECT _sync_negzero FROM todos`,
		`SELECT id FROM todos WHERE id = N'x'`,
		`SELECT id FROM todos WHERE id = _binary'x'`,
		`SELECT 'main'.id FROM todos`,
		`WITH todos AS (SELECT 1 AS id) SELECT id FROM todos`,
		`SELECT (WITH "TODOS" AS (SELECT 1 AS id) SELECT id FROM todos) AS x`,
		`SELECT id FROM todos, json_each(title) AS j`,
		`SELECT id FROM todos, json_each('{"a": 1}') AS j`,
		`SELECT NEXT VALUE FOR s FROM todos`,
	} {
		_, err := rewriteForTest(t, text, nil, "todos")
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != driver.CodeQueryInvalid {
			t.Errorf("%q: got %v, want %s", text, err, driver.CodeQueryInvalid)
		}
	}
	// A declared table the text never names.
	if _, err := rewriteForTest(t, `SELECT id FROM todos`, nil, "todos", "users"); !errors.Is(err, driver.ErrQueryInvalid) {
		t.Errorf("declared but unused: got %v, want query_invalid", err)
	}
}

func TestQueryRewriteShape(t *testing.T) {
	q, err := rewriteForTest(t, "SELECT [id], `title`, \"done\" AS d /* c */ FROM ToDoS -- x\n WHERE owner_id = ?2 OR title = ?2 OR id = ?1 AND x'00' <> 0x41 AND title LIKE ?3",
		[]any{"a", "b", nil}, "todos")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"WITH `todos` AS (SELECT `id`, `title`, `done`, `project_id`, `owner_id`, `updated_at` FROM `storedb`.`todos` WHERE `_sync_partition` = ?)",
		"SELECT `id`, `title`, `done` AS `d`", "FROM `todos`", "X'00' <> 65",
		asciiFoldOpen + "(`title`)" + asciiLowerClose + " LIKE " + asciiFoldOpen + "( NULL )" + asciiLowerClose + " ESCAPE X'00'",
	} {
		if !strings.Contains(q.sql, want) {
			t.Errorf("rewritten SQL lacks %q:\n%s", want, q.sql)
		}
	}
	if strings.Contains(q.sql, "/*") || strings.Contains(q.sql, "--") {
		t.Errorf("a comment reached the engine:\n%s", q.sql)
	}
	// The partition first, then ?2 twice and ?1 in text order; nil is a literal.
	if want := []any{"p1", "b", "b", "a"}; !equalArgs(q.args, want) {
		t.Errorf("args %v, want %v", q.args, want)
	}
	if q.plain != "" {
		t.Errorf("no float column in the select list, yet a plain variant: %s", q.plain)
	}
	q, err = rewriteForTest(t, `SELECT id, k.f AS g FROM kinds k ORDER BY 2`, nil, "kinds")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q.sql, "`k`.`_sync_nz_f` AS `_sync_nzc_1` FROM") || q.plain == "" || strings.Contains(q.plain, "_sync_nzc_") {
		t.Errorf("-0.0 companion missing or misplaced:\n%s\n%s", q.sql, q.plain)
	}
}

func equalArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQueryEngineAlone runs hostile SQL on the query pool's connections
// directly, past the rewriter: without a default database no
// unqualified name reaches a table, and the READ ONLY transaction refuses
// writes even to a qualified name.
func TestQueryEngineAlone(t *testing.T) {
	c := openStore(t)
	pushRows(t, c, "p1", todoRow("t1", "alpha", "u1"))
	ctx := context.Background()
	conn := queryConn(t, c)
	for _, q := range []string{"SELECT count(*) FROM _sync_commits", "SELECT id FROM todos", "SELECT * FROM tables"} {
		var n any
		err := conn.QueryRowContext(ctx, q).Scan(&n)
		if errNumber(err) != 1046 { // ER_NO_DB_ERROR
			t.Errorf("%q: got %v, want error 1046 (no database selected)", q, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.ExecContext(ctx, "UPDATE "+quoteIdent(c.cfg.DBName)+".`todos` SET title = 'evil'")
	if errNumber(err) != 1792 { // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
		t.Errorf("a write in the query transaction: got %v, want error 1792", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES"} {
		if !strings.Contains(mode, m) {
			t.Errorf("query pool sql_mode %q lacks %s", mode, m)
		}
	}
}

// TestQueryDialect pins the SQLite semantics the rewrite gives MySQL
// (AQ-5) and the qualifier check that runs in the query's transaction.
func TestQueryDialect(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	kind := func(id string, s string, f float64) driver.Row {
		return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
			Values: driver.Values{"id": id, "grp": "g", "s": s, "i": int64(7), "f": f, "b": true, "j": driver.JSON(`[1]`), "x": []byte{}}}
	}
	for _, r := range []driver.Row{kind("k1", `Ab\c%`, math.Copysign(0, -1)), kind("k2", "ÉTÉ", 1.5)} {
		if err := tx.UpsertRow(ctx, "kinds", r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "1", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "kinds", RowID: "k1", Op: driver.OpDelete, Scopes: driver.Scopes{"grp": "g"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	run := func(text string, args ...any) driver.QueryResult {
		t.Helper()
		res, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: text, Args: args, Tables: []string{"kinds"}})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		return res
	}
	one := func(text string, want any, args ...any) {
		t.Helper()
		res := run(text, args...)
		if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
			t.Fatalf("%q: rows %v, want one value", text, res.Rows)
		}
		got := res.Rows[0][0]
		if gf, ok := got.(float64); ok {
			if wf, ok := want.(float64); ok && math.Float64bits(gf) == math.Float64bits(wf) {
				return
			}
		} else if gb, ok := got.([]byte); ok {
			if wb, ok := want.([]byte); ok && string(gb) == string(wb) {
				return
			}
		} else if got == want {
			return
		}
		t.Errorf("%q: got %T(%v), want %T(%v)", text, got, got, want, want)
	}
	negZero := math.Copysign(0, -1)
	// LIKE: ASCII case-insensitive, no escape character, as SQLite.
	one(`SELECT count(*) FROM kinds WHERE s LIKE 'ab%'`, int64(1))
	one(`SELECT count(*) FROM kinds WHERE s LIKE ?`, int64(1), `ab\c_`)
	one(`SELECT count(*) FROM kinds WHERE s NOT LIKE 'a_\c%'`, int64(1))
	one(`SELECT count(*) FROM kinds WHERE s || 'x' LIKE '%\_X' ESCAPE '\'`, int64(0))
	one(`SELECT count(*) FROM kinds WHERE s LIKE 'Ab\c%'`, int64(1)) // a backslash in the pattern is data
	one(`SELECT count(*) FROM kinds WHERE 'x\' LIKE '_\'`, int64(2))
	// replace and instr answer as before under their cost guards (AQ-6).
	one(`SELECT replace(s, 'b', 'XY') FROM kinds WHERE id = 'k1'`, `AXY\c%`)
	one(`SELECT replace(replace(s, 'B', 'z'), '\', '') FROM kinds WHERE id = 'k1'`, `Abc%`)
	one(`SELECT replace(s, '', 'x') FROM kinds WHERE id = 'k1'`, `Ab\c%`)
	one(`SELECT replace(s, ?, 'x') FROM kinds WHERE id = 'k1'`, nil, nil)
	one(`SELECT replace(i, 7, 'x') FROM kinds WHERE id = 'k1'`, "x")
	one(`SELECT instr(s, 'c') + instr(s, 'C') FROM kinds WHERE id = 'k1'`, int64(4))
	one(`SELECT instr(s, ?) FROM kinds WHERE id = 'k2'`, int64(2), "TÉ")
	// Two bound strings compare bytewise, as two literals do (MariaDB
	// gives a bound string utf8mb4_general_ci unless cast: AQ-5).
	one(`SELECT instr(?, ?) FROM kinds WHERE id = 'k1'`, int64(0), "ABC", "b")
	one(`SELECT ? = ? FROM kinds WHERE id = 'k1'`, int64(0), "a", "A")
	one(`SELECT ? < ? FROM kinds WHERE id = 'k1'`, int64(0), "a", "B")
	one(`SELECT max(?, ?) FROM kinds WHERE id = 'k1'`, "a", "a", "B")
	one(`SELECT count(*) FROM kinds WHERE s = ?`, int64(0), `ab\c%`)
	one(`SELECT count(*) FROM kinds LIMIT ?`, int64(2), "1")
	one(`SELECT i FROM kinds ORDER BY i LIMIT ? OFFSET ?`, int64(7), "1", "1")
	one(`SELECT i FROM kinds ORDER BY i LIMIT ?, ?`, int64(7), "1", "1")
	// Strings and operators.
	one(`SELECT 'a\' || 'b'`+" FROM kinds WHERE id = 'k1'", `a\b`)
	one(`SELECT max(1, 5, 3) FROM kinds WHERE id = 'k1'`, int64(5))
	one(`SELECT ~0 FROM kinds WHERE id = 'k1'`, int64(-1))
	one(`SELECT length(s) FROM kinds WHERE id = 'k2'`, int64(3))
	one(`SELECT sum(i) FROM kinds`, int64(14))
	one(`SELECT avg(f) FROM kinds`, 0.75)
	one(`SELECT b FROM kinds WHERE id = 'k1'`, true)
	one(`SELECT x FROM kinds WHERE id = 'k1'`, []byte{})
	one(`SELECT ?1 FROM kinds WHERE id = 'k1'`, int64(1), true)
	one(`SELECT CAST(f AS INTEGER) FROM kinds WHERE id = 'k2'`, int64(1))
	one(`SELECT id FROM kinds WHERE id IS 'k2'`, "k2")
	// -0.0 survives a bare reference and a *, not a computation.
	one(`SELECT f FROM kinds WHERE id = 'k1'`, negZero)
	one(`SELECT k.f AS g FROM kinds k WHERE id = 'k1'`, negZero)
	if res := run(`SELECT * FROM kinds WHERE id = 'k1'`); len(res.Columns) != 8 || res.Columns[4] != "f" ||
		math.Float64bits(res.Rows[0][4].(float64)) != math.Float64bits(negZero) {
		t.Errorf("SELECT *: columns %v rows %v, want the 8 app columns with f = -0.0", res.Columns, res.Rows)
	}
	one(`WITH w AS (SELECT f FROM kinds) SELECT f FROM w WHERE f = 0`, 0.0) // fallback without the companion
	// json_each over a literal and a bound value, typed from the document.
	one(`SELECT sum(j.value) FROM kinds k, json_each('[1, 2, 3]') AS j WHERE k.id = 'k1'`, int64(6))
	one(`SELECT count(*) FROM kinds WHERE id IN (SELECT value FROM json_each(?))`, int64(2), `["k1", "k2", "k3"]`)
	one(`SELECT max(key) FROM kinds, json_each(?) WHERE id = 'k1'`, int64(1), `[1.5, 2.5]`)

	// Qualified names: a database is never a qualifier.
	for _, text := range []string{
		"SELECT id FROM " + c.cfg.DBName + ".kinds",
		"SELECT k.id FROM kinds k, mysql.user u",
		"SELECT k.id FROM kinds k, INFORMATION_SCHEMA.tables u",
		"SELECT k.id FROM kinds k, `performance_schema`.threads u",
	} {
		_, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: text, Tables: []string{"kinds"}})
		if !errors.Is(err, driver.ErrQueryInvalid) {
			t.Errorf("%q: got %v, want query_invalid", text, err)
		}
	}
	// A replace() priced past guardCostBudget fails before MariaDB starts
	// it, with query_limit "time" (AQ-6): 6,000 bytes of 'a' → 'bb' is
	// priced 1.08·10^8 (20 ms of work on the old code: safe here). A host's
	// scalar sub-query of two rows beside a guarded call stays
	// query_invalid (its 1242 is told from the guard's by guardFlag), and
	// so does one in a statement without guards.
	_, err = c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: `SELECT replace(?, 'a', 'bb') FROM kinds WHERE id = 'k1'`,
		Args: []any{strings.Repeat("a", 6000)}, Tables: []string{"kinds"}})
	var le *driver.QueryLimitError
	if !errors.As(err, &le) || le.Bound != driver.BoundTime {
		t.Errorf("replace of 6,000 bytes 'a' → 'bb': got %v, want query_limit (time)", err)
	}
	one(`SELECT length(replace(?, 'a', 'bb')) FROM kinds WHERE id = 'k1'`, int64(10000), strings.Repeat("a", 5000))
	one(`SELECT length(replace(?, 'a', 'bb')) FROM kinds WHERE id = 'k1'`, int64(9000), strings.Repeat("a", 4500))
	// Two calls share the budget of a row: each priced 6.1·10^7 (4,500
	// bytes), under the budget alone, over its half.
	_, err = c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: `SELECT length(replace(?1, 'a', 'bb')) + length(replace(?1, 'a', 'bb')) FROM kinds WHERE id = 'k1'`,
		Args: []any{strings.Repeat("a", 4500)}, Tables: []string{"kinds"}})
	if !errors.As(err, &le) || le.Bound != driver.BoundTime {
		t.Errorf("two replaces of 4,500 bytes 'a' → 'bb': got %v, want query_limit (time)", err)
	}
	for _, text := range []string{
		`SELECT instr(s, 'b'), (SELECT id FROM kinds) FROM kinds WHERE id = 'k1'`,
		`SELECT (SELECT id FROM kinds) FROM kinds WHERE id = 'k1'`,
	} {
		_, err = c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: text, Tables: []string{"kinds"}})
		if !errors.Is(err, driver.ErrQueryInvalid) {
			t.Errorf("%q: got %v, want query_invalid", text, err)
		}
	}
	// The query pool is left clean: a plain query still works on every connection.
	for range queryConns + 2 {
		one(`SELECT count(*) FROM kinds`, int64(2))
	}
}

// FuzzMySQLQueryRewrite feeds host text to CheckQueryText and the MySQL
// rewrite. Whatever the input: no panic; and when the rewrite accepts,
// its output holds no comment and no ';', binds exactly as many values
// as it has placeholders, names the store's database only in the
// partition CTEs, and names no _sync identifier but the ones it
// generates (AQ-1, AQ-2).
//
//	go test ./drivers/mysql -run '^$' -fuzz '^FuzzMySQLQueryRewrite$' -fuzztime 10m
func FuzzMySQLQueryRewrite(f *testing.F) {
	for _, s := range []string{
		`SELECT id, title FROM todos ORDER BY id`,
		`SELECT sqlite_master.id AS id FROM todos AS sqlite_master ORDER BY 1`,
		`SELECT t.id AS id, u.email AS email FROM todos t, users u WHERE t.owner_id = u.id ORDER BY t.id`,
		`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT count(*) AS c FROM n, todos`,
		`WITH todos AS (SELECT id FROM todos) SELECT id FROM todos ORDER BY id`,
		`SELECT id FROM todos UNION ALL SELECT id FROM main.todos ORDER BY id`,
		`SELECT id FROM "main"."todos" ORDER BY id`, `SELECT id FROM main/**/./**/todos ORDER BY id`,
		`SELECT t.id FROM todos t, "_SYNC_META" m`, `SELECT t.id FROM todos t, information_schema.tables i`,
		`SELECT t.id AS id, j.value AS v FROM todos t, json_each('[1, 2]') AS j WHERE t.id = 't1' ORDER BY v`,
		`SELECT id FROM todos /* ; DELETE FROM todos */ ORDER BY id`, "SELECT id FROM todos -- ; DELETE\nORDER BY id",
		`SELECT 'a\' AS s, id FROM todos WHERE id = 't1'`, `SELECT id AS "x; DELETE FROM todos" FROM todos`,
		`SELECT ?2 AS a, id FROM todos WHERE owner_id = ?1 ORDER BY id`, `SELECT id FROM todos WHERE title LIKE ? ORDER BY id`,
		`SELECT id, f, * FROM kinds k WHERE k.s NOT LIKE '%' || ? ESCAPE '!'`, "SELECT /*!50000 sleep(1) */ id FROM todos",
		"SELECT `a``b`, [c d], x'00ff', 0xff, 1_000 FROM todos", `SELECT id FROM todos WHERE id IS ? AND s ISNULL`,
	} {
		f.Add(s)
	}
	tables := []string{"todos", "users", "kinds"}
	f.Fuzz(func(t *testing.T, text string) {
		qt, err := querylang.CheckQueryText(text)
		if err != nil {
			return
		}
		if qt.Params > 64 {
			return
		}
		args := make([]any, qt.Params)
		for i := range args {
			args[i] = []any{"v", int64(1), 2.5, []byte{1}, nil, `[1]`}[i%6]
		}
		var declared []string
		for _, tb := range tables {
			if strings.Contains(strings.ToLower(qt.SQL), tb) {
				declared = append(declared, tb)
			}
		}
		if len(declared) == 0 {
			return
		}
		q, err := rewriteQuery(qt.SQL, args, "storedb", "utf8mb4_nopad_bin", testQueryTables(t, declared...), "p1")
		if err != nil {
			if !errors.Is(err, driver.ErrQueryInvalid) {
				t.Fatalf("%q: error %v is not query_invalid", text, err)
			}
			return
		}
		for _, out := range []string{q.sql, q.plain} {
			if out == "" {
				continue
			}
			toks, err := querylang.Tokenize(out)
			if err != nil {
				t.Fatalf("%q: rewritten SQL does not tokenize: %v\n%s", text, err, out)
			}
			params, db := 0, 0
			for _, tk := range toks {
				s := out[tk.Start:tk.End]
				switch tk.Kind {
				case querylang.TokSpace:
					if strings.TrimSpace(s) != "" {
						t.Fatalf("%q: a comment reached the engine: %s", text, out)
					}
				case querylang.TokSemi:
					t.Fatalf("%q: ';' in the rewritten SQL: %s", text, out)
				case querylang.TokParam:
					params++
				case querylang.TokNamedParam:
					t.Fatalf("%q: named parameter in the rewritten SQL: %s", text, out)
				case querylang.TokWord, querylang.TokQuotedID:
					name := strings.ToLower(querylang.UnquoteIdent(s))
					if name == "storedb" {
						db++
					}
					if strings.HasPrefix(name, "_sync") && name != partitionColumn && name != negZeroColumn &&
						!strings.HasPrefix(name, nzColumnPrefix) && !strings.HasPrefix(name, nzCompanionPrefix) {
						t.Fatalf("%q: names %s: %s", text, name, out)
					}
				}
			}
			if params != len(q.args) {
				t.Fatalf("%q: %d placeholders, %d bound values: %s", text, params, len(q.args), out)
			}
			if db != len(declared) {
				t.Fatalf("%q: the store's database named %d times, want %d (the CTEs): %s", text, db, len(declared), out)
			}
		}
	})
}

// TestQueryNestedReplaceRefused: replace() nested deeper than
// maxReplaceNesting is refused before it reaches the server (AQ-6): a
// 9-deep nest once ran a MariaDB thread for over 43 minutes past
// max_statement_time and KILL QUERY.
func TestQueryNestedReplaceRefused(t *testing.T) {
	x := `title`
	for range maxReplaceNesting + 1 {
		x = `replace(` + x + `, 'a', 'aaaaaaaaaa')`
	}
	q := `SELECT length(` + x + `) AS n FROM todos`
	declared := []queryTable{{name: "todos", cols: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "title", Type: driver.TypeString}}}}
	if _, err := rewriteQuery(q, nil, "db", "utf8mb4_bin", declared, "p1"); driver.CodeOf(err) != driver.CodeQueryInvalid {
		t.Fatalf("%d nested replace: %v, want query_invalid", maxReplaceNesting+1, err)
	}
	ok := `SELECT replace(replace(replace(title, 'a', 'b'), 'c', 'd'), 'e', 'f') AS n FROM todos`
	if _, err := rewriteQuery(ok, nil, "db", "utf8mb4_bin", declared, "p1"); err != nil {
		t.Fatalf("3 nested replace: %v", err)
	}
}
