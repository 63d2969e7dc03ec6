package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Column names of every application table, ahead of the app's columns.
const (
	partitionColumn = "_sync_partition"
	versionColumn   = "_sync_version"
)

// upsertAlias names the target of an application table's upsert (INSERT
// INTO "t" AS _sync_t … ON CONFLICT … DO UPDATE). SCH-2 allows a table
// named excluded; without an alias, "EXCLUDED.col" in DO UPDATE is
// ambiguous for it and every write fails with SQLSTATE 42P09
// (PUSH-4/writes-of-tables-named-like-sql-keywords). PostgreSQL documents
// the alias for exactly this: it hides the table's own name. It takes the
// reserved prefix, so no application table or column can share it.
const upsertAlias = "_sync_t"

// maxIdentBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1). Longer
// names are silently truncated by the server, so derived names are kept
// under it (pgName).
const maxIdentBytes = 63

// quote returns name as a quoted identifier (inner quotes doubled).
// Identifiers are validated by sync (SCH-2); quoting is the second line of
// defence, so no identifier is ever spliced into SQL unquoted.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// pgName returns name if it fits in 63 bytes, else a prefix of it plus a
// hash of the whole, so two long names never collide by truncation.
func pgName(name string) string {
	if len(name) <= maxIdentBytes {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxIdentBytes-17] + "_" + hex.EncodeToString(sum[:8])
}

// scopeIndexName names the index serving scans of table by scope column
// col (SCAN-5); the table name's length makes it unambiguous.
func scopeIndexName(table, col string) string {
	return pgName("_sync_sx_" + strconv.Itoa(len(table)) + "_" + table + "_" + col)
}

// declaredIndexName names declared index ix of table (SCH-9).
func declaredIndexName(table, ix string) string {
	return pgName("_sync_ix_" + strconv.Itoa(len(table)) + "_" + table + "_" + ix)
}

// columnSQLType returns the PostgreSQL type of a column type:
//
//	string  text COLLATE "C"  (bytewise order)
//	integer bigint
//	float   float8            (IEEE binary64; the binary protocol keeps every bit, -0.0 and subnormals included)
//	boolean boolean
//	json    text              (not jsonb: the text round-trips byte-for-byte, VAL-1)
//	bytes   bytea
func columnSQLType(t driver.ColumnType) string {
	switch t {
	case driver.TypeString:
		return textC
	case driver.TypeInteger:
		return "bigint"
	case driver.TypeFloat:
		return "float8"
	case driver.TypeBoolean:
		return "boolean"
	case driver.TypeJSON:
		return "text"
	case driver.TypeBytes:
		return "bytea"
	}
	return "text"
}

func columnDef(c driver.Column) string {
	def := quote(c.Name) + " " + columnSQLType(c.Type)
	if !c.Nullable {
		def += " NOT NULL"
	}
	return def
}

// table is the SQL of one application table, built once per ensured
// schema; every statement text is fixed, so pgx prepares each once per
// connection.
type table struct {
	def driver.Table
	get string // $1 partition, $2 id
	// getIn reads the rows among a list of ids ($1 partition, $2 ids as
	// text[]), in no order: one primary-key lookup per id. The lookup is
	// a LATERAL kept apart (OFFSET 0) so no plan can turn it into a join
	// against the partition's whole range: a generic plan made while the
	// table was small (or never analyzed) did that as a hash join over
	// every row of the partition (TestPlanPushRead). Its aliases carry
	// the reserved prefix (SCH-2): inside the LATERAL a plain "k.id"
	// named the application table itself when that table was called k.
	getIn  string
	upsert string // $1 partition, $2 version, $3… columns
	// upsertHead and upsertTail frame the VALUES tuples of a multi-row
	// upsert (upsertN); multi caches its texts by row count.
	upsertHead, upsertTail string
	multiMu                gosync.Mutex
	multi                  map[int]string // upsertN by n, insertN by -n
	guardedUpdate          string         // upsertArgs, then $n base version
	// delete removes the row and keeps its version as the id's tombstone
	// (ROW-5), one statement: $1 partition, $2 id, $3 table name.
	delete string
	// tombstone reads the row's version while it exists, else its
	// tombstone, else 0 (ROW-5): $1 partition, $2 id, $3 table name.
	tombstone string
	unique    bool // the table has a unique declared index (SCH-10)

	scopeCol map[string]string    // scope variable → column
	others   map[string][]string  // driving variable → other variables, in parameter order
	scans    map[string][2]string // driving variable → [one value, value list]
	covered  []string             // variables scanned through their scope column's index pair
}

