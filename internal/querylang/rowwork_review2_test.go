package querylang

import (
	"errors"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Shapes a second hostile review found admitted that ran past twice
// their Timeout (measured: drivers/sqlite, drivers/postgres,
// drivers/mysql, drivers/d1http/internal/d1sql *_review2_test.go). Each
// must be the rewrite bound under the Timeout given.
func TestRowWorkReview2Refuses(t *testing.T) {
	nest := func(k int, where string) string {
		q := "SELECT upper(title) AS x FROM todos"
		for range k {
			q = "SELECT length(x) + length(x) AS x FROM (" + q + ")" + where
		}
		return q
	}
	wrap := func(k int, base, open, close string) string {
		e := base
		for range k {
			e = open + e + close
		}
		return e
	}
	for _, c := range []struct {
		name    string
		sql     string
		timeout time.Duration
	}{
		// SQLite push-down (on without the flattener): 1.76 s / 3.49 s over 1 MB.
		{"sqlite-pushdown-one-term", nest(10, "") + " WHERE x > 0", time.Second},
		{"sqlite-pushdown-each-level", nest(10, " WHERE x > 0"), time.Second},
		// D1's flattener: 2.85 s over 1 MB (local SQLite, default optimizations).
		{"d1-flattened-nest", nest(10, ""), time.Second},
		// PostgreSQL copies x per IN item holding a column: 2^k.
		{"pg-in-column-item", "SELECT id FROM todos WHERE " + wrap(10, "upper(title)", "CASE WHEN ", " IN ('a', id) THEN 'x' END") + " IS NULL", time.Second},
		// PostgreSQL copies a row value per item: 8^k.
		{"pg-row-in", "SELECT id FROM todos WHERE " + wrap(4, "instr(title, 'zz')", "CASE WHEN (", ", 1) IN ((1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1)) THEN 1 END") + " IS NULL", time.Second},
		// MariaDB evaluates the predicant per comparison type: 5^k.
		{"mariadb-mixed-in", "SELECT id FROM todos WHERE " + wrap(4, "length(upper(title))", "CASE WHEN ", " IN (1, 'a', current_date, current_time, current_timestamp) THEN 1 END") + " IS NULL", time.Second},
		{"mariadb-mixed-case", "SELECT id FROM todos WHERE " + wrap(4, "length(upper(title))", "CASE ", " WHEN 1 THEN 1 WHEN 'a' THEN 1 WHEN current_date THEN 1 WHEN current_time THEN 1 WHEN current_timestamp THEN 1 END") + " IS NULL", time.Second},
	} {
		_, err := AdmitQuery(driver.Query{SQL: c.sql, Limits: driver.QueryLimits{Timeout: c.timeout}})
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
			toks, _ := Tokenize(c.sql)
			t.Errorf("%s: %v under %v, want the rewrite bound (row work %d MiB)", c.name, err, c.timeout, RowWork(c.sql, toks, nil)>>20)
		}
	}
}
