package querylang

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestCheckQueryTextAdmits(t *testing.T) {
	for _, c := range []struct {
		sql    string
		want   string
		params int
	}{
		{"SELECT 1", "SELECT 1", 0},
		{"  select id from t  ", "select id from t", 0},
		{"/* lead */ WITH x AS (SELECT 1) SELECT * FROM x;", "WITH x AS (SELECT 1) SELECT * FROM x", 0},
		{"SELECT 1; -- trailing\n ;; /* x */", "SELECT 1", 0},
		{"SELECT 'a;b', \"c;d\", [e;f], `g;h` FROM t", "SELECT 'a;b', \"c;d\", [e;f], `g;h` FROM t", 0},
		{"SELECT 'it''s;' /* ; */ -- ;\n FROM t", "SELECT 'it''s;' /* ; */ -- ;\n FROM t", 0},
		{"SELECT 1 /* ; DELETE FROM t", "SELECT 1", 0},
		{"SELECT ?, ?, ?", "SELECT ?, ?, ?", 3},
		{"SELECT ?2, ?", "SELECT ?2, ?", 3},
		{"SELECT ?5", "SELECT ?5", 5},
		{"SELECT ?1, ?1, ?1", "SELECT ?1, ?1, ?1", 1},
		{"SELECT '?', \"?\" FROM t WHERE a = ?", "SELECT '?', \"?\" FROM t WHERE a = ?", 1},
		{"SELECT x'00ff', 0x1F, 1.5e-3, .5, 1_000, a$b, é FROM t", "SELECT x'00ff', 0x1F, 1.5e-3, .5, 1_000, a$b, é FROM t", 0},
		{"SELECT j->>'$.a', j->'b', a||b, a<>b, a!=b, a==b, a<<1 FROM t", "SELECT j->>'$.a', j->'b', a||b, a<>b, a!=b, a==b, a<<1 FROM t", 0},
		{"SELECT maintenance.id, t.main, 'main' || '.x', \"main\" FROM t, maintenance", "SELECT maintenance.id, t.main, 'main' || '.x', \"main\" FROM t, maintenance", 0},
	} {
		got, err := CheckQueryText(c.sql)
		if err != nil {
			t.Errorf("CheckQueryText(%q): %v", c.sql, err)
			continue
		}
		if got.SQL != c.want || got.Params != c.params {
			t.Errorf("CheckQueryText(%q) = %q, %d params; want %q, %d", c.sql, got.SQL, got.Params, c.want, c.params)
		}
	}
}

func TestCheckQueryTextRefuses(t *testing.T) {
	for _, sql := range []string{
		"", "  ", ";", " ; ; ", "-- only a comment", "/* only */",
		"SELECT 1; SELECT 2", "SELECT 1; DELETE FROM t", "SELECT 1 /* x */; DROP TABLE t", "SELECT 1;\n-- x\nCOMMIT",
		"DELETE FROM t", "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "PRAGMA query_only = 0", "ATTACH 'x' AS y",
		"EXPLAIN SELECT 1", "VALUES (1)", "BEGIN", "CREATE TABLE x (a)", "(SELECT 1)", "'SELECT'", "\"SELECT\" 1",
		"SELECT :a", "SELECT @a", "SELECT $a", "SELECT #a", "SELECT ?0", "SELECT ?32767", "SELECT ?99999999999999999999",
		"SELECT 'unterminated", "SELECT \"unterminated", "SELECT [unterminated", "SELECT `unterminated",
		"SELECT 1\x00; DELETE FROM t", "SELECT '\x00'", "SELECT \xff", "SELECT x'0'", "SELECT x'zz'", "SELECT 1e", "SELECT 12abc",
		"SELECT 1 ^ 2", "SELECT {1}", "SELECT \\",
		"SELECT * FROM main.t", "SELECT * FROM MAIN . t", "SELECT * FROM \"main\".\"t\"", "SELECT * FROM [Main].t",
		"SELECT * FROM `temp`.t", "SELECT * FROM 'main'.t", "SELECT * FROM main/**/./**/t", "SELECT * FROM temp.t",
		"SELECT * FROM main\n-- x\n.t", "WITH x AS (SELECT * FROM main.t) SELECT * FROM x", "SELECT main.id FROM t AS main",
	} {
		_, err := CheckQueryText(sql)
		if got := driver.CodeOf(err); got != driver.CodeQueryInvalid {
			t.Errorf("CheckQueryText(%q): error %v, want code %s", sql, err, driver.CodeQueryInvalid)
		}
	}
}

