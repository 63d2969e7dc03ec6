package querylang

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestCheckSearchPatterns: LIKE/GLOB patterns, instr needles, replace
// patterns and trim character sets made of literals and bind values of at
// most MaxSearchPatternBytes in all pass; a pattern from a column, an
// expression or over the bound is refused with the rewrite bound (AQ-6).
func TestCheckSearchPatterns(t *testing.T) {
	long := strings.Repeat("a", MaxSearchPatternBytes)
	for _, c := range []struct {
		sql  string
		args []any
		ok   bool
	}{
		{`SELECT id FROM todos WHERE title LIKE 'a%'`, nil, true},
		{`SELECT id FROM todos WHERE title NOT LIKE '%' || ? || '%' ESCAPE '\'`, []any{"x"}, true},
		{`SELECT id FROM todos WHERE title LIKE ('%' || ?1) AND title GLOB ?1`, []any{"x"}, true},
		{`SELECT id FROM todos WHERE like('%x', title) OR glob(?, title)`, []any{"*"}, true},
		{`SELECT instr(title, 'zz') AS i, instr(substr(title, 1, (2)), ?) AS j FROM todos`, []any{"b"}, true},
		{`SELECT id FROM todos WHERE title LIKE '` + long + `'`, nil, true},
		{`SELECT id FROM todos WHERE title LIKE ? COLLATE NOCASE`, []any{long}, true},
		{`SELECT id FROM todos WHERE title LIKE 5 AND instr(title, x'00ff') > 0`, nil, true},
		{`SELECT id FROM todos WHERE title LIKE '` + long + `a'`, nil, false},
		{`SELECT id FROM todos WHERE title LIKE '%' || ?`, []any{long}, false},
		{`SELECT id FROM todos WHERE title LIKE ?2 || ?1`, []any{long[:200], long[:100]}, false},
		{`SELECT h.id FROM todos h, todos n WHERE h.title LIKE '%' || n.title || '%'`, nil, false},
		{`SELECT id FROM todos WHERE title LIKE title`, nil, false},
		{`SELECT id FROM todos WHERE title LIKE (SELECT min(title) FROM todos)`, nil, false},
		{`SELECT id FROM todos WHERE title LIKE 'a' + title`, nil, false},
		{`SELECT id FROM todos WHERE title GLOB upper(?)`, []any{"x"}, false},
		{`SELECT id FROM todos WHERE like(title, 'x')`, nil, false},
		{`SELECT instr(h.title, n.title) AS i FROM todos h, todos n`, nil, false},
		{`SELECT instr(title, (SELECT min(title) FROM todos)) AS i FROM todos`, nil, false},
		{`SELECT instr(title, ?) AS i FROM todos`, []any{long + "b"}, false},
		{`SELECT instr(title, ? || title) AS i FROM todos`, []any{"b"}, false},
		// A parenthesized head does not end the pattern: what follows its
		// closing parenthesis is read too.
		{`SELECT id FROM todos WHERE title LIKE ('%') || title`, nil, false},
		{`SELECT id FROM todos WHERE title LIKE/**/(('%'))/**/||title`, nil, false},
		{`SELECT id FROM todos WHERE title GLOB ('*') || (SELECT min(title) FROM todos)`, nil, false},
		{`SELECT id FROM todos WHERE like(('%') || title, title)`, nil, false},
		{`SELECT instr(title, ('a') || title) AS i FROM todos`, nil, false},
		{`SELECT instr(title, (?) || (?)) AS i FROM todos`, []any{long[:200], long[:100]}, false},
		{`SELECT id FROM todos WHERE title LIKE ('%' || (?)) || ('%')`, []any{"x"}, true},
		{`SELECT instr(title, ((?) || 'a')) AS i FROM todos`, []any{"x"}, true},
		// A quoted function name is the same function.
		{`SELECT id FROM todos WHERE "like"(title, title)`, nil, false},
		{`SELECT id FROM todos WHERE [glob](title, title)`, nil, false},
		{"SELECT `instr`(title, title) AS i FROM todos", nil, false},
		{`SELECT "instr"(title, 'x') AS i FROM todos WHERE "like"('%x', title)`, nil, true},
		// replace's pattern and trim's character set are searches too.
		{`SELECT replace(a.title, b.body, '') AS r FROM todos a, todos b`, nil, false},
		{`SELECT replace(title, (SELECT max(body) FROM todos), '') AS r FROM todos`, nil, false},
		{`SELECT ltrim(title, body) AS r, rtrim(title, ?) AS s FROM todos`, []any{"x"}, false},
		{`SELECT trim(title, ?) AS r FROM todos`, []any{long + "x"}, false},
		{`SELECT trim(title) AS r, replace(title, ?, body) AS s, trim(title, ' x') AS t FROM todos`, []any{"-"}, true},
		// The text's patterns share the bound: SQLite runs all of a
		// row's calls before it checks its interrupt.
		{`SELECT (title LIKE ?) AS a, (title LIKE ?) AS b FROM todos`, []any{long[:200], long[:100]}, false},
		{`SELECT instr(title, ?) AS a, replace(title, ?, '') AS b FROM todos`, []any{long[:128], long[:128]}, true},
		{`SELECT instr(title, ?) AS a, replace(title, ?, '') AS b FROM todos`, []any{long[:128], long[:129]}, false},
	} {
		err := CheckSearchPatterns(c.sql, c.args)
		var le *driver.QueryLimitError
		switch {
		case c.ok && err != nil:
			t.Errorf("%.120s: %v, want admitted", c.sql, err)
		case !c.ok && !(errors.As(err, &le) && le.Bound == driver.BoundRewrite && le.Limit == MaxSearchPatternBytes):
			t.Errorf("%.120s: %v, want the rewrite bound", c.sql, err)
		}
	}
}
