package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestQueryParityRewrite checks the AQ-5 rewrites of the text layer
// alone: integer division becomes DIV only when both operands are known
// integers, / stays with a known real, anything else is refused; lower
// and upper fold ASCII only; json_each refuses mixed arrays. The
// conformance parity corpus (conformance/cap_query_parity.go) checks the
// rows against the engine.
func TestQueryParityRewrite(t *testing.T) {
	for _, c := range []struct {
		sql  string
		args []any
		want string // a fragment of the rewritten SQL
	}{
		{`SELECT 7/2 AS a FROM todos`, nil, "7 DIV 2"},
		{`SELECT -7/-2 AS a FROM todos`, nil, "-7 DIV -2"},
		{`SELECT updated_at/4 AS a FROM todos`, nil, "`updated_at` DIV 4"},
		{`SELECT (updated_at+1)/2*3/t.updated_at AS a FROM todos t`, nil, "DIV 2*3 DIV `t`.`updated_at`"},
		{`SELECT count(*)/? AS a FROM todos`, []any{int64(2)}, "COUNT(*) DIV ?"},
		{`SELECT updated_at/2.0 AS a FROM todos`, nil, "`updated_at`/2.0e0"},
		{`SELECT avg(updated_at)/updated_at AS a FROM todos`, nil, "AVG(`updated_at`)/`updated_at`"},
		{`SELECT 7%3 AS a FROM todos`, nil, "7%3"},
		{`SELECT 0.1+0.2 AS a FROM todos`, nil, "0.1e0+0.2e0"},
		{`SELECT lower(title) AS a FROM todos`, nil, asciiFoldOpen + "(`title`)" + asciiLowerClose},
		{`SELECT upper(title) AS a FROM todos`, nil, asciiFoldOpen + "(`title`)" + asciiUpperClose},
	} {
		q, err := rewriteForTest(t, c.sql, c.args, "todos")
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		if !strings.Contains(q.sql, c.want) {
			t.Errorf("%q: rewritten SQL lacks %q:\n%s", c.sql, c.want, q.sql)
		}
	}
	for _, text := range []string{
		`SELECT sum(updated_at)/2 AS a FROM todos`,                          // sum: integer or real
		`SELECT title/2 AS a FROM todos`,                                    // a string column
		`SELECT updated_at/(SELECT 2) AS a FROM todos`,                      // a sub-query
		`SELECT x/2 AS a FROM (SELECT 1.5 AS updated_at, 1 AS x) s, todos`,  // an alias
		`SELECT updated_at/2 AS a FROM (SELECT 2.5 AS updated_at) AS todos`, // an alias named like a column
		`SELECT 7.5%2 AS a FROM todos`,                                      // % of a real
		`SELECT CASE WHEN done THEN 1 ELSE 2 END/2 AS a FROM todos`,         // CASE
		`SELECT 7/2||'x' AS a FROM todos`,                                   // || binds tighter in SQLite
		`SELECT round(2.5) AS a FROM todos`,                                 // MySQL rounds doubles half to even
		`SELECT j.value AS v FROM todos, json_each('[1, 2.5]') AS j`,        // mixed integer and real
		`SELECT j.value AS v FROM todos, json_each('[1, "x"]') AS j`,        // mixed integer and string
		`SELECT j.value AS v FROM todos, json_each('[true]') AS j`,          // booleans
		`SELECT title ->> '$.a' AS v FROM todos`,                            // JSON text, not SQL values
	} {
		_, err := rewriteForTest(t, text, nil, "todos")
		if !errors.Is(err, driver.ErrQueryInvalid) {
			t.Errorf("%q: got %v, want query_invalid", text, err)
		}
	}
}
