package querylang

import (
	"fmt"
	"maps"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// This file is the row-work rule of authoritative queries (AQ-6): a
// bound on the bytes a text's calls and operators may process in one row.
// Every engine checks its interrupt (SQLite's, PostgreSQL's cancel,
// MariaDB's KILL) between rows, not between the calls of one row's
// expressions, so a text of many calls over a large value — a sum of 2,000
// length(upper(title)) terms is 40 KB of valid text — runs each row to its
// end whatever the Timeout: 4.07 s on SQLite under a 1 s Timeout, the
// backend still active 5 s after the call on PostgreSQL, a MariaDB thread
// running 17 s. The rule prices the text before any engine sees it.
//
// The measure (bytes; an operand's size is the largest value it can
// hold, at most 1 GiB: no engine holds a larger one):
//
//   - a column reference (a `*` too) is RowWorkColumnBytes — the largest
//     value one push can store — or, in a SELECT whose FROM reads only
//     derived tables or CTEs, the largest result value of those; in a
//     sub-query of an expression (EXISTS, IN, scalar, LATERAL) at least
//     what it is in the enclosing query, whose row it may read; a
//     parenthesized table or a table-valued function in FROM reads a
//     table; a bind value is its length (8 at least); a string or blob
//     literal its length; any other literal 8;
//   - `||`, `->` and `->>` chain their operands: each of the chain's
//     operators costs what the chain holds once its right operand is
//     added (the engines copy the accumulated text at each step), and
//     the chain's value is the sum;
//   - a call costs its arguments' sum × its growth weight (CheckGrowth's:
//     replace with literal or bound patterns, repeat, printf, hex, JSON
//     builders, …), × patternFactor of its pattern for a search (instr,
//     replace, trim, like(), glob()); its value is 8 for a call returning
//     a number (length, instr, count, …), 4n + 8 for substr(x, i, n) with
//     n a literal or bound integer, what a size argument asks for
//     (builtBytes), the arguments' sum × its weight otherwise; an
//     aggregate that concatenates rows (group_concat, string_agg, …)
//     costs its argument per row, and its value weighs MaxQueryGrowth;
//     the arguments' work counts twice in nullif (MariaDB evaluates the
//     first one twice) and four times in json_each (the postgres
//     driver's rewrite repeats it);
//   - an operand of any other operator (comparison, arithmetic, LIKE, IS,
//     IN, BETWEEN, AND, OR, NOT, unary minus) costs its size once, and
//     the result is a number; the left operand of IN (list) costs its
//     size × (1 + log2 of the list's length), of LIKE, GLOB, REGEXP or
//     MATCH its size × patternFactor of the pattern, a simple CASE's
//     operand its size per WHEN; BETWEEN's left operand, with the work
//     of every call in it, counts twice (PostgreSQL copies it into
//     x >= a AND x <= b);
//   - an expression of WHERE, ON, GROUP BY, HAVING, ORDER BY or LIMIT
//     costs its size once; a result column costs nothing more (the result
//     bounds count it) and is the value of its sub-query; a reference to
//     a result column's alias, or to a column of a derived table or CTE,
//     costs that column's work again (SQLite and MariaDB evaluate an
//     alias's expression again; SQLite's push-down and D1's flattener
//     copy a derived column's expression into the query around it);
//   - IN (list) evaluates its left operand's calls once per item when it
//     is a row value or an item is not a single literal or bind value
//     (PostgreSQL turns the list into ORs), else once per type among the
//     items (MariaDB); a simple CASE evaluates its value's calls once per
//     type among the WHEN values (MariaDB); BETWEEN SYMMETRIC four times.
//
// A text is refused when the sum over every call and operator of the
// statement exceeds RowWorkBudget(Timeout). The sum is over the whole
// text, not per row of each loop: a sub-query's own rows are interrupted
// between, but counting them apart would need the plan.

// RowWorkColumnBytes is the size a column reference stands for in the
// row-work rule: the largest value one push can store (sync.MaxPushBytes,
// PUSH-8), 4 MiB.
const RowWorkColumnBytes = 4 << 20

// RowWorkBytesPerSecond is the row work a text may have per second of its
// Timeout: 64 MiB, 16 column references' worth. The slowest call of
// each engine, measured over a stored 4 MiB value on the 2-core machine:
// 14 ms per MiB (PostgreSQL's replace), 13.5 (MariaDB's upper), 8.7
// (SQLite's replace); 64 MiB/s is 15.6 ms per MiB.
const RowWorkBytesPerSecond = 64 << 20

// MinRowWorkBytes is the row work every Timeout allows: 16 MiB, 4
// column references' worth (a text reading and comparing a few columns),
// at most 0.25 s of the slowest calls — a quarter second's budget, so a
// Timeout of 125 ms or more still bounds an admitted row within twice it.
const MinRowWorkBytes = 4 * RowWorkColumnBytes

// RowWorkBudget is the row work a text may have under timeout (its
// default when zero): RowWorkBytesPerSecond per second of it, at least
// MinRowWorkBytes.
func RowWorkBudget(timeout time.Duration) int64 {
	if timeout <= 0 {
		timeout = driver.QueryLimits{}.WithDefaults().Timeout
	}
	ms := min(timeout.Milliseconds(), int64(1)<<24) // over 4 h: the maximum Timeout is 10 min
	return max(MinRowWorkBytes, ms*RowWorkBytesPerSecond/1000)
}

// patternCalls search their first argument for a pattern, needle or
// character set (the argument at the index given): each engine's search
// costs text × pattern in the worst case.
var patternCalls = map[string]int{
	"instr": 1, "strpos": 1, "replace": 1, "trim": 1, "ltrim": 1, "rtrim": 1, "like": 0, "glob": 0,
}

// patternOps are the operators whose right operand is a pattern.
var patternOps = map[string]bool{"like": true, "glob": true, "regexp": true, "match": true}

// PatternBytesPerCopy prices a search (LIKE, GLOB, instr, replace, trim)
// in the row-work rule: it costs its text 1 + ⌈p / PatternBytesPerCopy⌉
// times for a pattern of p bytes (a 64-byte LIKE pattern cost 69–150 ms
// per MiB of text, a copy 1–14).
const PatternBytesPerCopy = 6

// patternFactor is what a search with a pattern of n bytes costs per
// byte of its text, in copies.
func patternFactor(n int64) int64 {
	return 1 + (min(n, MaxSearchPatternBytes)+PatternBytesPerCopy-1)/PatternBytesPerCopy
}

// rowWorkKeywords are words the rule never reads as a column reference,
// beside growthKeywords.
var rowWorkKeywords = map[string]bool{"offset": true, "recursive": true, "materialized": true, "symmetric": true}

// joinWords start a join in a FROM clause.
var joinWords = map[string]bool{"left": true, "right": true, "inner": true, "outer": true, "cross": true, "natural": true, "full": true}

// consumingKeywords are operators whose operands are converted or
// compared (their result is a number), not carried on.
var consumingKeywords = map[string]bool{
	"like": true, "glob": true, "regexp": true, "match": true, "is": true, "in": true, "between": true,
	"isnull": true, "notnull": true, "not": true, "and": true, "or": true, "escape": true,
}

const rowWorkCap = int64(1) << 60

// rowWorkMaxValue is the largest value an engine holds: PostgreSQL's
// 1 GB per value (SQLite's is MaxValueBytes, at most 256 MiB; MariaDB's
// max_allowed_packet, at most 1 GiB). An operand is never counted larger.
const rowWorkMaxValue = int64(1) << 30

func rwAdd(a, b int64) int64 {
	if a > rowWorkCap-b {
		return rowWorkCap
	}
	return a + b
}

func rwMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > rowWorkCap/b {
		return rowWorkCap
	}
	return a * b
}

