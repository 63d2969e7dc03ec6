package querylang

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// growthHoles are exponential shapes that CheckGrowth admits (found by a
// hostile review; each measured on an engine, see the comments). These
// tests FAIL until the rule covers them.
func growthHoles() map[string]string {
	nest := func(level, core string, n int) string {
		q := core
		for range n {
			q = strings.ReplaceAll(level, "%s", q)
		}
		return q
	}
	var vals, shadow strings.Builder
	vals.WriteString("WITH c0(x) AS (SELECT substr(title, 1, 1) FROM todos)")
	shadow.WriteString(vals.String())
	for i := 1; i <= 30; i++ {
		// A sub-query after VALUES is in no result region: its product is
		// dropped. SQLite: length 2^n; PostgreSQL plans it in 2^n (0.7 s at 12).
		fmt.Fprintf(&vals, ", c%d(x) AS (VALUES ((SELECT x||x FROM c%d)))", i, i-1)
		// An inner WITH re-defines c%d for its own body only, but the rule's
		// one map of CTE products forgets the outer c%d's product.
		fmt.Fprintf(&shadow, ", c%d AS (SELECT x||x AS x FROM c%d), z%d AS (WITH c%d AS (SELECT 1 AS x) SELECT x FROM c%d)", i, i-1, i, i, i)
	}
	var arr strings.Builder
	arr.WriteString("WITH c0 AS (SELECT title AS x FROM todos)")
	for i := 1; i <= 30; i++ {
		// PostgreSQL's ARRAY(sub-query) gathers every row like an
		// aggregate but weighs 1: ×rows per level (todos of 10 rows:
		// 3,000 / 30,000 / 300,000 bytes at 3 / 4 / 5 levels).
		fmt.Fprintf(&arr, ", c%d AS (SELECT array_to_string(ARRAY(SELECT x FROM c%d), '') AS x FROM todos)", i, i-1)
	}
	arr.WriteString(" SELECT length(x) AS n FROM c30")
	vals.WriteString(" SELECT length(x) AS n FROM c30")
	shadow.WriteString(" SELECT length(x) AS n FROM c30")
	base := "SELECT title AS x FROM todos"
	return map[string]string{
		"values-subquery": vals.String(),
		"array-subquery":  arr.String(),
		"cte-shadowed":    shadow.String(),
		// Column names that are in growthKeywords (first, text, last, range,
		// …) are never counted. SQLite's flattener: 1.2 s at 16 levels, past
		// a 5 s context deadline (31 s) at 20.
		"keyword-column":    nest("SELECT first||first AS first FROM (%s) t", "SELECT title AS first FROM todos", 30),
		"keyword-column-2":  nest("SELECT text||text AS text FROM (%s) t", "SELECT title AS text FROM todos", 30),
		"recursive-keyword": "WITH RECURSIVE r(n, first) AS (SELECT 1, 'a' UNION ALL SELECT n+1, first||first FROM r WHERE n < 40) SELECT max(length(first)) AS m FROM r",
		// The doubling is in a scalar sub-query of the recursive core, which
		// is not the core that reads r.
		"recursive-scalar": "WITH RECURSIVE r(n, s) AS (SELECT 1, 'a' UNION ALL SELECT n+1, (SELECT s||s) FROM r WHERE n < 40) SELECT max(length(s)) AS m FROM r",
		// Escaping functions weigh 1 but double quotes or backslashes.
		"printf-q":      nest("SELECT printf('%q', x) AS x FROM (%s) t", "SELECT '''' AS x FROM todos", 30),
		"json-escape":   nest("SELECT json_array(x) AS x FROM (SELECT x FROM (%s) u ORDER BY 1 LIMIT 1) t", "SELECT '\"' AS x FROM todos", 30),
		"quote-literal": nest("SELECT quote_literal(x) AS x FROM (%s) t", "SELECT '''' AS x FROM todos", 30),
		"row-cast":      nest("SELECT CAST(t AS text) AS x FROM (%s) t", "SELECT '\"' AS x FROM todos", 30),
		// PostgreSQL: one reference, many copies.
		"format-positional": nest("SELECT format('%1$s%1$s', x) AS x FROM (%s) t", base, 30),
		"regexp-replace":    nest("SELECT regexp_replace(x, '.', '\\&\\&', 'g') AS x FROM (%s) t", base, 30),
	}
}

func TestCheckGrowthRefusesHoles(t *testing.T) {
	for name, sql := range growthHoles() {
		_, err := CheckQueryText(sql)
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
			t.Errorf("%s (%d bytes): %v; want the rewrite bound", name, len(sql), err)
		}
	}
}
