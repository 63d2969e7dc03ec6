package sqlitesql

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Quote returns name as a quoted SQLite identifier: wrapped in double
// quotes, inner double quotes doubled. Identifiers are validated by sync
// (SCH-2) before they reach a driver; quoting is the second line of
// defence, so no identifier is ever spliced into SQL unquoted.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// ValidIdent reports whether name is a portable identifier (SCH-2): an
// ASCII letter or '_' first, then letters, digits or '_', 1…63 bytes. It
// does not check reserved prefixes (sync does).
func ValidIdent(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Column names of every application table, ahead of the app's columns.
const (
	PartitionColumn = "_sync_partition"
	VersionColumn   = "_sync_version"
)

// UpsertAlias names the target of an application table's upsert (INSERT
// INTO "t" AS _sync_t … ON CONFLICT … DO UPDATE). SCH-2 allows a table
// named excluded; without an alias, "excluded.col" in DO UPDATE names that
// table, the stored row, not the row proposed, and an update leaves the
// row as it was while the log records the new one
// (PUSH-4/writes-of-tables-named-like-sql-keywords). The alias takes the
// reserved prefix, so no application table or column can share it.
const UpsertAlias = "_sync_t"

// ScopeIndexName returns the name of the index that serves scans of table
// by scope column col (SCAN-5). The table name's length is part of the
// name, so names never collide across tables ("a"+"b_c" vs "a_b"+"c").
func ScopeIndexName(table, col string) string {
	return "_sync_sx_" + strconv.Itoa(len(table)) + "_" + table + "_" + col
}

// DeclaredIndexName returns the engine name of the declared index ix of
// table; unambiguous across tables (SCH-9).
func DeclaredIndexName(table, ix string) string {
	return "_sync_ix_" + strconv.Itoa(len(table)) + "_" + table + "_" + ix
}

// ColumnSQLType returns the declared SQLite type of a column type:
//
//	string  TEXT     (BINARY collation: bytewise order)
//	integer INTEGER  (int64)
//	float   no declared type, i.e. BLOB affinity: the engine stores the
//	        8-byte IEEE value as given. REAL affinity is NOT used: it stores
//	        an integral REAL such as -0.0 as the integer 0 and loses the sign
//	        (VAL-1; proven by the driver's fidelity test).
//	boolean BOOLEAN  (NUMERIC affinity: stores the integers 0/1, decoded
//	        through the schema type; the declared type tells an
//	        authoritative query's boolean result column from an integer
//	        one, AQ-4)
//	json    TEXT     (the document's text, byte-for-byte)
//	bytes   BLOB     (an empty blob is distinguished from NULL on read
//	        by a companion "IS NULL" column, see Table.SelectList)
func ColumnSQLType(t driver.ColumnType) string {
	switch t {
	case driver.TypeString, driver.TypeJSON:
		return "TEXT"
	case driver.TypeInteger:
		return "INTEGER"
	case driver.TypeBoolean:
		return "BOOLEAN"
	case driver.TypeBytes:
		return "BLOB"
	}
	return ""
}
