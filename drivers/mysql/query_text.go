package mysql

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// The text half of authoritative queries (AQ-1…AQ-3). A host's query in
// the portable SQLite-family dialect, once admitted by querylang's
// CheckQueryText (one SELECT or WITH … SELECT, ?/?N parameters only, no
// main./temp. qualifier), is tokenized again and every token re-emitted
// for MySQL/MariaDB — nothing of the host's text reaches the engine
// unparsed:
//
//   - comments become one space (MySQL's executable /*! */ comments and
//     optimizer hints never reach the engine);
//   - a word that is a keyword of SELECT syntax (not after AS) stays bare; an allowed
//     function (queryFunctions) is emitted under its MySQL name; every
//     other word, and every quoted name ("x", [x], `x`), becomes a
//     backquoted identifier — so bare session functions (CURRENT_USER,
//     DATABASE, …) can only be unknown columns;
//   - a name equal (in any case) to a declared table is emitted with the
//     declared spelling, so it resolves to the partition CTE below;
//   - strings are re-quoted ('…', quotes doubled; the query pool runs
//     with NO_BACKSLASH_ESCAPES so a backslash is data, as in SQLite);
//     hexadecimal integers become decimal (0x41 is a string in MySQL);
//   - ?N becomes a positional ? with the value bound again (repeats
//     included), nil the literal NULL, bytes CAST(? AS BINARY), strings
//     CAST(? AS CHAR) (the connection's collation; not as a LIMIT/OFFSET count);
//   - x LIKE y becomes LOWER(x) LIKE LOWER(y) ESCAPE X'00' (ASCII
//     case-insensitive; no escape character, as SQLite: see likeNoEscape);
//   - replace(s, f, t) and instr(s, n) get a cost check on the byte
//     lengths of their arguments (guards, AQ-6);
//   - a derived table or CTE body that computes a result column gets
//     LIMIT 18446744073709551615 (fence, AQ-6);
//     == becomes =, ISNULL/NOTNULL become IS [NOT] NULL, `a IS b` (b not
//     NULL/TRUE/FALSE/NOT) becomes a <=> b; CAST(x AS INTEGER) becomes
//     CAST(TRUNCATE(x, 0) AS SIGNED) (SQLite truncates); max/min with two or more
//     arguments become GREATEST/LEAST; length becomes CHAR_LENGTH, log
//     (one argument) LOG10; the type of a CAST is mapped;
//   - json_each(literal or ?) over a JSON array becomes a derived table
//     over JSON_TABLE with (key, value) columns typed from the document.
//
// Every declared table T becomes a CTE `T` prepended to the query,
// reading the application columns of `db`.`T` (schema-qualified, so it
// cannot refer to itself under WITH RECURSIVE) restricted to the
// partition (a bound value). The query runs on a connection with no
// default database (query.go): an unqualified name that is not a CTE is
// an error, never another table of the store. A qualified name `a.b` is
// allowed only when `a` is not the name of a database the server shows
// (checked in the query's transaction, query.go), so `a.b` can only be
// alias.column.
//
// Refused (CodeQueryInvalid) before anything runs: names starting with
// _sync (infrastructure tables, hidden columns); INTO, FOR (FOR UPDATE,
// NEXT VALUE FOR), LOCK, PROCEDURE, HANDLER; a call of a function outside
// queryFunctions; a CTE named like a declared table; a declared table
// the text never names; a string or quoted name glued to a word (N'…',
// _binary'…'); a string used as a qualifier; json_each over anything but
// a literal or bound JSON array.

// queryKeywords are the words of SELECT syntax emitted bare.
var queryKeywords = wordSet(`select from where group by having order limit offset as on using join inner left right
	full outer cross natural union all intersect except distinct and or not is null true false in exists between
	like escape case when then else end cast with recursive over partition rows range groups unbounded preceding
	following current row window asc desc current_date current_time current_timestamp values`)

// queryLiterals are keywords that are operands.
var queryLiterals = wordSet(`null true false current_date current_time current_timestamp`)

// queryFunctions maps each function a query may call (SQLite name) to its
// MySQL name; all are deterministic and read nothing but their arguments.
var queryFunctions = func() map[string]string {
	m := map[string]string{
		"iif": "IF", "length": "CHAR_LENGTH", "substr": "SUBSTRING", "json_each": "json_each", "cast": "CAST",
	}
	for _, f := range strings.Fields(`abs coalesce ifnull nullif lower upper ltrim rtrim trim replace substring instr hex
		count sum avg min max group_concat concat concat_ws
		row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
		ceil ceiling floor exp ln log log10 log2 mod power pow sqrt sign pi sin cos tan asin acos atan atan2 degrees radians`) {
		m[f] = strings.ToUpper(f)
	}
	return m
}()

// queryCallKeywords are keywords that may be followed by "(".
var queryCallKeywords = wordSet(`in exists as over on using any all some row and or not select from where join by when
	then else case between like is distinct with recursive union intersect except group partition order having limit
	offset desc asc values filter escape`)

// forbiddenQueryWords are refused wherever they appear.
var forbiddenQueryWords = wordSet(`into for lock procedure handler outfile dumpfile`)

// castTypes maps SQLite type names in CAST(x AS type) to MySQL's.
var castTypes = map[string]string{
	"integer": "SIGNED", "int": "SIGNED", "bigint": "SIGNED", "text": "CHAR", "varchar": "CHAR", "char": "CHAR",
	"real": "DOUBLE", "float": "DOUBLE", "double": "DOUBLE", "blob": "BINARY", "numeric": "DOUBLE",
}

