package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Cases of AQ-6: every authoritative query is bounded — rows, result
// bytes, built value size, time on the engine, rewrite cost — and a bound
// hit is a typed, non-retryable sync.storage.query_limit naming it. Each
// attack here takes an unbounded driver down or stalls it. Times are never asserted except as generous upper bounds
// (aqLimitWithin), far above any bound the case sets.

// aqLimitWithin is the generous upper bound on the wall time of a query
// that must be stopped by a bound of at most a few seconds.
const aqLimitWithin = 60 * time.Second

func init() {
	register(
		Case{Name: "AQ-6/rows-bound", Capability: driver.CapAuthoritativeQuery, Run: aqRowsBound},
		Case{Name: "AQ-6/result-bytes-bound", Capability: driver.CapAuthoritativeQuery, Run: aqBytesBound},
		Case{Name: "AQ-6/returned-value-size-bound", Capability: driver.CapAuthoritativeQuery, Run: aqValueBound},
		Case{Name: "AQ-6/built-value-size-bound", Capability: driver.CapAuthoritativeQuery, Run: aqBuiltValueBound},
		Case{Name: "AQ-6/built-value-over-the-result-bound-is-value-bytes", Capability: driver.CapAuthoritativeQuery, Run: aqBuiltValueOverResult},
		Case{Name: "AQ-6/time-bound-on-the-engine", Capability: driver.CapAuthoritativeQuery, Run: aqTimeBound},
		Case{Name: "AQ-6/other-partition-completes-during-a-runaway-query", Capability: driver.CapAuthoritativeQuery, Run: aqTimeBoundConcurrent},
		Case{Name: "AQ-6/large-nested-query-text", Capability: driver.CapAuthoritativeQuery, Run: aqLargeText},
		Case{Name: "AQ-6/engine-error-never-quotes-a-value", Capability: driver.CapAuthoritativeQuery, Run: aqErrorNoValue},
	)
}

// aqQueryTimed runs q on p and returns its result, wall time and error.
func aqQueryTimed(t T, conn driver.Conn, p string, q driver.Query) (driver.QueryResult, time.Duration, error) {
	t.Helper()
	start := time.Now()
	res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), p, q)
	return res, time.Since(start), err
}

// aqExpectLimit fails the case unless err is a non-retryable
// sync.storage.query_limit whose *driver.QueryLimitError names one of
// bounds (any bound when bounds is empty), its message carries neither a
// partition name nor a value of the store (V-10), and the query ended
// within aqLimitWithin. orInvalid also admits query_invalid (the driver
// refused a value-building construct outright).
func aqExpectLimit(t T, what string, err error, took time.Duration, orInvalid bool, bounds ...driver.QueryBound) {
	t.Helper()
	if took > aqLimitWithin {
		t.Errorf("AQ-6: %s took %v, beyond the generous %v: the bound did not stop it", what, took, aqLimitWithin)
	}
	if orInvalid && driver.CodeOf(err) == driver.CodeQueryInvalid {
		errExpectTyped(t, what, err, driver.CodeQueryInvalid, "p1", "p2-secret")
		return
	}
	errExpectTyped(t, "AQ-6: "+what, err, driver.CodeQueryLimit, "p1", "p2-secret")
	var le *driver.QueryLimitError
	if !errors.As(err, &le) {
		if err != nil {
			t.Errorf("AQ-6: %s: %T %v does not wrap a *driver.QueryLimitError naming the bound", what, err, err)
		}
		return
	}
	if len(bounds) > 0 && !slices.Contains(bounds, le.Bound) {
		t.Errorf("AQ-6: %s: bound %q, want one of %v (%v)", what, le.Bound, bounds, err)
	}
	if !strings.Contains(err.Error(), string(le.Bound)) {
		t.Errorf("AQ-6: %s: message %q does not name its bound %q", what, err, le.Bound)
	}
}

// aqCount is a recursive CTE counting from the number of todos (3 on p1)
// up to and including last: last-2 rows, seeded from the table.
func aqCount(last int) string {
	return fmt.Sprintf(`WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < %d) SELECT n FROM r`, last)
}

func aqRowsBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	todos := []string{tTodos}
	// Exactly MaxRows rows come back whole.
	res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: aqCount(1002), Tables: todos, Limits: driver.QueryLimits{MaxRows: 1000}})
	if err != nil {
		t.Fatalf("AQ-6: 1,000 rows under MaxRows 1,000: %v", err)
	}
	if len(res.Rows) != 1000 || !aqSame(int64(1002), res.Rows[999][0]) {
		t.Errorf("AQ-6: 1,000 rows under MaxRows 1,000: got %d rows", len(res.Rows))
	}
	// One more is the rows bound.
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: aqCount(1003), Tables: todos, Limits: driver.QueryLimits{MaxRows: 1000}})
	aqExpectLimit(t, "1,001 rows under MaxRows 1,000", err, took, false, driver.BoundRows)
	var le *driver.QueryLimitError
	if errors.As(err, &le) && le.Limit != 1000 {
		t.Errorf("AQ-6: rows bound: Limit %d, want 1000", le.Limit)
	}
	// Ten million rows under the default limits never reach the host.
	_, took, err = aqQueryTimed(t, conn, "p1", driver.Query{SQL: aqCount(10_000_002), Tables: todos})
	aqExpectLimit(t, "10 M rows of a recursive CTE under the default limits", err, took, false, driver.BoundRows, driver.BoundTime, driver.BoundMemory)
	aqCheckUnchanged(t, conn, before)
}

func aqBytesBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	// 500 × 3 rows of (n, title): 1,500 × 8 bytes + 500 × 11 bytes of titles = 17,500 bytes.
	sql := `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 500) SELECT r.n, t.title FROM r, todos t ORDER BY r.n, t.id`
	res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: []string{tTodos}, Limits: driver.QueryLimits{MaxResultBytes: 17_500}})
	if err != nil {
		t.Fatalf("AQ-6: a 17,500-byte result under MaxResultBytes 17,500: %v", err)
	}
	if len(res.Rows) != 1500 {
		t.Errorf("AQ-6: a 17,500-byte result: %d rows, want 1,500", len(res.Rows))
	}
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: []string{tTodos}, Limits: driver.QueryLimits{MaxResultBytes: 17_499}})
	aqExpectLimit(t, "a 17,500-byte result under MaxResultBytes 17,499", err, took, false, driver.BoundBytes)
}

// aqReplaceNest multiplies the length of substr(title, 1, 3)||'aaaaaaaaaa'
// (13 bytes) by ten per level: a built string of about 10^(levels+1) bytes.
func aqReplaceNest(levels int) string {
	x := `substr(title, 1, 3) || 'aaaaaaaaaa'`
	for range levels {
		x = `replace(` + x + `, 'a', 'aaaaaaaaaa')`
	}
	return x
}

func aqValueBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	todos := []string{tTodos}
	// One level: 'one' + 100 'a' = 103 bytes, under 1,000.
	res, _, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT ` + aqReplaceNest(1) + ` AS v FROM todos WHERE id = 't1'`,
		Tables: todos, Limits: driver.QueryLimits{MaxValueBytes: 1000}})
	if err != nil {
		t.Fatalf("AQ-6: a 103-byte value under MaxValueBytes 1,000: %v", err)
	}
	if len(res.Rows) != 1 || !aqSame("one"+strings.Repeat("a", 100), res.Rows[0][0]) {
		t.Errorf("AQ-6: a 103-byte value: got %s", aqShow(res.Rows))
	}
	// Three levels: 10,003 bytes over 4 KiB, built and returned (a
	// 1,000-fold growth, within the static growth bound of 1,024).
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT ` + aqReplaceNest(3) + ` AS v FROM todos WHERE id = 't1'`,
		Tables: todos, Limits: driver.QueryLimits{MaxValueBytes: 4 << 10, Timeout: 5 * time.Second}})
	aqExpectLimit(t, "a 10 KB value under MaxValueBytes 4 KiB", err, took, true,
		driver.BoundValueBytes, driver.BoundBytes, driver.BoundMemory, driver.BoundTime)
}

func aqBuiltValueBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	todos := []string{tTodos}
	// A string doubling 40 times, only its length returned: bounded by
	// the value size on the engine where it can be, else by time.
	sql := `WITH RECURSIVE r(n, s) AS (SELECT 1, title FROM todos WHERE id = 't1' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40)
		SELECT max(length(s)) AS m FROM r`
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: todos,
		Limits: driver.QueryLimits{MaxValueBytes: 64 << 10, Timeout: 2 * time.Second}})
	aqExpectLimit(t, "a string doubled 40 times (x || x)", err, took, true)
	// Nested replace building 10^10 bytes (MariaDB once ran this for 43
	// minutes past max_statement_time and KILL).
	_, took, err = aqQueryTimed(t, conn, "p1", driver.Query{SQL: `SELECT length(` + aqReplaceNest(9) + `) AS m FROM todos WHERE id = 't1'`,
		Tables: todos, Limits: driver.QueryLimits{MaxValueBytes: 64 << 10, Timeout: 2 * time.Second}})
	aqExpectLimit(t, "nested replace building 10 GB", err, took, true)
	aqCheckUnchanged(t, conn, before)
}

// aqBuiltValueOverResult: a value built in derived tables, one replace()
// each (the shape that passes a rule on nested calls; three levels stay
// within the static growth bound), to 10 KB under MaxValueBytes 4 KiB and
// MaxResultBytes 2 KiB is the value_bytes bound,
// whatever the engine: the value is refused where it is built or before
// it is sent, never read as a result too large ("bytes") or returned.
func aqBuiltValueOverResult(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	// substr(title, 1, 3) is t1's whole title ('one'), and the row-work
	// rule counts it at 20 bytes, not a push-sized column value.
	sql := `SELECT 'aaaaaaaaaa' || substr(title, 1, 3) AS x FROM todos WHERE id = 't1'`
	for range 3 {
		sql = `SELECT replace(x, 'a', 'aaaaaaaaaa') AS x FROM (` + sql + `) AS d`
	}
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: []string{tTodos},
		Limits: driver.QueryLimits{MaxValueBytes: 4 << 10, MaxResultBytes: 2 << 10, Timeout: 5 * time.Second}})
	aqExpectLimit(t, "a 10 KB value built in derived tables under MaxValueBytes 4 KiB", err, took, false, driver.BoundValueBytes)
}

// aqSpin is a recursive CTE that counts to a billion: minutes of CPU on
// any engine, one row of result.
const aqSpin = `WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) AS c FROM r`

func aqTimeBound(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: aqSpin, Tables: []string{tTodos},
		Limits: driver.QueryLimits{Timeout: 500 * time.Millisecond}})
	aqExpectLimit(t, "a billion-step recursive CTE under Timeout 500 ms", err, took, false, driver.BoundTime, driver.BoundMemory)
	var le *driver.QueryLimitError
	if errors.As(err, &le) && le.Bound == driver.BoundTime && le.Limit != 500 {
		t.Errorf("AQ-6: time bound: Limit %d, want 500 (ms)", le.Limit)
	}
	aqCheckUnchanged(t, conn, before)
}

