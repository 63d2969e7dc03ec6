package querylang

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// This file is the static cost rule of authoritative queries (AQ-6): a
// bound on how many times a value can grow on its way through a query,
// checked on the text before any engine sees it. Nested derived tables
// that each double a string (`SELECT x||x AS x FROM (SELECT x||x AS x FROM
// (…))`), one replace() per level, or a chain of CTEs each reading the
// previous grow a value exponentially in a few hundred bytes of text;
// engines stop such a build late (PostgreSQL, D1) or not at all (MariaDB
// threads left running after KILL).
//
// The measure, per SELECT scope (the statement, a derived table, a
// sub-query, a CTE body):
//
//   - weight of a column reference: the product of the weights of the
//     calls it is an argument of, inside its scope — replace(a, 'p', 'r') with string literals p and r weighs
//     ⌈len(r)/len(p)⌉ (at least 1); repeat(a, n) with a literal n weighs n;
//     regexp_replace(a, p, 'r') with no \ & $ in r weighs len(r)+1;
//     printf/format with a literal format weighs its number of conversions
//     if one is positional (%1$s), else 1, doubled by an escaping one (%q
//     %Q %w %I %L); hex, quote, quote_literal/ident/nullable weigh 2; JSON
//     builders (json_array, json_object, json_set, json_build_*, to_json,
//     …) weigh 6; an aggregate that concatenates rows (group_concat,
//     string_agg, json_group_array, …) and any of replace, regexp_replace,
//     repeat, printf/format, lpad/rpad, zeroblob/randomblob/space whose
//     size arguments are not literals weighs MaxQueryGrowth; any other call 1.
//   - growth g of a select core: the largest sum of weights of the
//     references to one column name in its result columns or VALUES rows
//     (`*` adds 1 to every name; a name that is also a table or alias of
//     the core's FROM counts twice: a whole row as text quotes its fields);
//     a reference inside a call returning a number (length, count, sum,
//     instr, …) does not count. A word is a reference unless it is one of
//     growthKeywords, or one of growthContextWords where it is a keyword.
//   - input I of a scope: the sum of the products of the derived tables,
//     CTE references and sub-queries in its FROM clause, result columns
//     and VALUES rows (at least 1); ARRAY(sub-query) multiplies its
//     product by MaxQueryGrowth; a CTE name defined in several WITH
//     scopes has the largest of their products.
//   - product P of a scope: max(1, largest g of its cores) × I; its work:
//     the largest weight of a column reference in it × I. A value built
//     from literals and parameters alone (printf('%.*c', n, 'x'),
//     repeat('x', n)) is left to the run-time bounds and to each driver's
//     own refusals.
//
// A query is refused when a scope's product or work exceeds
// MaxQueryGrowth, or when the core of a recursive CTE that reads the CTE
// itself has a growth above 1, counting the references of its result
// sub-queries with its own, or a result sub-query whose product is above
// 1 (each step would multiply the value). One
// pass over the tokens: linear in the text.

// MaxQueryGrowth bounds the static growth of a value through a query
// (AQ-6): the product, over the nested SELECTs and CTEs a value passes
// through, of how many times each can multiply it. 2^10: ten doublings,
// three tenfold replace() levels.
const MaxQueryGrowth = 1024

// growthScope is the state of one SELECT scope being scanned.
type growthScope struct {
	cte      string // the CTE this scope is the body of ("" if none)
	self     string // the nearest enclosing CTE body's name (recursive reads)
	region   int    // where the scanner is in the current core
	names    map[string]int64
	refs     map[string]int64 // every reference of a name in the result columns
	stars    int64
	reads    bool // the current core reads the CTE being defined
	g, work  int64
	c        int64 // largest refs of one name over the cores
	in       int64
	cin      int64            // copies: like in, for c
	parent   int              // index of the enclosing scope frame; -1 for the statement
	inRegion int              // the parent's region when this scope opened
	gather   bool             // ARRAY(sub-query): gathers its rows like array_agg
	from     map[string]bool  // table names and aliases of the current core's FROM
	sub      int64            // product of the products of the current core's result sub-queries
	subNames map[string]int64 // references by name inside those sub-queries
	kept     map[string]int64 // largest weight sum of each name over the cores
}

func newGrowthScope(parent, inRegion int, self string) *growthScope {
	return &growthScope{parent: parent, inRegion: inRegion, self: self, sub: 1,
		names: map[string]int64{}, refs: map[string]int64{}, from: map[string]bool{},
		subNames: map[string]int64{}, kept: map[string]int64{}}
}

