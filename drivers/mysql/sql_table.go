package mysql

import (
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Column names of every application table, ahead of the app's columns.
const (
	partitionColumn = "_sync_partition"
	versionColumn   = "_sync_version"
	// negZeroColumn lists the float columns of the row that hold -0.0
	// (their positions, comma-separated; NULL when none): InnoDB's DOUBLE
	// stores -0.0 as 0, so the sign is kept beside it (VAL-1).
	negZeroColumn = "_sync_negzero"
)

// keyedWidth is the width of a keyed string or JSON column (characters)
// or bytes column (bytes): a primary key, a scope column or a column of a
// declared index. InnoDB keys hold at most 3,072 bytes; utf8mb4 needs 4
// per character, so (partition 255) + (scope value 1,020) + (id 1,020)
// fits, as do two keyed strings in one declared index.
const keyedWidth = 255

// maxKeyBytes is InnoDB's limit on the length of one index key.
const maxKeyBytes = 3072

// table is the SQL of one application table, built once per ensured
// schema.
type table struct {
	def    driver.Table
	keyed  map[string]bool   // columns that are part of some key
	scopes map[string]string // scope variable → column
	others map[string][]string
	sel    string // the select list: version, then every column
	get    string // p, id
	del    string // p, id
	insert string // UpsertArgs
	upsert string // insert … ON DUPLICATE KEY UPDATE; "" when the table has a unique index
	update string // UpdateArgs
	// upsertRows[n] is upsert with n rows (n × insertArgs, 1 ≤ n ≤
	// maxRows); nil when upsert is "" (stage.go).
	upsertRows []string
	// insertRows[n] is insert with n rows, without ON DUPLICATE KEY: a
	// row whose key exists fails it with 1062 (guarded creates, GW-1;
	// 1 ≤ n ≤ maxRows).
	insertRows []string
	maxRows    int
	// guardedUpdate is update on the guard that the row is at a version
	// and that its scope columns hold the new values (GW-1): UpdateArgs,
	// then guardedUpdateArgs. ClientFoundRows is on (conn.go): it counts
	// the rows it matched.
	guardedUpdate string
	// guardCols are the positions in insertArgs of the scope columns, each
	// once, in guardedUpdate's order; pkArg the primary key's.
	guardCols []int
	pkArg     int
	// touchHead and touchRow frame guardTouch.
	touchHead, touchRow string
	// unique: the table has a declared unique index, so a 1062 may be a
	// collision on it rather than on the primary key.
	unique bool
}

// newTable builds the SQL of t. coll is the NO PAD binary collation.
func newTable(t driver.Table) *table {
	x := &table{def: t, keyed: keyedColumns(t), scopes: map[string]string{}, others: map[string][]string{}}
	q, pk := quoteIdent(t.Name), quoteIdent(t.PrimaryKey)
	cols := []string{quoteIdent(versionColumn), quoteIdent(negZeroColumn)}
	for _, c := range t.Columns {
		cols = append(cols, quoteIdent(c.Name))
	}
	x.sel = strings.Join(cols, ", ")
	key := " WHERE " + quoteIdent(partitionColumn) + " = ? AND " + pk + " = ?"
	x.get = "SELECT " + x.sel + " FROM " + q + key
	x.del = "DELETE FROM " + q + key
	x.insert = "INSERT INTO " + q + " (" + quoteIdent(partitionColumn) + ", " + x.sel + ") VALUES (" + qmarks(3+len(t.Columns)) + ")"
	sets := []string{quoteIdent(versionColumn) + " = ?", quoteIdent(negZeroColumn) + " = ?"}
	odku := []string{quoteIdent(versionColumn) + " = VALUES(" + quoteIdent(versionColumn) + ")",
		quoteIdent(negZeroColumn) + " = VALUES(" + quoteIdent(negZeroColumn) + ")"}
	for _, c := range t.Columns {
		if c.Name == t.PrimaryKey {
			continue
		}
		sets = append(sets, quoteIdent(c.Name)+" = ?")
		odku = append(odku, quoteIdent(c.Name)+" = VALUES("+quoteIdent(c.Name)+")")
	}
	x.update = "UPDATE " + q + " SET " + strings.Join(sets, ", ") + key
	guard := x.update + " AND " + quoteIdent(versionColumn) + " = ?"
	seenCol := map[string]bool{}
	for _, s := range t.Scopes {
		if seenCol[s.Column] {
			continue
		}
		seenCol[s.Column] = true
		guard += " AND " + quoteIdent(s.Column) + " <=> ?"
		for i, c := range t.Columns {
			if c.Name == s.Column {
				x.guardCols = append(x.guardCols, 3+i)
			}
		}
	}
	x.guardedUpdate = guard
	// guardTouch: a guard over several rows that writes nothing new.
	x.touchHead = "UPDATE " + q + " SET " + quoteIdent(versionColumn) + " = " + quoteIdent(versionColumn) +
		" WHERE " + quoteIdent(partitionColumn) + " = ? AND ("
	x.touchRow = "(" + pk + " = ? AND " + quoteIdent(versionColumn) + " = ?"
	for _, i := range x.guardCols {
		x.touchRow += " AND " + quoteIdent(t.Columns[i-3].Name) + " <=> ?"
	}
	x.touchRow += ")"
	for i, c := range t.Columns {
		if c.Name == t.PrimaryKey {
			x.pkArg = 3 + i
		}
	}
	unique := false
	for _, ix := range t.Indexes {
		unique = unique || ix.Unique
	}
	width := 3 + len(t.Columns)
	x.maxRows = max(1, min(batchRows, maxPlaceholders/width))
	head := "INSERT INTO " + q + " (" + quoteIdent(partitionColumn) + ", " + x.sel + ") VALUES "
	x.insertRows = make([]string, x.maxRows+1)
	for n := 1; n <= x.maxRows; n++ {
		x.insertRows[n] = head + placeholders(n, width)
	}
	x.unique = unique
	if !unique {
		// The primary key is the only unique key: ON DUPLICATE KEY can
		// fire on nothing else (SCH-10).
		x.upsert = x.insert + " ON DUPLICATE KEY UPDATE " + strings.Join(odku, ", ")
		tail := " ON DUPLICATE KEY UPDATE " + strings.Join(odku, ", ")
		x.upsertRows = make([]string, x.maxRows+1)
		for n := 1; n <= x.maxRows; n++ {
			x.upsertRows[n] = head + placeholders(n, width) + tail
		}
	}
	for _, s := range t.Scopes {
		x.scopes[s.Variable] = s.Column
	}
	for _, s := range t.Scopes {
		for _, o := range t.Scopes {
			if o.Variable != s.Variable {
				x.others[s.Variable] = append(x.others[s.Variable], o.Variable)
			}
		}
	}
	return x
}

// nullInRequired reports whether insertArgs' result binds NULL to a
// non-nullable column: such a row is written alone, so the engine's
// error belongs to its own UpsertRow.
func (x *table) nullInRequired(args []any) bool {
	for i, c := range x.def.Columns {
		if !c.Nullable && args[3+i] == nil {
			return true
		}
	}
	return false
}

// keyedColumns returns the columns of t that are part of a key.
func keyedColumns(t driver.Table) map[string]bool {
	k := map[string]bool{t.PrimaryKey: true}
	for _, s := range t.Scopes {
		k[s.Column] = true
	}
	for _, ix := range t.Indexes {
		for _, c := range ix.Columns {
			k[c] = true
		}
	}
	return k
}

// columnType returns the MySQL type of column c (keyed: part of a key).
//
//	string, json  LONGTEXT, or VARCHAR(255) when keyed; utf8mb4 with the
//	              NO PAD binary collation (bytewise order, "a" ≠ "a ")
//	integer       BIGINT
//	float         DOUBLE (bit-exact through the binary protocol)
//	boolean       TINYINT (0/1, decoded through the schema type)
//	bytes         LONGBLOB, or VARBINARY(255) when keyed
func columnType(c driver.Column, keyed bool, coll string) string {
	switch c.Type {
	case driver.TypeString, driver.TypeJSON:
		ty := "LONGTEXT"
		if keyed {
			ty = "VARCHAR(255)"
		}
		return ty + " CHARACTER SET utf8mb4 COLLATE " + coll
	case driver.TypeInteger:
		return "BIGINT"
	case driver.TypeFloat:
		return "DOUBLE"
	case driver.TypeBoolean:
		return "TINYINT"
	}
	if keyed {
		return "VARBINARY(255)"
	}
	return "LONGBLOB"
}

// columnDef returns the definition of c for CREATE TABLE and ALTER TABLE.
func columnDef(c driver.Column, keyed bool, coll string) string {
	def := quoteIdent(c.Name) + " " + columnType(c, keyed, coll)
	if c.Nullable {
		return def + " NULL"
	}
	return def + " NOT NULL"
}

// scopeIndexName is the engine name of the scope index on column col of
// t: "_sync_s" + the column's position, short (MySQL names ≤ 64) and
// stable (columns are never reordered, SCH-6). Index names are per table
// in MySQL, and declared index names never start with "_sync" (SCH-2).
// A scope on the primary-key column has no index of its own: the primary
// key (partition, id) is that index, and its name is "PRIMARY" (a key
// (partition, id, id) is refused by MySQL, error 1060).
func scopeIndexName(t driver.Table, col string) string {
	if col == t.PrimaryKey {
		return "PRIMARY"
	}
	for i, c := range t.Columns {
		if c.Name == col {
			return "_sync_s" + itoa(int64(i))
		}
	}
	return "_sync_s"
}

// createSQL returns the CREATE TABLE of x with its scope and declared
// indexes (idempotent: IF NOT EXISTS).
func (x *table) createSQL(coll string) string {
	t := x.def
	defs := []string{quoteIdent(partitionColumn) + " VARBINARY(255) NOT NULL", quoteIdent(versionColumn) + " BIGINT NOT NULL",
		quoteIdent(negZeroColumn) + " VARBINARY(1024) NULL"}
	for _, c := range t.Columns {
		defs = append(defs, columnDef(c, x.keyed[c.Name], coll))
	}
	defs = append(defs, "PRIMARY KEY ("+quoteIdent(partitionColumn)+", "+quoteIdent(t.PrimaryKey)+")")
	seen := map[string]bool{}
	for _, s := range t.Scopes {
		if seen[s.Column] || s.Column == t.PrimaryKey {
			continue // one index per column; the primary key serves a scope on it
		}
		seen[s.Column] = true
		defs = append(defs, "KEY "+quoteIdent(scopeIndexName(t, s.Column))+" ("+quoteIdent(partitionColumn)+", "+
			quoteIdent(s.Column)+", "+quoteIdent(t.PrimaryKey)+")")
	}
	for _, ix := range t.Indexes {
		if servingIndex(t, ix) != ix.Name {
			continue // its twin serves it
		}
		kw := "KEY "
		if ix.Unique {
			kw = "UNIQUE KEY "
		}
		defs = append(defs, kw+quoteIdent(ix.Name)+" ("+indexColumns(ix)+")")
	}
	return "CREATE TABLE IF NOT EXISTS " + quoteIdent(t.Name) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=" + coll
}

// servingIndex returns the name of the engine index that serves the
// declared index ix of t: ix's own, unless an index the table has anyway
// holds the very same key — then that twin, and ix is not created. A
// non-unique index on a scope column c (optionally followed by the
// primary key) is keyed (partition, c, id), InnoDB appending the primary
// key's columns it lacks: the scope index's key exactly (scopeIndexName).
// One on the primary-key column is the primary key. Every write of a row
// would otherwise update two identical trees; in a store of many
// partitions (W8) each is a page of its own at the partition's spot.
// Stores created before keep the duplicate; nothing reads it any more.
func servingIndex(t driver.Table, ix driver.Index) string {
	cols := ix.Columns
	if len(cols) == 2 && cols[1] == t.PrimaryKey && cols[0] != t.PrimaryKey {
		cols = cols[:1]
	}
	if ix.Unique || len(cols) != 1 {
		return ix.Name
	}
	if cols[0] == t.PrimaryKey {
		return "PRIMARY"
	}
	for _, s := range t.Scopes {
		if s.Column == cols[0] {
			return scopeIndexName(t, cols[0])
		}
	}
	return ix.Name
}

// indexColumns returns the key of a declared index: the partition first,
// so a unique index is unique per partition (SCH-9).
func indexColumns(ix driver.Index) string {
	cols := []string{quoteIdent(partitionColumn)}
	for _, c := range ix.Columns {
		cols = append(cols, quoteIdent(c))
	}
	return strings.Join(cols, ", ")
}

// checkKeyLengths enforces InnoDB's key-length limit on t's declared
// indexes as a documented limit (docs/mysql.md): CodeSchemaInvalid.
func checkKeyLengths(t driver.Table) error {
	for _, ix := range t.Indexes {
		n := 255 + 2
		for _, name := range ix.Columns {
			c, _ := t.Column(name)
			switch c.Type {
			case driver.TypeString, driver.TypeJSON:
				n += 4*keyedWidth + 2
			case driver.TypeBytes:
				n += keyedWidth + 2
			case driver.TypeBoolean:
				n++
			default:
				n += 8
			}
		}
		if n > maxKeyBytes {
			return driver.Errorf(driver.CodeSchemaInvalid,
				"table %s: index %s needs %d key bytes; MySQL allows %d: at most two string or JSON columns per index (see docs/mysql.md)",
				t.Name, ix.Name, n, maxKeyBytes)
		}
	}
	return nil
}

// guardTouch is the guard of n guarded updates of x (closeGuardedRun):
// it matches each row at its key, its base version and its new scope
// values, and sets nothing new, so the rows it matched (ClientFoundRows)
// must be n (GW-1). Arguments: the partition, then per row its id, its
// base version and its guardCols values.
func (x *table) guardTouch(n int) string {
	var b strings.Builder
	b.WriteString(x.touchHead)
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(x.touchRow)
	}
	b.WriteString(")")
	return b.String()
}
