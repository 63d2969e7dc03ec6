package conformance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Cases of AQ-6's static cost rule and of the bounds every driver types
// alike: exponential shapes (a value doubled or multiplied at each nested
// SELECT or CTE) are refused with the rewrite bound before any engine
// sees them; nesting past 100 levels is the rewrite bound; a bind value
// longer than MaxValueBytes is the value_bytes bound; a number is never
// over MaxValueBytes, however small; a LIKE/GLOB pattern or an instr
// needle must be literals and bind values of at most 256 bytes; a text
// whose calls and operators may process more in one row than its Timeout
// allows (the row-work rule) is the rewrite bound.

func init() {
	register(
		Case{Name: "AQ-6/exponential-shapes-are-refused", Capability: driver.CapAuthoritativeQuery, Run: aqExponentialShapes},
		Case{Name: "AQ-6/growth-within-the-bound-runs", Capability: driver.CapAuthoritativeQuery, Run: aqGrowthWithin},
		Case{Name: "AQ-6/nesting-past-the-depth-is-the-rewrite-bound", Capability: driver.CapAuthoritativeQuery, Run: aqDepthBound},
		Case{Name: "AQ-6/bind-value-over-the-value-bound", Capability: driver.CapAuthoritativeQuery, Run: aqBindValueBound},
		Case{Name: "AQ-6/small-value-bound-admits-numbers", Capability: driver.CapAuthoritativeQuery, Run: aqSmallValueBound},
		Case{Name: "AQ-6/search-pattern-bound", Capability: driver.CapAuthoritativeQuery, Run: aqSearchPatternBound},
		Case{Name: "AQ-6/row-work-bound", Capability: driver.CapAuthoritativeQuery, Run: aqRowWorkBound},
	)
}

// aqGrowthLimit is querylang.MaxQueryGrowth, the documented static growth
// bound (docs/authoritative-query.md).
const aqGrowthLimit = 1024

// aqDerived nests core in n derived tables, each level's text holding %s
// once where the level below goes.
func aqDerived(level, core string, n int) string {
	for range n {
		core = fmt.Sprintf(level, core)
	}
	return core
}

// aqCTEChain is a chain of n CTEs, each body (a fmt text given the level
// below's number) reading the previous one; the statement returns the
// length of the last one's x.
func aqCTEChain(body string, n int) string {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT substr(title, 1, 1) AS x FROM todos WHERE id = 't1')")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, ", c%d AS (%s)", i, fmt.Sprintf(body, i-1))
	}
	fmt.Fprintf(&b, " SELECT length(x) AS n FROM c%d", n)
	return b.String()
}

// aqExpShapes are a few hundred bytes each and build values of
// gigabytes (2^30, 10^9): SQLite and D1's twin ran past the deadline,
// MariaDB left threads running, PostgreSQL built 100 MB under a 1 MiB
// bound. Name → text over todos.
func aqExpShapes() map[string]string {
	base := "SELECT substr(title, 1, 1) AS x FROM todos WHERE id = 't1'"
	top := func(q string) string { return "SELECT length(x) AS n FROM (" + q + ") AS d" }
	return map[string]string{
		"derived-tables-doubling-with-concat-operator": top(aqDerived("SELECT x||x AS x FROM (%s) AS d", base, 30)),
		"derived-tables-with-one-replace-each":         top(aqDerived("SELECT replace(x, 'o', 'oooooooooo') AS x FROM (%s) AS d", "SELECT title AS x FROM todos WHERE id = 't1'", 9)),
		"derived-tables-doubling-with-concat-function": top(aqDerived("SELECT concat(x, x) AS x FROM (%s) AS d", base, 30)),
		"derived-tables-doubling-two-columns":          "SELECT length(a) AS n FROM (" + aqDerived("SELECT a||b AS a, b||a AS b FROM (%s) AS d", "SELECT title AS a, title AS b FROM todos WHERE id = 't1'", 30) + ") AS d",
		"cte-chain-doubling":                           aqCTEChain("SELECT x||x AS x FROM c%d", 30),
		"cte-chain-with-one-replace-each":              aqCTEChain("SELECT replace(x, 'o', 'oooooooooo') AS x FROM c%d", 9),
		"cte-chain-self-join":                          aqCTEChain("SELECT a.x||b.x AS x FROM c%[1]d AS a, c%[1]d AS b", 30),
		"recursive-cte-doubling-itself":                `WITH RECURSIVE r(n, s) AS (SELECT 1, title FROM todos WHERE id = 't1' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) SELECT max(length(s)) AS m FROM r`,
		"nested-replace-in-one-expression":             `SELECT length(` + aqReplaceNest(9) + `) AS m FROM todos WHERE id = 't1'`,
		"derived-tables-copying-a-number":              "SELECT x AS n FROM (" + aqDerived("SELECT abs(x)+abs(x) AS x FROM (%s) AS d", "SELECT length(title) AS x FROM todos WHERE id = 't1'", 20) + ") AS d",
	}
}

