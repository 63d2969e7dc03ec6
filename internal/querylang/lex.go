package querylang

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// This file is the lexical half of authoritative queries (AQ-1): a
// tokenizer that follows SQLite's own lexical rules (tokenize.c) closely
// enough to find statement boundaries and parameters exactly where the
// engine would, and CheckQueryText, which admits one SELECT (or WITH …
// SELECT) with `?`/`?N` parameters. It is not the security boundary —
// the engine-enforced policy of the driver is (see the authoritative-query
// doc) — it removes what an authorizer cannot see: a second statement, and
// named parameters that would bind differently on another engine.

// TokKind is the kind of a lexical token.
type TokKind int

// The token kinds CheckQueryText distinguishes.
const (
	TokSpace      TokKind = iota // whitespace and comments
	TokWord                      // a bare identifier or keyword
	TokQuotedID                  // "x", [x] or `x`
	TokString                    // 'x'
	TokNumber                    // 12, 1.5e3, 0x1F, .5
	TokBlob                      // x'00ff'
	TokParam                     // ?, ?N
	TokNamedParam                // :x, @x, $x, #x
	TokSemi                      // ;
	TokOp                        // any other operator or punctuation
)

// Token is one token of a query: its kind and its byte span in the text.
type Token struct {
	Kind       TokKind
	Start, End int
}

// Tokenize splits sql into tokens by SQLite's lexical rules: whitespace;
// `--` comments to the end of the line; `/* */` comments (an unterminated
// one runs to the end, as in SQLite); '…' strings with ” escapes;
// "…", […] and `…` quoted identifiers; x'…' blobs; numbers; `?`/`?N`
// and `:`, `@`, `$`, `#` named parameters; operators. A NUL byte, an
// unterminated string or quoted identifier, or a byte SQLite does not
// accept → CodeQueryInvalid (the message names the byte offset only).
func Tokenize(sql string) ([]Token, error) {
	if !utf8.ValidString(sql) || strings.IndexByte(sql, 0) >= 0 {
		// The engine reads the text as a C string: a NUL would end it early.
		return nil, driver.Errorf(driver.CodeQueryInvalid, "query text is not valid UTF-8 without NUL (AQ-1)")
	}
	var out []Token
	for i := 0; i < len(sql); {
		kind, n := nextToken(sql[i:])
		if n <= 0 {
			return nil, driver.Errorf(driver.CodeQueryInvalid, "query text is not valid SQL at byte %d (AQ-1)", i)
		}
		out = append(out, Token{Kind: kind, Start: i, End: i + n})
		i += n
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// isIDChar reports whether c may continue an identifier: SQLite accepts
// letters, digits, '_', '$' and every byte ≥ 0x80.
func isIDChar(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}

// nextToken returns the kind and length of the token at the start of s;
// length 0 means s starts with something SQLite rejects.
func nextToken(s string) (TokKind, int) {
	c := s[0]
	switch {
	case c == 0:
		return TokOp, 0
	case isSpace(c):
		n := 1
		for n < len(s) && isSpace(s[n]) {
			n++
		}
		return TokSpace, n
	case c == '-' && strings.HasPrefix(s, "--"):
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return TokSpace, i + 1
		}
		return TokSpace, len(s)
	case c == '/' && strings.HasPrefix(s, "/*"):
		if i := strings.Index(s[2:], "*/"); i >= 0 {
			return TokSpace, i + 4
		}
		return TokSpace, len(s)
	case c == '\'':
		return quoted(s, '\'', TokString)
	case c == '"':
		return quoted(s, '"', TokQuotedID)
	case c == '`':
		return quoted(s, '`', TokQuotedID)
	case c == '[':
		if i := strings.IndexByte(s, ']'); i >= 0 {
			return TokQuotedID, i + 1
		}
		return TokQuotedID, 0
	case c == ';':
		return TokSemi, 1
	case c == '?':
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		return TokParam, n
	case c == ':' || c == '@' || c == '$' || c == '#':
		n := 1
		for n < len(s) && isIDChar(s[n]) {
			n++
		}
		if n == 1 {
			return TokOp, 0
		}
		return TokNamedParam, n
	case (c == 'x' || c == 'X') && len(s) > 1 && s[1] == '\'':
		n := 2
		for n < len(s) && isHex(s[n]) {
			n++
		}
		if n >= len(s) || s[n] != '\'' || (n-2)%2 != 0 {
			return TokBlob, 0
		}
		return TokBlob, n + 1
	case isDigit(c) || (c == '.' && len(s) > 1 && isDigit(s[1])):
		return TokNumber, numberLen(s)
	case isIDChar(c):
		n := 1
		for n < len(s) && isIDChar(s[n]) {
			n++
		}
		return TokWord, n
	}
	for _, op := range []string{"->>", "->", "||", "<=", ">=", "<>", "!=", "==", "<<", ">>"} {
		if strings.HasPrefix(s, op) {
			return TokOp, len(op)
		}
	}
	if strings.IndexByte("()+-*/%=<>,.&|~", c) >= 0 {
		return TokOp, 1
	}
	return TokOp, 0
}

// quoted measures a token delimited by q with doubled-q escapes; an
// unterminated one has length 0.
func quoted(s string, q byte, kind TokKind) (TokKind, int) {
	for i := 1; i < len(s); i++ {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return kind, i + 1
		}
	}
	return kind, 0
}

