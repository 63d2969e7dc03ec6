package sqlitesql

import (
	"slices"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Table is the SQL of one application table, built once per ensured
// schema. Every statement text is fixed, so a driver prepares each once.
type Table struct {
	// Def is the table definition the SQL was built from.
	Def driver.Table
	// Get selects one row: ?1 partition, ?2 id. Columns: SelectList.
	Get string
	// Upsert creates or fully replaces a row (ROW-1), replacing only on the
	// row's own primary key: a collision on a declared unique index fails
	// (SCH-10). Arguments: UpsertArgs.
	Upsert string
	// Delete removes a row: ?1 partition, ?2 id (ROW-3).
	Delete string
	// KeepTombstone records the row's version as its id's tombstone,
	// replacing an earlier one; run just before Delete (ROW-5): ?1
	// partition, ?2 id, ?3 table name. A missing row records nothing.
	KeepTombstone string
	// Tombstone reads the id's tombstone (ROW-5): ?1 partition, ?2 id,
	// ?3 table name → the row's version while it exists, else its
	// tombstone, else 0. One row.
	Tombstone string

	scopeCol map[string]string            // scope variable → column
	others   map[string][]string          // driving variable → other variables, in parameter order
	scans    map[string][scanKinds]string // driving variable → scan SQL of each kind
	nBytes   int                          // number of bytes columns (each adds an IS NULL column)

	// The multi-row upsert (UpsertRows): the text around its tuples, and
	// each size's text once built.
	upsertHead, upsertTail string
	upsertMu               gosync.Mutex
	upsertRows             []string
}

// The scan statements of each driving scope variable.
const (
	scanOne     = iota // one value: walks the scope index in id order
	scanList           // a value list, no bound (every value has < limit rows left)
	scanBounded        // a value list, ids ≤ the bound (last parameter)
	scanBound          // the bound of a value-list scan
	scanKinds
)

// MaxGetIn bounds the ids of one GetIn statement: with the partition
// that is D1's 100 bound parameters per statement.
const MaxGetIn = 99

// GetIn returns the statement that reads the rows among n ids (1 ≤ n ≤
// MaxGetIn), in no particular order: ?1 partition, ?2 … ?(n+1) the ids.
// Served by the primary key, like Get.
func (x *Table) GetIn(n int) string {
	var b strings.Builder
	b.WriteString("SELECT " + x.SelectList() + " FROM " + Quote(x.Def.Name) + " WHERE " + Quote(PartitionColumn) +
		" = ?1 AND " + Quote(x.Def.PrimaryKey) + " IN (")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("?" + strconv.Itoa(i+2))
	}
	b.WriteString(")")
	return b.String()
}

// MaxTombstonesIn bounds the ids of one TombstonesIn statement, and of
// the GetIn beside it in a push's read: with the partition and the table
// name that is D1's 100 bound parameters per statement.
const MaxTombstonesIn = MaxGetIn - 1

// TombstonesIn returns the statement that reads the tombstones (ROW-5)
// among n ids of one table (1 ≤ n ≤ MaxTombstonesIn), in no particular
// order: ?1 partition, ?2 table name, ?3 … ?(n+2) the ids → row_id,
// version. Served by the primary key of _sync_tombstones.
func TombstonesIn(n int) string {
	var b strings.Builder
	b.WriteString("SELECT row_id, version FROM _sync_tombstones WHERE partition = ?1 AND tbl = ?2 AND row_id IN (")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("?" + strconv.Itoa(i+3))
	}
	b.WriteString(")")
	return b.String()
}

