package postgres

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// The text half of authoritative queries (AQ-1…AQ-3): a host's query in
// the portable SQLite-family dialect is checked by querylang's
// CheckQueryText (one SELECT or WITH … SELECT, ?/?N parameters only,
// no main./temp. qualifier) and then rewritten, token by token with the
// same tokenizer, into PostgreSQL:
//
//   - every declared table T becomes a CTE "T" prepended to the query,
//     reading the application columns of the store's "T" restricted to
//     the partition (a parameter the host cannot name); an unqualified
//     name resolves to a CTE before any table, so the host's "todos",
//     TODOS, [todos] and `todos` read the partition's rows only, and a
//     CTE of the host's named like a declared table is a duplicate name
//     (refused by the engine);
//   - comments become spaces; [x] and `x` become "x"; x'…' blobs become
//     bytea literals; hexadecimal integers become decimal;
//   - ?N becomes $k cast to the bound value's type ($k::int8, ::float8,
//     ::text, ::bytea, ::boolean), nil the literal NULL;
//   - json_each(X) becomes a LATERAL sub-query over jsonb, so it
//     yields (key, value) rows as in SQLite.
//
// Refused (CodeQueryInvalid) before anything is sent: a qualifier naming
// a schema (main, temp, public, information_schema, pg_*, the store's
// schema); any name starting with pg_ or _sync; a call of a function
// outside queryFunctions; the SQL functions that read session state
// without parentheses (current_user, user, current_setting, …); INTO;
// FOR (locking clauses); casts to object identifier types (regclass, …),
// their array types (_regclass, _oid) and aclitem;
// a string or quoted name glued to a word (E'…', U&"…": other lexical
// rules); and `::` (the tokenizer refuses it).
//
// The text rules are one layer. The engine enforces the rest: the query
// runs in a REPEATABLE READ READ ONLY transaction (nothing can be
// written), and its plan (EXPLAIN) may scan only the declared tables of
// the store's schema — the CTE bodies — with no other relation, no
// set-returning function but json_each's, and no row locks or writes
// (query.go).

