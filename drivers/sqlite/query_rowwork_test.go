package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/aqrates"
	"github.com/syncstore/syncstore/internal/querylang"
)

// TestQueryRowWorkWorstCase (AQ-6, the row-work rule): SQLite checks its
// interrupt between rows, so many calls over one stored value run to
// their end whatever the Timeout (2,000 upper() calls over 1 MB: 4.07 s
// under 1 s before the rule). Over a stored 'a'×1,000,000 and a 1 s
// Timeout:
//
//   - 2,000 length(upper(title)) terms are the rewrite bound, Limit the
//     1 s budget, before SQLite sees the text;
//   - the most terms the rule admits answer the row (or hit the time
//     bound); the time is logged, not asserted.
func TestQueryRowWorkWorstCase(t *testing.T) {
	c, _ := openTest(t)
	r := todoRow("big", "p", "o")
	r.Values["title"] = strings.Repeat("a", 1_000_000)
	pushRows(t, c, "p1", r)
	sum := func(n int) string { return aqrates.BalancedSum("length(upper(title))", n) }
	text := func(n int) string { return `SELECT id FROM todos WHERE id = 'big' AND ` + sum(n) + ` > 0` }
	q := func(n int) driver.Query {
		return driver.Query{SQL: text(n), Tables: []string{"todos"}, Limits: driver.QueryLimits{Timeout: time.Second}}
	}
	_, err := c.AuthoritativeQuery(context.Background(), "p1", q(2000))
	var le *driver.QueryLimitError
	if !errors.As(err, &le) || le.Bound != driver.BoundRewrite || le.Limit != querylang.RowWorkBudget(time.Second) {
		t.Fatalf("2,000 upper() calls in one row: %v, want the rewrite bound with the 1 s budget", err)
	}
	most := 1
	for {
		if _, err := querylang.AdmitQuery(q(most + 1)); err != nil {
			break
		}
		most++
	}
	start := time.Now()
	res, err := c.AuthoritativeQuery(context.Background(), "p1", q(most))
	t.Logf("the most upper() calls admitted under 1 s (%d) over 1 MB: %v, %v in %.2f s", most, res.Rows, err, time.Since(start).Seconds())
	if err != nil && !(errors.As(err, &le) && le.Bound == driver.BoundTime) {
		t.Errorf("the most upper() calls admitted: %v, want the row or the time bound", err)
	} else if err == nil && (len(res.Rows) != 1 || res.Rows[0][0] != "big") {
		t.Errorf("the most upper() calls admitted: rows %v, want [[big]]", res.Rows)
	}
}