// rowWorkOff turns the rule off (DisableRowWorkCheckForTest).
var rowWorkOff atomic.Bool

// DisableRowWorkCheckForTest turns CheckRowWork off, process-wide, until
// the returned func is called. Only for tests proving what an engine does
// with the shapes it refuses; never call it in a host.
func DisableRowWorkCheckForTest() (restore func()) {
	rowWorkOff.Store(true)
	return func() { rowWorkOff.Store(false) }
}

// CheckRowWork applies the row-work rule (above) to an admitted query
// text with its bind values: a text whose calls and operators may
// process more than RowWorkBudget(limits.Timeout) bytes in one row → a
// *driver.QueryLimitError with driver.BoundRewrite and Limit the budget
// in bytes (CodeQueryLimit, AQ-6), before any engine sees it. Linear in
// the text per pass; a pass per level of derived tables whose values grow.
func CheckRowWork(sql string, args []any, limits driver.QueryLimits) error {
	toks, err := Tokenize(sql)
	if err != nil {
		return err
	}
	return checkRowWork(newSigText(sql, toks, args), limits)
}

// checkRowWork is CheckRowWork over a text's token view.
func checkRowWork(v *sigText, limits driver.QueryLimits) error {
	if rowWorkOff.Load() {
		return nil
	}
	work, _ := rowWorkPasses(v)
	if budget := RowWorkBudget(limits.Timeout); work > budget {
		return driver.NewQueryLimitError(driver.BoundRewrite, budget, nil,
			fmt.Sprintf("authoritative query text (its calls and operators may process %s in one row, over the %s its Timeout allows; %s)",
				mib(work), mib(budget), timeoutFor(work)))
	}
	return nil
}

