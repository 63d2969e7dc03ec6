package d1sql

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Authoritative queries (AQ-1…AQ-5) over D1's HTTP API, which has no
// authorizer, no read-only mode and no temp schema: the query text itself
// is the boundary, so it is rewritten and fails closed. A query admitted by
// CheckQueryText (one SELECT or WITH … SELECT, ?/?N only, no main./temp.
// qualifier) is tokenized again and:
//
//   - refused (CodeQueryInvalid) when it names, bare or quoted, anything
//     starting with sqlite_, pragma_, _sync, _cf_ or d1_ (engine catalogs,
//     table-valued pragmas, the store's infrastructure, D1's internals — a
//     column so named is a deliberate false positive) other than as an
//     alias (after AS, or as a qualifier: `todos AS sqlite_master`);
//     when it holds a keyword of a statement other than SELECT (INSERT,
//     UPDATE, DELETE, REPLACE not called as the function, RETURNING,
//     PRAGMA, ATTACH, …: D1 has no read-only mode, and CheckQueryText
//     admits `WITH x AS (…) DELETE …`); when a string follows FROM or
//     JOIN (SQLite reads `FROM 'users'` as a table name; a string after a
//     FROM-list comma cannot be told from a value by the text alone and is
//     left to the twin); when it calls a function outside
//     D1QueryFunctions;
//   - its bind values travel in ONE JSON parameter, ?1 (D1 allows 100
//     bound parameters per statement; a value list of any length fits):
//     each ?/?N becomes a typed expression of its element — integers and
//     booleans as decimal text under CAST(… AS INTEGER) (exact beyond
//     2^53, where D1 binds every JSON number as REAL), floats as [m, e]
//     rebuilt exactly (D1Param), bytes as hex under unhex(), NULL as the
//     literal NULL;
//   - every declared table T becomes a CTE
//     "T" AS NOT MATERIALIZED (SELECT <app columns> FROM main."T" WHERE
//     "_sync_partition" = ?2) at the head of the statement's WITH list
//     (PrependCTEs). An unqualified name resolves to a CTE before any
//     table, so every spelling of T reads the partition's rows; the host
//     cannot write main. (CheckQueryText), and a host CTE named like T is a
//     duplicate WITH name the engine refuses.
//
// The driver adds an engine-side check the text cannot make: it prepares
// the rewritten statement in a local SQLite twin of the schema under an
// authorizer (drivers/d1http/query_twin.go). Result values come back typed
// and exact through D1QueryWrap.

// D1QueryFunctions are the functions (and keywords written like calls) a
// D1 query may use: SQLite's core scalar, aggregate, window, date/time,
// math and JSON functions whose result depends only on their arguments —
// the set drivers/sqlite allows (AQ-5: the same text must mean the same on
// both) less those D1 lacks or refuses (checked on the miniflare lane:
// if and unistr do not exist there; ceiling, log10, json_error_position
// and json_pretty are "not authorized"), so the double (modernc's newer
// SQLite) refuses them too. Left out on purpose: load_extension, sqlite_* (D1 refuses
// sqlite_version anyway), changes/total_changes/last_insert_rowid
// (connection state), random/randomblob/zeroblob (nondeterministic or
// unbounded), jsonb_* (engine-specific binary output), and every function
// D1 or an extension adds.
var D1QueryFunctions = func() map[string]bool {
	m := map[string]bool{"json_each": true, "json_tree": true}
	for f := range sqlitesql.QueryFunctions {
		m[f] = true
	}
	// Not on D1, or not authorized there; the operators -> and ->> and the
	// CURRENT_* keywords are no calls (the twin allows the operators).
	for _, f := range strings.Fields(`if unistr ceiling log10 json_error_position json_pretty
		current_date current_time current_timestamp -> ->>`) {
		delete(m, f)
	}
	return m
}()

// d1CallKeywords are keywords that a "(" may follow; CheckCalls must let
// them through.
var d1CallKeywords = strings.Fields(`in exists as over filter on using cast select from where join by when then else case
	between and or not is distinct all with recursive union intersect except limit offset having values materialized
	escape collate glob like group partition order`)

// d1Allowed is D1QueryFunctions plus d1CallKeywords.
var d1Allowed = func() map[string]bool {
	m := map[string]bool{}
	for f := range D1QueryFunctions {
		m[f] = true
	}
	for _, k := range d1CallKeywords {
		m[k] = true
	}
	return m
}()