func aqExponentialShapes(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	shapes := aqExpShapes()
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		sql := shapes[name]
		// Tight runtime bounds too, so a driver without the static rule
		// stops (or is stopped) soon instead of building gigabytes.
		_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: []string{tTodos},
			Limits: driver.QueryLimits{MaxValueBytes: 64 << 10, Timeout: time.Second}})
		aqExpectLimit(t, name, err, took, false, driver.BoundRewrite)
		var le *driver.QueryLimitError
		if errors.As(err, &le) && le.Bound == driver.BoundRewrite && le.Limit != aqGrowthLimit {
			t.Errorf("AQ-6: %s: rewrite bound Limit %d, want the growth bound %d", name, le.Limit, aqGrowthLimit)
		}
	}
	aqCheckUnchanged(t, conn, before)
}

func aqGrowthWithin(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	// Ten doublings of "o" (1,024 bytes) are the bound: the static rule
	// admits them, in derived tables and in a CTE chain, and they run —
	// or meet the engine's own memory bound (D1's engine flattens the
	// levels into 2^10 expression copies and answers error 7500), never
	// the rewrite bound; an eleventh is refused by the rule.
	base := "SELECT substr(title, 1, 1) AS x FROM todos WHERE id = 't1'"
	for _, c := range []struct {
		name string
		sql  string
	}{
		{"ten doublings in derived tables", "SELECT length(x) AS n FROM (" + aqDerived("SELECT x||x AS x FROM (%s) AS d", base, 10) + ") AS d"},
		{"ten doublings in a CTE chain", aqCTEChain("SELECT x||x AS x FROM c%d", 10)},
	} {
		// The row-work rule prices each level's reference to x as x's
		// expression again (a flattening engine copies it): 2^10 reads of
		// a push-sized title, within the budget of a 4 min Timeout only.
		res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: c.sql, Tables: []string{tTodos},
			Limits: driver.QueryLimits{Timeout: 4 * time.Minute}})
		var le *driver.QueryLimitError
		if errors.As(err, &le) && le.Bound == driver.BoundMemory {
			continue // the engine's own limit, not the static rule
		}
		if err != nil {
			t.Errorf("AQ-6: %s (growth 1,024, the bound): %v", c.name, err)
			continue
		}
		aqExpectResult(t, c.name, []string{"n"}, [][]any{{int64(1024)}}, res)
	}
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: "SELECT length(x) AS n FROM (" + aqDerived("SELECT x||x AS x FROM (%s) AS d", base, 11) + ") AS d",
		Tables: []string{tTodos}})
	aqExpectLimit(t, "eleven doublings in derived tables", err, took, false, driver.BoundRewrite)
}

func aqDepthBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	ok := `SELECT ` + aqNested("(", "1", ")", 100) + ` AS v FROM todos WHERE id = 't1'`
	res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: ok, Tables: []string{tTodos}})
	if err != nil {
		t.Errorf("AQ-6: 100 nested parentheses: %v", err)
	} else {
		aqExpectResult(t, "100 nested parentheses", []string{"v"}, [][]any{{int64(1)}}, res)
	}
	deep := `SELECT ` + aqNested("(", "1", ")", 101) + ` AS v FROM todos WHERE id = 't1'`
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: deep, Tables: []string{tTodos}})
	aqExpectLimit(t, "101 nested parentheses", err, took, false, driver.BoundRewrite)
	var le *driver.QueryLimitError
	if errors.As(err, &le) && le.Limit != 100 {
		t.Errorf("AQ-6: 101 nested parentheses: Limit %d, want 100 (levels)", le.Limit)
	}
}

func aqBindValueBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	sql := `SELECT length(?) AS n FROM todos WHERE id = 't1'`
	lim := driver.QueryLimits{MaxValueBytes: 1024}
	for _, arg := range []any{strings.Repeat("a", 1024), []byte(strings.Repeat("a", 1024))} {
		res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Args: []any{arg}, Tables: []string{tTodos}, Limits: lim})
		if err != nil {
			t.Errorf("AQ-6: a %T bind value of 1,024 bytes under MaxValueBytes 1,024: %v", arg, err)
			continue
		}
		aqExpectResult(t, "a 1,024-byte bind value", []string{"n"}, [][]any{{int64(1024)}}, res)
	}
	for _, arg := range []any{strings.Repeat("a", 1025), []byte(strings.Repeat("a", 1025))} {
		_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Args: []any{arg}, Tables: []string{tTodos}, Limits: lim})
		aqExpectLimit(t, fmt.Sprintf("a %T bind value of 1,025 bytes under MaxValueBytes 1,024", arg), err, took, false, driver.BoundValueBytes)
	}
	// The default bound: 1 MiB + 1 byte.
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Args: []any{strings.Repeat("a", 1<<20+1)}, Tables: []string{tTodos}})
	aqExpectLimit(t, "a bind value of 1 MiB + 1 under the default MaxValueBytes", err, took, false, driver.BoundValueBytes)
}

func aqSmallValueBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	lim := driver.QueryLimits{MaxValueBytes: 1}
	res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT count(*) AS c, sum(updated_at) AS s, 0.5 AS f, NULL AS z FROM todos`,
		Tables: []string{tTodos}, Limits: lim})
	if err != nil {
		t.Errorf("AQ-6: numbers under MaxValueBytes 1: %v (a number is never over the value bound)", err)
	} else {
		aqExpectResult(t, "numbers under MaxValueBytes 1", []string{"c", "s", "f", "z"}, [][]any{{int64(3), int64(60), 0.5, nil}}, res)
	}
	res, _, err = aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT substr(title, 1, 1) AS c FROM todos ORDER BY id`,
		Tables: []string{tTodos}, Limits: lim})
	if err != nil {
		t.Errorf("AQ-6: 1-byte strings under MaxValueBytes 1: %v", err)
	} else {
		aqExpectResult(t, "1-byte strings under MaxValueBytes 1", []string{"c"}, [][]any{{"o"}, {"t"}, {"t"}}, res)
	}
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT id FROM todos ORDER BY id`, Tables: []string{tTodos}, Limits: lim})
	aqExpectLimit(t, "2-byte ids under MaxValueBytes 1", err, took, false, driver.BoundValueBytes)
}

// aqSearchPatternBound: LIKE/GLOB patterns, instr needles, replace
// patterns and trim character sets made of literals and bind values of
// at most 256 bytes in all (querylang.MaxSearchPatternBytes) run; one
// taken from a column or a sub-query (a parenthesized head followed by a
// column, a quoted function name), or longer, is the rewrite bound before
// any engine sees it (each engine's search costs text × pattern in one
// call, where no timeout is checked).
func aqSearchPatternBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	q := func(sql string, args ...any) (driver.QueryResult, time.Duration, error) {
		return aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Args: args, Tables: []string{tTodos}})
	}
	res, _, err := q(`SELECT id FROM todos WHERE title LIKE '%' || ? || '%' ORDER BY id`, "o")
	if err != nil {
		t.Errorf("AQ-6: LIKE '%%' || ? || '%%': %v", err)
	} else {
		aqExpectResult(t, "LIKE with a bound pattern", []string{"id"}, [][]any{{"t1"}, {"t2"}}, res)
	}
	res, _, err = q(`SELECT id, instr(title, ?) AS i FROM todos ORDER BY id`, "e")
	if err != nil {
		t.Errorf("AQ-6: instr(title, ?): %v", err)
	} else {
		aqExpectResult(t, "instr with a bound needle", []string{"id", "i"}, [][]any{{"t1", int64(3)}, {"t2", int64(0)}, {"t3", int64(4)}}, res)
	}
	// (D1 refuses a LIKE pattern over 50 bytes of its own: the bound's
	// edge is checked with instr.)
	res, _, err = q(`SELECT id FROM todos WHERE instr(title, ?) > 0 ORDER BY id`, strings.Repeat("a", 256))
	if err != nil {
		t.Errorf("AQ-6: an instr needle of 256 bytes: %v", err)
	} else {
		aqExpectResult(t, "an instr needle of 256 bytes", []string{"id"}, nil, res)
	}
	for _, c := range []struct {
		what, sql string
		args      []any
	}{
		{"instr with a column needle", `SELECT a.id, instr(a.title, b.title) AS i FROM todos a, todos b`, nil},
		{"instr with a sub-query needle", `SELECT instr(title, (SELECT min(title) FROM todos)) AS i FROM todos`, nil},
		{"LIKE with a column pattern", `SELECT a.id FROM todos a, todos b WHERE a.title LIKE '%' || b.title || '%'`, nil},
		{"GLOB with a column pattern", `SELECT a.id FROM todos a, todos b WHERE a.title GLOB b.title`, nil},
		{"a LIKE pattern of 257 bytes", `SELECT id FROM todos WHERE title LIKE '%' || ?`, []any{strings.Repeat("a", 256)}},
		{"an instr needle of 257 bytes", `SELECT instr(title, ?) AS i FROM todos`, []any{strings.Repeat("a", 257)}},
		{"LIKE with a parenthesized head and a column", `SELECT a.id FROM todos a, todos b WHERE a.title LIKE ('%') || b.title`, nil},
		{"like() called by a quoted name", `SELECT a.id FROM todos a, todos b WHERE "like"(b.title, a.title)`, nil},
		{"replace with a column pattern", `SELECT replace(a.title, b.id, '') AS r FROM todos a, todos b`, nil},
		{"trim with a column character set", `SELECT ltrim(a.title, b.title) AS r FROM todos a, todos b`, nil},
		{"two needles of 129 bytes", `SELECT instr(title, ?) AS i, instr(title, ?) AS j FROM todos`, []any{strings.Repeat("a", 129), strings.Repeat("a", 129)}},
	} {
		_, took, err := q(c.sql, c.args...)
		aqExpectLimit(t, c.what, err, took, false, driver.BoundRewrite)
	}
}

// aqSum is n copies of term joined by + as a balanced tree (a shallow
// text of any length).
func aqSum(term string, n int) string {
	if n == 1 {
		return term
	}
	return "(" + aqSum(term, n/2) + " + " + aqSum(term, n-n/2) + ")"
}

func aqRowWorkBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	q := func(sql string, timeout time.Duration, args ...any) (driver.QueryResult, time.Duration, error) {
		return aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Args: args, Tables: []string{tTodos},
			Limits: driver.QueryLimits{Timeout: timeout}})
	}
	// Thirty upper() calls over each row: 30 × 2 reads of a 4 MiB column
	// value, 240 MiB of row work — within the default Timeout's budget
	// (5 s × 64 MiB/s), over a 1 s Timeout's.
	thirty := `SELECT id FROM todos WHERE ` + aqSum("length(upper(title))", 30) + ` >= 90 ORDER BY id`
	res, _, err := q(thirty, 0)
	if err != nil {
		t.Errorf("AQ-6: thirty upper() calls under the default Timeout: %v", err)
	} else {
		aqExpectResult(t, "thirty upper() calls", []string{"id"}, [][]any{{"t1"}, {"t2"}, {"t3"}}, res)
	}
	_, took, err := q(thirty, time.Second)
	aqExpectLimit(t, "thirty upper() calls under a 1 s Timeout", err, took, false, driver.BoundRewrite)
	for _, c := range []struct {
		what, sql string
		args      []any
	}{
		{"2,000 upper() calls in one row", `SELECT id FROM todos WHERE ` + aqSum("length(upper(title))", 2000) + ` > 0`, nil},
		{"a chain of 3,000 concatenations", `SELECT length(title` + strings.Repeat(` || ''`, 3000) + `) AS n FROM todos`, nil},
		{"a simple CASE of 500 WHENs", `SELECT CASE title ` + strings.Repeat(`WHEN 'a' THEN 1 `, 500) + `END AS n FROM todos`, nil},
		{"1,000 upper() calls over a bound value", `SELECT id FROM todos WHERE ` + aqSum("length(upper(?1))", 1000) + ` > 0`, []any{strings.Repeat("a", 512<<10)}},
		{"a correlated sub-query without a table of its own", `SELECT id FROM todos WHERE EXISTS (SELECT 1 WHERE ` + aqSum("length(upper(title))", 200) + ` > 0)`, nil},
		{"a grown derived value read many times", `SELECT ` + aqSum("length(upper(x))", 8) + ` AS n FROM (SELECT replace(title, 'e', 'eeeeeeeeee') AS x FROM todos) AS d`, nil},
	} {
		_, took, err := q(c.sql, 0, c.args...)
		aqExpectLimit(t, c.what, err, took, false, driver.BoundRewrite)
	}
}
