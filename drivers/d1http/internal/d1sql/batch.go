package d1sql

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// SQL that only the D1 driver (drivers/d1http) runs. D1 has no interactive
// transactions: a driver reads at once and sends its writes as one batch,
// which D1 applies all-or-nothing. A batch must therefore validate what
// the transaction read, and fail as a whole when another writer got there
// first (TX-1, TX-9, SEQ-4). Values cross a JSON transport that rounds
// integers beyond 2^53 and has no bytes type, so row values travel as
// JSON text inside one parameter and come back as text (VAL-1).

// ConflictConstraint is the name of the CHECK constraint whose failure
// means "another writer won": a driver that sees it in an engine error
// reports CodeWriteConflict (TX-9), never a constraint violation.
const ConflictConstraint = "sync_write_conflict"

// D1DDL creates the D1 driver's own infrastructure tables; idempotent. It
// is not part of InfraDDL (the SQLite driver has no use for it).
//
//	_sync_d1_stamps  partition → stamp: bumped by every transaction batch of
//	                 the partition; a batch carries the stamp its
//	                 transaction began on and fails (CHECK) if it moved
//	_sync_d1_guard   one row whose CHECK fails a batch whose precondition
//	                 (a boolean computed in the batch) is false
//	_sync_d1_write_guard  one row whose CHECK (GuardConstraint) fails a
//	                 batch whose guarded writes' conditions do not hold
//	                 (D1RowGuard, GW-2)
//	_sync_d1_bind_guard  one row whose CHECK (BindConstraint) fails a
//	                 batch that binds a client id bound to another actor
//	                 (D1BindGuard, CR-7)
//	_sync_d1_tokens  one row per write batch (its idempotency token), so
//	                 a batch whose outcome is unknown can be looked up, and
//	                 fenced off for good when it did not land
var D1DDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_d1_stamps (
	partition TEXT NOT NULL PRIMARY KEY,
	stamp INTEGER NOT NULL,
	CONSTRAINT ` + ConflictConstraint + ` CHECK (stamp > 0)
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_d1_guard (
	id INTEGER NOT NULL PRIMARY KEY,
	ok INTEGER NOT NULL,
	CONSTRAINT ` + ConflictConstraint + ` CHECK (ok = 1)
)`,
	`CREATE TABLE IF NOT EXISTS _sync_d1_write_guard (
	id INTEGER NOT NULL PRIMARY KEY,
	ok INTEGER NOT NULL,
	CONSTRAINT ` + GuardConstraint + ` CHECK (ok = 1)
)`,
	`CREATE TABLE IF NOT EXISTS _sync_d1_bind_guard (
	id INTEGER NOT NULL PRIMARY KEY,
	ok INTEGER NOT NULL,
	CONSTRAINT ` + BindConstraint + ` CHECK (ok = 1)
)`,
	`CREATE TABLE IF NOT EXISTS _sync_d1_tokens (
	token TEXT NOT NULL PRIMARY KEY,
	state TEXT NOT NULL,
	at_ms INTEGER NOT NULL,
	n INTEGER NOT NULL
) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS _sync_d1_tokens_by_time ON _sync_d1_tokens (at_ms)`,
}

// BindConstraint is the name of the CHECK constraint whose failure means
// "the client id is bound to another actor": a driver that sees it in an
// engine error reports CodeClientActorMismatch (CR-7).
const BindConstraint = "sync_client_bound"

// D1 transaction statements.
const (
	// D1BindGuard: ?1 partition, ?2 client id, ?3 actor id. After
	// sqlitesql.BindClient in the same batch, fails the batch on
	// BindConstraint when the client's record is bound to another actor
	// (CR-7).
	D1BindGuard = `INSERT INTO _sync_d1_bind_guard (id, ok)
VALUES (1, coalesce((SELECT actor_id FROM _sync_clients WHERE partition = ?1 AND client_id = ?2), ?3) = ?3)
ON CONFLICT (id) DO UPDATE SET ok = excluded.ok`
	// D1BeginRead: ?1 partition → the partition's stamp (0 when it has
	// none) and max_seq (0 when it has no commits), read together at Begin.
	D1BeginRead = `SELECT coalesce((SELECT stamp FROM _sync_d1_stamps WHERE partition = ?1), 0),
	coalesce((SELECT max_seq FROM _sync_partitions WHERE partition = ?1), 0)`
	// D1StampGuard: ?1 partition, ?2 the stamp the transaction began on.
	// It bumps the stamp when it still is ?2 and otherwise fails the whole
	// batch on the CHECK constraint ConflictConstraint (TX-9). It is the
	// first statement of every transaction batch, a rejected push's
	// (CommitRejected) included. (SQLite checks the
	// CHECK constraint on the candidate row before the upsert, so the
	// candidate is always valid; ?2 = 0 with no row is the first stamp,
	// and ?2 <> 0 with no row cannot happen: stamps are never deleted.)
	D1StampGuard = `INSERT INTO _sync_d1_stamps (partition, stamp) VALUES (?1, 1)
ON CONFLICT (partition) DO UPDATE SET stamp = CASE WHEN stamp = ?2 THEN stamp + 1 ELSE -1 END`
	// D1SchemaGuard: ?1 the schema layout text read before deciding (""
	// when none was stored). Fails the batch on ConflictConstraint when
	// another process changed the stored layout meanwhile (SCH-7).
	D1SchemaGuard = `INSERT INTO _sync_d1_guard (id, ok)
VALUES (1, coalesce((SELECT value FROM _sync_meta WHERE key = 'schema_layout'), '') = ?1)
ON CONFLICT (id) DO UPDATE SET ok = excluded.ok`
	// D1TokenApplied: ?1 token, ?2 now ms. The last statement of every
	// write batch; n keeps changes() of the statement before it (e.g. the
	// number of pruned commits), so a batch whose answer was lost can
	// still report it. A fenced token (D1TokenFence) makes it fail.
	D1TokenApplied = `INSERT INTO _sync_d1_tokens (token, state, at_ms, n) VALUES (?1, 'applied', ?2, changes())`
	// D1TokenExpire: ?1 cutoff ms; drops old tokens (served by _sync_d1_tokens_by_time).
	D1TokenExpire = `DELETE FROM _sync_d1_tokens WHERE at_ms < ?1`
	// D1TokenFence: ?1 token, ?2 now ms. Marks a token void unless its
	// batch landed; idempotent, so it may be retried blindly.
	D1TokenFence = `INSERT INTO _sync_d1_tokens (token, state, at_ms, n) VALUES (?1, 'void', ?2, 0) ON CONFLICT (token) DO NOTHING`
	// D1TokenState: ?1 token → state ('applied' | 'void'), n.
	D1TokenState = `SELECT state, n FROM _sync_d1_tokens WHERE token = ?1`
)

// D1 variants of the client-record reads: integers come back as text so
// values beyond 2^53 survive the JSON transport (VAL-1).
const (
	// D1SelectClient is SelectClient with integers as text.
	D1SelectClient = `SELECT actor_id, CAST(wire_version AS TEXT), CAST(cursor AS TEXT), CAST(updated_at_ms AS TEXT), subscriptions
FROM _sync_clients WHERE partition = ?1 AND client_id = ?2`
	// D1ListClientCursors is ListClientCursors with integers as text.
	D1ListClientCursors = `SELECT client_id, CAST(cursor AS TEXT), CAST(updated_at_ms AS TEXT) FROM _sync_clients
WHERE partition = ?1 AND client_id > ?2 ORDER BY client_id LIMIT ?3`
	// D1UpsertClient is UpsertClient with ?4…?6 bound as decimal text:
	// the INTEGER affinity of the columns stores them as exact integers.
	D1UpsertClient = sqlitesql.UpsertClient
	// D1ListRegistry is ListRegistry with updated_at_ms as text.
	D1ListRegistry = `SELECT partition, epoch, epoch_required, CAST(updated_at_ms AS TEXT) FROM _sync_registry
WHERE partition > ?1 ORDER BY partition LIMIT ?2`
	// D1SelectRegistry: ?1 partition → the entry, updated_at_ms as text.
	D1SelectRegistry = `SELECT partition, epoch, epoch_required, CAST(updated_at_ms AS TEXT) FROM _sync_registry WHERE partition = ?1`
	// D1SetHorizon: ?1 partition, ?2 horizon. Raises only, never past max_seq (HZ-1).
	D1SetHorizon = `UPDATE _sync_partitions SET horizon_seq = ?2 WHERE partition = ?1 AND horizon_seq < ?2 AND max_seq >= ?2`
	// D1AdminListClients and D1AdminListClientsAfter are
	// sqlitesql.AdminListClients and AdminListClientsAfter with the
	// integers as text; a page's last updated_at_ms is the next page's
	// position (ADM-2).
	D1AdminListClients      = `SELECT ` + d1AdminClientCols + sqlitesql.AdminClientsFirst
	D1AdminListClientsAfter = `SELECT ` + d1AdminClientCols + sqlitesql.AdminClientsAfter
	// D1MinClientCursor is MinClientCursor with the cursor as text (CR-5).
	D1MinClientCursor = `SELECT CAST(cursor AS TEXT) FROM _sync_clients INDEXED BY _sync_clients_by_cursor
WHERE partition = ?1 AND cursor >= ?3 AND updated_at_ms >= ?2 ORDER BY cursor LIMIT 1`

	d1AdminClientCols = `client_id, actor_id, CAST(wire_version AS TEXT), CAST(cursor AS TEXT), CAST(updated_at_ms AS TEXT), subscriptions`
)

// D1Window returns a window candidate statement (WindowSingle or
// WindowList) whose row version and creation time come back as text.
func D1Window(q string) string {
	r := strings.NewReplacer("ch.row_version,", "CAST(ch.row_version AS TEXT),",
		"c.created_at_ms\n", "CAST(c.created_at_ms AS TEXT)\n")
	return r.Replace(q)
}

// D1SelectList is SelectList for a JSON transport: "_sync_version" and
// integer and boolean columns as decimal text, floats as themselves (a
// JSON number: D1's JavaScript prints the shortest text that parses back
// to the same double — CAST(real AS TEXT) would not do: D1's SQLite
// prints 15 significant digits), bytes as hex; then one "IS NULL" column
// per bytes column (as SelectList), then one negative-zero flag per float
// column (JSON prints -0.0 as 0). Decode with D1DecodeRow.
func D1SelectList(x *sqlitesql.Table) string {
	cols := []string{"CAST(" + sqlitesql.Quote(sqlitesql.VersionColumn) + " AS TEXT)"}
	var nulls, negs []string
	for _, c := range x.Def.Columns {
		q := sqlitesql.Quote(c.Name)
		switch c.Type {
		case driver.TypeInteger, driver.TypeBoolean:
			cols = append(cols, "CAST("+q+" AS TEXT)")
		case driver.TypeBytes:
			cols = append(cols, "hex("+q+")")
			nulls = append(nulls, "("+q+" IS NULL)")
		default:
			cols = append(cols, q)
		}
		if c.Type == driver.TypeFloat {
			negs = append(negs, "("+q+" = 0 AND atan2("+q+", -1) < 0)")
		}
	}
	return strings.Join(append(append(cols, nulls...), negs...), ", ")
}

// D1Rows rewrites a row query of the table (Get, a scan page, an index
// lookup: each starts "SELECT " + SelectList()) to select D1SelectList.
func D1Rows(x *sqlitesql.Table, q string) string {
	head := "SELECT " + x.SelectList()
	if !strings.HasPrefix(q, head) {
		return q
	}
	return "SELECT " + D1SelectList(x) + q[len(head):]
}

// D1Param returns the SQL expression that turns JSON text element k of
// parameter p (an array built by D1Values) into a stored value of type t.
func D1Param(p string, k int, t driver.ColumnType) string {
	e := "(" + p + " ->> " + strconv.Itoa(k) + ")"
	switch t {
	case driver.TypeFloat:
		// Element k is [m, e] (the double is exactly m × 2^e, |m| < 2^53:
		// the product of an exact integer and an exact power of two), or
		// text for ±0. Never decimal text through CAST: D1's SQLite
		// converts some decimals one ulp off (1e-300).
		path := "'$[" + strconv.Itoa(k) + "]"
		return "(CASE WHEN json_type(" + p + ", " + path + "') = 'array' THEN (" + p + " ->> " + path + "[0]') * pow(2, " +
			p + " ->> " + path + "[1]') ELSE CAST(" + e + " AS REAL) END)"
	case driver.TypeBytes:
		return "unhex(" + e + ")"
	}
	return e
}

// D1Upsert is Upsert taking the row in two parameters whatever the
// table's width (D1 refuses > 100 bound parameters): ?1 partition, ?2 a
// JSON array [version, each column in order] built by D1RowArgs. It is
// D1Upserts.SQL(1); a driver upserting often keeps a D1Upserts per table.
func D1Upsert(x *sqlitesql.Table) string {
	return NewD1Upserts(x).SQL(1)
}

// D1UniqueProbe returns the statement that lists the rows of the table,
// other than ?3, holding the values ?2 (a JSON array, D1Values order of
// ix's columns) in the unique index ix: ?1 partition, ?4 limit → row ids.
// NULL never collides (SQLite's unique indexes allow many NULLs).
func D1UniqueProbe(x *sqlitesql.Table, ix driver.Index) string {
	preds := []string{sqlitesql.Quote(sqlitesql.PartitionColumn) + " = ?1"}
	for i, name := range ix.Columns {
		col, _ := x.Def.Column(name)
		preds = append(preds, sqlitesql.Quote(name)+" = "+D1Param("?2", i, col.Type))
	}
	pk := sqlitesql.Quote(x.Def.PrimaryKey)
	return "SELECT " + pk + " FROM " + sqlitesql.Quote(x.Def.Name) + " INDEXED BY " + sqlitesql.Quote(sqlitesql.DeclaredIndexName(x.Def.Name, ix.Name)) +
		" WHERE " + strings.Join(preds, " AND ") + " AND " + pk + " <> ?3 LIMIT ?4"
}

// D1IndexLookup is IndexLookupSQL for a JSON transport: ?1 partition, ?2
// the index values as a JSON array (D1Values, null matches NULL), ?3 the
// exclusive after-id, ?4 the limit. Columns: D1SelectList.
func D1IndexLookup(x *sqlitesql.Table, ix driver.Index) string {
	preds := []string{sqlitesql.Quote(sqlitesql.PartitionColumn) + " = ?1"}
	for i, name := range ix.Columns {
		col, _ := x.Def.Column(name)
		preds = append(preds, sqlitesql.Quote(name)+" IS "+D1Param("?2", i, col.Type))
	}
	pk := sqlitesql.Quote(x.Def.PrimaryKey)
	return "SELECT " + D1SelectList(x) + " FROM " + sqlitesql.Quote(x.Def.Name) +
		" INDEXED BY " + sqlitesql.Quote(sqlitesql.DeclaredIndexName(x.Def.Name, ix.Name)) +
		" WHERE " + strings.Join(preds, " AND ") + " AND " + pk + " > ?3 ORDER BY " + pk + " LIMIT ?4"
}