// newTable is newTableWith(t, nil): scans through the scope indexes alone.
func newTable(t driver.Table) *table { return newTableWith(t, nil) }

// newTableWith builds t's statements; a scope column whose index pair
// (coverOf) is in valid (by name, both indexes) is scanned through the
// pair.
func newTableWith(t driver.Table, valid map[string]bool) *table {
	x := &table{def: t, scopeCol: map[string]string{}, others: map[string][]string{}, scans: map[string][2]string{}}
	for _, ix := range t.Indexes {
		x.unique = x.unique || ix.Unique
	}
	tq, pk, part := quote(t.Name), quote(t.PrimaryKey), quote(partitionColumn)
	sel := "SELECT " + x.selectList("")
	key := " WHERE " + part + " = $1 AND " + pk + " = $2"
	x.get = sel + " FROM " + tq + key
	x.getIn = "SELECT _sync_r.* FROM unnest($2::text[]) AS _sync_k(_sync_id) CROSS JOIN LATERAL (" + sel + " FROM " + tq +
		" WHERE " + part + " = $1 AND " + pk + " = _sync_k._sync_id OFFSET 0) AS _sync_r"
	x.delete = "WITH _sync_d AS (DELETE FROM " + tq + key + " RETURNING " + quote(versionColumn) + " AS _sync_v)" +
		" INSERT INTO _sync_tombstones (partition, tbl, row_id, version) SELECT $1::text, $3::text, $2::text, _sync_v FROM _sync_d" +
		" ON CONFLICT (partition, tbl, row_id) DO UPDATE SET version = EXCLUDED.version"
	x.tombstone = "SELECT COALESCE((SELECT " + quote(versionColumn) + " FROM " + tq + key +
		"), (SELECT version FROM _sync_tombstones WHERE partition = $1 AND tbl = $3::text AND row_id = $2), 0)"
	names := []string{part, quote(versionColumn)}
	params := []string{"$1", "$2"}
	sets := []string{quote(versionColumn) + " = EXCLUDED." + quote(versionColumn)}
	for i, c := range t.Columns {
		names = append(names, quote(c.Name))
		params = append(params, "$"+strconv.Itoa(i+3))
		if c.Name != t.PrimaryKey {
			sets = append(sets, quote(c.Name)+" = EXCLUDED."+quote(c.Name))
		}
	}
	x.upsertHead = "INSERT INTO " + tq + " AS " + upsertAlias + " (" + strings.Join(names, ", ") + ") VALUES "
	x.upsertTail = " ON CONFLICT (" + part + ", " + pk + ") DO UPDATE SET " + strings.Join(sets, ", ")
	x.upsert = x.upsertHead + "(" + strings.Join(params, ", ") + ")" + x.upsertTail

	// The guarded update (UpsertRowGuarded, base > 0): upsertArgs, then
	// $n the base version. It writes the row only when it is at the base
	// version with the scope columns already holding the new values, and
	// otherwise divides by zero (SQLSTATE 22012), which fails the Tx:
	// CodeWriteConflict, nothing written (GW-1, GW-2). The CTE's name has
	// the reserved prefix (SCH-2).
	upd := []string{quote(versionColumn) + " = $2"}
	where := []string{part + " = $1", quote(versionColumn) + " = $" + strconv.Itoa(len(params)+1)}
	param := map[string]string{}
	for i, c := range t.Columns {
		p := params[i+2]
		param[c.Name] = p
		if c.Name == t.PrimaryKey {
			where = append(where, pk+" = "+p)
		} else {
			upd = append(upd, quote(c.Name)+" = "+p)
		}
	}
	for _, s := range t.Scopes {
		where = append(where, quote(s.Column)+" IS NOT DISTINCT FROM "+param[s.Column])
	}
	x.guardedUpdate = "WITH _sync_u AS (UPDATE " + tq + " SET " + strings.Join(upd, ", ") + " WHERE " +
		strings.Join(where, " AND ") + " RETURNING 1) SELECT 1 / (SELECT count(*)::int FROM _sync_u)"

	for _, s := range t.Scopes {
		x.scopeCol[s.Variable] = s.Column
	}
	for _, s := range t.Scopes {
		var others, preds []string
		n := 4
		for _, o := range t.Scopes {
			if o.Variable == s.Variable {
				continue
			}
			others = append(others, o.Variable)
			p := "$" + strconv.Itoa(n)
			preds = append(preds, " AND ("+p+"::text[] IS NULL OR "+quote(o.Column)+" = ANY("+p+"::text[]))")
			n++
		}
		x.others[s.Variable] = others
		limit := "$" + strconv.Itoa(n)
		where := " WHERE " + part + " = $1 AND " + quote(s.Column)
		cond := " AND " + pk + " > $3" + strings.Join(preds, "")
		tail := " ORDER BY " + pk + " LIMIT " + limit
		// One value walks the scope index (partition, column, id) in id
		// order and stops at the limit. A list takes at most limit rows
		// from each value's index range (LATERAL), then sorts those: the
		// cost is O(values × limit), never the size of the table. The
		// aliases carry the reserved prefix (SCH-2): with "v(value)", a
		// table named v read its own column "value" as the list's
		// (SCAN-1/tables-named-like-sql-aliases).
		one := func(value string) string { return sel + " FROM " + tq + where + " = " + value + cond + tail }
		if cv, ok := coverOf(t, s.Column); ok && valid[cv.index] && valid[cv.rest] {
			// With the scope's index pair (scanlayout.go): the same walk
			// over the cover (index-only) and over the rest, merged in id
			// order. Each branch repeats the pair's predicate, so each
			// can use its partial index only.
			one = func(value string) string {
				return "SELECT _sync_b.* FROM ((" + sel + " FROM " + tq + where + " = " + value + cond + " AND " + cv.inline + tail +
					") UNION ALL (" + sel + " FROM " + tq + where + " = " + value + cond + " AND NOT (" + cv.inline + ")" + tail +
					")) AS _sync_b ORDER BY _sync_b." + pk + " LIMIT " + limit
			}
			x.covered = append(x.covered, s.Variable)
		}
		x.scans[s.Variable] = [2]string{
			one("$2"),
			"SELECT _sync_r.* FROM unnest($2::text[]) AS _sync_v(_sync_value) CROSS JOIN LATERAL (" +
				one("_sync_v._sync_value") + ") AS _sync_r ORDER BY _sync_r." + pk + " LIMIT " + limit,
		}
	}
	return x
}