// tightOps bind tighter than LIKE in SQLite (they belong to its operands).
var tightOps = wordSet(`|| * / % + - & | << >> < > <= >= -> ->>`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Hidden result columns that carry the sign of -0.0 (InnoDB and the
// server turn -0.0 into 0; the sign is stored in _sync_negzero):
// `_sync_nz_<col>` follows each float column in a partition CTE (so a
// `*` carries it right after its column), `_sync_nzc_<i>` is appended to
// the top-level select list for item i when the item is a bare float
// column. Both are removed from the result (query.go).
const (
	nzColumnPrefix    = "_sync_nz_"
	nzCompanionPrefix = "_sync_nzc_"
)

// queryTable is what the rewrite needs of a declared table.
type queryTable struct {
	name   string
	cols   []driver.Column
	floats map[string]string // lower-case name → name of the float columns
}

// myQuery is a host query rewritten for MySQL.
type myQuery struct {
	sql string
	// plain is sql without the top-level -0.0 companions ("" when it has
	// none): run when the engine does not know a companion's column (the
	// bare name was a column of a host CTE or derived table).
	plain      string
	args       []any    // the partitions of the CTEs, then the host's values in text order
	qualifiers []string // lower-cased names used before "." (none may be a database)
	guards     int      // the replace() and instr() calls guarded by a cost check (guards)
}

func queryInvalid(format string, args ...any) error {
	return driver.Errorf(driver.CodeQueryInvalid, format, args...)
}

// quoteString returns s as a MySQL string literal under
// NO_BACKSLASH_ESCAPES: quotes doubled, nothing else escaped.
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// rewriteQuery rewrites text (already admitted by CheckQueryText; args
// bound by SQLite numbering, already converted by queryArgs) for the
// store's database db, with a partition CTE for each declared table
// (sorted, distinct). coll is the NO PAD binary collation.
// limitCount reports whether a parameter after pieces ps is a LIMIT or
// OFFSET count: after LIMIT or OFFSET, or after the comma of LIMIT ?, ?.
func limitCount(ps []querylang.Piece) bool {
	var last []*querylang.Piece // the last three significant pieces, nearest first
	for i := len(ps) - 1; i >= 0 && len(last) < 3; i-- {
		if ps[i].Kind != querylang.TokSpace {
			last = append(last, &ps[i])
		}
	}
	isWord := func(k int, names ...string) bool {
		return k < len(last) && last[k].Kind == querylang.TokWord && slices.Contains(names, last[k].Name)
	}
	return isWord(0, "limit", "offset") ||
		(len(last) == 3 && last[0].Text == "," && last[1].Kind == querylang.TokParam && isWord(2, "limit"))
}

func rewriteQuery(text string, args []any, db, coll string, declared []queryTable, partition string) (myQuery, error) {
	toks, err := querylang.Tokenize(text)
	if err != nil {
		return myQuery{}, err
	}
	canon := map[string]string{}
	for _, t := range declared {
		canon[strings.ToLower(t.name)] = t.name
	}
	var q myQuery
	ps := make([]querylang.Piece, 0, len(toks))
	argOf := make([]any, 0, len(toks)) // the bound value of a parameter piece
	isArg := make([]bool, 0, len(toks))
	last := 0
	for i, tk := range toks {
		s := text[tk.Start:tk.End]
		p := querylang.Piece{Kind: tk.Kind, Text: s}
		var av any
		param := false
		switch tk.Kind {
		case querylang.TokSpace:
			p.Text = " "
		case querylang.TokWord:
			p.Name = strings.ToLower(s)
			if err := querylang.GluedWord(toks, i); err != nil {
				return myQuery{}, err
			}
		case querylang.TokQuotedID:
			p.Name = querylang.UnquoteIdent(s)
			if p.Name == "" {
				return myQuery{}, queryInvalid("query has an empty quoted name at byte %d (AQ-1)", tk.Start)
			}
			p.Text = quoteIdent(p.Name)
			p.Name = strings.ToLower(p.Name)
		case querylang.TokString:
			p.Text = quoteString(querylang.UnquoteIdent(s))
		case querylang.TokBlob:
			p.Text = "X" + s[1:]
		case querylang.TokNumber:
			if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
				v, err := strconv.ParseUint(strings.ReplaceAll(s[2:], "_", ""), 16, 64)
				if err != nil {
					return myQuery{}, queryInvalid("query has a hexadecimal number out of range at byte %d (AQ-1)", tk.Start)
				}
				p.Text = strconv.FormatInt(int64(v), 10)
			} else {
				p.Text = strings.ReplaceAll(s, "_", "")
				if strings.Contains(p.Text, ".") && !strings.ContainsAny(p.Text, "eE") {
					p.Text += "e0" // a REAL in SQLite, a DECIMAL in MySQL without the exponent (AQ-5)
				}
			}
		case querylang.TokParam:
			var n int
			n, last = querylang.ParamNumber(s, last)
			if n > len(args) {
				return myQuery{}, queryInvalid("query binds %d parameters, got %d values (AQ-1)", n, len(args))
			}
			av, param = args[n-1], true
			switch av.(type) {
			case nil:
				p.Text = " NULL "
			case []byte:
				p.Text = " CAST(? AS BINARY) "
			case string:
				// MariaDB gives a bound string its character set's default
				// collation (utf8mb4_general_ci), not collation_connection:
				// instr(?, ?), ? = ?, max(?, ?) of two bound strings were
				// case-insensitive. CAST gives it the connection's binary
				// one, as a literal has (AQ-5) — except as a LIMIT or OFFSET
				// count, where MariaDB takes a bare ? only.
				p.Text = " CAST(? AS CHAR) "
				if limitCount(ps) {
					p.Text = "?"
				}
			default:
				p.Text = "?"
			}
		case querylang.TokOp:
			switch s {
			case "==":
				p.Text = "="
			case "->", "->>":
				// MySQL's JSON operators return JSON text where SQLite returns SQL values (AQ-5).
				return myQuery{}, queryInvalid("query uses %s, which the mysql driver does not support (AQ-5)", s)
			case ".":
				prev := querylang.LastSignificant(ps)
				if prev == nil {
					break
				}
				if prev.Kind == querylang.TokString {
					return myQuery{}, queryInvalid("query qualifies a name with a string (AQ-2)")
				}
				if prev.Name != "" {
					q.qualifiers = append(q.qualifiers, prev.Name)
				}
			}
		default:
			return myQuery{}, queryInvalid("query has an unexpected token at byte %d (AQ-1)", tk.Start)
		}
		if p.Name != "" && (strings.HasPrefix(p.Name, "_sync") || forbiddenQueryWords[p.Name]) {
			return myQuery{}, queryInvalid("query names a relation, column or clause it may not (AQ-1, AQ-2)")
		}
		ps = append(ps, p)
		argOf = append(argOf, av)
		isArg = append(isArg, param)
	}
	if err := querylang.CheckCalls(ps, callAllowList); err != nil {
		return myQuery{}, err
	}
	if querylang.CallNesting(ps, "replace") > maxReplaceNesting {
		return myQuery{}, queryInvalid("query nests replace() more than %d deep: MariaDB builds such values past its statement time limit and KILL (AQ-6)", maxReplaceNesting)
	}
	if err := checkCTENames(ps, canon); err != nil {
		return myQuery{}, err
	}
	for _, t := range declared {
		if !readsTable(ps, strings.ToLower(t.name)) {
			return myQuery{}, queryInvalid("query declares table %s but does not read it in a FROM or JOIN, or reads a relation it does not declare (AQ-2)", t.name)
		}
	}

	r := &render{ps: ps, pre: make([]string, len(ps)), post: make([]string, len(ps)), text: make([]string, len(ps))}
	if err := r.words(canon); err != nil {
		return myQuery{}, err
	}
	if err := r.likes(); err != nil {
		return myQuery{}, err
	}
	if err := r.jsonEach(argOf, isArg, coll); err != nil {
		return myQuery{}, err
	}
	if err := r.arithmetic(declared, argOf, isArg); err != nil {
		return myQuery{}, err
	}
	r.caseFolds()
	q.guards = r.guards(argOf, isArg)
	r.fence()

	// Bind values in text order, the CTEs' partitions first (json_each
	// keeps its argument's "?" where it was).
	for range declared {
		q.args = append(q.args, partition)
	}
	for i := range ps {
		if isArg[i] && argOf[i] != nil {
			q.args = append(q.args, argOf[i])
		}
	}

	ctes := make([]string, 0, len(declared))
	for _, t := range declared {
		ctes = append(ctes, partitionCTE(db, t))
	}
	cteText := strings.Join(ctes, ", ")
	plain := querylang.PrependCTEs(r.pieces(), cteText, joinPieces)
	if r.companions(declared) {
		q.sql = querylang.PrependCTEs(r.pieces(), cteText, joinPieces)
		q.plain = plain
	} else {
		q.sql = plain
	}
	return q, nil
}

// maxReplaceNesting bounds replace() inside replace() (AQ-6): each level
// can multiply a value's length, and MariaDB has run a 9-deep nest for
// over 43 minutes, ignoring max_statement_time and KILL QUERY.
const maxReplaceNesting = 3

// callAllowList is what CheckCalls admits before "(".
var callAllowList = func() map[string]bool {
	m := map[string]bool{}
	for f := range queryFunctions {
		m[f] = true
	}
	for k := range queryCallKeywords {
		m[k] = true
	}
	return m
}()

// partitionCTE is the CTE of a declared table: its application columns
// (each float column followed by its hidden -0.0 flag) of partition ?.
func partitionCTE(db string, t queryTable) string {
	cols := make([]string, 0, len(t.cols)+len(t.floats))
	for i, c := range t.cols {
		cols = append(cols, quoteIdent(c.Name))
		if c.Type == driver.TypeFloat {
			// i is a column position of the schema, not a value.
			cols = append(cols, "(FIND_IN_SET('"+strconv.Itoa(i)+"', "+quoteIdent(negZeroColumn)+") > 0) AS "+
				quoteIdent(nzColumnPrefix+c.Name))
		}
	}
	return quoteIdent(t.name) + " AS (SELECT " + strings.Join(cols, ", ") + " FROM " + quoteIdent(db) + "." +
		quoteIdent(t.name) + " WHERE " + quoteIdent(partitionColumn) + " = ?)"
}

// checkCTENames refuses a CTE (at any depth) named like a declared table:
// it would shadow the partition CTE.
func checkCTENames(ps []querylang.Piece, canon map[string]string) error {
	for i, p := range ps {
		if p.Kind != querylang.TokWord || p.Name != "with" {
			continue
		}
		j := querylang.FirstSignificant(ps, i+1)
		if j >= 0 && ps[j].Name == "recursive" {
			j = querylang.FirstSignificant(ps, j+1)
		}
		for j >= 0 {
			if _, ok := canon[ps[j].Name]; ok && (ps[j].Kind == querylang.TokWord || ps[j].Kind == querylang.TokQuotedID) {
				return queryInvalid("query defines a CTE named like declared table %s (AQ-2)", canon[ps[j].Name])
			}
			k := querylang.FirstSignificant(ps, j+1)
			if k >= 0 && ps[k].Text == "(" {
				if k = querylang.Matching(ps, k); k < 0 {
					break
				}
				k = querylang.FirstSignificant(ps, k+1)
			}
			if k < 0 || ps[k].Name != "as" {
				break
			}
			for k = querylang.FirstSignificant(ps, k+1); k >= 0 && (ps[k].Name == "not" || ps[k].Name == "materialized"); k = querylang.FirstSignificant(ps, k+1) {
			}
			if k < 0 || ps[k].Text != "(" {
				break
			}
			if k = querylang.Matching(ps, k); k < 0 {
				break
			}
			if k = querylang.FirstSignificant(ps, k+1); k < 0 || ps[k].Text != "," {
				break
			}
			j = querylang.FirstSignificant(ps, k+1)
		}
	}
	return nil
}

// readsTable reports whether the statement reads table (AQ-2: a declared
// table the SQL does not read is query_invalid): whether a piece spelling
// it stands where SQLite's grammar puts a relation — right after FROM or
// JOIN, or after a comma of a FROM clause at the same depth — and is not
// qualified (x.table) nor a qualifier itself (table.x). An alias, a
// derived table or a column so named is not a read, so
// `SELECT todos.id FROM (SELECT 'x' AS id) AS todos` does not read todos.
// A host CTE cannot take a declared table's name (checkCTENames), so a
// relation so named is the driver's partition CTE.
func readsTable(ps []querylang.Piece, table string) bool {
	inFrom := map[int]bool{} // depth → inside a FROM clause
	depth := 0
	for i, p := range ps {
		switch {
		case p.Kind == querylang.TokOp && p.Text == "(":
			depth++
			delete(inFrom, depth)
		case p.Kind == querylang.TokOp && p.Text == ")":
			delete(inFrom, depth)
			depth--
		case p.Kind == querylang.TokWord:
			switch p.Name {
			case "from":
				inFrom[depth] = true
			case "select", "where", "group", "having", "order", "limit", "window", "union", "intersect", "except":
				delete(inFrom, depth)
			}
		}
		if (p.Kind != querylang.TokWord && p.Kind != querylang.TokQuotedID) || p.Name != table {
			continue
		}
		prev := querylang.LastSignificant(ps[:i])
		if prev == nil || !(prev.Name == "from" || prev.Name == "join" || (prev.Text == "," && inFrom[depth])) {
			continue
		}
		if next := querylang.FirstSignificant(ps, i+1); next >= 0 && ps[next].Text == "." {
			continue
		}
		return true
	}
	return false
}

// render holds the engine text of each piece: text (the piece itself),
// pre and post (inserted around it); a piece folded into another has
// all three empty.
type render struct {
	ps              []querylang.Piece
	pre, post, text []string
}

// pieces returns the pieces with their final text.
func (r *render) pieces() []querylang.Piece {
	out := make([]querylang.Piece, len(r.ps))
	for i, p := range r.ps {
		p.Text = r.pre[i] + r.text[i] + r.post[i]
		out[i] = p
	}
	return out
}

func joinPieces(ps []querylang.Piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
	}
	return b.String()
}