// d1BeforeParam are the words a parameter may follow: the keywords of
// d1CallKeywords and the window frame units (a parameter is rendered as a
// parenthesized expression, so after any other name it would be a call).
var d1BeforeParam = func() map[string]bool {
	m := map[string]bool{"rows": true, "range": true, "groups": true}
	for _, k := range d1CallKeywords {
		m[k] = true
	}
	return m
}()

// d1RefusedPrefixes start names a D1 query may never spell: engine
// catalogs and pragma functions, the store's infrastructure and hidden
// columns, D1's internal tables.
var d1RefusedPrefixes = []string{"sqlite_", "pragma_", "_sync", "_cf_", "d1_"}

// d1RefusedWords are keywords of statements other than SELECT (a bare
// word; "replace" only when not called as the function).
var d1RefusedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`insert update delete replace returning upsert pragma attach detach vacuum create drop
		alter reindex analyze begin commit rollback savepoint release into explain transaction trigger conflict`) {
		m[w] = true
	}
	return m
}()

// D1QueryRefusedName reports whether name (any case) starts with a
// prefix no D1 query may spell (see the file comment).
func D1QueryRefusedName(name string) bool {
	n := strings.ToLower(name)
	for _, p := range d1RefusedPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// D1QueryTable is a declared table of a D1 query: its name and its
// application columns, in order.
type D1QueryTable struct {
	Name    string
	Columns []string
}

// D1Query is a host query rewritten for D1.
type D1Query struct {
	// SQL is the statement: the declared tables' CTEs first, ?1 the bind
	// values (Args), ?2 the partition. Its result columns are the host's.
	SQL string
	// Args is the JSON array text bound to ?1: one element per host
	// parameter (D1Text encodings; null for NULL).
	Args string
	// Params is the number of host parameters (the elements of Args).
	Params int
}

// RewriteD1Query checks and rewrites text (the SQL of a QueryText:
// CheckQueryText already admitted it) with its bind values args (exactly
// QueryText.Params of them, SQLite numbering: int64, float64 finite,
// string valid UTF-8 without NUL, []byte, bool, driver.JSON, nil) for
// the declared tables (AQ-1…AQ-3). Errors: CodeQueryInvalid naming the
// rule and a byte offset or a bind position, never a value (V-10).
func RewriteD1Query(text string, args []any, declared []D1QueryTable) (D1Query, error) {
	bad := func(format string, a ...any) (D1Query, error) {
		return D1Query{}, driver.Errorf(driver.CodeQueryInvalid, format, a...)
	}
	elems := make([]any, len(args))
	exprs := make([]string, len(args))
	for i, v := range args {
		el, ex, err := d1QueryArg(i, v)
		if err != nil {
			return D1Query{}, err
		}
		elems[i], exprs[i] = el, ex
	}
	toks, err := querylang.Tokenize(text)
	if err != nil {
		return D1Query{}, err
	}
	pieces := make([]querylang.Piece, 0, len(toks))
	last := 0
	for i, tk := range toks {
		s := text[tk.Start:tk.End]
		p := querylang.Piece{Kind: tk.Kind, Text: s}
		switch tk.Kind {
		case querylang.TokSpace:
			p.Text = " " // comments go: the engine never sees them
		case querylang.TokWord:
			p.Name = strings.ToLower(s)
			if d1RefusedWords[p.Name] {
				if p.Name != "replace" || !d1CalledAt(toks, text, i) {
					return bad("query holds a keyword of a statement other than SELECT at byte %d (AQ-1)", tk.Start)
				}
			}
		case querylang.TokQuotedID:
			p.Name = strings.ToLower(querylang.UnquoteIdent(s))
			if p.Name == "" {
				return bad("query has an empty quoted name at byte %d (AQ-1)", tk.Start)
			}
		case querylang.TokString:
			if prev := querylang.LastSignificant(pieces); prev != nil && (prev.Name == "from" || prev.Name == "join") {
				return bad("query names a table with a string at byte %d (AQ-2)", tk.Start)
			}
		case querylang.TokParam:
			var n int
			n, last = querylang.ParamNumber(s, last)
			if n > len(args) {
				return bad("query binds %d parameters, got %d values (AQ-1)", n, len(args))
			}
			if prev := querylang.LastSignificant(pieces); prev != nil && (prev.Kind == querylang.TokQuotedID ||
				(prev.Kind == querylang.TokWord && !d1BeforeParam[prev.Name])) {
				// The value's "(" would make `abs ?` the call abs(…), which
				// SQLite refuses as a syntax error.
				return bad("query puts a parameter right after a name at byte %d (AQ-1)", tk.Start)
			}
			p.Text = "(" + exprs[n-1] + ")"
		case querylang.TokNamedParam, querylang.TokSemi:
			return bad("query is not one statement with ? and ?N parameters (AQ-1)")
		}
		if p.Name != "" && D1QueryRefusedName(p.Name) && !d1AliasAt(pieces, toks, text, i) {
			return bad("query names a relation, function or column it may not at byte %d (AQ-1, AQ-2)", tk.Start)
		}
		pieces = append(pieces, p)
	}
	if last != len(args) {
		return bad("query binds %d parameters, got %d values (AQ-1)", last, len(args))
	}
	if err := querylang.CheckCalls(pieces, d1Allowed); err != nil {
		return D1Query{}, err
	}
	if len(declared) == 0 {
		return bad("query declares no table (AQ-1)")
	}
	ctes := make([]string, len(declared))
	for i, t := range declared {
		cols := make([]string, len(t.Columns))
		for j, c := range t.Columns {
			cols[j] = sqlitesql.Quote(c)
		}
		ctes[i] = sqlitesql.Quote(t.Name) + " AS NOT MATERIALIZED (SELECT " + strings.Join(cols, ", ") + " FROM main." + sqlitesql.Quote(t.Name) +
			" WHERE " + sqlitesql.Quote(sqlitesql.PartitionColumn) + " = ?2)"
	}
	j, err := json.Marshal(elems)
	if err != nil {
		return D1Query{}, driver.Wrap(driver.CodeInternal, err, "encode query bind values")
	}
	render := func(ps []querylang.Piece) string {
		var b strings.Builder
		for _, p := range ps {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return D1Query{SQL: querylang.PrependCTEs(pieces, strings.Join(ctes, ", "), render), Args: string(j), Params: len(args)}, nil
}

// d1AliasAt reports whether the name at token i is an alias: it follows
// AS (the alias is defined there) or is followed by "." (a qualifier,
// which can only name a FROM item, itself spelled elsewhere and checked
// there). `FROM todos AS sqlite_master` reads todos; an alias without AS
// is refused, a deliberate false positive.
func d1AliasAt(pieces []querylang.Piece, toks []querylang.Token, text string, i int) bool {
	if prev := querylang.LastSignificant(pieces); prev != nil && prev.Name == "as" {
		return true
	}
	for _, tk := range toks[i+1:] {
		if tk.Kind != querylang.TokSpace {
			return text[tk.Start:tk.End] == "."
		}
	}
	return false
}

// d1CalledAt reports whether the token at i is followed by "(".
func d1CalledAt(toks []querylang.Token, text string, i int) bool {
	for _, tk := range toks[i+1:] {
		if tk.Kind != querylang.TokSpace {
			return text[tk.Start:tk.End] == "("
		}
	}
	return false
}

// d1QueryArg returns the JSON element and the SQL expression (over ?1) of
// bind value i.
func d1QueryArg(i int, v any) (any, string, error) {
	k := strconv.Itoa(i)
	el := "(?1 ->> " + k + ")"
	switch x := v.(type) {
	case nil:
		return nil, "NULL", nil
	case int64:
		return strconv.FormatInt(x, 10), "CAST(" + el + " AS INTEGER)", nil
	case bool:
		if x {
			return "1", "CAST(" + el + " AS INTEGER)", nil
		}
		return "0", "CAST(" + el + " AS INTEGER)", nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "", driver.Errorf(driver.CodeQueryInvalid, "bind value %d is not a finite float (AQ-1)", i+1)
		}
		t, err := D1Text("", driver.TypeFloat, x)
		return t, D1Param("?1", i, driver.TypeFloat), err
	case string:
		return d1QueryText(i, x, el)
	case driver.JSON:
		return d1QueryText(i, string(x), el)
	case []byte:
		if x == nil {
			return nil, "NULL", nil
		}
		return hex.EncodeToString(x), "unhex(" + el + ")", nil
	}
	return nil, "", driver.Errorf(driver.CodeQueryInvalid,
		"bind value %d is a %T; want int64, float64, string, []byte, bool or nil (AQ-1)", i+1, v)
}

func d1QueryText(i int, s, el string) (any, string, error) {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return nil, "", driver.Errorf(driver.CodeQueryInvalid, "bind value %d is not valid UTF-8 without NUL (AQ-1)", i+1)
	}
	return s, el, nil
}

// D1QueryMaxColumns is the widest result a D1 query may have (SQLite's
// default column limit is 2000; kept well below it).
const D1QueryMaxColumns = 1000

// D1QueryWrap returns the statement D1 runs for the rewritten query q
// with n result columns: q becomes the CTE "_sync_r"("c1", …, "cn") and
// each column is selected as one JSON-safe, exact value — NULL as null,
// a REAL as itself (a JSON number: JavaScript prints the shortest round
// trip) or 'z' for -0.0, '+'/'-' for ±Inf; an INTEGER as 'i' + decimal
// text (JSON would round it beyond 2^53); TEXT as 't' + the text; a BLOB
// as 'b' + hex (JSON has no bytes). Decode each with D1QueryValue. The
// wrapper reads the CTE once, without an ORDER BY or a join, so SQLite
// keeps the host's row order (co-routine or flattened with its ORDER BY).
// With maxRows > 0 it ends with LIMIT maxRows+1: D1 stops producing rows
// one past the rows bound, so a query of millions of rows costs the
// engine, and the answer, at most that (AQ-6); the extra row tells the
// bound was hit.
func D1QueryWrap(q string, n, maxRows int) string {
	cols := make([]string, n)
	sel := make([]string, n)
	for i := range n {
		c := sqlitesql.Quote("c" + strconv.Itoa(i+1))
		cols[i] = c
		sel[i] = "CASE typeof(" + c + ") WHEN 'integer' THEN 'i' || CAST(" + c + " AS TEXT) WHEN 'real' THEN (CASE WHEN " +
			c + " = 0 AND atan2(" + c + ", -1) < 0 THEN 'z' WHEN " + c + " > 1.7976931348623157e308 THEN '+' WHEN " + c +
			" < -1.7976931348623157e308 THEN '-' ELSE " + c + " END) WHEN 'text' THEN 't' || " + c +
			" WHEN 'blob' THEN 'b' || hex(" + c + ") END"
	}
	limit := ""
	if maxRows > 0 {
		limit = " LIMIT " + strconv.Itoa(maxRows+1)
	}
	return "WITH " + sqlitesql.Quote(D1QueryResultCTE) + "(" + strings.Join(cols, ", ") + ") AS (" + q + ") SELECT " +
		strings.Join(sel, ", ") + " FROM " + sqlitesql.Quote(D1QueryResultCTE) + limit
}

// D1QueryResultCTE is the name of D1QueryWrap's CTE (a _sync name: the
// host cannot spell it).
const D1QueryResultCTE = "_sync_r"

// D1QueryMaxSeq: ?1 partition → its max_seq as text (0 when unknown).
// Sent in the query's batch, before it: one snapshot (AQ-4).
const D1QueryMaxSeq = `SELECT CAST(coalesce((SELECT max_seq FROM _sync_partitions WHERE partition = ?1), 0) AS TEXT)`

// D1QueryValue decodes one value of a D1QueryWrap row (AQ-4): int64,
// float64 (bit for bit, -0.0 and ±Inf included), string, []byte (an empty
// blob is a non-nil empty slice), nil; an integer of a boolean column
// (boolean: declared BOOLEAN, as drivers/sqlite decides) is a bool.
func D1QueryValue(raw json.RawMessage, boolean bool) (any, error) {
	bad := func() (any, error) {
		return nil, driver.Errorf(driver.CodeInternal, "d1http: authoritative query: a result value is not in the wrapper's encoding")
	}
	if len(raw) == 0 {
		return bad()
	}
	if string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '"' {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return bad()
		}
		return f, nil
	}
	s, err := rawString(raw)
	if err != nil || s == "" {
		return bad()
	}
	body := s[1:]
	switch s[0] {
	case 'i':
		v, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return bad()
		}
		if boolean {
			return v != 0, nil
		}
		return v, nil
	case 't':
		return body, nil
	case 'b':
		b, err := hex.DecodeString(body)
		if err != nil {
			return bad()
		}
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case 'z':
		return math.Copysign(0, -1), nil
	case '+':
		return math.Inf(1), nil
	case '-':
		return math.Inf(-1), nil
	}
	return bad()
}