// timeoutFor says which Timeout would admit a text of work bytes.
func timeoutFor(work int64) string {
	if work > RowWorkBudget(driver.MaxQueryTimeout) {
		return "no Timeout admits it: fewer calls, or calls over bind values"
	}
	ms := (work*1000 + RowWorkBytesPerSecond - 1) / RowWorkBytesPerSecond
	return fmt.Sprintf("a Timeout of %v would admit it", time.Duration(ms)*time.Millisecond)
}

func mib(n int64) string {
	if n >= rowWorkCap {
		return "more than 1 EiB"
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}

// RowWork is the row work of sql (toks its tokens) with bind values
// args, in bytes (see CheckRowWork); saturates at 2^60.
func RowWork(sql string, toks []Token, args []any) int64 {
	work, _ := rowWorkPasses(newSigText(sql, toks, args))
	return work
}

// rowWorkPasses prices v until what each scope reads stops changing (a
// pass per level of derived tables whose values grow; at most
// MaxQueryDepth+2) and returns the work and the number of passes.
func rowWorkPasses(v *sigText) (work int64, passes int) {
	prev := map[int]scopeReads{}
	for passes = 1; ; passes++ {
		r := &rowWork{v: v, prev: prev, cur: map[int]scopeReads{}, cte: map[string]int64{},
			cteWork: map[string]map[string]int64{}, cols: map[int]map[string]int64{}}
		r.level(0, len(v.sig), -1, false, 0, nil)
		if passes == MaxQueryDepth+2 || sameSizes(prev, r.cur) {
			return r.work, passes
		}
		prev = r.cur
	}
}

// scopeReads is what a scope's FROM reads: the largest result value of
// its derived tables and CTEs, and whether it reads a declared table.
type scopeReads struct {
	derived int64
	table   bool
	// work: the work of each result column's expression of those derived
	// tables and CTEs, by name — an engine that flattens or pushes a
	// derived table into the query around it (SQLite's push-down, D1's
	// flattener) evaluates it again at each reference.
	work map[string]int64
}

// col is the size a column reference of the scope stands for. A scope
// not seen yet (the first pass) may read a table.
func (s scopeReads) col(seen bool) int64 {
	if s.table || !seen {
		return max(s.derived, RowWorkColumnBytes)
	}
	return s.derived
}

func sameSizes(a, b map[int]scopeReads) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.derived != y.derived || x.table != y.table || !maps.Equal(x.work, y.work) {
			return false
		}
	}
	return true
}

// mergeWork keeps, in *dst, the larger work of each name of src.
func mergeWork(dst *map[string]int64, src map[string]int64) {
	for name, w := range src {
		if *dst == nil {
			*dst = map[string]int64{}
		}
		(*dst)[name] = max((*dst)[name], w)
	}
}