// next and prev return the index of the next/previous significant piece.
func (r *render) next(i int) int { return querylang.FirstSignificant(r.ps, i+1) }
func (r *render) prev(i int) int {
	for i--; i >= 0; i-- {
		if r.ps[i].Kind != querylang.TokSpace {
			return i
		}
	}
	return -1
}

// words sets the text of words: keywords, functions, identifiers, CAST
// types and the IS/ISNULL/NOTNULL forms.
func (r *render) words(canon map[string]string) error {
	castEnd := map[int]int{} // the ")" of every CAST( → its "("
	for i, p := range r.ps {
		if p.Kind == querylang.TokWord && p.Name == "cast" {
			if j := r.next(i); j >= 0 && r.ps[j].Text == "(" {
				if e := querylang.Matching(r.ps, j); e >= 0 {
					castEnd[e] = j
				}
			}
		}
	}
	for i, p := range r.ps {
		r.text[i] = p.Text
		if p.Kind != querylang.TokWord && p.Kind != querylang.TokQuotedID {
			continue
		}
		if t, ok := canon[p.Name]; ok {
			r.text[i] = quoteIdent(t)
			continue
		}
		if p.Kind == querylang.TokQuotedID {
			continue
		}
		n, pv := r.next(i), r.prev(i)
		afterDot := pv >= 0 && r.ps[pv].Text == "."
		call := n >= 0 && r.ps[n].Text == "("
		switch {
		case afterDot:
			r.text[i] = quoteIdent(p.Text)
		case pv >= 0 && r.ps[pv].Name == "as" && n >= 0 && castEnd[n] > 0:
			ty, ok := castTypes[p.Name]
			if !ok {
				return queryInvalid("query casts to a type the mysql driver does not map (AQ-1)")
			}
			r.text[i] = ty
			if first, last := r.next(castEnd[n]), r.prev(pv); ty == "SIGNED" && first >= 0 && last >= first {
				// SQLite truncates a real toward zero; MySQL's CAST rounds.
				r.pre[first] = "TRUNCATE(" + r.pre[first]
				r.post[last] += ", 0)"
			}
		case pv >= 0 && r.ps[pv].Name == "as" && !call:
			r.text[i] = quoteIdent(p.Text) // an alias, whatever it spells
		case call && queryFunctions[p.Name] != "":
			r.text[i] = queryFunctions[p.Name]
			args := r.callArgs(n)
			switch {
			case (p.Name == "max" || p.Name == "min") && args > 1:
				r.text[i] = map[string]string{"max": "GREATEST", "min": "LEAST"}[p.Name]
			case p.Name == "log" && args == 1:
				r.text[i] = "LOG10"
			}
		case p.Name == "isnull":
			r.text[i] = "IS NULL"
		case p.Name == "notnull":
			r.text[i] = "IS NOT NULL"
		case p.Name == "is":
			r.text[i] = "IS"
			if n >= 0 && (r.ps[n].Kind != querylang.TokWord || !(queryLiterals[r.ps[n].Name] || r.ps[n].Name == "not" ||
				r.ps[n].Name == "distinct" || r.ps[n].Name == "unknown")) {
				r.text[i] = "<=>" // SQLite's IS compares any two values, NULL-safe
			}
		case queryKeywords[p.Name]:
			r.text[i] = p.Text
		default:
			r.text[i] = quoteIdent(p.Text)
		}
	}
	return nil
}

