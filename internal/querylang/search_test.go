package querylang

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestCheckSearchPatterns: LIKE/GLOB patterns and instr needles made of
// literals and bind values of at most MaxSearchPatternBytes pass; a
// pattern from a column, an expression or over the bound is refused with
// the rewrite bound (AQ-6).
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