// createSQL returns the statements that create the table, its scope
// indexes and its declared indexes.
func (x *table) createSQL() []string {
	t := x.def
	defs := []string{quote(partitionColumn) + " " + textC + " NOT NULL", quote(versionColumn) + " bigint NOT NULL"}
	for _, c := range t.Columns {
		defs = append(defs, columnDef(c))
	}
	defs = append(defs, "PRIMARY KEY ("+quote(partitionColumn)+", "+quote(t.PrimaryKey)+")")
	out := []string{"CREATE TABLE " + quote(t.Name) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"}
	seen := map[string]bool{}
	for _, s := range t.Scopes {
		if seen[s.Column] {
			continue
		}
		seen[s.Column] = true
		out = append(out, "CREATE INDEX "+quote(scopeIndexName(t.Name, s.Column))+" ON "+quote(t.Name)+
			" ("+quote(partitionColumn)+", "+quote(s.Column)+", "+quote(t.PrimaryKey)+")")
	}
	out = append(out, coverSQL(t, "")...)
	for _, ix := range t.Indexes {
		out = append(out, createIndexSQL(t.Name, ix))
	}
	return out
}

// createIndexSQL: on (partition, columns…), so a unique index is unique
// per partition (SCH-9).
func createIndexSQL(tbl string, ix driver.Index) string {
	cols := []string{quote(partitionColumn)}
	for _, c := range ix.Columns {
		cols = append(cols, quote(c))
	}
	kw := "CREATE INDEX "
	if ix.Unique {
		kw = "CREATE UNIQUE INDEX "
	}
	return kw + quote(declaredIndexName(tbl, ix.Name)) + " ON " + quote(tbl) + " (" + strings.Join(cols, ", ") + ")"
}

// selectList is the column list of every row read: the version, then each
// column in order, optionally qualified by alias.
func (x *table) selectList(alias string) string {
	p := ""
	if alias != "" {
		p = alias + "."
	}
	cols := []string{p + quote(versionColumn)}
	for _, c := range x.def.Columns {
		cols = append(cols, p+quote(c.Name))
	}
	return strings.Join(cols, ", ")
}

// scanPlan returns the query and arguments of a scan (SCAN-1…SCAN-5), or
// none when the filter matches nothing. Candidates come from the scope
// index of the filter key with the fewest values; the other keys are
// column predicates.
func (x *table) scanPlan(partition string, q driver.ScanQuery) (query string, args []any, none bool, err error) {
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return "", nil, false, driver.Errorf(driver.CodeScanRequiresScope, "scan requires a scope filter (V-6)")
	}
	if empty {
		return "", nil, true, nil
	}
	for k := range q.Filter {
		if _, known := x.scopeCol[k]; !known {
			return "", nil, true, nil
		}
	}
	vals := dedupe(q.Filter[key])
	args = []any{partition, nil, q.AfterRowID}
	if len(vals) == 1 {
		args[1] = vals[0]
		query = x.scans[key][0]
	} else {
		args[1] = vals
		query = x.scans[key][1]
	}
	for _, o := range x.others[key] {
		ovals, present := q.Filter[o]
		if !present {
			args = append(args, []string(nil))
			continue
		}
		args = append(args, dedupe(ovals))
	}
	return query, append(args, int64(q.Limit)), false, nil
}