// numberLen measures a numeric literal: hex, or digits with an optional
// fraction and exponent ('_' separates digits, as SQLite ≥ 3.46 allows).
// Trailing identifier characters make the token invalid, as in SQLite.
func numberLen(s string) int {
	n := 0
	digits := func(ok func(byte) bool) {
		for n < len(s) && (ok(s[n]) || (s[n] == '_' && n+1 < len(s) && ok(s[n+1]))) {
			n++
		}
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		n = 2
		digits(isHex)
	} else {
		digits(isDigit)
		if n < len(s) && s[n] == '.' {
			n++
			digits(isDigit)
		}
		if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
			m := n + 1
			if m < len(s) && (s[m] == '+' || s[m] == '-') {
				m++
			}
			if m < len(s) && isDigit(s[m]) {
				n = m
				digits(isDigit)
			}
		}
	}
	if n < len(s) && isIDChar(s[n]) {
		return 0
	}
	return n
}

// MaxQueryParams is the highest parameter number a query may use
// (SQLITE_MAX_VARIABLE_NUMBER's default).
const MaxQueryParams = 32766

// MaxQueryDepth is the deepest nesting of parentheses a query may have
// (AQ-6). Every driver's rewriter walks the text in time linear in its
// length for a bounded depth; a deeper text (4,950 nested CASTs, 24,700
// nested divisions — attacks, never a host's report) is refused before
// any rewriting, so rewriting a 100 KB text takes milliseconds.
const MaxQueryDepth = 100

// QueryText is a query that passed CheckQueryText.
type QueryText struct {
	// SQL is the one statement, without a trailing ';' or comment.
	SQL string
	// Params is the number of parameters the statement binds: the highest
	// parameter number, `?` counting as the highest so far plus one (SQLite's
	// numbering). Exactly that many bind values must be given.
	Params int
}