// callArgs counts the top-level arguments of the call whose "(" is at open.
func (r *render) callArgs(open int) int {
	end := querylang.Matching(r.ps, open)
	if end < 0 || querylang.FirstSignificant(r.ps[:end], open+1) < 0 {
		return 0
	}
	n, depth := 1, 0
	for i := open + 1; i < end; i++ {
		switch r.ps[i].Text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// likes rewrites every x [NOT] LIKE y [ESCAPE z].
func (r *render) likes() error {
	for i, p := range r.ps {
		if p.Kind != querylang.TokWord || p.Name != "like" {
			continue
		}
		left := r.prev(i)
		if left >= 0 && r.ps[left].Name == "not" {
			left = r.prev(left)
		}
		ls, ok := r.operandBack(left)
		if !ok {
			return queryInvalid("query has a LIKE operand the mysql driver cannot delimit; parenthesize it (AQ-5)")
		}
		re, ok := r.operandFwd(r.next(i))
		if !ok {
			return queryInvalid("query has a LIKE pattern the mysql driver cannot delimit; parenthesize it (AQ-5)")
		}
		r.pre[ls] = asciiFoldOpen + "(" + r.pre[ls]
		r.post[left] += ")" + asciiLowerClose
		rs := r.next(i)
		if e := r.next(re); e >= 0 && r.ps[e].Name == "escape" {
			r.pre[rs] = asciiFoldOpen + "(" + r.pre[rs]
			r.post[re] += ")" + asciiLowerClose
			continue
		}
		r.pre[rs] = asciiFoldOpen + "(" + r.pre[rs]
		r.post[re] += ")" + asciiLowerClose + likeNoEscape
	}
	return nil
}

// isOperandWord reports whether piece i can be (the start of) an operand.
func (r *render) isOperandWord(i int) bool {
	p := r.ps[i]
	switch p.Kind {
	case querylang.TokQuotedID, querylang.TokString, querylang.TokNumber, querylang.TokBlob, querylang.TokParam:
		return true
	case querylang.TokWord:
		return !queryKeywords[p.Name] || queryLiterals[p.Name]
	}
	return false
}

// operandBack returns the first piece of the operand ending at end.
func (r *render) operandBack(end int) (int, bool) {
	for end >= 0 {
		start := -1
		switch p := r.ps[end]; {
		case p.Text == ")":
			open := querylang.MatchingBack(r.ps, end)
			if open < 0 {
				return 0, false
			}
			start = open
			if f := r.prev(open); f >= 0 && r.ps[f].Kind == querylang.TokWord && queryFunctions[r.ps[f].Name] != "" {
				start = f
			}
		case p.Kind == querylang.TokWord && p.Name == "end":
			return 0, false // CASE … END: parenthesize
		case r.isOperandWord(end):
			start = end
			for {
				d := r.prev(start)
				if d < 0 || r.ps[d].Text != "." {
					break
				}
				n := r.prev(d)
				if n < 0 || !(r.ps[n].Kind == querylang.TokWord || r.ps[n].Kind == querylang.TokQuotedID) {
					return 0, false
				}
				start = n
			}
		default:
			return 0, false
		}
		op := r.prev(start)
		if op < 0 || r.ps[op].Kind != querylang.TokOp || !tightOps[r.ps[op].Text] {
			return start, true
		}
		before := r.prev(op)
		if before < 0 || !(r.ps[before].Text == ")" || r.isOperandWord(before)) {
			if r.ps[op].Text == "-" || r.ps[op].Text == "+" {
				return op, true // unary
			}
			return 0, false
		}
		end = before
	}
	return 0, false
}

// operandFwd returns the last piece of the operand starting at start.
func (r *render) operandFwd(start int) (int, bool) {
	for start >= 0 {
		end := -1
		switch p := r.ps[start]; {
		case p.Kind == querylang.TokOp && (p.Text == "-" || p.Text == "+" || p.Text == "~"):
			start = r.next(start)
			continue
		case p.Text == "(":
			end = querylang.Matching(r.ps, start)
		case p.Kind == querylang.TokWord && p.Name == "case":
			return 0, false
		case r.isOperandWord(start):
			end = start
			if n := r.next(start); n >= 0 && r.ps[n].Text == "(" && p.Kind == querylang.TokWord {
				end = querylang.Matching(r.ps, n)
				break
			}
			for {
				d := r.next(end)
				if d < 0 || r.ps[d].Text != "." {
					break
				}
				n := r.next(d)
				if n < 0 || !(r.ps[n].Kind == querylang.TokWord || r.ps[n].Kind == querylang.TokQuotedID || r.ps[n].Text == "*") {
					return 0, false
				}
				end = n
			}
		default:
			return 0, false
		}
		if end < 0 {
			return 0, false
		}
		op := r.next(end)
		if op < 0 || r.ps[op].Kind != querylang.TokOp || !tightOps[r.ps[op].Text] {
			return end, true
		}
		start = r.next(op)
	}
	return 0, false
}

// jsonEach rewrites json_each(X) — X one string literal or bound value
// holding a JSON array — into a derived table of (key, value).
func (r *render) jsonEach(argOf []any, isArg []bool, coll string) error {
	for i, p := range r.ps {
		if p.Kind != querylang.TokWord || p.Name != "json_each" {
			continue
		}
		open := r.next(i)
		if open < 0 || r.ps[open].Text != "(" {
			continue
		}
		end := querylang.Matching(r.ps, open)
		a := r.next(open)
		if end < 0 || a < 0 || r.next(a) != end {
			return queryInvalid("json_each takes one string literal or bound value on the mysql driver (AQ-5)")
		}
		var doc string
		switch {
		case r.ps[a].Kind == querylang.TokString:
			doc = querylang.UnquoteIdent(r.ps[a].Text)
		case isArg[a]:
			s, ok := argOf[a].(string)
			if !ok {
				return queryInvalid("json_each takes a JSON array as text (AQ-5)")
			}
			doc = s
		default:
			return queryInvalid("json_each takes one string literal or bound value on the mysql driver (AQ-5)")
		}
		ty, err := jsonEachType(doc, coll)
		if err != nil {
			return err
		}
		arg := r.pre[a] + r.text[a] + r.post[a]
		r.text[i] = "(SELECT CAST(`_j`.`k` AS SIGNED) - 1 AS `key`, `_j`.`v` AS `value` FROM JSON_TABLE(" + arg +
			", '$[*]' COLUMNS (`k` FOR ORDINALITY, `v` " + ty + " PATH '$')) AS `_j`)"
		if n := r.next(end); n < 0 || !(r.ps[n].Name == "as" || (r.ps[n].Kind == querylang.TokWord && !queryKeywords[r.ps[n].Name]) ||
			r.ps[n].Kind == querylang.TokQuotedID) {
			r.text[i] += " AS `json_each`"
		}
		for k := open; k <= end; k++ {
			r.pre[k], r.text[k], r.post[k] = "", "", ""
		}
	}
	return nil
}

// jsonEachType is the JSON_TABLE column type of a json_each document's
// values: BIGINT when every element is an integer (or null), DOUBLE when
// every element is a number, else text in the store's collation.
func jsonEachType(doc, coll string) (string, error) {
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", queryInvalid("json_each: the document is not JSON (AQ-1)")
	}
	arr, ok := v.([]any)
	if !ok {
		return "", queryInvalid("json_each over anything but a JSON array is not supported on mysql (AQ-5)")
	}
	// One column type must give every element SQLite's type: integers,
	// reals or strings (and nulls), not a mix (AQ-5).
	ints, reals, strs := 0, 0, 0
	for _, e := range arr {
		switch x := e.(type) {
		case nil:
		case json.Number:
			if _, err := x.Int64(); err != nil {
				reals++
			} else {
				ints++
			}
		case string:
			strs++
		default:
			return "", queryInvalid("json_each over an array of booleans, objects or arrays is not supported on mysql (AQ-5)")
		}
	}
	switch {
	case reals == 0 && strs == 0:
		return "BIGINT", nil
	case ints == 0 && strs == 0:
		return "DOUBLE", nil
	case ints == 0 && reals == 0:
		return "LONGTEXT CHARACTER SET utf8mb4 COLLATE " + coll, nil
	}
	return "", queryInvalid("json_each over an array mixing integers, reals and strings is not supported on mysql (AQ-5)")
}

// companions appends to the top-level select list, for each item that is
// a bare reference to a float column of a declared table, the hidden
// column carrying its -0.0 flag. Only for one SELECT (no compound, no
// DISTINCT, no * item). Reports whether any was added.
func (r *render) companions(declared []queryTable) bool {
	floats := map[string]string{}
	for _, t := range declared {
		for l, n := range t.floats {
			floats[l] = n
		}
	}
	if len(floats) == 0 {
		return false
	}
	ps := r.ps
	i := querylang.FirstSignificant(ps, 0)
	if i >= 0 && ps[i].Name == "with" {
		// Skip the WITH list: to the first SELECT at depth 0.
		depth := 0
		for ; i < len(ps); i++ {
			switch {
			case ps[i].Text == "(":
				depth++
			case ps[i].Text == ")":
				depth--
			case depth == 0 && ps[i].Name == "select":
				goto found
			}
		}
		return false
	}
found:
	if i < 0 || i >= len(ps) || ps[i].Name != "select" {
		return false
	}
	sel := i
	if n := r.next(sel); n < 0 || ps[n].Name == "distinct" {
		return false
	}
	listEnd, depth := len(ps), 0
	for k := sel + 1; k < len(ps); k++ {
		switch {
		case ps[k].Text == "(":
			depth++
		case ps[k].Text == ")":
			depth--
		case depth == 0 && (ps[k].Name == "union" || ps[k].Name == "intersect" || ps[k].Name == "except"):
			return false
		case depth == 0 && listEnd == len(ps) && ps[k].Kind == querylang.TokWord &&
			(ps[k].Name == "from" || ps[k].Name == "where" || ps[k].Name == "group" || ps[k].Name == "having" ||
				ps[k].Name == "order" || ps[k].Name == "limit" || ps[k].Name == "window"):
			listEnd = k
		}
	}
	// Items of the select list.
	var items [][2]int
	start := sel + 1
	if n := r.next(sel); n >= 0 && ps[n].Name == "all" {
		start = n + 1
	}
	depth = 0
	for k := start; k <= listEnd; k++ {
		if k == listEnd || (depth == 0 && ps[k].Text == ",") {
			items = append(items, [2]int{start, k})
			start = k + 1
			continue
		}
		if ps[k].Text == "(" {
			depth++
		} else if ps[k].Text == ")" {
			depth--
		}
	}
	sig := func(a, b int) []int {
		var out []int
		for k := a; k < b; k++ {
			if ps[k].Kind != querylang.TokSpace {
				out = append(out, k)
			}
		}
		return out
	}
	var add []string
	lastPiece := -1
	for n, it := range items {
		s := sig(it[0], it[1])
		if len(s) == 0 {
			return false
		}
		for _, k := range s {
			if ps[k].Text == "*" && (len(s) == 1 || (len(s) == 3 && ps[s[1]].Text == ".")) {
				return false
			}
		}
		lastPiece = s[len(s)-1]
		// [q .] col [[AS] alias]
		ref := s
		if len(ref) >= 2 && ps[ref[len(ref)-2]].Name == "as" {
			ref = ref[:len(ref)-2]
		} else if len(ref) == 2 || len(ref) == 4 {
			ref = ref[:len(ref)-1]
		}
		isName := func(k int) bool { return ps[k].Kind == querylang.TokWord || ps[k].Kind == querylang.TokQuotedID }
		var col int
		qual := ""
		switch {
		case len(ref) == 1 && isName(ref[0]):
			col = ref[0]
		case len(ref) == 3 && isName(ref[0]) && ps[ref[1]].Text == "." && isName(ref[2]):
			col, qual = ref[2], r.text[ref[0]]+"."
		default:
			continue
		}
		if ps[col].Kind == querylang.TokWord && queryKeywords[ps[col].Name] {
			continue
		}
		name, ok := floats[ps[col].Name]
		if !ok {
			continue
		}
		add = append(add, qual+quoteIdent(nzColumnPrefix+name)+" AS "+quoteIdent(nzCompanionPrefix+strconv.Itoa(n)))
	}
	if len(add) == 0 || lastPiece < 0 {
		return false
	}
	r.post[lastPiece] += ", " + strings.Join(add, ", ")
	return true
}

// asciiFoldOpen and asciiLowerClose/asciiUpperClose wrap an expression
// "(x)" so only ASCII letters change case, as SQLite's lower, upper and
// LIKE do (MySQL's LOWER folds every letter): one REPLACE per letter,
// exact under the binary collation (AQ-5).
var (
	asciiFoldOpen   = strings.Repeat("REPLACE(", 26)
	asciiLowerClose = asciiFold('A', 'a')
	asciiUpperClose = asciiFold('a', 'A')
)

func asciiFold(from, to byte) string {
	var b strings.Builder
	for i := byte(0); i < 26; i++ {
		b.WriteString(", '" + string(from+i) + "', '" + string(to+i) + "')")
	}
	return b.String()
}

// caseFolds rewrites lower(x)/upper(x) to their ASCII-only forms.
func (r *render) caseFolds() {
	for i, p := range r.ps {
		if p.Kind != querylang.TokWord || (p.Name != "lower" && p.Name != "upper") || r.text[i] != strings.ToUpper(p.Name) {
			continue
		}
		open := r.next(i)
		end := querylang.Matching(r.ps, open)
		if open < 0 || r.ps[open].Text != "(" || end < 0 {
			continue
		}
		r.text[i] = asciiFoldOpen
		if p.Name == "lower" {
			r.post[end] += asciiLowerClose
		} else {
			r.post[end] += asciiUpperClose
		}
	}
}

// numKind is what the rewrite knows of an operand's type.
type numKind int

const (
	kindUnknown numKind = iota
	kindInt
	kindReal
)

func isMyKeyword(name string) bool { return queryKeywords[name] && !queryLiterals[name] }

// arithmetic rewrites x / y and x % y so they mean what SQLite means
// (AQ-5): SQLite divides two integers as integers (7/2 = 3) and takes the
// remainder of integers; MySQL's / always gives a fraction and its % of
// reals keeps one. x / y becomes x DIV y when both operands are known
// integers, stays when either is a known real; x % y stays only when both
// are known integers. Anything else — an operand whose type the text does
// not tell (a sum, a CASE, a CTE's column named like an alias…) or that
// cannot be delimited — is refused (CodeQueryInvalid): a refusal beats a
// wrong number. Known integers: integer literals and bound values,
// columns every declared table types as integer or boolean (unless the
// query also uses the name as an alias or a column-list name), count,
// length, instr, the ranking window functions, CAST(… AS INTEGER), and
// +, -, *, / of those; known reals: literals with a point or an exponent,
// bound floats, float columns, avg, CAST(… AS REAL), and arithmetic with
// one.
func (r *render) arithmetic(declared []queryTable, argOf []any, isArg []bool) error {
	cols := map[string]numKind{}
	seen := map[string]bool{}
	for _, t := range declared {
		for _, c := range t.cols {
			n := strings.ToLower(c.Name)
			k := kindUnknown
			switch c.Type {
			case driver.TypeInteger, driver.TypeBoolean:
				k = kindInt
			case driver.TypeFloat:
				k = kindReal
			}
			if seen[n] && cols[n] != k {
				k = kindUnknown
			}
			seen[n], cols[n] = true, k
		}
	}
	// Names the query defines itself (aliases, column lists) are unknown.
	for i, p := range r.ps {
		if p.Name == "as" {
			if n := r.next(i); n >= 0 {
				delete(cols, r.ps[n].Name)
			}
			continue
		}
		if p.Text == "(" {
			if pv := r.prev(i); pv >= 0 && (r.ps[pv].Kind == querylang.TokWord || r.ps[pv].Kind == querylang.TokQuotedID) &&
				queryFunctions[r.ps[pv].Name] == "" && !queryCallKeywords[r.ps[pv].Name] {
				if end := querylang.Matching(r.ps, i); end > 0 {
					for k := i + 1; k < end; k++ {
						delete(cols, r.ps[k].Name)
					}
				}
			}
		}
	}
	var typeOf func(a, b int) numKind
	primary := func(a, b int) numKind {
		p := r.ps[a]
		switch {
		case p.Kind == querylang.TokNumber:
			if strings.ContainsAny(r.text[a], ".eE") {
				return kindReal
			}
			return kindInt
		case isArg[a]:
			switch argOf[a].(type) {
			case int64:
				return kindInt
			case float64:
				return kindReal
			}
			return kindUnknown
		case p.Text == "(" && b > a:
			if f := r.next(a); f >= 0 && r.ps[f].Name == "select" {
				return kindUnknown
			}
			return typeOf(r.next(a), r.prev(b))
		case p.Kind == querylang.TokWord && r.next(a) >= 0 && r.ps[r.next(a)].Text == "(":
			open := r.next(a)
			end := querylang.Matching(r.ps, open)
			if end != b {
				return kindUnknown // FILTER / OVER: only ranking functions below
			}
			switch p.Name {
			case "count", "length", "char_length", "instr":
				return kindInt
			case "avg":
				return kindReal
			case "abs":
				return typeOf(r.next(open), r.prev(end))
			case "cast":
				switch r.text[r.prev(end)] {
				case "SIGNED":
					return kindInt
				case "DOUBLE":
					return kindReal
				}
			}
			return kindUnknown
		case p.Kind == querylang.TokWord || p.Kind == querylang.TokQuotedID:
			if b != a && !(b >= 2 && r.ps[r.prev(b)].Text == ".") {
				return kindUnknown
			}
			if p.Kind == querylang.TokWord && queryKeywords[p.Name] {
				return kindUnknown
			}
			return cols[r.ps[b].Name]
		}
		return kindUnknown
	}
	// Each range's kind is computed once: nested operands (1/(1/(…)))
	// would otherwise be typed again at every level (AQ-6).
	typed := map[[2]int]numKind{}
	var typeOfRange func(a, b int) numKind
	typeOf = func(a, b int) numKind {
		if k, ok := typed[[2]int{a, b}]; ok {
			return k
		}
		k := typeOfRange(a, b)
		typed[[2]int{a, b}] = k
		return k
	}
	typeOfRange = func(a, b int) numKind {
		if a < 0 || b < a {
			return kindUnknown
		}
		kind := kindInt
		for a >= 0 && a <= b {
			for a <= b && r.ps[a].Kind == querylang.TokOp && (r.ps[a].Text == "-" || r.ps[a].Text == "+") {
				a = r.next(a)
			}
			end := querylang.PrimaryEnd(r.ps, a, isMyKeyword)
			if a < 0 || end < 0 || end > b {
				return kindUnknown
			}
			// Ranking functions with OVER: integers.
			if r.ps[a].Kind == querylang.TokWord && (r.ps[a].Name == "row_number" || r.ps[a].Name == "rank" ||
				r.ps[a].Name == "dense_rank" || r.ps[a].Name == "ntile") {
				if k := r.next(a); k >= 0 && r.ps[k].Text == "(" {
					kind = max(kind, kindInt)
				}
			} else {
				switch pk := primary(a, end); pk {
				case kindUnknown:
					return kindUnknown
				default:
					kind = max(kind, pk)
				}
			}
			op := r.next(end)
			if op < 0 || op > b {
				return kind
			}
			switch r.ps[op].Text {
			case "+", "-", "*", "/", "%":
				a = r.next(op)
			default:
				return kindUnknown
			}
		}
		return kindUnknown
	}
	// chainStart and chainKind remember, per "/" or "%" already decided,
	// where its left operand starts and its kind, so the next operator of
	// the same multiplicative chain (1/2/3/…) continues from there instead
	// of walking the chain again: linear, not quadratic, in the chain's
	// length (AQ-6).
	chainStart, chainKind := map[int]int{}, map[int]numKind{}
	for i, p := range r.ps {
		if p.Kind != querylang.TokOp || (p.Text != "/" && p.Text != "%") {
			continue
		}
		// The left operand: the multiplicative chain ending before i.
		start, via := -1, -1
		for j := r.prev(i); j >= 0; {
			s := j
			switch q := r.ps[j]; {
			case q.Text == ")":
				open := querylang.MatchingBack(r.ps, j)
				if open < 0 {
					j = -1
					continue
				}
				s = open
				if f := r.prev(open); f >= 0 && r.ps[f].Kind == querylang.TokWord && queryFunctions[r.ps[f].Name] != "" {
					s = f
				}
			case q.Kind == querylang.TokWord || q.Kind == querylang.TokQuotedID:
				for {
					d := r.prev(s)
					if d < 0 || r.ps[d].Text != "." {
						break
					}
					s = r.prev(d)
				}
			case q.Kind == querylang.TokNumber || isArg[j]:
			default:
				s = -1
			}
			if s < 0 {
				break
			}
			if u := r.prev(s); u >= 0 && (r.ps[u].Text == "-" || r.ps[u].Text == "+") {
				if b := r.prev(u); b < 0 || !(r.ps[b].Text == ")" || r.isOperandWord(b)) {
					s = u
				}
			}
			start = s
			op := r.prev(s)
			if op < 0 || (r.ps[op].Text != "*" && r.ps[op].Text != "/" && r.ps[op].Text != "%") {
				break
			}
			if cs, ok := chainStart[op]; ok {
				start, via = cs, op
				break
			}
			j = r.prev(op)
		}
		rs := r.next(i)
		end := querylang.MulOperandEnd(r.ps, rs, isMyKeyword)
		var lk, rk numKind
		if start >= 0 && end >= 0 {
			if via >= 0 {
				// The chain up to the remembered operator, then what follows it.
				lk = kindUnknown
				if prevKind, tail := chainKind[via], typeOf(r.next(via), r.prev(i)); prevKind != kindUnknown && tail != kindUnknown {
					lk = max(prevKind, tail)
				}
			} else {
				lk = typeOf(start, r.prev(i))
			}
			rk = typeOf(rs, end)
			chainStart[i] = start
			chainKind[i] = max(lk, rk)
			if lk == kindUnknown || rk == kindUnknown {
				chainKind[i] = kindUnknown
			}
		}
		switch {
		case lk == kindInt && rk == kindInt:
			if p.Text == "/" {
				r.text[i] = " DIV "
			}
		case p.Text == "/" && (lk == kindReal || rk == kindReal):
		default:
			return queryInvalid("query uses %s on operands whose types (integer or real) the mysql driver cannot tell; CAST them (AQ-5)", p.Text)
		}
	}
	return nil
}
