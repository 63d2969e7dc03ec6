package postgres

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	sd "github.com/syncstore/syncstore/internal/sqlitedialect"
)

// The text half of authoritative queries (AQ-1…AQ-3): a host's query in
// the portable SQLite-family dialect is checked by sqlitedialect's
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
// FOR (locking clauses); casts to object identifier types (regclass, …);
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
		abs coalesce concat concat_ws length lower upper ltrim rtrim trim max min nullif replace round
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
}

// fixedSchemas are the qualifiers always refused, besides pg_* and the
// store's schema.
var fixedSchemas = map[string]bool{"main": true, "temp": true, "public": true, "information_schema": true}

// piece is one rewritten token.
type piece struct {
	kind sd.TokKind
	text string // PostgreSQL text
	name string // identifier spelled (words lower-cased), for checks
}

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
// for each declared table (its application columns cols[t]).
func rewriteQuery(text string, args []any, schema string, declared []string, cols map[string][]string, partition string) (pgQuery, error) {
	toks, err := sd.Tokenize(text)
	if err != nil {
		return pgQuery{}, err
	}
	var pieces []piece
	var pgArgs []any
	argNum := map[int]int{} // SQLite parameter number → $k
	last := 0
	for i, tk := range toks {
		s := text[tk.Start:tk.End]
		p := piece{kind: tk.Kind, text: s}
		switch tk.Kind {
		case sd.TokSpace:
			p.text = " "
		case sd.TokWord:
			p.name = strings.ToLower(s)
			if i+1 < len(toks) && (toks[i+1].Kind == sd.TokString || toks[i+1].Kind == sd.TokQuotedID) {
				return pgQuery{}, queryInvalid("query glues a word to a quoted token at byte %d (AQ-1)", tk.Start)
			}
		case sd.TokQuotedID:
			p.name = unquoteIdent(s)
			if strings.IndexByte(p.name, 0) >= 0 || p.name == "" {
				return pgQuery{}, queryInvalid("query has an empty quoted name at byte %d (AQ-1)", tk.Start)
			}
			p.text = quote(p.name)
			p.name = strings.ToLower(p.name)
		case sd.TokBlob:
			p.text = `'\x` + strings.ToLower(s[2:len(s)-1]) + `'::bytea`
		case sd.TokNumber:
			if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
				v, err := strconv.ParseUint(s[2:], 16, 64)
				if err != nil {
					return pgQuery{}, queryInvalid("query has a hexadecimal number out of range at byte %d (AQ-1)", tk.Start)
				}
				p.text = strconv.FormatInt(int64(v), 10)
			}
		case sd.TokParam:
			n := last + 1
			if len(s) > 1 {
				n, _ = strconv.Atoi(s[1:]) // CheckQueryText checked the range
			}
			last = max(last, n)
			v := args[n-1]
			if v == nil {
				p.text = "NULL"
				break
			}
			k, ok := argNum[n]
			if !ok {
				pgArgs = append(pgArgs, v)
				k = len(pgArgs)
				argNum[n] = k
			}
			p.text = "$" + strconv.Itoa(k) + "::" + pgTypeOf(v)
		case sd.TokOp:
			if s == "." && len(pieces) > 0 {
				prev := lastSignificant(pieces)
				if prev != nil && (prev.kind == sd.TokWord || prev.kind == sd.TokQuotedID || prev.kind == sd.TokString) &&
					(fixedSchemas[prev.name] || prev.kind == sd.TokString || prev.name == strings.ToLower(schema)) {
					return pgQuery{}, queryInvalid("query qualifies a name with a schema: tables are read by their names alone (AQ-2)")
				}
			}
		}
		if p.name != "" {
			if strings.HasPrefix(p.name, "pg_") || strings.HasPrefix(p.name, "_sync") || forbiddenWords[p.name] {
				return pgQuery{}, queryInvalid("query names a relation, function or column it may not (AQ-1, AQ-2)")
			}
		}
		pieces = append(pieces, p)
	}
	if err := checkCalls(pieces); err != nil {
		return pgQuery{}, err
	}
	body := strings.TrimSpace(join(pieces))

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
	prefix := strings.Join(ctes, ", ")
	// Merge with the host's WITH [RECURSIVE] list, if any.
	first := firstSignificant(pieces, 0)
	if pieces[first].name == "with" {
		rest := pieces[first+1:]
		kw := "WITH "
		if j := firstSignificant(rest, 0); j >= 0 && rest[j].name == "recursive" {
			kw, rest = "WITH RECURSIVE ", rest[j+1:]
		}
		body = kw + prefix + ", " + strings.TrimSpace(join(rest))
	} else {
		body = "WITH " + prefix + " " + body
	}
	return pgQuery{sql: body, args: pgArgs}, nil
}