// CheckQueryText admits one SELECT or WITH … SELECT statement (AQ-1):
// a second statement, a statement of another kind, parentheses nested
// deeper than MaxQueryDepth (AQ-6), a named parameter,
// `?0`/`?N` beyond MaxQueryParams or with a leading zero (`?01`), or a
// name qualified by the schema "main" or "temp" (in any spelling: main.t, "MAIN".t, [temp] . t,
// 'main'.t — also an alias so named, a deliberate false positive) →
// CodeQueryInvalid. Without a schema name, an application table's name
// always resolves to its partition view in the temp schema, which is what
// lets the engine tell the view's own reads of main from the host's (see
// the authoritative-query doc). What the statement reads, and that it
// writes nothing, is the engine's to enforce.
func CheckQueryText(sql string) (QueryText, error) {
	bad := func(format string, args ...any) (QueryText, error) {
		return QueryText{}, driver.Errorf(driver.CodeQueryInvalid, format, args...)
	}
	toks, err := Tokenize(sql)
	if err != nil {
		return QueryText{}, err
	}
	first, end, params, prev, depth := -1, 0, 0, -1, 0
	for i, tk := range toks {
		switch tk.Kind {
		case TokSpace:
			continue
		case TokOp:
			switch sql[tk.Start:tk.End] {
			case "(":
				if depth++; depth > MaxQueryDepth {
					return QueryText{}, driver.NewQueryLimitError(driver.BoundRewrite, MaxQueryDepth, nil,
						fmt.Sprintf("authoritative query text (parentheses nested deeper than %d levels at byte %d)", MaxQueryDepth, tk.Start))
				}
			case ")":
				depth--
			}
			if sql[tk.Start:tk.End] == "." && prev >= 0 && isSchemaName(sql, toks[prev]) {
				return bad("query qualifies a name with schema %s at byte %d: tables are read by their names alone (AQ-2)",
					strings.ToLower(unquote(sql, toks[prev])), toks[prev].Start)
			}
		case TokSemi:
			for _, rest := range toks[i+1:] {
				if rest.Kind != TokSpace && rest.Kind != TokSemi {
					return bad("query holds more than one statement (AQ-1)")
				}
			}
			if first < 0 {
				return bad("query is empty (AQ-1)")
			}
			return admitted(sql, toks[:i], first, end, params)
		case TokNamedParam:
			return bad("query uses a named parameter at byte %d: only ? and ?N are allowed (AQ-1)", tk.Start)
		case TokParam:
			n := params + 1
			if tk.End-tk.Start > 1 {
				v, err := strconv.Atoi(sql[tk.Start+1 : tk.End])
				// A leading zero (?01) is refused: SQLite numbers it 1 but names it
				// "?01", which binds by name on some engines' drivers.
				if err != nil || v < 1 || v > MaxQueryParams || sql[tk.Start+1] == '0' {
					return bad("query parameter at byte %d is out of range 1…%d (AQ-1)", tk.Start, MaxQueryParams)
				}
				n = v
			}
			params = max(params, n)
		}
		if first < 0 {
			first = i
			kw := strings.ToUpper(sql[tk.Start:tk.End])
			if tk.Kind != TokWord || (kw != "SELECT" && kw != "WITH") {
				return bad("query must be one SELECT or WITH … SELECT statement (AQ-1)")
			}
		}
		end, prev = tk.End, i
	}
	if first < 0 {
		return bad("query is empty (AQ-1)")
	}
	return admitted(sql, toks, first, end, params)
}

// admitted is the end of CheckQueryText: the static cost rule on the
// statement's tokens, then the admitted text.
func admitted(sql string, toks []Token, first, end, params int) (QueryText, error) {
	if err := checkGrowth(sql, toks); err != nil {
		return QueryText{}, err
	}
	return QueryText{SQL: sql[toks[first].Start:end], Params: params}, nil
}

// isSchemaName reports whether tk names the schema "main" or "temp"
// (case-insensitive, bare or quoted in any of SQLite's quotes, a string
// literal included: SQLite accepts 'main'.t).
func isSchemaName(sql string, tk Token) bool {
	switch tk.Kind {
	case TokWord, TokQuotedID, TokString:
		n := strings.ToLower(unquote(sql, tk))
		return n == "main" || n == "temp"
	}
	return false
}

// unquote returns the name a word, quoted identifier or string token
// spells: delimiters removed, doubled quotes undoubled.
func unquote(sql string, tk Token) string {
	s := sql[tk.Start:tk.End]
	if tk.Kind == TokWord {
		return s
	}
	return UnquoteIdent(s)
}

// AdmitQuery is CheckQueryText for a whole driver.Query: the statement
// must pass CheckQueryText and q.Args must hold exactly as many bind
// values as it has parameters (QueryText.Params); otherwise
// CodeQueryInvalid (AQ-1); a string, []byte or JSON bind value longer
// than MaxValueBytes → BoundValueBytes (CheckArgSizes, AQ-6); a LIKE/GLOB
// pattern or instr needle that is not literals and bind values of at most
// MaxSearchPatternBytes → BoundRewrite (CheckSearchPatterns, AQ-6). The values
// themselves are each driver's to convert.
func AdmitQuery(q driver.Query) (QueryText, error) {
	text, err := CheckQueryText(q.SQL)
	if err != nil {
		return QueryText{}, err
	}
	if len(q.Args) != text.Params {
		return QueryText{}, driver.Errorf(driver.CodeQueryInvalid,
			"query binds %d parameters, got %d values (AQ-1)", text.Params, len(q.Args))
	}
	if err := CheckArgSizes(q); err != nil {
		return QueryText{}, err
	}
	// The search and row-work rules read one token view of the text.
	toks, err := Tokenize(text.SQL)
	if err != nil {
		return QueryText{}, err
	}
	v := newSigText(text.SQL, toks, q.Args)
	if err := checkSearchPatterns(v); err != nil {
		return QueryText{}, err
	}
	if err := checkRowWork(v, q.Limits); err != nil {
		return QueryText{}, err
	}
	return text, nil
}

