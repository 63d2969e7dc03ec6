package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// TestQuerySearchWorstCase (AQ-6): substring searches whose pattern comes
// from a stored row cost SQLite O(len(text)·len(pattern)) inside one
// function call, where the interrupt is not checked.
//
//   - A LIKE, GLOB or instr whose pattern is a column is refused by the
//     static rule (querylang.CheckSearchPatterns) with the rewrite bound,
//     before the engine runs it.
//   - With that rule off, instr over a stored 'a'×999,999+'b' and a needle
//     'a'×500,000+'b' answers its position under a 1 s Timeout: the query
//     connection's instr is linear (sqliteengine.RegisterLinearInstr).
//     SQLite's built-in makes 2.5·10^11 byte comparisons in that one call
//     (4.9 s on a 2-core machine) and the query fails with its time bound.
func TestQuerySearchWorstCase(t *testing.T) {
	c, _ := openTest(t)
	h := todoRow("h", "p", "o")
	h.Values["title"] = strings.Repeat("a", 999_999) + "b"
	n := todoRow("n", "p", "o")
	n.Values["title"] = strings.Repeat("a", 500_000) + "b"
	pushRows(t, c, "p1", h, n)
	run := func(sql string) (driver.QueryResult, error) {
		return c.AuthoritativeQuery(context.Background(), "p1", driver.Query{SQL: sql, Tables: []string{"todos"},
			Limits: driver.QueryLimits{Timeout: time.Second}})
	}
	const from = ` FROM todos h, todos n WHERE h.id = 'h' AND n.id = 'n'`
	for _, sql := range []string{
		`SELECT instr(h.title, n.title) AS i` + from,
		`SELECT count(*) AS k` + from + ` AND h.title LIKE '%' || n.title || '%'`,
		`SELECT count(*) AS k` + from + ` AND h.title GLOB '*' || n.title || '*'`,
	} {
		_, err := run(sql)
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite || le.Limit != querylang.MaxSearchPatternBytes {
			t.Errorf("%s: %v, want the rewrite bound", sql, err)
		}
	}
	defer querylang.DisableSearchPatternCheckForTest()()
	defer querylang.DisableRowWorkCheckForTest()()
	res, err := run(`SELECT instr(h.title, n.title) AS i` + from)
	if err != nil {
		t.Fatalf("worst-case instr over a stored 1 MB value: %v, want its position", err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != int64(500_000) {
		t.Fatalf("worst-case instr: rows %v, want [[500000]]", res.Rows)
	}
}