func TestTokenizeSpans(t *testing.T) {
	sql := "SELECT a,'b''c' -- x\n/*y*/?2;"
	toks, err := Tokenize(sql)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []TokKind
	var texts []string
	for _, tk := range toks {
		kinds = append(kinds, tk.Kind)
		texts = append(texts, sql[tk.Start:tk.End])
	}
	wantKinds := []TokKind{TokWord, TokSpace, TokWord, TokOp, TokString, TokSpace, TokSpace, TokSpace, TokParam, TokSemi}
	wantTexts := []string{"SELECT", " ", "a", ",", "'b''c'", " ", "-- x\n", "/*y*/", "?2", ";"}
	if len(kinds) != len(wantKinds) {
		t.Fatalf("tokens %q, want %q", texts, wantTexts)
	}
	for i := range kinds {
		if kinds[i] != wantKinds[i] || texts[i] != wantTexts[i] {
			t.Errorf("token %d = %d %q, want %d %q", i, kinds[i], texts[i], wantKinds[i], wantTexts[i])
		}
	}
}

func TestCheckQueryTextRefusesDeepNesting(t *testing.T) {
	ok := "SELECT " + strings.Repeat("(", MaxQueryDepth) + "1" + strings.Repeat(")", MaxQueryDepth) + " FROM todos"
	if _, err := CheckQueryText(ok); err != nil {
		t.Fatalf("depth %d: %v", MaxQueryDepth, err)
	}
	deep := "SELECT " + strings.Repeat("(", MaxQueryDepth+1) + "1" + strings.Repeat(")", MaxQueryDepth+1) + " FROM todos"
	var le *driver.QueryLimitError
	if _, err := CheckQueryText(deep); !errors.As(err, &le) || le.Bound != driver.BoundRewrite || le.Limit != MaxQueryDepth {
		t.Fatalf("depth %d: %v, want the rewrite bound %d", MaxQueryDepth+1, err, MaxQueryDepth)
	}
	for _, name := range []string{"nested-cast-attack", "nested-division-attack"} {
		if _, err := CheckQueryText(CostlyQueries()[name]); !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
			t.Errorf("%s: %v, want the rewrite bound (AQ-6 depth)", name, err)
		}
	}
}

func TestCallNesting(t *testing.T) {
	for sql, want := range map[string]int{
		"SELECT 1":                    0,
		"SELECT replace(a, 'x', 'y')": 1,
		"SELECT replace(replace(a, 'x', 'y'), 'b', replace(c, 'd', 'e'))": 2,
		"SELECT REPLACE ( replace(replace(a,'1','2'),'3','4'), '5', '6')": 3,
		"SELECT replace(a, 'x', (upper(replace(b, 'y', 'z'))))":           2,
		"SELECT (replace)(a), replace(b, 'c', 'd')":                       1,
	} {
		toks, err := Tokenize(sql)
		if err != nil {
			t.Fatal(err)
		}
		var ps []Piece
		for _, tk := range toks {
			ps = append(ps, Piece{Kind: tk.Kind, Text: sql[tk.Start:tk.End], Name: strings.ToLower(sql[tk.Start:tk.End])})
		}
		if got := CallNesting(ps, "replace"); got != want {
			t.Errorf("CallNesting(%q) = %d, want %d", sql, got, want)
		}
	}
}
