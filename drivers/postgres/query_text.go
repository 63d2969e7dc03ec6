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

// piece is one rewritten token, its Text in PostgreSQL's dialect.
type piece = sd.Piece

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
		p := piece{Kind: tk.Kind, Text: s}
		switch tk.Kind {
		case sd.TokSpace:
			p.Text = " "
		case sd.TokWord:
			p.Name = strings.ToLower(s)
			if i+1 < len(toks) && (toks[i+1].Kind == sd.TokString || toks[i+1].Kind == sd.TokQuotedID) {
				return pgQuery{}, queryInvalid("query glues a word to a quoted token at byte %d (AQ-1)", tk.Start)
			}
		case sd.TokQuotedID:
			p.Name = sd.UnquoteIdent(s)
			if strings.IndexByte(p.Name, 0) >= 0 || p.Name == "" {
				return pgQuery{}, queryInvalid("query has an empty quoted name at byte %d (AQ-1)", tk.Start)
			}
			p.Text = quote(p.Name)
			p.Name = strings.ToLower(p.Name)
		case sd.TokBlob:
			p.Text = `'\x` + strings.ToLower(s[2:len(s)-1]) + `'::bytea`
		case sd.TokNumber:
			if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
				v, err := strconv.ParseUint(s[2:], 16, 64)
				if err != nil {
					return pgQuery{}, queryInvalid("query has a hexadecimal number out of range at byte %d (AQ-1)", tk.Start)
				}
				p.Text = strconv.FormatInt(int64(v), 10)
			}
		case sd.TokParam:
			n := last + 1
			if len(s) > 1 {
				n, _ = strconv.Atoi(s[1:]) // CheckQueryText checked the range
			}
			last = max(last, n)
			v := args[n-1]
			if v == nil {
				p.Text = "NULL"
				break
			}
			k, ok := argNum[n]
			if !ok {
				pgArgs = append(pgArgs, v)
				k = len(pgArgs)
				argNum[n] = k
			}
			p.Text = "$" + strconv.Itoa(k) + "::" + pgTypeOf(v)
		case sd.TokOp:
			if s == "." && len(pieces) > 0 {
				prev := sd.LastSignificant(pieces)
				if prev != nil && (prev.Kind == sd.TokWord || prev.Kind == sd.TokQuotedID || prev.Kind == sd.TokString) &&
					(fixedSchemas[prev.Name] || prev.Kind == sd.TokString || prev.Name == strings.ToLower(schema)) {
					return pgQuery{}, queryInvalid("query qualifies a name with a schema: tables are read by their names alone (AQ-2)")
				}
			}
		}
		if p.Name != "" {
			if strings.HasPrefix(p.Name, "pg_") || strings.HasPrefix(p.Name, "_sync") || forbiddenWords[p.Name] {
				return pgQuery{}, queryInvalid("query names a relation, function or column it may not (AQ-1, AQ-2)")
			}
		}
		pieces = append(pieces, p)
	}
	if err := sd.CheckCalls(pieces, queryFunctions); err != nil {
		return pgQuery{}, err
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
	return pgQuery{sql: sd.PrependCTEs(pieces, strings.Join(ctes, ", "), join), args: pgArgs}, nil
}

// join renders pieces, rewriting json_each(X) calls.
func join(ps []piece) string {
	var b strings.Builder
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		if p.Kind == sd.TokWord && p.Name == "json_each" {
			if j := sd.FirstSignificant(ps, i+1); j >= 0 && ps[j].Text == "(" {
				if end := sd.Matching(ps, j); end >= 0 {
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
