package mysql

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/internal/querylang"
)

// Run-time bounds the rewrite adds for MariaDB (AQ-6). MariaDB checks
// KILL and max_statement_time between rows, never inside one function
// call, and some of its string functions are quadratic:
//
//   - REPLACE(s, f, t) searches naively (O(|s|·|f|)) and, when f and t
//     differ in byte length, moves the rest of the string at every
//     occurrence (O(occurrences × result length)): 400 KB of 'a' → 'bb'
//     ran 24.7 s under max_statement_time=1 and outlived KILL QUERY;
//   - INSTR(s, n) searches naively: a 100 KB needle in a 400 KB value
//     ran 9.6 s under max_statement_time=1;
//   - LIKE's default escape character is the backslash even under
//     NO_BACKSLASH_ESCAPES; the rewrite used to double every backslash
//     of the pattern with a (quadratic) REPLACE — it now names an escape
//     character no pattern holds instead (likeNoEscape).
//
// A derived table or CTE body that MariaDB merges into the query around
// it has its result expressions copied into every place the outer query
// names them, so nested levels that each name the level below twice (x
// || x) build 2^levels copies in one row; fence keeps them apart.

// guardCostBudget is the most the guarded calls of one row may cost
// together, in byte steps of replaceCost and instrCost (a byte compared
// in a search or moved by a replacement): each of a query's k calls may
// cost guardCostBudget/k, since MariaDB runs all of a row's calls before
// it checks KILL again. Measured on a 2-core machine under
// a load of 6 (MariaDB 10.11): naive search ≈ 1.7·10^9 steps/s, a
// growing replace ≈ 5·10^9 steps/s, a shrinking one ≈ 3·10^10; so a call
// at the budget runs at most ≈ 60 ms there: a 1 s Timeout keeps a 10×
// margin for a slower machine.
const guardCostBudget = 100_000_000

// guardedCall reports whether piece i is a call guards wraps.
func (r *render) guardedCall(i int) bool {
	p := r.ps[i]
	if p.Kind != querylang.TokWord || (p.Name != "replace" && p.Name != "instr") || r.text[i] != strings.ToUpper(p.Name) {
		return false
	}
	open := r.next(i)
	if open < 0 || r.ps[open].Text != "(" {
		return false
	}
	n := len(r.argRanges(open))
	return (p.Name == "replace" && n == 3) || (p.Name == "instr" && n == 2)
}

// guardFlag is the session variable a failing guard sets to 1 just before
// it raises ER_SUBQUERY_NO_1_ROW (runQuery resets it to 0 before each
// query): the driver tells a guard's 1242 from a host's scalar sub-query
// returning two rows by reading it (guardErr).
const guardFlag = "@_sync_guard"

// guardFail raises the guard's error: it sets guardFlag, then evaluates a
// sub-query of two rows where one value is expected (1242). MariaDB
// evaluates it only when the IF around it takes that branch.
const guardFail = "((" + guardFlag + " := 1) + (SELECT 1 UNION ALL SELECT 2))"

// erSubqueryNoOneRow is ER_SUBQUERY_NO_1_ROW.
const erSubqueryNoOneRow = 1242

// likeNoEscape ends a LIKE without ESCAPE: SQLite's LIKE has no escape
// character, MariaDB's default one is the backslash (even under
// NO_BACKSLASH_ESCAPES), so the rewrite names NUL, which no pattern of
// the portable dialect holds (the text, bound values and stored values
// refuse NUL; only a CAST of a blob can make one). Linear, where doubling
// every backslash with REPLACE was quadratic in their number.
const likeNoEscape = " ESCAPE X'00'"

// fenceLimit keeps MariaDB from merging a derived table or CTE into the
// query around it: it never merges one with a LIMIT.
const fenceLimit = " LIMIT 18446744073709551615 "

// fence puts fenceLimit at the end of every parenthesized query that
// computes a result column (querylang.QueryBody.Computes: a derived
// table, a CTE body, a scalar sub-query, a parenthesized member of a
// compound SELECT), unless it already has LIMIT or OFFSET at its own
// level, is the operand of EXISTS, IN, ANY, SOME or ALL (MariaDB refuses
// LIMIT there: 1235; such operands are semi-joins, not merged), or is
// the body of a recursive CTE reading itself (materialized anyway) (AQ-6).
// A body that only renames columns of the level below is left to the
// optimizer, which may still merge it and push conditions into it; so
// are the driver's partition CTEs (prepended after the rewrite).
func (r *render) fence() {
	for _, b := range querylang.QueryBodies(r.ps) {
		if !b.Computes || b.Sublink || b.Limited || b.Recursive || r.sublinkOperand(b.Open) {
			continue
		}
		r.pre[b.Close] = fenceLimit + r.pre[b.Close]
	}
}

