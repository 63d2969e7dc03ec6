package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/aqrates"
	"github.com/syncstore/syncstore/internal/querylang"
)

// TestAQSearchEndsOnOwnServer (AQ-6): PostgreSQL's strpos (the driver's
// instr) and LIKE/ILIKE search in O(len(text)·len(pattern)) inside one
// call without checking for interrupts: statement_timeout does not fire
// and pg_terminate_backend is ignored until the call ends. On a
// PostgreSQL of the test's own (never the shared one), with a stored
// 'a'×1,000,000 and needles from other rows:
//
//   - a needle or pattern taken from a column is refused by the static
//     rule (querylang.CheckSearchPatterns, rewrite bound) and no backend
//     runs;
//   - the worst case the rule admits — a bound needle 'b'+'a'×255 for
//     strpos, a pattern '%'+'a'×255+'b%' for ILIKE — answers (or hits its
//     time bound) and leaves no backend active 5 s after the call;
//   - the control: with the rule off, strpos of 'b'+'a'×200,000 in
//     'a'×400,000 outlives the call — the server does not answer before
//     the driver's deadline (Timeout + 1 s) or its backend is still
//     running 5 s after — so the test sees the runaway the rule prevents.
//     Its backend ends by itself about 15 s later (or at the server's
//     immediate shutdown).
//
// Run with:
//
//	SYNCSTORE_TEST_POSTGRES_AQ="$(.ci/postgres-aq.sh start)" go test -run TestAQSearchEndsOnOwnServer ./drivers/postgres
//	.ci/postgres-aq.sh stop
//
// manyUpperCalls is how many upper() calls over a stored 1 MB value the
// many-upper-calls case of TestAQSearchEndsOnOwnServer puts in one row:
// the row-work rule refuses it; before the rule it ran on past its call.
const manyUpperCalls = 2000

// pushSized is a stored value as large as one push can store
// (sync.MaxPushBytes, 4 MiB, less the row's other values).
const pushSized = 4_000_000

// mostUpperCalls is the text of the largest balanced sum of
// length(upper(title)) terms over the row id that the row-work rule
// admits under timeout, and its number of calls.
func mostUpperCalls(t *testing.T, id string, timeout time.Duration) (string, int) {
	t.Helper()
	text := func(n int) string {
		return `SELECT id FROM todos WHERE id = '` + id + `' AND ` + upperSum(n) + ` > 0`
	}
	n := 1
	for {
		if _, err := querylang.AdmitQuery(driver.Query{SQL: text(n + 1), Limits: driver.QueryLimits{Timeout: timeout}}); err != nil {
			break
		}
		n++
	}
	if _, err := querylang.AdmitQuery(driver.Query{SQL: text(n), Limits: driver.QueryLimits{Timeout: timeout}}); err != nil {
		t.Fatalf("one upper() call: %v", err)
	}
	return text(n), n
}

// upperSum is n length(upper(title)) terms in a balanced sum.
func upperSum(n int) string { return aqrates.BalancedSum("length(upper(title))", n) }