// rowWork is one pass of the rule over a text.
type rowWork struct {
	v    *sigText
	work int64
	// prev and cur: what each scope (by the index of its "(", -1 for the
	// statement) reads, in the pass before and in this one.
	prev, cur map[int]scopeReads
	cte       map[string]int64            // each CTE's largest result value, this pass
	cteWork   map[string]map[string]int64 // each CTE's result columns' work, this pass
	// cols: each scope's result aliases (by its "(") and their work, this
	// pass, for the scope around it to read.
	cols map[int]map[string]int64
}

const regionWith = regionFrom + 1

// level prices the tokens [from, to) at one parenthesis level and returns
// the value they carry out: for a scope (scope ≥ -1: the index of its
// "(", the statement's -1) the largest result column; else the sum of
// what its items carry (a call's arguments). scope < -1: not a scope.
// col is the size a column reference stands for: a scope's own (what its
// FROM reads) but at least col as given, which is the enclosing scope's
// for a sub-query that may read the enclosing row (correlated), else 0.
// aliases maps the result aliases of the scope (or, for a level that is
// not a scope, of its scope) to the work of their expressions: an engine
// evaluates the expression again where the alias is referenced.
func (r *rowWork) level(from, to, scope int, window bool, col int64, aliases map[string]int64) (out int64) {
	v := r.v
	isScope := scope >= -1
	if isScope {
		reads, seen := r.prev[scope]
		col = max(col, reads.col(seen))
		if _, ok := r.cur[scope]; !ok {
			r.cur[scope] = scopeReads{} // seen, whatever it reads
		}
		aliases = maps.Clone(reads.work) // the columns of its derived tables
		if aliases == nil {
			aliases = map[string]int64{}
		}
		r.cols[scope] = aliases
	}
	readsDerived := func(n int64, work map[string]int64) {
		c := r.cur[scope]
		c.derived = max(c.derived, n)
		mergeWork(&c.work, work)
		r.cur[scope] = c
	}
	readsTable := func() {
		c := r.cur[scope]
		c.table = true
		r.cur[scope] = c
	}
	region := regionOther
	fromCond := false   // after ON, in FROM
	var item int64      // the current result column's value
	itemStart := r.work // the work before the current result column
	var sum int64       // the current chain's operands
	inChain, pendingOp, consumed := false, false, false
	// segStart is the work before the current operand of AND, OR, NOT,
	// a comma or a CASE keyword: BETWEEN's left operand is evaluated
	// twice (PostgreSQL copies it into x >= a AND x <= b).
	segStart := r.work
	type caseFrame struct {
		operand, whens int64
		inOperand      bool
		segStart       int64
		start, opWork  int64 // the work before CASE; its operand's work
		kinds          map[string]bool
	}
	var cases []caseFrame
	consumesAt := func(k int) bool {
		if k >= to {
			return false
		}
		switch v.sig[k].Kind {
		case TokOp:
			switch v.text(k) {
			case "(", ")", ",", ".", "||", "->", "->>":
				return false
			}
			return true
		case TokWord:
			return consumingKeywords[v.lower(k)]
		}
		return false
	}
	// opFactor: how many times the operand ending before k is read when
	// k is IN followed by a list (a comparison per halving) or a pattern
	// operator (patternFactor of the pattern's bytes).
	opFactor := func(k int) int64 {
		if v.lower(k) == "not" {
			k++
		}
		switch w := v.lower(k); {
		case w == "in" && v.isOp(k+1, "(") && !queryStart(v.lower(k+2)):
			return 1 + int64(bits.Len(uint(len(v.commas[k+1])+1)))
		case patternOps[w] && v.sig[k].Kind == TokWord:
			return patternFactor(r.patternBytes(k+1, to))
		}
		return 1
	}
	// finish ends the chain before token k.
	finish := func(k int) {
		if inChain {
			switch {
			case len(cases) > 0 && cases[len(cases)-1].inOperand:
				cases[len(cases)-1].operand = sum
			case consumed || consumesAt(k):
				r.work = rwAdd(r.work, rwMul(sum, opFactor(k)))
			case !isScope:
				out = rwAdd(out, sum)
			case region == regionResult:
				item = rwAdd(item, sum)
			case region == regionOther || (region == regionFrom && fromCond):
				r.work = rwAdd(r.work, sum)
			}
		}
		sum, inChain, pendingOp = 0, false, false
		consumed = consumesAt(k)
	}
	// operand adds a value to the chain; after ||, -> or ->> the
	// operator copies what the chain holds so far.
	operand := func(size int64) {
		sum, inChain = rwAdd(sum, min(size, rowWorkMaxValue)), true
		if pendingOp {
			r.work, pendingOp = rwAdd(r.work, sum), false
		}
	}
	endItem := func() {
		out = max(out, item)
		item, itemStart = 0, r.work
	}
	alias := func(name string) {
		aliases[name] = max(aliases[name], r.work-itemStart)
	}
	skipName := false // the word after AS: an alias or a type
	for i := from; i < to; i++ {
		tk := v.sig[i]
		w := v.lower(i)
		switch tk.Kind {
		case TokOp:
			switch t := v.text(i); t {
			case "(":
				j := v.match[i]
				if j <= i {
					j = to
				}
				inFrom := isScope && region == regionFrom && !fromCond
				switch {
				case queryStart(v.lower(i + 1)):
					inherit := col // a sub-query may read the enclosing row
					if isScope && (region == regionWith || (inFrom && v.lower(i-1) != "lateral")) {
						inherit = 0
					}
					val := r.level(i+1, j, i, false, inherit, nil)
					switch {
					case isScope && region == regionWith: // a CTE body
						if name := cteName(v, i); name != "" {
							r.cte[name] = max(r.cte[name], val)
							w := r.cteWork[name]
							mergeWork(&w, r.cols[i])
							r.cteWork[name] = w
						}
					case inFrom: // a derived table
						readsDerived(val, r.cols[i])
					default:
						operand(val)
					}
				case isScope && region == regionWith:
					// a CTE's column list
				case isCall(v, i-1):
					name := v.lower(i - 1)
					before := r.work
					inner := r.level(i+1, j, -2, window, col, aliases)
					switch args := r.work - before; name {
					case "nullif": // MariaDB evaluates the first argument twice
						r.work = rwAdd(r.work, args)
					case "json_each": // PostgreSQL's rewrite repeats the argument 4 times
						r.work = rwAdd(r.work, rwMul(args, 3))
					}
					if inFrom {
						readsTable() // a table-valued function: its rows are values of any size
					}
					wgt, numeric := v.callWeight(name, i)
					f := int64(1)
					if k, ok := patternCalls[name]; ok {
						f = patternFactor(r.argBytes(i, k))
					}
					val := rwMul(inner, wgt)
					if n, ok := v.numArg(i, 2); ok && (name == "substr" || name == "substring") {
						val = min(val, 4*max(0, min(n, rowWorkCap/8))+8) // n characters of UTF-8
					}
					if n, ok := builtBytes(v, name, i, inner); ok {
						val = max(val, n)
					}
					switch {
					case numeric:
						r.work = rwAdd(r.work, rwMul(inner, f))
						val = 8
					case rowAggregates[name]:
						r.work = rwAdd(r.work, rwMul(inner, f))
					default:
						r.work = rwAdd(r.work, rwMul(max(inner, val), f))
					}
					operand(val)
				case v.lower(i-1) == "over" && v.sig[i-1].Kind == TokWord:
					// A window's PARTITION BY and ORDER BY compare their values.
					r.work = rwAdd(r.work, r.level(i+1, j, -2, true, col, aliases))
				case inFrom:
					// A parenthesized table or join: read as a table.
					readsTable()
					r.level(i+1, j, -2, window, col, aliases)
				default:
					operand(r.level(i+1, j, -2, window, col, aliases))
				}
				skipName = false
				i = j
			case "||", "->", "->>":
				pendingOp = true
			case ".":
			case "*":
				switch p := v.lower(i - 1); {
				case p == "(": // count(*)
					operand(8)
					continue
				case p == "select" || p == "distinct" || p == "all" || p == "," || p == ".":
					operand(col)
					continue
				}
				finish(i)
			case ",":
				finish(i)
				segStart = r.work
				if isScope && region == regionResult {
					endItem()
				}
				if region == regionFrom {
					fromCond = false
				}
			default:
				finish(i)
			}
		case TokParam:
			n := int64(8)
			if a, ok := v.bound(i); ok {
				n = max(n, int64(argBytes(a)))
			}
			operand(n)
		case TokString:
			operand(int64(max(8, tk.End-tk.Start)))
		case TokBlob:
			operand(int64(max(8, (tk.End-tk.Start-3)/2)))
		case TokNumber:
			operand(8)
		case TokWord, TokQuotedID:
			if v.isOp(i+1, ".") || (v.isOp(i+1, "(") && isCall(v, i)) {
				continue
			}
			keyword := tk.Kind == TokWord && (growthKeywords[w] || rowWorkKeywords[w] || (w == "with" && i == from) ||
				(growthContextWords[w] && (window || v.endsValue(i-1) ||
					(w == "by" && (v.lower(i-1) == "group" || v.lower(i-1) == "order" || v.lower(i-1) == "partition")))))
			if isScope && region == regionFrom && tk.Kind == TokWord && joinWords[w] {
				fromCond = false
				continue
			}
			if !keyword {
				if skipName || (isScope && (region == regionWith || (region == regionFrom && !fromCond))) {
					if skipName && isScope && region == regionResult {
						alias(w)
					}
					skipName = false
					if p := v.lower(i - 1); isScope && region == regionFrom && !fromCond && (p == "from" || p == "join" || p == ",") {
						if n, ok := r.cte[w]; ok {
							readsDerived(n, r.cteWork[w])
						} else {
							readsTable()
						}
					}
					continue
				}
				if isScope && region == regionResult && v.endsValue(i-1) && !v.isOp(i-1, ".") {
					finish(i)
					alias(w) // an alias without AS
					continue
				}
				if n, ok := aliases[w]; ok && !v.isOp(i-1, ".") {
					r.work = rwAdd(r.work, n) // the alias's expression again
				}
				operand(col)
				continue
			}
			switch w {
			case "null", "current_date", "current_time", "current_timestamp":
				operand(8)
				continue
			case "collate":
				skipName = true // the chain goes on
				continue
			}
			pre := r.work - segStart // the work of the operand ending here
			infix := w == "not" && v.endsValue(i-1)
			finish(i)
			switch {
			case w == "between":
				// Evaluated twice (x >= a AND x <= b), SYMMETRIC four times.
				extra := r.work - segStart
				if v.lower(i+1) == "symmetric" {
					extra = rwMul(extra, 3)
				}
				r.work = rwAdd(r.work, extra)
			case w == "in" && v.lower(i-1) != "not", infix && v.lower(i+1) == "in":
				k := i
				if w == "not" {
					k++
				}
				if n := inCopies(v, k); n > 1 {
					r.work = rwAdd(r.work, rwMul(pre, n-1))
				}
			}
			skipName = w == "as"
			switch w {
			case "case":
				cases = append(cases, caseFrame{inOperand: v.lower(i+1) != "when", segStart: segStart,
					start: r.work, kinds: map[string]bool{}})
			case "when":
				if n := len(cases); n > 0 {
					c := &cases[n-1]
					if c.inOperand {
						c.opWork = r.work - c.start
					}
					c.inOperand = false
					c.whens++
					c.kinds[constKind(v, i+1, v.lower(i+2) == "then", c.whens)] = true
				}
			case "end":
				if n := len(cases); n > 0 {
					c := cases[n-1]
					r.work = rwAdd(r.work, rwMul(c.operand, c.whens))
					// MariaDB compares a simple CASE's value once per type
					// of its WHEN values, evaluating it each time.
					if c.opWork > 0 && len(c.kinds) > 1 {
						r.work = rwAdd(r.work, rwMul(c.opWork, int64(len(c.kinds)-1)))
					}
					cases = cases[:n-1]
					segStart = c.segStart // CASE … END is one operand
					continue
				}
			}
			switch w {
			case "and", "or", "case", "when", "then", "else", "on", "select", "where", "having", "from",
				"group", "order", "by", "limit", "values", "union", "intersect", "except":
				segStart = r.work
			case "not":
				if !infix { // NOT x, not x NOT IN/LIKE/BETWEEN
					segStart = r.work
				}
			}
			if !isScope {
				continue
			}
			switch w {
			case "with":
				region = regionWith
			case "select", "values":
				if region == regionResult {
					endItem()
				}
				region = regionResult
				itemStart = r.work
			case "from":
				if region == regionResult {
					endItem()
				}
				region, fromCond = regionFrom, false
			case "where", "group", "having", "window", "order", "limit", "union", "intersect", "except":
				if region == regionResult {
					endItem()
				}
				region = regionOther
			case "on":
				fromCond = true
			case "join":
				fromCond = false
			}
		}
	}
	finish(to)
	if isScope && region == regionResult {
		endItem()
	}
	for _, c := range cases { // unbalanced CASE: the engine refuses it
		r.work = rwAdd(r.work, rwMul(c.operand, c.whens))
	}
	return out
}