// sublinkOperand reports whether the "(" at open stands, through further
// parentheses only, after EXISTS, IN, ANY, SOME or ALL (not UNION ALL):
// `x IN ((SELECT …))` is still the operand of IN for MariaDB.
func (r *render) sublinkOperand(open int) bool {
	k := r.prev(open)
	for k >= 0 && r.ps[k].Text == "(" {
		k = r.prev(k)
	}
	if k < 0 || r.ps[k].Kind != querylang.TokWord {
		return false
	}
	switch r.ps[k].Name {
	case "exists", "in", "any", "some":
		return true
	case "all":
		b := r.prev(k)
		return b < 0 || (r.ps[b].Name != "union" && r.ps[b].Name != "intersect" && r.ps[b].Name != "except")
	}
	return false
}

// guards wraps each call of replace(s, f, t) and instr(s, n) so that its
// arguments are evaluated once, their byte lengths priced, and the call
// fails — guardFail, mapped to query_limit "time" (AQ-6) — when the
// price passes its share of guardCostBudget (the budget divided by the
// number of calls in the text), before MariaDB starts it. Each argument
// is assigned to a session variable of its own call (@_sync_g<n>s, …):
// the text grows by a constant per call (no argument is written twice,
// so nesting does not multiply it), and each variable is set back to
// NULL once the check passed, an argument was NULL (COALESCE) or
// replace's f was empty (REPLACE then skips t, where the check is), so the
// session keeps no value (a failed query's connection is closed). A call
// whose arguments are each one literal or bound value is priced here
// instead (constCost) and left as it is when within its share, so the
// engine can still fold it into an index condition. The
// engine evaluates a call's arguments in order (REPLACE stops at a NULL
// one), so the check, in the last argument, reads the lengths of this
// row's values. Returns the number of calls guarded. A call with another
// number of arguments is left as it is (the engine refuses it).
func (r *render) guards(argOf []any, isArg []bool) int {
	var calls []int
	for i := range r.ps {
		if r.guardedCall(i) {
			calls = append(calls, i)
		}
	}
	if len(calls) == 0 {
		return 0
	}
	budget := guardCostBudget / len(calls)
	guarded := 0
	for n, i := range calls {
		args := r.argRanges(r.next(i))
		if c, ok := r.constCost(r.ps[i].Name, args, argOf, isArg); ok && c <= float64(budget) {
			continue // priced here: left to the engine, which may fold it (an index condition stays one)
		}
		guarded++
		v := "@_sync_g" + strconv.Itoa(n)
		if r.ps[i].Name == "replace" {
			s, f, t := args[0], args[1], args[2]
			r.wrap(s, "("+v+"s := ", ")")
			// MariaDB's REPLACE returns s without evaluating t when f is
			// empty: the check in t would not run, so f's wrapper clears
			// the variables itself then (the OR stops at a non-empty f).
			r.wrap(f, "CONCAT(COALESCE(("+v+"f := ", "), ("+v+"s := NULL)), IF(LENGTH("+v+"f) > 0 OR "+setNull([]string{v + "s", v + "f"})+", '', NULL))")
			r.wrap(t, "CONCAT(COALESCE(("+v+"t := ", "), "+clearVars(v+"s", v+"f")+"), "+
				guardCheck(replaceCost(v+"s", v+"f", v+"t"), budget, v+"s", v+"f", v+"t")+")")
			continue
		}
		s, nd := args[0], args[1]
		r.wrap(s, "("+v+"s := ", ")")
		r.wrap(nd, "CONCAT(COALESCE(("+v+"n := ", "), "+clearVars(v+"s")+"), "+
			guardCheck(instrCost(v+"s", v+"n"), budget, v+"s", v+"n")+")")
	}
	return guarded
}