// dedupe returns the distinct values of vs, sorted.
func dedupe(vs []string) []string {
	out := append([]string(nil), vs...)
	sort.Strings(out)
	n := 0
	for i, v := range out {
		if i == 0 || v != out[n-1] {
			out[n] = v
			n++
		}
	}
	return out[:n]
}

// maxUpsertRows bounds the rows of one multi-row upsert (upsertN): the
// statement texts a table can have (each prepared once per connection),
// and with PostgreSQL's 65,535 bound parameters, its width.
const maxUpsertRows = 100

// upsertRows is how many rows one upsert of x may carry.
func (x *table) upsertRows() int {
	return min(maxUpsertRows, 65535/(2+len(x.def.Columns)))
}

// upsertN is the upsert of n rows of x: upsertArgs of each row in turn
// ($1… the first row's, then the next row's), applied as n single-row
// upserts would be provided no id repeats (PostgreSQL refuses to update
// one row twice in one statement; Tx.UpsertRow starts a new statement
// then). upsertN(1) is x.upsert.
func (x *table) upsertN(n int) string {
	if n == 1 {
		return x.upsert
	}
	return x.rowsN(n, x.upsertTail)
}

// insertN is upsertN without its ON CONFLICT clause: the create of n rows,
// failing the whole statement (23505) when one of them exists — the guard
// of UpsertRowGuarded at base 0 (GW-1, GW-2).
func (x *table) insertN(n int) string { return x.rowsN(-n, "") }

// rowsN builds and caches the INSERT of |key| rows followed by tail
// (upsertN: key > 0, insertN: key < 0).
func (x *table) rowsN(key int, tail string) string {
	x.multiMu.Lock()
	defer x.multiMu.Unlock()
	if s, ok := x.multi[key]; ok {
		return s
	}
	n := max(key, -key)
	width := 2 + len(x.def.Columns)
	var b strings.Builder
	b.WriteString(x.upsertHead)
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for k := 1; k <= width; k++ {
			if k > 1 {
				b.WriteString(", ")
			}
			b.WriteString("$" + strconv.Itoa(r*width+k))
		}
		b.WriteByte(')')
	}
	b.WriteString(tail)
	if x.multi == nil {
		x.multi = map[int]string{}
	}
	x.multi[key] = b.String()
	return x.multi[key]
}