const (
	regionOther = iota
	regionResult
	regionFrom
)

// growthFrame is one open parenthesis (or the statement itself).
type growthFrame struct {
	scope   int   // index into scopes of the nearest scope
	weight  int64 // product of call weights inside the scope
	numeric bool  // inside a call that returns a number
	isScope bool
	window  bool // inside OVER (…)
}

func satMul(a, b int64) int64 {
	if a > MaxQueryGrowth || b > MaxQueryGrowth || a*b > MaxQueryGrowth {
		if a == 0 || b == 0 {
			return 0
		}
		return MaxQueryGrowth + 1
	}
	return a * b
}

func satAdd(a, b int64) int64 { return min(a+b, MaxQueryGrowth+1) }

// growthKeywords are words that are never a column reference in SQLite
// (reserved words outside its parser's fallback-to-identifier list), nor
// in the other engines.
var growthKeywords = map[string]bool{
	"select": true, "distinct": true, "all": true, "case": true, "when": true, "then": true, "else": true,
	"and": true, "or": true, "not": true, "null": true, "is": true, "in": true, "between": true,
	"escape": true, "collate": true, "exists": true, "from": true, "where": true, "group": true,
	"having": true, "order": true, "limit": true, "union": true, "intersect": true, "except": true,
	"values": true, "as": true, "on": true, "join": true, "using": true, "window": true, "into": true,
	"isnull": true, "notnull": true, "current_date": true, "current_time": true, "current_timestamp": true,
}

// growthContextWords can name a column in SQLite (its parser falls back to
// an identifier) but are keywords after a value (x DESC, NULLS FIRST, END,
// x LIKE y, ) OVER, ) FILTER, double precision), after GROUP/ORDER/
// PARTITION (BY), and inside a window's OVER (…) (frame words). Anywhere
// else they are counted as column references.
var growthContextWords = map[string]bool{
	"end": true, "like": true, "glob": true, "regexp": true, "match": true, "asc": true, "desc": true,
	"nulls": true, "first": true, "last": true, "over": true, "filter": true, "partition": true,
	"by": true, "rows": true, "range": true, "groups": true, "row": true, "current": true,
	"unbounded": true, "preceding": true, "following": true, "exclude": true, "ties": true,
	"others": true, "no": true, "precision": true, "varying": true, "signed": true, "unsigned": true,
	"zone": true, "time": true, "with": true, "without": true,
}

// jsonEscapes build JSON text from their arguments: a control character
// becomes \uXXXX (×6).
var jsonEscapes = map[string]bool{
	"json_array": true, "json_object": true, "json_quote": true, "json_set": true, "json_insert": true,
	"json_replace": true, "json_array_append": true, "json_array_insert": true,
	"jsonb_array": true, "jsonb_object": true, "jsonb_set": true, "jsonb_insert": true, "jsonb_replace": true,
	"json_build_array": true, "json_build_object": true, "jsonb_build_array": true, "jsonb_build_object": true,
	"to_json": true, "to_jsonb": true, "row_to_json": true, "array_to_json": true,
}

// formatWeight weighs a literal printf/format string: each conversion may
// copy an argument (positional %1$s reuses one), and an escaping
// conversion (SQLite %q %Q %w, PostgreSQL %I %L) doubles quotes.
func formatWeight(f string) int64 {
	var convs, escapes int64
	positional := false
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("0123456789$-+ #,!.lh", f[j]) >= 0 {
			if f[j] == '$' {
				positional = true
			}
			j++
		}
		if j >= len(f) {
			break
		}
		i = j
		if f[j] == '%' {
			continue
		}
		convs++
		if strings.IndexByte("qQwIL", f[j]) >= 0 {
			escapes++
		}
	}
	w := int64(1)
	if positional {
		w = max(1, convs)
	}
	if escapes > 0 {
		w = satMul(w, 2)
	}
	return w
}

// numericCalls return a number whatever the size of their arguments.
var numericCalls = map[string]bool{
	"length": true, "octet_length": true, "char_length": true, "character_length": true, "bit_length": true,
	"count": true, "sum": true, "total": true, "avg": true, "instr": true, "position": true, "strpos": true,
	"locate": true, "unicode": true, "ascii": true, "abs": true, "sign": true, "round": true, "typeof": true,
	"json_array_length": true, "json_valid": true, "json_type": true,
}