// constCost prices, as replaceCost and instrCost do, a call whose
// arguments are each one literal or bound value (byte lengths known
// now); ok is false for any other call. A NULL argument costs nothing.
func (r *render) constCost(name string, args [][2]int, argOf []any, isArg []bool) (cost float64, ok bool) {
	l := make([]float64, len(args))
	for k, a := range args {
		if a[0] != a[1] {
			return 0, false
		}
		p := r.ps[a[0]]
		switch {
		case isArg[a[0]]:
			switch v := argOf[a[0]].(type) {
			case nil:
				return 0, true
			case string:
				l[k] = float64(len(v))
			case []byte:
				l[k] = float64(len(v))
			default:
				l[k] = 24 // a number's text
			}
		case p.Kind == querylang.TokString:
			l[k] = float64(len(querylang.UnquoteIdent(p.Text)))
		case p.Kind == querylang.TokBlob:
			l[k] = float64(len(p.Text)-3) / 2
		case p.Kind == querylang.TokNumber:
			l[k] = 24
		case p.Kind == querylang.TokWord && p.Name == "null":
			return 0, true
		default:
			return 0, false
		}
	}
	if name == "instr" {
		return l[0] * l[1], true
	}
	ls, lf, lt := l[0], l[1], l[2]
	cost = ls * lf
	if lf > 0 && lf != lt {
		occ := float64(int64(ls) / int64(lf))
		cost += occ * (ls + occ*lt)
	}
	return cost, true
}

// replaceCost is the price of REPLACE(s, f, t) from the byte lengths of
// the values in the session variables s, f and t: the naive search,
// |s|·|f|, plus, when |f| and |t| differ, the moves: at most |s|/|f|
// occurrences, each moving at most the whole result, |s| + |s|/|f|·|t|
// (in DOUBLE: no overflow). An empty f replaces nothing.
func replaceCost(s, f, t string) string {
	ls, lf, lt := "LENGTH("+s+")", "LENGTH("+f+")", "LENGTH("+t+")"
	return ls + " * " + lf + " + IF(" + lf + " > 0 AND " + lf + " <> " + lt + ", " +
		ls + " DIV " + lf + " * (" + ls + " + " + ls + " DIV " + lf + " * " + lt + " * 1e0), 0)"
}

// instrCost is the price of INSTR(s, n): the naive search, |s|·|n|.
func instrCost(s, n string) string {
	return "LENGTH(" + s + ") * LENGTH(" + n + ")"
}

// guardCheck is the last argument's tail: guardFail when cost passes
// budget, else the empty string, having set vars back to NULL.
func guardCheck(cost string, budget int, vars ...string) string {
	return "IF(" + cost + " > " + strconv.Itoa(budget) + ", " + guardFail + ", IF(" + setNull(vars) + ", '', NULL))"
}

// clearVars sets vars back to NULL and is NULL: the last argument's
// value when it is NULL (CONCAT then stops before guardCheck, and the
// call's value is NULL without any work).
func clearVars(vars ...string) string {
	return "IF(" + setNull(vars) + ", NULL, '')"
}

// setNull is true, having set each of vars to NULL. Its IFs have
// branches that differ: MariaDB folds IF(c, NULL, NULL) to NULL without
// evaluating c.
func setNull(vars []string) string {
	clear := make([]string, len(vars))
	for i, v := range vars {
		clear[i] = "(" + v + " := NULL) IS NULL"
	}
	return strings.Join(clear, " AND ")
}

// wrap puts before and after around the pieces a[0]…a[1], outside any
// text another pass put there.
func (r *render) wrap(a [2]int, before, after string) {
	r.pre[a[0]] = before + r.pre[a[0]]
	r.post[a[1]] += after
}

// argRanges returns the first and last significant piece of each
// top-level argument of the call whose "(" is at open (nil when the
// parentheses do not match or an argument is empty).
func (r *render) argRanges(open int) [][2]int {
	end := querylang.Matching(r.ps, open)
	if end < 0 {
		return nil
	}
	var out [][2]int
	start, depth := open+1, 0
	for i := open + 1; i <= end; i++ {
		t := r.ps[i].Text
		if i == end || (depth == 0 && t == ",") {
			first := querylang.FirstSignificant(r.ps[:i], start)
			if first < 0 {
				return nil
			}
			out = append(out, [2]int{first, r.prev(i)})
			start = i + 1
			continue
		}
		switch t {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	return out
}