// inCopies is how many times an engine may evaluate the left operand of
// the IN at token k: once per item when the left operand is a row value
// or an item is not a single literal or bind value (PostgreSQL turns such
// a list into x = a OR x = b …), else once per type among the items
// (MariaDB compares once per type); 1 for IN (sub-query).
func inCopies(v *sigText, k int) int64 {
	open := k + 1
	if !v.isOp(open, "(") || queryStart(v.lower(open+1)) {
		return 1
	}
	closeAt := v.match[open]
	cs := v.commas[open]
	n := int64(len(cs) + 1)
	left := k - 1
	if v.lower(left) == "not" {
		left--
	}
	if v.isOp(left, ")") && len(v.commas[v.back[left]]) > 0 {
		return n // a row value
	}
	kinds := map[string]bool{}
	from := open + 1
	for idx := 0; idx <= len(cs); idx++ {
		to := closeAt
		if idx < len(cs) {
			to = cs[idx]
		}
		if to-from != 1 {
			return n
		}
		kind := constKind(v, from, true, 0)
		if kind == "" {
			return n
		}
		kinds[kind] = true
		from = to + 1
	}
	return int64(len(kinds))
}

// constKind is the type of the literal, bind value or date keyword at
// token i when single (it is the whole operand), "" for a column or any
// other operand; for a CASE's WHEN values, another operand is a kind of
// its own (nth).
func constKind(v *sigText, i int, single bool, nth int64) string {
	other := ""
	if nth > 0 {
		other = fmt.Sprintf("expr%d", nth)
	}
	if !single || i >= len(v.sig) {
		return other
	}
	switch tk := v.sig[i]; tk.Kind {
	case TokString:
		return "text"
	case TokNumber:
		if strings.ContainsAny(v.text(i), ".eE") {
			return "real"
		}
		return "integer"
	case TokBlob:
		return "blob"
	case TokParam:
		a, _ := v.bound(i)
		switch a.(type) {
		case string, driver.JSON:
			return "text"
		case int64, bool:
			return "integer"
		case float64:
			return "real"
		case []byte:
			return "blob"
		}
		return "null"
	case TokWord:
		switch w := v.lower(i); w {
		case "null", "true", "false", "current_date", "current_time", "current_timestamp":
			return w
		}
	}
	return other
}

