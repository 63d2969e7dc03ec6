// Package aqrates measures, for the drivers' TestAQCallRates, the time
// one SQL call or operator takes through AuthoritativeQuery over a stored
// 4 MiB value: per-call ms per MiB of the value, the slope (t16 − t8) / 8
// calls between one-row queries that evaluate it 16 and 8 times (each the
// best of 2 runs), also against the query without the calls. These are
// the per-byte rates the static row-work budget rests on. A driver's test
// stores Titles in table todos of a partition and calls Measure; the case
// list and the output are the same for every driver. Only tests import
// it; SYNCSTORE_TEST_RATES_ONLY (comma-separated case names) limits the
// cases.
package aqrates

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// rateExpr is one call or operator measured by Measure: expr has
// X for the column; kind 'L' wraps it in length(), 'P' (a predicate) in
// CASE WHEN … THEN 1 ELSE 0 END, 'N' (a number) is summed as is; rows
// are the ids of the stored values it runs over.
type rateExpr struct {
	name, expr string
	kind       byte
	rows       []string
}

// Titles are the 4 MiB values (MaxPushBytes) a driver stores, keyed by
// row id, in column title of table todos before calling Measure: "a" cycles
// 'a'..'z', "u" is 'é' repeated, "j" a JSON array of short strings, "A"
// is all 'a' (every byte an occurrence for replace, a case fold, a
// partial match for '%aab%').
func Titles() map[string]string {
	const size = 4 << 20
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	const el = `"abcdefghijklmnopqrstuvwxy",`
	js := "[" + strings.Repeat(el, (size-3)/len(el)) + "0]"
	return map[string]string{"a": string(b), "u": strings.Repeat("é", size/2), "j": js, "A": strings.Repeat("a", size)}
}

var rateExprs = func() []rateExpr {
	au := []string{"a", "u"}
	auA := []string{"a", "u", "A"}
	return []rateExpr{
		{"length", "length(X)", 'N', au},
		{"upper", "upper(X)", 'L', auA},
		{"lower", "lower(X)", 'L', auA},
		{"substr2", "substr(X, 2)", 'L', au},
		{"trim", "trim(X)", 'L', au},
		{"ltrim", "ltrim(X)", 'L', au},
		{"rtrim", "rtrim(X)", 'L', au},
		{"replace_a_b", "replace(X, 'a', 'b')", 'L', auA},
		{"hex", "hex(X)", 'L', au},
		{"quote", "quote(X)", 'L', au},
		{"instr_zz", "instr(X, 'zz')", 'N', auA},
		{"like_zz", "X LIKE '%zz%'", 'P', auA},
		{"glob_zz", "X GLOB '*zz*'", 'P', au},
		{"eq_x", "X = 'x'", 'P', au},
		{"eq_self", "X = X", 'P', au},
		{"lt_b", "X < 'b'", 'P', au},
		{"lt_self", "X < X", 'P', au},
		{"concat_x", "X || 'x'", 'L', au},
		{"cast_blob", "CAST(X AS BLOB)", 'L', au},
		{"cast_int", "CAST(X AS INTEGER)", 'N', au},
		{"printf_s", "printf('%s', X)", 'L', au},
		{"json_valid", "json_valid(X)", 'N', []string{"j"}},
		{"json_extract", "json_extract(X, '$[0]')", 'L', []string{"j"}},
		{"unicode", "unicode(X)", 'N', au},
		{"coalesce", "coalesce(X, 'x')", 'L', au},
		{"min2", "min(X, 'zzz')", 'L', au},
		{"max2", "max(X, 'a')", 'L', au},
		{"abs", "abs(X)", 'N', au},
		{"plus0", "X + 0", 'N', au},
		{"nocase_eq_x", "X COLLATE NOCASE = 'x'", 'P', au},
		{"nocase_eq_self", "X COLLATE NOCASE = X", 'P', au},
		// Partial matches at every byte of "A" (a short constant
		// pattern: |s|·|p|), a replace whose every character is an
		// occurrence of a multibyte needle, a growing replace.
		{"like_a7b", "X LIKE '%aaaaaaab%'", 'P', []string{"A"}},
		{"glob_a7b", "X GLOB '*aaaaaaab*'", 'P', []string{"A"}},
		{"instr_a7b", "instr(X, 'aaaaaaab')", 'N', []string{"A"}},
		{"like_a63b", "X LIKE '%" + strings.Repeat("a", 63) + "b%'", 'P', []string{"A"}},
		{"instr_a63b", "instr(X, '" + strings.Repeat("a", 63) + "b')", 'N', []string{"A"}},
		{"replace_e_x", "replace(X, 'é', 'x')", 'L', []string{"u"}},
		{"replace_a_bb", "replace(X, 'a', 'bb')", 'L', []string{"A", "a"}},
	}
}()