// checkCalls refuses a call of a function outside queryFunctions: a word
// followed by "(" — unless it names a CTE's or an alias's column list
// (`n(x) AS (…)`, `AS j(a, b)`) — or a quoted name followed by "(".
func checkCalls(ps []piece) error {
	for i, p := range ps {
		if p.kind != sd.TokWord && p.kind != sd.TokQuotedID {
			continue
		}
		j := firstSignificant(ps, i+1)
		if j < 0 || ps[j].text != "(" {
			continue
		}
		if p.kind == sd.TokWord && queryFunctions[p.name] {
			continue
		}
		if prev := lastSignificant(ps[:i]); prev != nil && prev.name == "as" {
			continue // AS alias(columns)
		}
		if isCTEColumns(ps, i, j) {
			continue // WITH cte(columns) AS (…)
		}
		return queryInvalid("query calls a function it may not (AQ-1)")
	}
	return nil
}

// isCTEColumns reports whether the word at i, followed by "(" at open,
// starts a CTE with a column list: it follows WITH, RECURSIVE or a comma,
// and its ")" is followed by AS [NOT] [MATERIALIZED] "(". (A function
// with a column definition list after a comma in FROM looks alike; the
// plan check refuses its function scan.)
func isCTEColumns(ps []piece, i, open int) bool {
	prev := lastSignificant(ps[:i])
	if prev == nil || (prev.name != "with" && prev.name != "recursive" && prev.text != ",") {
		return false
	}
	end := matching(ps, open)
	if end < 0 {
		return false
	}
	k := firstSignificant(ps, end+1)
	if k < 0 || ps[k].name != "as" {
		return false
	}
	for k = firstSignificant(ps, k+1); k >= 0 && (ps[k].name == "not" || ps[k].name == "materialized"); k = firstSignificant(ps, k+1) {
	}
	return k >= 0 && ps[k].text == "("
}

// join renders pieces, rewriting json_each(X) calls.
func join(ps []piece) string {
	var b strings.Builder
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		if p.kind == sd.TokWord && p.name == "json_each" {
			if j := firstSignificant(ps, i+1); j >= 0 && ps[j].text == "(" {
				if end := matching(ps, j); end >= 0 {
					a := "(" + join(ps[j+1:end]) + ")::jsonb"
					b.WriteString("LATERAL (SELECT (e.o - 1)::text AS key, e.v AS value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(" +
						a + ") = 'array' THEN " + a + " ELSE '[]'::jsonb END) WITH ORDINALITY AS e(v, o)" +
						" UNION ALL SELECT e.key, e.value FROM jsonb_each(CASE WHEN jsonb_typeof(" + a + ") = 'object' THEN " + a +
						" ELSE '{}'::jsonb END) AS e)")
					i = end
					continue
				}
			}
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// matching returns the index of the ")" closing the "(" at open, or -1.
func matching(ps []piece, open int) int {
	depth := 0
	for i := open; i < len(ps); i++ {
		if ps[i].kind != sd.TokOp {
			continue
		}
		switch ps[i].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func firstSignificant(ps []piece, from int) int {
	for i := from; i < len(ps); i++ {
		if ps[i].kind != sd.TokSpace {
			return i
		}
	}
	return -1
}

func lastSignificant(ps []piece) *piece {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].kind != sd.TokSpace {
			return &ps[i]
		}
	}
	return nil
}

// unquoteIdent returns the name a quoted identifier ("x", [x], `x`) spells.
func unquoteIdent(s string) string {
	if len(s) < 2 {
		return s
	}
	switch q := s[0]; q {
	case '[':
		return s[1 : len(s)-1]
	case '"', '`':
		return strings.ReplaceAll(s[1:len(s)-1], string([]byte{q, q}), string(q))
	}
	return s
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