// queryStart: a parenthesis opening with w holds a query.
func queryStart(w string) bool { return w == "select" || w == "with" || w == "values" }

// isCall: the name at i, followed by "(", is a function's.
func isCall(v *sigText, i int) bool {
	if !v.isName(i) || !v.isOp(i+1, "(") {
		return false
	}
	if v.sig[i].Kind == TokQuotedID {
		return true
	}
	w := v.lower(i)
	if growthKeywords[w] || rowWorkKeywords[w] {
		return false
	}
	// like(…), glob(…) as functions; x LIKE (…) as the operator.
	return !(growthContextWords[w] && v.endsValue(i-1))
}

// cteName is the name of the CTE whose body opens at i: name
// [(columns)] AS [NOT] [MATERIALIZED] (.
func cteName(v *sigText, i int) string {
	j := i - 1
	if v.lower(j) == "materialized" {
		j--
	}
	if v.lower(j) == "not" {
		j--
	}
	if v.lower(j) != "as" {
		return ""
	}
	j--
	if v.isOp(j, ")") {
		j = v.back[j] - 1
	}
	if !v.isName(j) {
		return ""
	}
	return v.lower(j)
}

// builtBytes is the size of the value a call that builds from a size
// argument (repeat, zeroblob, randomblob, space, lpad, rpad, printf and
// format widths) may return, and whether name is such a call: its size
// argument × its input when a literal or bound integer, else
// rowWorkMaxValue. CheckGrowth weighs such a call at most
// MaxQueryGrowth+1, and not at all when it reads no column; the engines
// bound what it builds only by their largest value.
func builtBytes(v *sigText, name string, open int, inner int64) (int64, bool) {
	size := func(k int, unit int64) int64 {
		if n, ok := v.numArg(open, k); ok {
			return rwMul(max(0, n), unit)
		}
		return rowWorkMaxValue
	}
	switch name {
	case "repeat":
		return size(1, max(1, inner)), true
	case "zeroblob", "randomblob", "space":
		return size(0, 1), true
	case "lpad", "rpad":
		return size(1, 4), true
	case "printf", "format":
		f, ok := v.strArg(open, 0)
		if !ok || strings.Contains(f, "*") {
			return rowWorkMaxValue, true
		}
		// Every run of digits in the format may be a width or precision.
		var n, total int64
		for i := 0; i <= len(f); i++ {
			if i < len(f) && f[i] >= '0' && f[i] <= '9' {
				n = min(n*10+int64(f[i]-'0'), rowWorkMaxValue)
				continue
			}
			total, n = rwAdd(total, n), 0
		}
		return rwAdd(total, inner), true
	}
	return 0, false
}

