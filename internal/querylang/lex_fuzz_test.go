package querylang

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// Fuzz targets for the authoritative-query tokenizer and CheckQueryText
// (AQ-1, AQ-2): host input, so it must never panic, must account for
// every byte, and must never let a second statement or a named parameter
// through, however the text is spelled.
//
//	go test ./internal/querylang -run '^$' -fuzz '^FuzzCheckQueryText$' -fuzztime 10m
//
// Seeds: SeedQueries and testdata/fuzz/<target>/.

func FuzzTokenize(f *testing.F) {
	for _, s := range SeedQueries {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		toks, err := Tokenize(sql)
		if err != nil {
			if driver.CodeOf(err) != driver.CodeQueryInvalid {
				t.Fatalf("Tokenize error %v, want code %s", err, driver.CodeQueryInvalid)
			}
			if len(sql) >= 8 && strings.Contains(err.Error(), sql) {
				t.Fatalf("the error message repeats the query text: %v", err)
			}
			return
		}
		// Tokens tile the text: contiguous, non-empty, start to end.
		pos := 0
		for i, tk := range toks {
			if tk.Start != pos || tk.End <= tk.Start || tk.End > len(sql) {
				t.Fatalf("token %d spans [%d,%d), want to start at %d and be non-empty within %d bytes", i, tk.Start, tk.End, pos, len(sql))
			}
			if tk.Kind < TokSpace || tk.Kind > TokOp {
				t.Fatalf("token %d has kind %d", i, tk.Kind)
			}
			checkToken(t, sql[tk.Start:tk.End], tk.Kind)
			pos = tk.End
		}
		if pos != len(sql) {
			t.Fatalf("tokens end at %d of %d bytes", pos, len(sql))
		}
	})
}

// checkToken checks what every token of a kind must look like.
func checkToken(t *testing.T, s string, k TokKind) {
	t.Helper()
	switch k {
	case TokSemi:
		if s != ";" {
			t.Fatalf("semicolon token %q", s)
		}
	case TokParam:
		if s[0] != '?' || strings.Trim(s[1:], "0123456789") != "" {
			t.Fatalf("parameter token %q", s)
		}
	case TokNamedParam:
		if !strings.ContainsRune(":@$#", rune(s[0])) {
			t.Fatalf("named parameter token %q", s)
		}
	case TokString:
		if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
			t.Fatalf("string token %q", s)
		}
	case TokOp, TokWord, TokQuotedID, TokNumber, TokBlob:
		if strings.ContainsAny(s, ";") && k != TokQuotedID {
			t.Fatalf("a %d token %q holds a semicolon: a statement boundary would hide in it", k, s)
		}
	}
}

func FuzzCheckQueryText(f *testing.F) {
	for _, s := range SeedQueries {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		q, err := CheckQueryText(sql)
		if err != nil {
			// query_invalid, or the rewrite bound (nesting depth, the
			// static growth rule: AQ-6).
			var le *driver.QueryLimitError
			if driver.CodeOf(err) != driver.CodeQueryInvalid && !(errors.As(err, &le) && le.Bound == driver.BoundRewrite) {
				t.Fatalf("CheckQueryText error %v, want code %s or the rewrite bound", err, driver.CodeQueryInvalid)
			}
			return
		}
		toks, err := Tokenize(q.SQL)
		if err != nil {
			t.Fatalf("the admitted statement %q does not tokenize: %v", q.SQL, err)
		}
		first := ""
		for _, tk := range toks {
			switch tk.Kind {
			case TokSemi:
				t.Fatalf("the admitted statement %q holds a ';' (AQ-1)", q.SQL)
			case TokNamedParam:
				t.Fatalf("the admitted statement %q holds a named parameter (AQ-1)", q.SQL)
			case TokSpace:
				continue
			}
			if first == "" {
				first = strings.ToUpper(q.SQL[tk.Start:tk.End])
			}
		}
		if first != "SELECT" && first != "WITH" {
			t.Fatalf("the admitted statement %q starts with %q (AQ-1)", q.SQL, first)
		}
		if q.Params < 0 || q.Params > MaxQueryParams {
			t.Fatalf("Params %d out of range", q.Params)
		}
		// Idempotent: the admitted statement is admitted again, the same.
		q2, err := CheckQueryText(q.SQL)
		if err != nil || q2 != q {
			t.Fatalf("CheckQueryText(%q) = %+v, %v; want %+v again", q.SQL, q2, err, q)
		}
		// A second statement after an admitted one is always refused,
		// however it is glued on (AQ-1): whenever the tokens show a word
		// after a ';' (not swallowed by a comment or string), the text is
		// refused.
		for _, glue := range []string{";", ";\n", "; ", " ;", ";/**/", "\n;"} {
			glued := sql + glue + "DELETE FROM todos"
			if secondStatement(glued) {
				if _, err := CheckQueryText(glued); err == nil {
					t.Fatalf("a second statement after %q (glued with %q) was admitted (AQ-1)", sql, glue)
				}
			}
		}
	})
}

// secondStatement reports whether sql's tokens hold a non-space token after
// a ';'.
func secondStatement(sql string) bool {
	toks, err := Tokenize(sql)
	if err != nil {
		return false
	}
	semi := false
	for _, tk := range toks {
		switch {
		case tk.Kind == TokSemi:
			semi = true
		case tk.Kind != TokSpace && semi:
			return true
		}
	}
	return false
}