// rowAggregates concatenate their argument over the rows of a group.
var rowAggregates = map[string]bool{
	"group_concat": true, "string_agg": true, "json_group_array": true, "json_group_object": true,
	"jsonb_group_array": true, "jsonb_group_object": true, "array_agg": true, "json_agg": true,
	"jsonb_agg": true, "json_object_agg": true, "jsonb_object_agg": true, "json_arrayagg": true,
	"json_objectagg": true, "listagg": true, "xmlagg": true,
}

// growthOff turns the static cost rule off in CheckQueryText, for the tests
// that prove an engine's run-time bounds hold on their own
// (DisableGrowthCheckForTest).
var growthOff atomic.Bool

// DisableGrowthCheckForTest turns the static cost rule off in
// CheckQueryText, process-wide, until the returned func is called. Only
// for tests proving that a driver's run-time bounds stop the shapes the
// rule refuses; never call it in a host.
func DisableGrowthCheckForTest() (restore func()) {
	growthOff.Store(true)
	return func() { growthOff.Store(false) }
}

func checkGrowth(sql string, toks []Token) error {
	if growthOff.Load() {
		return nil
	}
	return CheckGrowth(sql, toks)
}

// CheckGrowth applies the static cost rule to an admitted query text
// (see MaxQueryGrowth): a value that can grow more than MaxQueryGrowth
// times → a *driver.QueryLimitError with driver.BoundRewrite and Limit
// MaxQueryGrowth (CodeQueryLimit, AQ-6). toks are sql's tokens.
func CheckGrowth(sql string, toks []Token) error {
	v := newSigText(sql, toks, nil)
	sig, lower, isOp, isName := v.sig, v.lower, v.isOp, v.isName
	back, callWeight, endsValue := v.back, v.callWeight, v.endsValue
	cte := map[string]int64{}
	cteCopies := map[string]int64{}
	scopes := []*growthScope{newGrowthScope(-1, regionOther, "")}
	frames := []growthFrame{{scope: 0, weight: 1, isScope: true}}
	refuse := func(why string, v int64) error {
		if v > MaxQueryGrowth {
			return driver.NewQueryLimitError(driver.BoundRewrite, MaxQueryGrowth, nil,
				fmt.Sprintf("authoritative query text (%s over %d-fold)", why, MaxQueryGrowth))
		}
		return nil
	}
	finishCore := func(s *growthScope) error {
		var g int64
		for w, n := range s.names {
			if s.from[w] {
				n = satMul(n, 2) // a whole row as text quotes its fields
			}
			s.kept[w] = max(s.kept[w], n)
			g = max(g, n)
		}
		if g > 0 || s.stars > 0 {
			g = satAdd(g, s.stars)
		}
		if s.reads {
			rg := g
			for w, n := range s.subNames {
				rg = max(rg, satAdd(s.names[w], n))
			}
			if rg > 1 || s.sub > 1 {
				return driver.NewQueryLimitError(driver.BoundRewrite, MaxQueryGrowth, nil,
					"authoritative query text (a recursive CTE multiplies its own value at each step)")
			}
		}
		s.g = max(s.g, g)
		var c int64
		for _, n := range s.refs {
			c = max(c, n)
		}
		if c > 0 || s.stars > 0 {
			c = satAdd(c, s.stars)
		}
		s.c = max(s.c, c)
		clear(s.names)
		clear(s.refs)
		clear(s.from)
		clear(s.subNames)
		s.stars, s.reads, s.sub = 0, false, 1
		return nil
	}
	closeScope := func(si int) error {
		s := scopes[si]
		if err := finishCore(s); err != nil {
			return err
		}
		in := max(1, s.in)
		p := satMul(max(1, s.g), in)
		if err := refuse("a value can grow", p); err != nil {
			return err
		}
		if err := refuse("a value can be built", satMul(max(1, s.work), in)); err != nil {
			return err
		}
		pc := satMul(max(1, s.c), max(1, s.cin))
		if err := refuse("an expression can be copied", pc); err != nil {
			return err
		}
		if s.gather {
			p = satMul(p, MaxQueryGrowth)
		}
		switch {
		case s.cte != "":
			// A name defined again in an inner WITH: keep the largest.
			cte[s.cte], cteCopies[s.cte] = max(cte[s.cte], p), max(cteCopies[s.cte], pc)
		case s.parent >= 0 && s.inRegion != regionOther:
			ps := scopes[s.parent]
			ps.in = satAdd(ps.in, p)
			ps.cin = satAdd(ps.cin, pc)
			if s.inRegion == regionResult {
				ps.sub = satMul(ps.sub, p)
				for w, n := range s.kept {
					ps.subNames[w] = satAdd(ps.subNames[w], n)
				}
			}
		}
		return nil
	}

	for i := range sig {
		top := &frames[len(frames)-1]
		s := scopes[top.scope]
		atScope := top.isScope
		switch kind := sig[i].Kind; {
		case isOp(i, "("):
			next := lower(i + 1)
			if sig[min(i+1, len(sig)-1)].Kind == TokWord && (next == "select" || next == "with" || next == "values") {
				ns := newGrowthScope(top.scope, s.region, s.self)
				ns.gather = lower(i-1) == "array" && sig[i-1].Kind == TokWord
				// A CTE body: name [(columns)] AS [NOT] [MATERIALIZED] (
				j := i - 1
				if lower(j) == "materialized" {
					j--
				}
				if lower(j) == "not" {
					j--
				}
				if lower(j) == "as" && sig[j].Kind == TokWord {
					j--
					if isOp(j, ")") {
						j = back[j] - 1
					}
					if isName(j) {
						ns.cte, ns.self = lower(j), lower(j)
					}
				}
				scopes = append(scopes, ns)
				frames = append(frames, growthFrame{scope: len(scopes) - 1, weight: 1, isScope: true})
				continue
			}
			f := growthFrame{scope: top.scope, weight: top.weight, numeric: top.numeric,
				window: top.window || (lower(i-1) == "over" && sig[i-1].Kind == TokWord)}
			if isName(i-1) && sig[i-1].Kind == TokWord {
				w, num := callWeight(lower(i-1), i)
				f.weight, f.numeric = satMul(f.weight, w), f.numeric || num
			}
			frames = append(frames, f)
		case isOp(i, ")"):
			if len(frames) > 1 {
				frames = frames[:len(frames)-1]
				if top.isScope {
					if err := closeScope(top.scope); err != nil {
						return err
					}
				}
			}
		case kind == TokOp:
			if isOp(i, "*") && atScope && s.region == regionResult {
				switch p := lower(i - 1); p {
				case "select", "distinct", "all", ",", ".":
					s.stars = satAdd(s.stars, 1)
				}
			}
		case kind == TokWord || kind == TokQuotedID:
			w := lower(i)
			if kind == TokWord && atScope {
				switch w {
				case "select":
					if err := finishCore(s); err != nil {
						return err
					}
					s.region = regionResult
					continue
				case "from":
					s.region = regionFrom
					continue
				case "where", "group", "having", "window", "order", "limit":
					s.region = regionOther
					continue
				case "union", "intersect", "except":
					if err := finishCore(s); err != nil {
						return err
					}
					s.region = regionOther
					continue
				case "values": // its rows are the core's result
					if err := finishCore(s); err != nil {
						return err
					}
					s.region = regionResult
					continue
				}
			}
			if isOp(i+1, "(") || isOp(i+1, ".") {
				continue
			}
			if kind == TokWord {
				if growthKeywords[w] {
					continue
				}
				if growthContextWords[w] && (top.window || endsValue(i-1) ||
					(w == "by" && (lower(i-1) == "group" || lower(i-1) == "order" || lower(i-1) == "partition"))) {
					continue
				}
			}
			if atScope && s.region == regionFrom && !isOp(i-1, ".") {
				switch p := lower(i - 1); {
				case p == "from" || p == "join" || p == "," || p == ")" || p == "as",
					isName(i-1) && !growthKeywords[p]:
					s.from[w] = true
				}
			}
			if w == s.self {
				s.reads = true
			}
			if p, ok := cte[w]; ok && s.region == regionFrom && !isOp(i-1, ".") {
				s.in = satAdd(s.in, p)
				s.cin = satAdd(s.cin, cteCopies[w])
			}
			if lower(i-1) == "as" {
				continue // an alias
			}
			s.work = max(s.work, top.weight)
			if s.region == regionResult {
				s.refs[w] = satAdd(s.refs[w], 1)
				if !top.numeric {
					s.names[w] = satAdd(s.names[w], top.weight)
				}
			}
		}
		if s.work > MaxQueryGrowth {
			return refuse("a value can be built", s.work)
		}
	}
	for len(frames) > 1 { // unbalanced text: the engine refuses it
		f := frames[len(frames)-1]
		frames = frames[:len(frames)-1]
		if f.isScope {
			if err := closeScope(f.scope); err != nil {
				return err
			}
		}
	}
	return closeScope(0)
}
