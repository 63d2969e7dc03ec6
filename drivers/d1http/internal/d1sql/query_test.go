package d1sql

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// d1TestTables are the declared tables the rewriter tests use.
var d1TestTables = []D1QueryTable{{Name: "todos", Columns: []string{"id", "title", "done"}}}

// rewriteD1 runs CheckQueryText then RewriteD1Query, as the driver does.
func rewriteD1(sql string, args []any, tables []D1QueryTable) (D1Query, error) {
	text, err := querylang.CheckQueryText(sql)
	if err != nil {
		return D1Query{}, err
	}
	return RewriteD1Query(text.SQL, args, tables)
}

// The text layer refuses, on its own, every statement that could write
// or read outside the declared tables: D1 has no read-only mode, so DML
// after WITH (which CheckQueryText admits) must never reach it (AQ-1).
func TestRewriteD1QueryRefuses(t *testing.T) {
	for _, sql := range []string{
		`WITH x AS (SELECT 1) DELETE FROM todos`,
		`WITH x AS (SELECT 1) UPDATE todos SET title = 'evil'`,
		`WITH x AS (SELECT 1) INSERT INTO todos (id) VALUES ('x')`,
		`WITH x AS (SELECT 1) REPLACE INTO todos (id) VALUES ('x')`,
		`WITH x AS (SELECT 1) INSERT INTO todos SELECT * FROM x RETURNING id`,
		`WITH x AS (SELECT 1) DELETE FROM todos RETURNING *`,
		`SELECT * FROM todos, sqlite_master`,
		`SELECT * FROM todos, "SQLITE_SCHEMA"`,
		`SELECT * FROM todos, [sqlite_temp_master]`,
		`SELECT * FROM todos JOIN pragma_table_info('todos')`,
		`SELECT * FROM todos, _sync_commits`,
		"SELECT * FROM todos, `_SYNC_META`",
		`SELECT * FROM todos, _cf_KV`,
		`SELECT * FROM todos, d1_migrations`,
		`SELECT _sync_partition FROM todos`,
		`SELECT todos._sync_version FROM todos`,
		`SELECT * FROM 'todos'`,
		`SELECT * FROM todos JOIN 'users' ON 1`,
		`SELECT load_extension('x') FROM todos`,
		`SELECT sqlite_version() FROM todos`,
		`SELECT random() FROM todos`,
		`SELECT randomblob(8) FROM todos`,
		`SELECT changes() FROM todos`,
		`SELECT last_insert_rowid() FROM todos`,
		`SELECT "evil"(1) FROM todos`,
		`SELECT * FROM todos t, sqlite_master AS m`,
		`SELECT * FROM todos sqlite_master`, // an alias without AS: a deliberate false positive
	} {
		_, err := rewriteD1(sql, nil, d1TestTables)
		if driver.CodeOf(err) != driver.CodeQueryInvalid {
			t.Errorf("%q: err %v, want %s", sql, err, driver.CodeQueryInvalid)
		}
	}
}

// Names that only look refused: aliases, replace() the function, strings
// that are values.
func TestRewriteD1QueryAdmits(t *testing.T) {
	for _, sql := range []string{
		`SELECT sqlite_master.id FROM todos AS sqlite_master`,
		`SELECT replace(title, 'a', 'b') AS r FROM todos`,
		`SELECT id FROM todos WHERE title = 'sqlite_master' OR title = '_sync_meta'`,
		`SELECT 'x' AS _sync_x FROM todos`,
		`SELECT "update" FROM todos`,
		`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT x FROM n, todos`,
	} {
		if _, err := rewriteD1(sql, nil, d1TestTables); err != nil {
			t.Errorf("%q: %v", sql, err)
		}
	}
}