// BalancedSum is n copies of term joined by + as a balanced tree: a
// shallow text of any length (the row-work tests' many calls in one row).
func BalancedSum(term string, n int) string {
	if n == 1 {
		return term
	}
	return "(" + BalancedSum(term, n/2) + " + " + BalancedSum(term, n-n/2) + ")"
}

// Measure runs, for each rateExpr and stored row, one-row queries through
// aq on partition part whose WHERE evaluates the expression 8 and 16
// times over the 4 MiB value, and logs ms per MiB per call: (t16 - t8) /
// 8 / 4 MiB, and (t8 - t0) / 8 / 4 MiB where t0 is the same query
// without the sum. It asserts nothing.
func Measure(t *testing.T, aq driver.AuthoritativeQueryConn, part string) {
	t.Helper()
	ctx := t.Context()
	defer querylang.DisableGrowthCheckForTest()()
	defer querylang.DisableSearchPatternCheckForTest()()
	lim := driver.QueryLimits{Timeout: 60 * time.Second, MaxValueBytes: driver.MaxQueryMaxValueBytes}
	run := func(sql, id string) (time.Duration, error) {
		best := time.Duration(-1)
		for range 2 {
			start := time.Now()
			res, err := aq.AuthoritativeQuery(ctx, part, driver.Query{SQL: sql, Args: []any{id}, Tables: []string{"todos"}, Limits: lim})
			took := time.Since(start)
			if err != nil {
				return took, err
			}
			_ = res
			if best < 0 || took < best {
				best = took
			}
			if took > 10*time.Second {
				break
			}
		}
		return best, nil
	}
	const mib = 4.0
	type out struct {
		name, row string
		d, b      float64
		t8, t16   time.Duration
		err       error
	}
	var outs []out
	base := map[string]time.Duration{}
	for _, id := range []string{"a", "u", "j", "A"} {
		d, err := run(`SELECT id FROM todos WHERE id = ?`, id)
		if err != nil {
			t.Fatalf("baseline %s: %v", id, err)
		}
		base[id] = d
	}
	only := os.Getenv("SYNCSTORE_TEST_RATES_ONLY") // a comma-separated list of names, or all
	for _, e := range rateExprs {
		if only != "" && !strings.Contains(","+only+",", ","+e.name+",") {
			continue
		}
		term := strings.ReplaceAll(e.expr, "X", "title")
		switch e.kind {
		case 'L':
			term = "length(" + term + ")"
		case 'P':
			term = "CASE WHEN " + term + " THEN 1 ELSE 0 END"
		}
		for _, id := range e.rows {
			q := func(n int) string {
				return `SELECT id FROM todos WHERE id = ? AND ` + BalancedSum(term, n) + ` IS NOT NULL`
			}
			// The slope from n/2 to n calls, n = 16, or less when n calls
			// are priced past a driver's budget (mysql's instr/replace
			// guard refuses them before they run).
			n, thi := 16, time.Duration(0)
			var err error
			for ; n >= 1; n /= 2 {
				if thi, err = run(q(n), id); err == nil || !errors.Is(err, driver.ErrQueryLimit) {
					break
				}
			}
			if err != nil {
				outs = append(outs, out{name: e.name, row: id, t8: thi, err: err})
				continue
			}
			tlo := base[id]
			if n > 1 {
				if tlo, err = run(q(n/2), id); err != nil {
					outs = append(outs, out{name: e.name, row: id, t8: tlo, err: err})
					continue
				}
			}
			o := out{name: e.name, row: id, t8: tlo, t16: thi,
				d: float64((thi - tlo).Microseconds()) / 1000 / float64(n-n/2) / mib,
				b: float64((thi - base[id]).Microseconds()) / 1000 / float64(n) / mib}
			if n != 16 {
				o.name += fmt.Sprintf("(%d→%d)", n/2, n)
			}
			outs = append(outs, o)
		}
	}
	sort.SliceStable(outs, func(i, j int) bool { return max(outs[i].d, outs[i].b) > max(outs[j].d, outs[j].b) })
	t.Logf("baseline (no sum): a %v, u %v, j %v, A %v", base["a"], base["u"], base["j"], base["A"])
	t.Logf("%-16s %-3s %12s %12s %10s %10s", "call", "row", "ms/MiB/call", "(vs base)", "t(n/2)", "t(n)")
	for _, o := range outs {
		if o.err != nil {
			msg := o.err.Error()
			if len(msg) > 140 && only == "" {
				msg = msg[:140]
			}
			t.Logf("%-16s %-3s ERROR after %v: %s", o.name, o.row, o.t8.Round(time.Millisecond), msg)
			continue
		}
		t.Logf("%-16s %-3s %12.3f %12.3f %10v %10v", o.name, o.row, o.d, o.b, o.t8.Round(time.Millisecond), o.t16.Round(time.Millisecond))
	}
}