// patternBytes is the size of the pattern starting at token i (before
// to): literals and bind values joined by || (CheckSearchPatterns admits
// nothing else), any of them parenthesized; MaxSearchPatternBytes if
// anything else is part of it.
func (r *rowWork) patternBytes(i, to int) int64 {
	n, _, ok := r.pattern(i, to)
	if !ok {
		return MaxSearchPatternBytes
	}
	return n
}

// pattern reads a pattern operand from token i: its bytes, the index
// after it, and false if anything but literals, bind values, || and
// parentheses is part of it.
func (r *rowWork) pattern(i, to int) (n int64, next int, ok bool) {
	v := r.v
	for i < to {
		if v.isOp(i, "(") {
			j := v.match[i]
			if j <= i || j >= to {
				return 0, i, false
			}
			m, end, ok := r.pattern(i+1, j)
			if !ok || end != j {
				return 0, i, false
			}
			n, i = n+m, j+1
		} else {
			switch tk := v.sig[i]; tk.Kind {
			case TokString, TokNumber, TokBlob:
				n += int64(tk.End - tk.Start)
			case TokParam:
				a, _ := v.bound(i)
				n += int64(argBytes(a))
			default:
				return 0, i, false
			}
			i++
		}
		if !v.isOp(i, "||") {
			return n, i, true
		}
		i++
	}
	return n, i, true
}

// argBytes is the size of argument k of the call whose "(" is at open,
// read as a pattern (patternBytes); 1 when the call has no such argument
// (trim's default set is a space).
func (r *rowWork) argBytes(open, k int) int64 {
	cs := r.v.commas[open]
	if k > len(cs) {
		return 1 // trim(x): the default set, a space
	}
	from, to := open+1, r.v.match[open]
	if k > 0 {
		from = cs[k-1] + 1
	}
	if k < len(cs) {
		to = cs[k]
	}
	return r.patternBytes(from, to)
}