// CheckArgSizes refuses a bind value — a string, []byte or JSON document
// — longer than q.Limits.MaxValueBytes (its default when zero) with a
// BoundValueBytes *driver.QueryLimitError (AQ-6), before any engine sees
// it: every driver bounds the values a query can bind by the bound on the
// values it can build.
func CheckArgSizes(q driver.Query) error {
	limit := q.Limits.WithDefaults().MaxValueBytes
	for i, a := range q.Args {
		n := -1
		switch x := a.(type) {
		case string:
			n = len(x)
		case []byte:
			n = len(x)
		case driver.JSON:
			n = len(x)
		}
		if int64(n) > limit {
			return driver.NewQueryLimitError(driver.BoundValueBytes, limit, nil,
				fmt.Sprintf("authoritative query (bind value %d)", i+1))
		}
	}
	return nil
}

// AdmitQueryArgs is AdmitQuery followed by QueryArgs(q.Args, rules): the
// admitted statement and the bind values the engine is sent, or the
// first error (CodeQueryInvalid, AQ-1; V-3 for a value rules refuse).
func AdmitQueryArgs(q driver.Query, rules QueryArgRules) (QueryText, []any, error) {
	text, err := AdmitQuery(q)
	if err != nil {
		return QueryText{}, nil, err
	}
	args, err := QueryArgs(q.Args, rules)
	if err != nil {
		return QueryText{}, nil, err
	}
	return text, args, nil
}

// DeclaredTables checks a query's declared tables (driver.Query.Tables):
// at least one (else CodeQueryInvalid, AQ-1), each in the ensured schema
// (lookup is the driver's table lookup; its error, CodeUnknownTable,
// SCH-8, is returned). It returns the distinct names sorted bytewise and
// what lookup returned for each, in the same order.
func DeclaredTables[T any](names []string, lookup func(name string) (T, error)) ([]string, []T, error) {
	if len(names) == 0 {
		return nil, nil, driver.Errorf(driver.CodeQueryInvalid, "query declares no table (AQ-1)")
	}
	found := map[string]T{}
	var out []string
	for _, name := range names {
		x, err := lookup(name)
		if err != nil {
			return nil, nil, err
		}
		if _, seen := found[name]; !seen {
			found[name] = x
			out = append(out, name)
		}
	}
	sort.Strings(out)
	vals := make([]T, len(out))
	for i, name := range out {
		vals[i] = found[name]
	}
	return out, vals, nil
}

// ParamNumber returns the number of the parameter token s (?NNN; a bare
// ? is the one after last, the highest number so far) and the new
// highest number. CheckQueryText has checked the range.
func ParamNumber(s string, last int) (n, highest int) {
	n = last + 1
	if len(s) > 1 {
		n, _ = strconv.Atoi(s[1:])
	}
	return n, max(last, n)
}

// GluedWord refuses a word token toks[i] followed directly by a string or
// a quoted name (N'x', x"y"): engines other than SQLite read such a pair
// as one token of their own (a national string, a prefixed literal), so
// the statement would not mean what SQLite means (AQ-1,
// CodeQueryInvalid). nil otherwise.
func GluedWord(toks []Token, i int) error {
	if i+1 < len(toks) && (toks[i+1].Kind == TokString || toks[i+1].Kind == TokQuotedID) {
		return driver.Errorf(driver.CodeQueryInvalid, "query glues a word to a quoted token at byte %d (AQ-1)", toks[i].Start)
	}
	return nil
}