// NewTable builds the SQL of t. t has been compiled by sync (SCH-1, SCH-2).
func NewTable(t driver.Table) *Table {
	x := &Table{Def: t, scopeCol: map[string]string{}, others: map[string][]string{}, scans: map[string][scanKinds]string{}}
	for _, c := range t.Columns {
		if c.Type == driver.TypeBytes {
			x.nBytes++
		}
	}
	tq, pk := Quote(t.Name), Quote(t.PrimaryKey)
	sel := "SELECT " + x.SelectList()
	key := " WHERE " + Quote(PartitionColumn) + " = ?1 AND " + pk + " = ?2"
	x.Get = sel + " FROM " + tq + key
	x.Delete = "DELETE FROM " + tq + key
	x.KeepTombstone = "INSERT INTO _sync_tombstones (partition, tbl, row_id, version) SELECT ?1, ?3, ?2, " + Quote(VersionColumn) +
		" FROM " + tq + key + " ON CONFLICT (partition, tbl, row_id) DO UPDATE SET version = excluded.version"
	x.Tombstone = "SELECT COALESCE((SELECT " + Quote(VersionColumn) + " FROM " + tq + key +
		"), (SELECT version FROM _sync_tombstones WHERE partition = ?1 AND tbl = ?3 AND row_id = ?2), 0)"

	names := []string{Quote(PartitionColumn), Quote(VersionColumn)}
	params := []string{"?1", "?2"}
	sets := []string{Quote(VersionColumn) + " = excluded." + Quote(VersionColumn)}
	for i, c := range t.Columns {
		names = append(names, Quote(c.Name))
		params = append(params, "?"+strconv.Itoa(i+3))
		if c.Name != t.PrimaryKey {
			sets = append(sets, Quote(c.Name)+" = excluded."+Quote(c.Name))
		}
	}
	// The target carries an alias (UpsertAlias), so "excluded" is always
	// the row proposed, even for a table named excluded.
	x.upsertHead = "INSERT INTO " + tq + " AS " + UpsertAlias + " (" + strings.Join(names, ", ") + ") VALUES "
	x.upsertTail = " ON CONFLICT (" + Quote(PartitionColumn) + ", " + pk + ") DO UPDATE SET " + strings.Join(sets, ", ")
	x.Upsert = x.upsertHead + "(" + strings.Join(params, ", ") + ")" + x.upsertTail
	x.upsertRows = make([]string, x.MaxUpsertRows()+1)

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
			p := "?" + strconv.Itoa(n)
			preds = append(preds, " AND ("+p+" IS NULL OR "+Quote(o.Column)+" IN (SELECT _sync_j.value FROM json_each("+p+") AS _sync_j))")
			n++
		}
		x.others[s.Variable] = others
		limit, bound := "?"+strconv.Itoa(n), "?"+strconv.Itoa(n+1)
		from := " FROM " + tq + " INDEXED BY " + Quote(ScopeIndexName(t.Name, s.Column)) +
			" WHERE " + Quote(PartitionColumn) + " = ?1 AND " + Quote(s.Column)
		after := " AND " + pk + " > ?3" + strings.Join(preds, "")
		order := " ORDER BY " + pk + " LIMIT " + limit
		// The value lists' aliases carry the reserved prefix (SCH-2): in
		// scanBound, "v.value" inside the sub-query named the table's own
		// column "value" when the table was called v, and the bound ended
		// the scan early (SCAN-1/tables-named-like-sql-aliases).
		in := " IN (SELECT _sync_j.value FROM json_each(?2) AS _sync_j)"
		x.scans[s.Variable] = [scanKinds]string{
			scanOne:     sel + from + " = ?2" + after + order,
			scanList:    sel + from + in + after + order,
			scanBounded: sel + from + in + after + " AND " + pk + " <= " + bound + order,
			scanBound: "SELECT min((SELECT " + pk + from + " = _sync_v.value" + after + " ORDER BY " + pk +
				" LIMIT 1 OFFSET " + limit + " - 1)) FROM json_each(?2) AS _sync_v",
		}
	}
	return x
}