// queryFunctions are the functions (and keywords written like calls) a
// query may use: those of SQLite's core set that PostgreSQL has with the
// same meaning, whose result depends only on their arguments.
var queryFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
		abs coalesce concat concat_ws instr length lower upper ltrim rtrim trim max min nullif replace round
		substr substring octet_length char_length character_length sign greatest least
		avg count sum string_agg bool_and bool_or every
		row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
		ceil ceiling floor exp ln log log10 mod power sqrt trunc
		json_each
		in exists as over filter on using cast any all some array row and or not select from where join
		by when then else case between like is distinct with recursive union intersect except lateral
		within group partition order having limit offset desc asc nulls values materialized`) {
		m[f] = true
	}
	return m
}()

// forbiddenWords read session state or write: refused wherever they
// appear (a column so named is a deliberate false positive).
var forbiddenWords = map[string]bool{
	"current_user": true, "session_user": true, "current_role": true, "user": true, "system_user": true,
	"current_schema": true, "current_catalog": true, "current_setting": true, "into": true,
	"for": true, // FOR UPDATE / FOR SHARE: SQLite has no locking clause
	// Object identifier types: a cast to them looks names up in the catalogs.
	"oid": true, "regclass": true, "regproc": true, "regprocedure": true, "regoper": true, "regoperator": true,
	"regtype": true, "regrole": true, "regnamespace": true, "regconfig": true, "regdictionary": true, "regcollation": true,
	"aclitem": true, // its input looks role names up: an oracle on roles
}

// fixedSchemas are the qualifiers always refused, besides pg_* and the
// store's schema.
var fixedSchemas = map[string]bool{"main": true, "temp": true, "public": true, "information_schema": true}

// piece is one rewritten token, its Text in PostgreSQL's dialect.
type piece = querylang.Piece

// pgQuery is a host query rewritten for PostgreSQL.
type pgQuery struct {
	sql  string // the statement, its partition parameter last
	args []any  // bind values, then the partition
}

func queryInvalid(format string, args ...any) error {
	return driver.Errorf(driver.CodeQueryInvalid, format, args...)
}

// rewriteQuery checks and rewrites text (already passed CheckQueryText,
// binding args by SQLite numbering) for the store's schema, with a CTE
// for each declared table (its application columns cols[t]). procs are
// the server's function names: a name after "." that is one of them,
// outside queryFunctions and not a column of a declared table, is refused
// — PostgreSQL reads t.f as the call f(t) (field notation), which would
// bypass the allow-list (t.quote_literal, t.to_json).
func rewriteQuery(text string, args []any, schema string, declared []string, cols map[string][]string, partition string,
	procs map[string]bool) (pgQuery, error) {
	toks, err := querylang.Tokenize(text)
	if err != nil {
		return pgQuery{}, err
	}
	columns := map[string]bool{}
	for _, t := range declared {
		for _, c := range cols[t] {
			columns[strings.ToLower(c)] = true
		}
	}
	var pieces []piece
	var pgArgs []any
	argNum := map[int]int{} // SQLite parameter number → $k
	last := 0
	for i, tk := range toks {
		s := text[tk.Start:tk.End]
		p := piece{Kind: tk.Kind, Text: s}
		switch tk.Kind {
		case querylang.TokSpace:
			p.Text = " "
		case querylang.TokWord:
			p.Name = strings.ToLower(s)
			if err := querylang.GluedWord(toks, i); err != nil {
				return pgQuery{}, err
			}
			if p.Name == "u" && i+2 < len(toks) && text[toks[i+1].Start:toks[i+1].End] == "&" &&
				(toks[i+2].Kind == querylang.TokString || toks[i+2].Kind == querylang.TokQuotedID) {
				// U&'…' and U&"…" are one token with escapes to PostgreSQL:
				// U&"\0070ublic" would name a schema the checks never saw.
				return pgQuery{}, queryInvalid("query glues U& to a quoted token at byte %d (AQ-1)", tk.Start)
			}
		case querylang.TokQuotedID:
			p.Name = querylang.UnquoteIdent(s)
			if strings.IndexByte(p.Name, 0) >= 0 || p.Name == "" {
				return pgQuery{}, queryInvalid("query has an empty quoted name at byte %d (AQ-1)", tk.Start)
			}
			p.Text = quote(p.Name)
			p.Name = strings.ToLower(p.Name)
		case querylang.TokBlob:
			p.Text = `'\x` + strings.ToLower(s[2:len(s)-1]) + `'::bytea`
		case querylang.TokString:
			p.Text = s + ` COLLATE "C"` // bytewise order and ASCII-only case folding, as SQLite (AQ-5)
		case querylang.TokNumber:
			if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
				v, err := strconv.ParseUint(s[2:], 16, 64)
				if err != nil {
					return pgQuery{}, queryInvalid("query has a hexadecimal number out of range at byte %d (AQ-1)", tk.Start)
				}
				// Parenthesized: a negative value after "-" must not make "--",
				// a comment to PostgreSQL (AQ-1).
				p.Text = "(" + strconv.FormatInt(int64(v), 10) + ")"
			} else if strings.ContainsAny(s, ".eE") {
				p.Text = "(" + s + "::float8)" // a REAL in SQLite, numeric in PostgreSQL (AQ-5)
			}
		case querylang.TokParam:
			var n int
			n, last = querylang.ParamNumber(s, last)
			v := args[n-1]
			if v == nil {
				p.Text = " NULL" // the space: never glued to a word before it
				break
			}
			k, ok := argNum[n]
			if !ok {
				pgArgs = append(pgArgs, v)
				k = len(pgArgs)
				argNum[n] = k
			}
			p.Text = " $" + strconv.Itoa(k) + "::" + pgTypeOf(v) // x? must not become the name x$1
			if p.Text[len(p.Text)-4:] == "text" {
				p.Text += ` COLLATE "C"`
			}
		case querylang.TokOp:
			if s != "." && s != "(" && s != ")" && s != "," {
				// PostgreSQL reads "%-" or "||-" as one operator; SQLite as two.
				p.Text = " " + s + " "
			}
			if s == "." && len(pieces) > 0 {
				prev := querylang.LastSignificant(pieces)
				if prev != nil && (prev.Kind == querylang.TokWord || prev.Kind == querylang.TokQuotedID || prev.Kind == querylang.TokString) &&
					(fixedSchemas[prev.Name] || prev.Kind == querylang.TokString || prev.Name == strings.ToLower(schema)) {
					return pgQuery{}, queryInvalid("query qualifies a name with a schema: tables are read by their names alone (AQ-2)")
				}
			}
		}
		if p.Name != "" && procs[p.Name] && !queryFunctions[p.Name] && !columns[p.Name] {
			if prev := querylang.LastSignificant(pieces); prev != nil && prev.Kind == querylang.TokOp && prev.Text == "." {
				return pgQuery{}, queryInvalid("query calls a function through field notation (x.f is f(x) to PostgreSQL) at byte %d (AQ-1)", tk.Start)
			}
		}
		if p.Name != "" {
			// "_regclass" is the array type of regclass: _oid → _regclass
			// turns numbers into catalog names.
			if strings.HasPrefix(p.Name, "pg_") || strings.HasPrefix(p.Name, "_sync") || forbiddenWords[p.Name] ||
				forbiddenWords[strings.TrimPrefix(p.Name, "_")] {
				return pgQuery{}, queryInvalid("query names a relation, function or column it may not (AQ-1, AQ-2)")
			}
		}
		pieces = append(pieces, p)
	}
	if err := querylang.CheckCalls(pieces, queryFunctions); err != nil {
		return pgQuery{}, err
	}
	if err := parity(pieces); err != nil {
		return pgQuery{}, err
	}
	if fenceQueries {
		pieces = fence(pieces)
	}

	pgArgs = append(pgArgs, partition)
	partParam := "$" + strconv.Itoa(len(pgArgs)) + "::text"
	ctes := make([]string, 0, len(declared))
	for _, t := range declared {
		qc := make([]string, len(cols[t]))
		for i, c := range cols[t] {
			qc[i] = quote(c)
		}
		ctes = append(ctes, quote(t)+" AS NOT MATERIALIZED (SELECT "+strings.Join(qc, ", ")+" FROM "+quote(schema)+"."+quote(t)+
			" WHERE "+quote(partitionColumn)+" = "+partParam+")")
	}
	return pgQuery{sql: querylang.PrependCTEs(pieces, strings.Join(ctes, ", "), join), args: pgArgs}, nil
}

// fenceQueries turns fence on; only a test turns it off, to show what
// the planner does without it.
var fenceQueries = true

// fence keeps PostgreSQL's planner from merging the host's sub-queries
// into the queries around them (AQ-6), and returns the pieces with the
// fences in: every parenthesized query (a derived table, a CTE body, a
// scalar sub-query, a member of a compound SELECT) that computes a result
// column (querylang.QueryBody.Computes) gets OFFSET 0, unless it already
// has LIMIT or OFFSET (which fence it alike), is the operand of EXISTS,
// IN, ANY, SOME or ALL (turned into a semi-join whose result expression
// is copied once), or is the body of a recursive CTE reading itself
// (never merged; PostgreSQL refuses OFFSET there); and every CTE's AS NOT
// MATERIALIZED becomes AS (a CTE read twice is then computed once).
//
// Why: the planner pulls a simple sub-query up into its parent by
// copying its result expressions into every place the parent names them,
// and inlines a CTE read once the same way, without checking for
// interrupts. Nested levels that each name the level below twice (x||x,
// abs(x)-abs(x)) copy 2^levels expressions, and one level naming a
// column n times of an expression of n terms copies n²: planning then
// outlives statement_timeout by minutes and grows the backend until the
// kernel or the allocator stops it. A query with OFFSET 0 is planned on
// its own and its result computed once per row, so planning is linear in
// the text, and the executor, which checks for interrupts between rows,
// ends the statement at statement_timeout. A sub-query that only renames
// columns of the level below (`SELECT id, title FROM todos WHERE …`)
// copies nothing when merged and is left to the planner: a condition of
// the outer query is still pushed into it (a fenced one is read whole:
// 20–30× slower on a 100,000-row partition; docs/authoritative-query.md,
// "What the engines cannot bound").
func fence(ps []piece) []piece {
	at := map[int]bool{} // the ")" pieces OFFSET 0 goes before
	for _, b := range querylang.QueryBodies(ps) {
		if b.NotMaterialized >= 0 {
			if m := querylang.FirstSignificant(ps, b.NotMaterialized+1); m >= 0 {
				ps[b.NotMaterialized] = piece{Kind: querylang.TokSpace, Text: " "}
				ps[m] = piece{Kind: querylang.TokSpace, Text: " "}
			}
		}
		if b.Computes && !b.Sublink && !b.Limited && !b.Recursive {
			at[b.Close] = true
		}
	}
	if len(at) == 0 {
		return ps
	}
	out := make([]piece, 0, len(ps)+len(at))
	for i, p := range ps {
		if at[i] {
			// A piece the walkers skip (as whitespace): json_each's
			// rendering still finds its parentheses.
			out = append(out, piece{Kind: querylang.TokSpace, Text: " OFFSET 0 "})
		}
		out = append(out, p)
	}
	return out
}

// join renders pieces, rewriting json_each(X) calls.
func join(ps []piece) string {
	var b strings.Builder
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		if p.Kind == querylang.TokWord && p.Name == "json_each" {
			if j := querylang.FirstSignificant(ps, i+1); j >= 0 && ps[j].Text == "(" {
				if end := querylang.Matching(ps, j); end >= 0 {
					a := "(" + join(ps[j+1:end]) + ")::jsonb"
					b.WriteString("LATERAL (SELECT to_jsonb(e.o - 1) AS key, e.v AS value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(" +
						a + ") = 'array' THEN " + a + " ELSE '[]'::jsonb END) WITH ORDINALITY AS e(v, o)" +
						" UNION ALL SELECT to_jsonb(e.key), e.value FROM jsonb_each(CASE WHEN jsonb_typeof(" + a + ") = 'object' THEN " + a +
						" ELSE '{}'::jsonb END) AS e)")
					i = end
					continue
				}
			}
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// pgTypeOf is the PostgreSQL type a bind value is cast to.
func pgTypeOf(v any) string {
	switch v.(type) {
	case int64:
		return "int8"
	case float64:
		return "float8"
	case []byte:
		return "bytea"
	case bool:
		return "boolean"
	}
	return "text"
}

// pgKeywords are words that cannot start an operand (sd.PrimaryEnd).
var pgKeywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`select from where group by having order limit offset as on using join inner left right
		full outer cross natural union all intersect except distinct and or not is in exists between like ilike escape
		when then else end with recursive over partition rows range groups window asc desc nulls first last glob`) {
		pgKeywords[w] = true
	}
}

func isPgKeyword(name string) bool { return pgKeywords[name] }

// parity rewrites, in place, the constructs whose meaning differs between
// SQLite and PostgreSQL so they return SQLite's rows (AQ-5), and refuses
// (CodeQueryInvalid) those it cannot delimit soundly:
//
//   - every ORDER BY term without NULLS FIRST/LAST gets SQLite's order:
//     NULLS FIRST ascending, NULLS LAST descending (PostgreSQL's is the
//     reverse);
//   - x / y and x % y become x / NULLIF(y, 0): SQLite's division by zero
//     is NULL, PostgreSQL's an error (the right operand must be delimited:
//     a primary, not followed by ||, -> or ->>, which bind differently);
//   - x LIKE y becomes x ILIKE y ESCAPE ” (ASCII case-insensitive under
//     the "C" collation every string carries; no escape character, as
//     SQLite), an explicit ESCAPE kept;
//   - instr(x, y) becomes strpos(x, y);
//   - round(x[, n]) becomes round(x::numeric[, n])::float8: half away
//     from zero on the decimal value, a REAL result, as SQLite;
//   - power, exp, ln, log, log10 and sqrt take each argument as float8
//     (SQLite computes them in REAL; PostgreSQL's numeric versions run
//     unbounded multiplications without checking for interrupts);
//   - CAST(x AS INTEGER|INT|BIGINT) becomes
//     CAST(trunc(CAST(CAST(x AS text) AS numeric)) AS int8) (SQLite
//     truncates; PostgreSQL rounds) and CAST(x AS REAL|FLOAT|DOUBLE)
//     CAST(x AS float8); a CAST to any other type but TEXT is refused.
func parity(ps []piece) error {
	// Insertions around pieces, applied at the end so every delimiting
	// walk sees the host's pieces.
	pre, post := make([]string, len(ps)), make([]string, len(ps))
	defer func() {
		for i := range ps {
			ps[i].Text = pre[i] + ps[i].Text + post[i]
		}
	}()
	for i := range ps {
		p := &ps[i]
		switch {
		case p.Kind == querylang.TokWord && p.Name == "order":
			by := querylang.FirstSignificant(ps, i+1)
			if by < 0 || ps[by].Name != "by" {
				continue
			}
			terms, ok := querylang.OrderTerms(ps, by)
			if !ok {
				return queryInvalid("query has an ORDER BY term the postgres driver cannot delimit (AQ-5)")
			}
			for _, t := range terms {
				switch {
				case t.Nulls:
				case t.Desc:
					post[t.Last] += " NULLS LAST"
				default:
					post[t.Last] += " NULLS FIRST"
				}
			}
		case p.Kind == querylang.TokOp && (p.Text == " / " || p.Text == " % "):
			start := querylang.FirstSignificant(ps, i+1)
			end := querylang.MulOperandEnd(ps, start, isPgKeyword)
			if end < 0 {
				return queryInvalid("query divides by an operand the postgres driver cannot delimit; parenthesize it (AQ-5)")
			}
			pre[start] = "NULLIF(" + pre[start]
			post[end] += ", 0)"
		case p.Kind == querylang.TokWord && p.Name == "like":
			p.Text = "ILIKE"
			end := likePatternEnd(ps, querylang.FirstSignificant(ps, i+1))
			if end < 0 {
				return queryInvalid("query has a LIKE pattern the postgres driver cannot delimit; parenthesize it (AQ-5)")
			}
			if k := querylang.FirstSignificant(ps, end+1); k < 0 || ps[k].Name != "escape" {
				post[end] += " ESCAPE ''"
			}
		case p.Kind == querylang.TokWord && p.Name == "instr" && isCall(ps, i):
			p.Text = "strpos"
		case p.Kind == querylang.TokWord && p.Name == "round" && isCall(ps, i):
			open := querylang.FirstSignificant(ps, i+1)
			end := querylang.Matching(ps, open)
			if end < 0 {
				return queryInvalid("query has an unbalanced call (AQ-1)")
			}
			comma := topComma(ps, open, end)
			post[open] += "("
			if comma > 0 {
				pre[comma] = ")::numeric" + pre[comma]
			} else {
				pre[end] = ")::numeric" + pre[end]
			}
			post[end] += "::float8"
		case p.Kind == querylang.TokWord && floatMath[p.Name] && isCall(ps, i):
			// Each argument as float8: SQLite's math functions compute in
			// REAL, and PostgreSQL's numeric versions (reached by sum() of
			// an int8 or avg()) multiply numbers of any digits without
			// checking for interrupts — power(x, 130000) over a fractional
			// numeric ran 0.53 s a call (AQ-5, AQ-6).
			open := querylang.FirstSignificant(ps, i+1)
			end := querylang.Matching(ps, open)
			if end < 0 {
				return queryInvalid("query has an unbalanced call (AQ-1)")
			}
			post[open] += "("
			for k := open + 1; k < end; k++ {
				if ps[k].Text == "," && querylang.DepthAt(ps, open+1, k) == 0 {
					pre[k] = ")::float8" + pre[k]
					post[k] += "("
				}
			}
			pre[end] = ")::float8" + pre[end]
		case p.Kind == querylang.TokWord && p.Name == "cast" && isCall(ps, i):
			open := querylang.FirstSignificant(ps, i+1)
			end := querylang.Matching(ps, open)
			as := -1
			for k := open + 1; end > 0 && k < end; k++ {
				if ps[k].Name == "as" && querylang.DepthAt(ps, open+1, k) == 0 {
					as = k
				}
			}
			ty := querylang.FirstSignificant(ps, as+1)
			if as < 0 || ty < 0 || querylang.FirstSignificant(ps, ty+1) != end {
				return queryInvalid("query has a CAST the postgres driver cannot read (AQ-5)")
			}
			switch ps[ty].Name {
			case "integer", "int", "bigint":
				post[open] += "trunc(CAST(CAST("
				pre[as] = "AS text) AS numeric)) " + pre[as]
				ps[ty].Text = "int8"
			case "real", "float", "double":
				ps[ty].Text = "float8"
			case "text":
			default:
				return queryInvalid("query casts to a type the postgres driver does not map (AQ-5)")
			}
		}
	}
	return nil
}

// floatMath are the math functions whose arguments parity casts to
// float8.
var floatMath = map[string]bool{"power": true, "exp": true, "ln": true, "log": true, "log10": true, "sqrt": true}

// isCall reports whether the word at i is followed by "(".
func isCall(ps []piece, i int) bool {
	n := querylang.FirstSignificant(ps, i+1)
	return n >= 0 && ps[n].Text == "("
}

// topComma returns the first "," at depth 0 between open and end, or -1.
func topComma(ps []piece, open, end int) int {
	for k := open + 1; k < end; k++ {
		if ps[k].Text == "," && querylang.DepthAt(ps, open+1, k) == 0 {
			return k
		}
	}
	return -1
}

// likePatternEnd returns the last piece of the LIKE pattern starting at
// start: operands (sd.MulOperandEnd's primaries with unary operators)
// joined by operators that bind tighter than LIKE in SQLite, or -1.
func likePatternEnd(ps []piece, start int) int {
	for start >= 0 {
		for start >= 0 && ps[start].Kind == querylang.TokOp && (ps[start].Text == " - " || ps[start].Text == " + " || ps[start].Text == " ~ ") {
			start = querylang.FirstSignificant(ps, start+1)
		}
		end := querylang.PrimaryEnd(ps, start, isPgKeyword)
		if end < 0 {
			return -1
		}
		op := querylang.FirstSignificant(ps, end+1)
		if op < 0 || ps[op].Kind != querylang.TokOp {
			return end
		}
		switch strings.TrimSpace(ps[op].Text) {
		case "||", "->", "->>", "*", "/", "%", "+", "-", "&", "|", "<<", ">>":
			start = querylang.FirstSignificant(ps, op+1)
		default:
			return end
		}
	}
	return -1
}
