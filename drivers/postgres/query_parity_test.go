package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestQueryParityRewrite checks the AQ-5 rewrites of the text layer
// alone (the parity corpus, conformance/cap_query_parity.go, checks the
// rows against the engine): SQLite's NULL order on every ORDER BY term,
// REAL literals, NULL on division by zero, spaced operators, "C"
// strings, LIKE, instr, round and CAST; and refuses what it cannot
// delimit.
func TestQueryParityRewrite(t *testing.T) {
	cols := map[string][]string{"todos": {"id", "title", "done", "updated_at"}}
	rw := func(text string) (string, error) {
		q, err := rewriteQuery(text, nil, "s", []string{"todos"}, cols, "p1", nil)
		return q.sql, err
	}
	for _, c := range []struct{ sql, want string }{
		{`SELECT id FROM todos ORDER BY title, id DESC`, `title NULLS FIRST, id DESC NULLS LAST`},
		{`SELECT id FROM todos ORDER BY title DESC NULLS FIRST`, `title DESC NULLS FIRST`},
		{`SELECT row_number() OVER (ORDER BY updated_at ROWS 2 PRECEDING) AS n FROM todos`, `updated_at NULLS FIRST ROWS`},
		{`SELECT 0.1 + 1e2 AS x FROM todos`, `(0.1::float8) + (1e2::float8)`},
		{`SELECT 7%-3 AS x FROM todos`, `7 % NULLIF( - 3, 0)`},
		{`SELECT updated_at/(updated_at-10) AS x FROM todos`, `/ NULLIF((updated_at - 10), 0)`},
		{`SELECT 1/count(*) FILTER (WHERE done) AS x FROM todos`, `/ NULLIF(count( * ) FILTER (WHERE done), 0)`},
		{`SELECT id FROM todos WHERE title NOT LIKE 'a' || id`, `NOT ILIKE 'a' COLLATE "C" || id ESCAPE ''`},
		{`SELECT id FROM todos WHERE title LIKE 'a!%' ESCAPE '!'`, `ILIKE 'a!%' COLLATE "C" ESCAPE '!' COLLATE "C"`},
		{`SELECT instr(title, 'x') AS x FROM todos`, `strpos(title`},
		{`SELECT round(updated_at / 3.0, 2) AS x FROM todos`, `round((updated_at / NULLIF((3.0::float8), 0))::numeric, 2)::float8`},
		{`SELECT CAST(2.7 AS INTEGER) AS x FROM todos`, `CAST(trunc(CAST(CAST((2.7::float8) AS text) AS numeric)) AS int8)`},
		{`SELECT CAST(title AS REAL) AS x FROM todos`, `CAST(title AS float8)`},
	} {
		got, err := rw(c.sql)
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		if got = strings.Join(strings.Fields(got), " "); !strings.Contains(got, c.want) {
			t.Errorf("%q: rewritten SQL lacks %q:\n%s", c.sql, c.want, got)
		}
	}
	for _, text := range []string{
		`SELECT 7/2||'x' AS x FROM todos`,            // || binds tighter in SQLite than in PostgreSQL
		`SELECT 7/NOT done AS x FROM todos`,          // no operand
		`SELECT CAST(title AS BLOB) AS x FROM todos`, // unmapped type
		`SELECT id FROM todos ORDER BY , id`,         // empty term
	} {
		if _, err := rw(text); !errors.Is(err, driver.ErrQueryInvalid) {
			t.Errorf("%q: got %v, want query_invalid", text, err)
		}
	}
}