// CreateSQL returns the statements that create the table, its scope
// indexes and its declared indexes.
//
// A scope index covers the row: ("_sync_partition", scope column, pk,
// "_sync_version", every other column in order), so a scan page is a walk
// of the index alone. The table's rows lie in rowid (insert) order, so
// one value's rows are spread over the whole table: through an index of
// (partition, column, pk) alone, a 1,000-row page of one of 20 values
// looked up about 280 table pages; through the cover it reads about 20
// index pages. The cover keeps the name and the leading columns of the
// index it replaced, so a store created before it (a plain scope index)
// scans through that index as before, and a driver from before it scans
// a newer store through the cover. On SQLite a migration that appends
// columns (SCH-6, ADD COLUMN) re-creates the table's scope indexes as
// covers of the new row (MigrationSQL with rebuildCovers): an index
// missing one selected column is no cover, and a scan through it looks
// every row up in the table again, through an index as wide as the row —
// which is what D1 does after such a migration, whose one request could
// not always fit the rebuild.
func (x *Table) CreateSQL() []string {
	t := x.Def
	defs := []string{Quote(PartitionColumn) + " TEXT NOT NULL", Quote(VersionColumn) + " INTEGER NOT NULL"}
	for _, c := range t.Columns {
		defs = append(defs, ColumnDef(c))
	}
	defs = append(defs, "PRIMARY KEY ("+Quote(PartitionColumn)+", "+Quote(t.PrimaryKey)+")")
	out := []string{"CREATE TABLE " + Quote(t.Name) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"}
	out = append(out, x.ScopeIndexSQL()...)
	for _, ix := range t.Indexes {
		out = append(out, CreateIndexSQL(t.Name, t.PrimaryKey, ix))
	}
	return out
}

// ScopeIndexSQL returns the CREATE INDEX statements of the table's scope
// indexes, one per scope column, each covering the row (see CreateSQL).
func (x *Table) ScopeIndexSQL() []string {
	t := x.Def
	var out []string
	for _, col := range x.scopeColumns() {
		// No column twice (a scope on the primary key): an index holds at
		// most as many columns as a table (SQLITE_LIMIT_COLUMN, 100 on D1).
		cols := []string{Quote(PartitionColumn), Quote(col)}
		if col != t.PrimaryKey {
			cols = append(cols, Quote(t.PrimaryKey))
		}
		cols = append(cols, Quote(VersionColumn))
		for _, c := range t.Columns {
			if c.Name != col && c.Name != t.PrimaryKey {
				cols = append(cols, Quote(c.Name))
			}
		}
		out = append(out, "CREATE INDEX "+Quote(ScopeIndexName(t.Name, col))+" ON "+Quote(t.Name)+
			" ("+strings.Join(cols, ", ")+")")
	}
	return out
}

// DropScopeIndexSQL returns the DROP INDEX statements of the table's
// scope indexes (IF EXISTS: a migration re-creating them runs them first).
func (x *Table) DropScopeIndexSQL() []string {
	var out []string
	for _, col := range x.scopeColumns() {
		out = append(out, "DROP INDEX IF EXISTS "+Quote(ScopeIndexName(x.Def.Name, col)))
	}
	return out
}

// scopeColumns returns the table's scope columns, each once, in the order
// of their first scope: one scope index each.
func (x *Table) scopeColumns() []string {
	var cols []string
	for _, s := range x.Def.Scopes {
		if !slices.Contains(cols, s.Column) {
			cols = append(cols, s.Column)
		}
	}
	return cols
}

// ColumnDef returns the column definition of c for CREATE TABLE and ALTER
// TABLE … ADD COLUMN.
func ColumnDef(c driver.Column) string {
	def := Quote(c.Name)
	if ty := ColumnSQLType(c.Type); ty != "" {
		def += " " + ty
	}
	if !c.Nullable {
		def += " NOT NULL"
	}
	return def
}

// CreateIndexSQL returns the CREATE INDEX statement of the declared index
// ix of table: on ("_sync_partition", columns…), so a unique index is unique
// per partition (SCH-9). A non-unique index ends with the primary key pk,
// so an index lookup walks its matches in id order from the after-id on,
// without sorting them (IXL-1, IXL-4).
func CreateIndexSQL(table, pk string, ix driver.Index) string {
	cols := []string{Quote(PartitionColumn)}
	for _, c := range ix.Columns {
		cols = append(cols, Quote(c))
	}
	kw := "CREATE INDEX "
	if ix.Unique {
		kw = "CREATE UNIQUE INDEX "
	} else {
		cols = append(cols, Quote(pk))
	}
	return kw + Quote(DeclaredIndexName(table, ix.Name)) + " ON " + Quote(table) + " (" + strings.Join(cols, ", ") + ")"
}

// DropIndexSQL returns the DROP INDEX statement of the declared index name of table.
func DropIndexSQL(table, name string) string {
	return "DROP INDEX " + Quote(DeclaredIndexName(table, name))
}

// SelectList is the column list every row read selects: "_sync_version",
// each column in order, then for each bytes column ("col" IS NULL), which
// tells an empty blob from NULL (the engine reports both as no bytes).
func (x *Table) SelectList() string {
	cols := []string{Quote(VersionColumn)}
	for _, c := range x.Def.Columns {
		cols = append(cols, Quote(c.Name))
	}
	for _, c := range x.Def.Columns {
		if c.Type == driver.TypeBytes {
			cols = append(cols, "("+Quote(c.Name)+" IS NULL)")
		}
	}
	return strings.Join(cols, ", ")
}

// Width is the number of columns SelectList selects.
func (x *Table) Width() int { return 1 + len(x.Def.Columns) + x.nBytes }

// BytesColumns is the number of bytes columns: SelectList adds an "IS NULL"
// column for each.
func (x *Table) BytesColumns() int { return x.nBytes }

// ScanStatements returns every scan statement text of the table, for
// preparation.
func (x *Table) ScanStatements() []string {
	var out []string
	for _, s := range x.Def.Scopes {
		sc := x.scans[s.Variable]
		out = append(out, sc[:]...)
	}
	return out
}

// ScanPlan is how to run one scan (SCAN-1…SCAN-5).
type ScanPlan struct {
	// None reports that the filter matches nothing (a key with no values,
	// or a variable that is not a scope of the table): return an empty
	// result without a query.
	None bool
	// Bound, when set, is a scalar query to run first. It bounds a
	// multi-value scan: the smallest, over the listed values, of the
	// limit-th matching id after AfterRowID (each value walks its own index
	// range, in order, at most limit rows). Every row of the page has an id
	// ≤ that bound, so the page query sorts at most about limit rows per
	// value, never the whole range. If it returns an id, run BoundedQuery
	// with Args plus that id; if NULL, run Query with Args.
	Bound        string
	BoundArgs    []any
	BoundedQuery string
	// Query selects the page; columns as SelectList.
	Query string
	Args  []any
}

// PlanScan looks the scanned table up (lookup, the Conn's table lookup:
// CodeUnknownTable, SCH-8) and plans the scan (ScanSQL).
func PlanScan(lookup func(string) (*Table, error), partition string, q driver.ScanQuery) (*Table, ScanPlan, error) {
	x, err := lookup(q.Table)
	if err != nil {
		return nil, ScanPlan{}, err
	}
	plan, err := x.ScanSQL(partition, q)
	return x, plan, err
}

// ScanSQL plans a scan: candidates come from the scope index of the
// driving filter key (the one with the fewest values), the other keys are
// column predicates, rows with id > AfterRowID ascending, at most Limit.
// One value walks the index in id order and stops at the limit.
func (x *Table) ScanSQL(partition string, q driver.ScanQuery) (ScanPlan, error) {
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return ScanPlan{}, driver.Errorf(driver.CodeScanRequiresScope, "scan requires a scope filter (V-6)")
	}
	if empty {
		return ScanPlan{None: true}, nil
	}
	for k := range q.Filter {
		if _, known := x.scopeCol[k]; !known {
			return ScanPlan{None: true}, nil
		}
	}
	vals := q.Filter[key]
	args := []any{partition, nil, q.AfterRowID}
	if len(vals) == 1 {
		args[1] = vals[0]
	} else {
		j, err := storelayout.JSONList(vals)
		if err != nil {
			return ScanPlan{}, err
		}
		args[1] = j
	}
	for _, o := range x.others[key] {
		ovals, present := q.Filter[o]
		if !present {
			args = append(args, nil)
			continue
		}
		j, err := storelayout.JSONList(ovals)
		if err != nil {
			return ScanPlan{}, err
		}
		args = append(args, j)
	}
	args = append(args, int64(q.Limit))
	if len(vals) == 1 {
		return ScanPlan{Query: x.scans[key][scanOne], Args: args}, nil
	}
	sc := x.scans[key]
	return ScanPlan{Bound: sc[scanBound], BoundArgs: args, BoundedQuery: sc[scanBounded],
		Query: sc[scanList], Args: append(make([]any, 0, len(args)+1), args...)}, nil
}