func aqTimeBoundConcurrent(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	type outcome struct {
		err  error
		took time.Duration
	}
	done := make(chan outcome, 1)
	go func() {
		start := time.Now()
		_, err := aqQuerier(t, conn).AuthoritativeQuery(aqQueryCtx(), "p1", driver.Query{SQL: aqSpin, Tables: []string{tTodos},
			Limits: driver.QueryLimits{Timeout: 3 * time.Second}})
		done <- outcome{err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond) // let the runaway query start; nothing is asserted on it
	res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p2", driver.Query{SQL: `SELECT id FROM todos ORDER BY id`, Tables: []string{tTodos}})
	select {
	case o := <-done:
		// An engine that runs one statement of a database at a time (D1)
		// may make p2 wait for p1's bound, never longer and never fail it.
		if h.ParallelPartitions {
			t.Errorf("AQ-6: p2's query finished only after p1's runaway query ended (%v after %v): one partition's query stalled another's",
				o.err, o.took)
		}
		if err != nil {
			t.Errorf("AQ-6: p2's query after p1's runaway query: %v", err)
		} else {
			aqExpectResult(t, "p2's query", []string{"id"}, [][]any{{"t1"}, {"x9"}}, res)
		}
		aqExpectLimit(t, "p1's billion-step query under Timeout 3 s", o.err, o.took, false, driver.BoundTime, driver.BoundMemory)
		return
	default:
	}
	if err != nil {
		t.Errorf("AQ-6: p2's query during p1's runaway query: %v", err)
	} else {
		aqExpectResult(t, "p2's query during p1's runaway query", []string{"id"}, [][]any{{"t1"}, {"x9"}}, res)
	}
	o := <-done
	aqExpectLimit(t, "p1's billion-step query under Timeout 3 s", o.err, o.took, false, driver.BoundTime, driver.BoundMemory)
}

// aqNested returns open^n + core + close^n.
func aqNested(open, core, close string, n int) string {
	return strings.Repeat(open, n) + core + strings.Repeat(close, n)
}

func aqLargeText(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	texts := map[string]string{
		// 4,950 nested CASTs (the PostgreSQL rewriter once took 161 s).
		"nested-cast": `SELECT ` + aqNested("CAST(", "1", " AS INTEGER)", 4950) + ` AS v FROM todos`,
		// 24,700 nested divisions (the MySQL rewriter once took over 13 minutes).
		"nested-division": `SELECT ` + aqNested("1/(", "1", ")", 24_700) + ` AS v FROM todos`,
		// 33,000 flat terms: long but shallow.
		"flat-sum": `SELECT ` + strings.Repeat("1+", 33_000) + `1 AS v FROM todos`,
	}
	for _, name := range []string{"nested-cast", "nested-division", "flat-sum"} {
		sql := texts[name]
		if len(sql) > 100_000 {
			t.Fatalf("setup: %s is %d bytes, over sync.MaxQueryBytes", name, len(sql))
		}
		_, took, err := aqQueryTimed(t, conn, "p1", driver.Query{SQL: sql, Tables: []string{tTodos}})
		if took > aqLimitWithin {
			t.Errorf("AQ-6: %s (%d bytes) took %v to rewrite and run, beyond the generous %v", name, len(sql), took, aqLimitWithin)
		}
		switch driver.CodeOf(err) {
		case "", driver.CodeQueryInvalid:
		case driver.CodeQueryLimit:
			aqExpectLimit(t, name, err, took, false)
		default:
			t.Errorf("AQ-6: %s: %v; want rows, query_invalid or query_limit", name, err)
		}
	}
	aqCheckUnchanged(t, conn, before)
}

func aqErrorNoValue(t T, h Harness) {
	conn := openStore(t, h)
	const secret = "s3cr3t-v4lue"
	tx := begin(t, conn, "p1")
	stage(t, tx, tTodos, aqTodo("t1", secret, false, "alpha", "u1", 10))
	commit(t, tx)
	for _, sql := range []string{
		`SELECT json_extract('{}', title) AS v FROM todos`,
		`SELECT json(title) AS v FROM todos`,
		`SELECT CAST(title AS INTEGER) + json_array_length(title) AS v FROM todos`,
	} {
		_, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p1", driver.Query{SQL: sql, Tables: []string{tTodos}})
		if err == nil {
			t.Errorf("AQ-6: %q over a title that is not JSON nor a path: no error", sql)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "p1") {
			t.Errorf("V-10: %q: the error quotes a row value or the partition: %v", sql, err)
		}
		if c := driver.CodeOf(err); c != driver.CodeQueryInvalid && c != driver.CodeQueryLimit {
			t.Errorf("AQ-6: %q: code %q, want query_invalid", sql, c)
		}
	}
}