// The rewritten statement binds exactly ?1 (the values) and ?2 (the
// partition), whatever the host's parameters; its CTEs read main."T" of
// the partition; host CTEs are merged into the same WITH list.
func TestRewriteD1QueryShape(t *testing.T) {
	q, err := rewriteD1(`WITH mine AS (SELECT id FROM todos WHERE title = ?2 OR id = ?) SELECT ?1 AS a, id FROM mine`,
		[]any{int64(1) << 60, "t", "x"}, d1TestTables)
	if err != nil {
		t.Fatal(err)
	}
	want := `WITH "todos" AS NOT MATERIALIZED (SELECT "id", "title", "done" FROM main."todos" WHERE "_sync_partition" = ?2), ` +
		`mine AS (SELECT id FROM todos WHERE title = ((?1 ->> 1)) OR id = ((?1 ->> 2))) SELECT (CAST((?1 ->> 0) AS INTEGER)) AS a, id FROM mine`
	if q.SQL != want {
		t.Errorf("SQL\n got %s\nwant %s", q.SQL, want)
	}
	if q.Args != `["1152921504606846976","t","x"]` || q.Params != 3 {
		t.Errorf("Args %s Params %d", q.Args, q.Params)
	}
	// 1000 values: still two bound parameters (D1 allows 100).
	args := make([]any, 1000)
	for i := range args {
		args[i] = strconv.Itoa(i)
	}
	q, err = rewriteD1(`SELECT id FROM todos WHERE id IN (`+strings.Repeat("?, ", 999)+`?)`, args, d1TestTables)
	if err != nil {
		t.Fatal(err)
	}
	if ps := d1Placeholders(t, q.SQL); len(ps) != 2 || !ps["?1"] || !ps["?2"] {
		t.Errorf("placeholders %v, want ?1 and ?2", ps)
	}
	var elems []any
	if err := json.Unmarshal([]byte(q.Args), &elems); err != nil || len(elems) != 1000 {
		t.Errorf("Args holds %d elements (%v), want 1000", len(elems), err)
	}
	// A bind value count that does not match.
	if _, err := RewriteD1Query(`SELECT id FROM todos WHERE id = ?`, nil, d1TestTables); driver.CodeOf(err) != driver.CodeQueryInvalid {
		t.Errorf("missing bind value: %v", err)
	}
	if _, err := RewriteD1Query(`SELECT id FROM todos`, []any{"x"}, d1TestTables); driver.CodeOf(err) != driver.CodeQueryInvalid {
		t.Errorf("extra bind value: %v", err)
	}
}

// d1Placeholders returns the parameter tokens of sql.
func d1Placeholders(t testing.TB, sql string) map[string]bool {
	toks, err := querylang.Tokenize(sql)
	if err != nil {
		t.Fatalf("the rewritten statement does not tokenize: %v", err)
	}
	out := map[string]bool{}
	for _, tk := range toks {
		if tk.Kind == querylang.TokParam || tk.Kind == querylang.TokNamedParam {
			out[sql[tk.Start:tk.End]] = true
		}
	}
	return out
}

func TestD1QueryValue(t *testing.T) {
	for _, c := range []struct {
		raw     string
		boolean bool
		want    any
	}{
		{`null`, false, nil},
		{`"i9223372036854775807"`, false, int64(math.MaxInt64)},
		{`"i-9223372036854775808"`, false, int64(math.MinInt64)},
		{`"i1"`, true, true},
		{`"i0"`, true, false},
		{`"i2"`, false, int64(2)},
		{`5e-324`, false, 5e-324},
		{`2`, false, 2.0},
		{`"z"`, false, math.Copysign(0, -1)},
		{`"+"`, false, math.Inf(1)},
		{`"-"`, false, math.Inf(-1)},
		{`"tthé"`, false, "thé"},
		{`"t"`, false, ""},
		{`"b00ff"`, false, []byte{0, 255}},
		{`"b"`, false, []byte{}},
	} {
		got, err := D1QueryValue(json.RawMessage(c.raw), c.boolean)
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		if !d1SameValue(c.want, got) {
			t.Errorf("%s: got %T(%#v), want %T(%#v)", c.raw, got, got, c.want, c.want)
		}
	}
	for _, raw := range []string{`"x1"`, `""`, `"iz"`, `"bz"`, `true`, `[1]`} {
		if _, err := D1QueryValue(json.RawMessage(raw), false); driver.CodeOf(err) != driver.CodeInternal {
			t.Errorf("%s: err %v, want %s", raw, err, driver.CodeInternal)
		}
	}
}

// d1SameValue compares strictly: same Go type, floats bit for bit, an
// empty []byte is not nil.
func d1SameValue(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(g) == math.Float64bits(w)
	case []byte:
		g, ok := got.([]byte)
		return ok && g != nil && string(g) == string(w)
	}
	return want == got
}
