package sqlitesql

import (
	"strings"

	"github.com/syncstore/syncstore/internal/storelayout"
)

// Authoritative queries (AQ-1…AQ-5) in the SQLite dialect: the relations
// a query may read.
//
// A query runs on a connection of its own whose TEMP schema holds, for
// every application table T, a view temp."T" exposing T's application
// columns (never "_sync_partition" or "_sync_version") of one partition:
// the one stored in the temp table _sync_q under the key 'partition'.
// SQLite resolves an unqualified name in the temp schema first, so
// "todos", "TODOS", [todos] and `todos` all read the view; CheckQueryText
// refuses schema-qualified names (main.todos), so a read of main."T" can
// only come from the view's own body, and the driver's authorizer refuses
// every other relation (infrastructure tables, sqlite_schema, pragma
// functions, undeclared tables). See docs/authoritative-query.md.

// QueryStateTable is the temp table the views read the partition from
// (key 'partition'). The layout the views were built from is kept apart,
// in QueryLayoutTable, which no view reads.
const (
	QueryStateTable  = "_sync_q"
	QueryLayoutTable = "_sync_qlayout"
)

// Query connection statements.
var (
	// QueryStateDDL creates the state tables (idempotent; temp schema).
	QueryStateDDL = []string{
		`CREATE TEMP TABLE IF NOT EXISTS _sync_q (k TEXT NOT NULL PRIMARY KEY, v TEXT) WITHOUT ROWID`,
		`CREATE TEMP TABLE IF NOT EXISTS _sync_qlayout (k TEXT NOT NULL PRIMARY KEY, v TEXT) WITHOUT ROWID`,
	}
)

const (
	// QuerySnapshot: ?1 partition, ?2 MetaSchemaLayout → the partition's
	// max_seq (0 when unknown), the stored layout text (NULL before any
	// EnsureSchema) and the layout the views were built from. Its read of
	// main starts the read transaction's snapshot (AQ-4).
	QuerySnapshot = `SELECT coalesce((SELECT max_seq FROM main._sync_partitions WHERE partition = ?1), 0),
	(SELECT value FROM main._sync_meta WHERE key = ?2),
	(SELECT v FROM temp._sync_qlayout WHERE k = 'layout')`
	// QuerySetPartition: ?1 the partition the views show.
	QuerySetPartition = `INSERT INTO temp._sync_q (k, v) VALUES ('partition', ?1) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	// QuerySetLayout: ?1 the layout text the views were built from.
	QuerySetLayout = `INSERT INTO temp._sync_qlayout (k, v) VALUES ('layout', ?1) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	// QueryListViews lists the views of the temp schema (to drop them
	// before building the views of a new layout).
	QueryListViews = `SELECT name FROM temp.sqlite_schema WHERE type = 'view' ORDER BY name`
	// QueryWritable and QueryReadOnly switch the query connection's
	// query_only flag: off while the driver sets the connection up (temp
	// schema only), on while the host's statement runs.
	QueryWritable = `PRAGMA query_only = 0`
	QueryReadOnly = `PRAGMA query_only = 1`
	// QueryBegin and QueryCommit bracket a query's read transaction: its
	// snapshot starts at QuerySnapshot, its writes are the temp schema's.
	QueryBegin  = `BEGIN`
	QueryCommit = `COMMIT`
	// QueryListModules lists the engine's virtual table modules (their
	// names are relations a query may not read, json_each and json_tree
	// aside).
	QueryListModules = `SELECT name FROM pragma_module_list`
)

// QueryViewSQL returns the CREATE statement of the temp view of the
// layout table t: its application columns, in order, of the partition in
// the state table. The partition predicate uses the table's primary key
// index ("_sync_partition", pk).
func QueryViewSQL(t storelayout.LayoutTable) string {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = Quote(c.Name)
	}
	return "CREATE TEMP VIEW " + Quote(t.Name) + " AS SELECT " + strings.Join(cols, ", ") +
		" FROM main." + Quote(t.Name) + " WHERE " + Quote(PartitionColumn) +
		" = (SELECT v FROM temp." + QueryStateTable + " WHERE k = 'partition')"
}

// DropQueryViewSQL returns the DROP statement of the temp view name.
func DropQueryViewSQL(name string) string { return "DROP VIEW temp." + Quote(name) }

// QueryFunctions are the functions a query may call: SQLite's core
// scalar, aggregate, window, date/time, math and JSON functions whose
// result depends only on their arguments (and the clock, for 'now').
// Left out on purpose: load_extension, the sqlite_* introspection
// functions, changes/total_changes/last_insert_rowid (connection state),
// random/randomblob/zeroblob (nondeterministic or unbounded), jsonb_*
// (engine-specific binary output), and anything an application or
// extension registers. drivers/sqlite's authorizer allows exactly these;
// d1sql.D1QueryFunctions is derived from them.
var QueryFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
		abs char coalesce concat concat_ws format glob hex if ifnull iif instr length like likelihood
		likely lower ltrim max min nullif octet_length printf quote replace round rtrim sign substr
		substring trim typeof unhex unicode unistr unlikely upper
		avg count group_concat string_agg sum total
		row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
		date time datetime julianday unixepoch strftime timediff current_date current_time current_timestamp
		acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2
		mod pi pow power radians sin sinh sqrt tan tanh trunc
		json json_array json_array_length json_error_position json_extract json_insert json_object
		json_patch json_pretty json_quote json_remove json_replace json_set json_type json_valid
		json_group_array json_group_object -> ->>`) {
		m[f] = true
	}
	return m
}()
