package querylang

import (
	"strings"
	"testing"
)

// pieces tokenizes sql into Pieces (Name lower-cased for words).
func parityPieces(t *testing.T, sql string) []Piece {
	t.Helper()
	toks, err := Tokenize(sql)
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]Piece, len(toks))
	for i, tk := range toks {
		ps[i] = Piece{Kind: tk.Kind, Text: sql[tk.Start:tk.End]}
		if tk.Kind == TokWord {
			ps[i].Name = strings.ToLower(ps[i].Text)
		}
	}
	return ps
}

func parityKeyword(n string) bool { return n == "select" || n == "not" || n == "from" }

// TestMulOperandEnd checks the right operand of a multiplicative operator
// is delimited as SQLite's grammar does, or not at all.
func TestMulOperandEnd(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{`- - 3 + 1`, `- - 3`},
		{`t.x * 2`, `t.x`},
		{`f(a, (b)) FILTER (WHERE c) OVER (ORDER BY d) + 1`, `f(a, (b)) FILTER (WHERE c) OVER (ORDER BY d)`},
		{`count(*) OVER w, 2`, `count(*) OVER w`},
		{`CASE WHEN a THEN CASE b WHEN 1 THEN 2 END END - 1`, `CASE WHEN a THEN CASE b WHEN 1 THEN 2 END END`},
		{`(1 + 2) * 3`, `(1 + 2)`},
		{`'x' COLLATE nocase = 1`, `'x' COLLATE nocase`},
		{`x || 'a'`, ``},
		{`NOT x`, ``},
		{`(1 + 2`, ``},
	} {
		ps := parityPieces(t, c.sql)
		end := MulOperandEnd(ps, FirstSignificant(ps, 0), parityKeyword)
		got := ""
		for i := 0; i <= end; i++ {
			got += ps[i].Text
		}
		if got != c.want {
			t.Errorf("%q: operand %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestOrderTerms checks the terms of ORDER BY clauses.
func TestOrderTerms(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want string // per term: first..last text, then D (desc), N (nulls)
	}{
		{`ORDER BY a, b DESC LIMIT 1`, `a|b DESC D`},
		{`ORDER BY f(x, y) ASC NULLS LAST, 2) x`, `f(x, y) ASC NULLS LAST N|2`},
		{`ORDER BY CASE WHEN a THEN 1 ELSE 2 END DESC ROWS 1 PRECEDING`, `CASE WHEN a THEN 1 ELSE 2 END DESC D`},
		{`ORDER BY (SELECT max(v) FROM t ORDER BY v DESC)`, `(SELECT max(v) FROM t ORDER BY v DESC)`},
	} {
		ps := parityPieces(t, c.sql)
		terms, ok := OrderTerms(ps, FirstSignificant(ps, 1))
		if !ok {
			t.Errorf("%q: not delimited", c.sql)
			continue
		}
		var got []string
		for _, tm := range terms {
			s := ""
			for i := tm.First; i <= tm.Last; i++ {
				s += ps[i].Text
			}
			if tm.Desc {
				s += " D"
			}
			if tm.Nulls {
				s += " N"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%q: terms %q, want %q", c.sql, g, c.want)
		}
	}
	if ps := parityPieces(t, `ORDER BY a, , b`); func() bool { _, ok := OrderTerms(ps, 2); return ok }() {
		t.Errorf("an empty ORDER BY term was accepted")
	}
}