func TestAQSearchEndsOnOwnServer(t *testing.T) {
	conn, leftAfter := ownServerStore(t, map[string]string{
		"hay": strings.Repeat("a", 1_000_000), "needle": "b" + strings.Repeat("a", 500_000),
		"hay2": strings.Repeat("a", 400_000), "needle2": "b" + strings.Repeat("a", 200_000),
		"huge": strings.Repeat("é", pushSized/2),
	})
	ctx := t.Context()
	aq := conn.(driver.AuthoritativeQueryConn)
	timeout := time.Second
	call := func(name, sql string, args ...any) (int, bool, error) {
		start := time.Now()
		res, err := aq.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: sql, Args: args, Tables: []string{"todos"},
			Limits: driver.QueryLimits{Timeout: timeout}})
		took := time.Since(start)
		n := leftAfter()
		t.Logf("%s: rows %v, %v after %.2f s; backends left 5 s after the call: %d", name, res.Rows, err, took.Seconds(), n)
		return n, errors.Is(err, context.DeadlineExceeded), err
	}
	const pair = ` FROM todos h, todos n WHERE h.id = 'hay' AND n.id = 'needle'`
	for _, a := range []struct{ name, sql string }{
		{"instr-column-needle", `SELECT instr(h.title, n.title) AS i` + pair},
		{"like-column-pattern", `SELECT count(*) AS k` + pair + ` AND h.title LIKE '%' || n.title || '%'`},
	} {
		n, _, err := call(a.name, a.sql)
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
			t.Errorf("%s: %v, want the rewrite bound", a.name, err)
		}
		if n > 0 {
			t.Errorf("AQ-6: %s: %d backend(s) still active 5 s after the call returned", a.name, n)
		}
	}
	// The worst searches the pattern rule admits cost 45 copies of a
	// 4 MiB value (181 MiB): the row-work rule refuses them under 1 s and
	// admits them under 5 s (320 MiB).
	bound := querylang.MaxSearchPatternBytes - 1
	timeout = 5 * time.Second
	for _, a := range []struct {
		name, sql string
		arg       string
	}{
		{"instr-bound-needle", `SELECT instr(title, ?) AS i FROM todos WHERE id = 'hay'`, "b" + strings.Repeat("a", bound)},
		{"like-bound-pattern", `SELECT count(*) AS k FROM todos WHERE id = 'hay' AND title LIKE '%' || ? || '%'`, strings.Repeat("a", bound-2) + "b"},
	} {
		n, _, err := call(a.name, a.sql, a.arg)
		var le *driver.QueryLimitError
		if err != nil && !(errors.As(err, &le) && le.Bound == driver.BoundTime) {
			t.Errorf("%s: %v, want rows or the time bound", a.name, err)
		}
		if n > 0 {
			t.Errorf("AQ-6: %s: %d backend(s) still active 5 s after the call returned", a.name, n)
		}
	}
	// Many linear calls in one row: upper() of the stored 1 MB value,
	// manyUpperCalls times in a balanced sum (shallow); PostgreSQL checks
	// for a cancel between rows, not between the calls of one row's
	// expression. The row-work rule refuses it; the most calls it admits
	// over a push-sized multibyte value end within the Timeout's 2×.
	n, _, err := call("many-upper-calls", `SELECT id FROM todos WHERE id = 'hay' AND `+upperSum(manyUpperCalls)+` > 0`)
	if le := (*driver.QueryLimitError)(nil); !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
		t.Errorf("AQ-6: %d upper() calls over 1 MB in one row: %v, want the rewrite bound", manyUpperCalls, err)
	}
	if n > 0 {
		t.Errorf("AQ-6: %d upper() calls over 1 MB in one row: %d backend(s) still active 5 s after the call returned (%v)", manyUpperCalls, n, err)
	}
	timeout = time.Second
	most, calls := mostUpperCalls(t, "huge", time.Second)
	n, _, err = call(fmt.Sprintf("most-upper-calls-admitted (%d over %d bytes)", calls, pushSized), most)
	if le := (*driver.QueryLimitError)(nil); err != nil && !(errors.As(err, &le) && le.Bound == driver.BoundTime) {
		t.Errorf("AQ-6: the most upper() calls the rule admits: %v, want rows or the time bound", err)
	}
	if n > 0 {
		t.Errorf("AQ-6: the most upper() calls the rule admits (%d): %d backend(s) still active 5 s after the call returned", calls, n)
	}

	// PostgreSQL's numeric power() multiplies numbers of ~130,000 digits
	// without checking for interrupts (0.53 s a call): sum() of an int8
	// is numeric, and the row-work rule prices the call at its literals.
	// The driver computes power() in float8, as SQLite does.
	term := "power((sum(CAST(1 AS INTEGER)) * 0 + 999999999) / 100000000, 130000)"
	n, late, err := call("numeric-power-24", "SELECT count(*) AS n FROM todos HAVING "+strings.TrimSuffix(strings.Repeat(term+" > 0 AND ", 24), " AND "))
	if late || n > 0 {
		t.Errorf("AQ-6: 24 power() calls over a numeric: %v; the driver gave up at its deadline: %v; %d backend(s) still active 5 s after the call", err, late, n)
	}
	// The control: without the rules the search outlives the call.
	defer querylang.DisableSearchPatternCheckForTest()()
	defer querylang.DisableRowWorkCheckForTest()()
	if n, late, _ := call("unchecked instr-column-needle (400 KB)",
		fmt.Sprintf(`SELECT instr(h.title, n.title) AS i FROM todos h, todos n WHERE h.id = '%s' AND n.id = '%s'`, "hay2", "needle2")); n == 0 && !late {
		t.Errorf("control: without the rule, strpos of 'b'+'a'×200,000 in 'a'×400,000 was answered within the Timeout and left no backend: the test no longer sees the runaway")
	}
}
