package mysql

import "strings"

// Storage layout. Infrastructure tables are prefixed "_sync_" (reserved:
// application identifiers never start with "_sync", SCH-2); every table is
// InnoDB. Partitions, ids and scope values are VARBINARY: compared and
// ordered bytewise, trailing spaces significant. Keys stay far below
// InnoDB's 3,072-byte limit (the largest, _sync_change_scopes, is 1,415
// bytes).
//
//	_sync_meta           k → v: format version, schema version, canonical layout JSON
//	_sync_partitions     p → max_seq (never drops, SEQ-5); its row is the partition's lock (TX-1);
//	                     outcomes: the last Tx tokens, which settle lost COMMIT answers (TX-10, outcome.go)
//	_sync_horizons       p → horizon_seq (HZ-1); apart, so raising it never waits for a push
//	_sync_commits        (p, seq) → commit metadata; index (p, created_at_ms, seq) (HZ-3)
//	_sync_changes        (p, seq, idx) → table, row id, op, scopes JSON, values, row version
//	_sync_change_scopes  (p, tbl, variable, value, seq, idx): the change-scope index;
//	                     window candidates come only from it (WIN-7)
//	_sync_push_results   (p, client_id, client_commit_id) → driver.EncodePushResult text (PR-1),
//	                     recorded_at_ms; index (p, recorded_at_ms, client_id, client_commit_id) (PR-7)
//	_sync_clients        (p, client_id) → client record (CR-1); indexes (p, updated_at_ms, client_id)
//	                     (ADM-1, CR-4), (p, cursor_seq, updated_at_ms) (CR-5)
//	_sync_registry       p → epoch, epoch_required, updated_at_ms (REG)

// formatVersion is the version of the layout above, stored under
// metaFormat. Format 2 added _sync_push_results.recorded_at_ms and the
// retention indexes (retention.go upgrades a format-1 store when it is
// opened); format 3 the reaction record's version, source client ids and
// completion time (sql_reactions.go's upgradeFormat2).
const formatVersion = "3"

// Keys of _sync_meta.
const (
	metaFormat        = "format"
	metaSchemaVersion = "schema_version"
	metaSchemaLayout  = "schema_layout"
)

const tableOpts = " ENGINE=InnoDB DEFAULT CHARSET=binary"

// infraDDL creates the infrastructure tables; every statement is
// idempotent, so it runs on every open.
var infraDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_meta (
	k VARBINARY(64) NOT NULL PRIMARY KEY,
	v LONGBLOB NOT NULL
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_partitions (
	p VARBINARY(255) NOT NULL PRIMARY KEY,
	max_seq BIGINT NOT NULL,
	outcomes VARBINARY(` + outcomeRingBytes + `) NOT NULL DEFAULT ''
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_horizons (
	p VARBINARY(255) NOT NULL PRIMARY KEY,
	horizon_seq BIGINT NOT NULL
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_commits (
	p VARBINARY(255) NOT NULL,
	seq BIGINT NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	client_commit_id VARBINARY(255) NOT NULL,
	actor_id VARBINARY(255) NOT NULL,
	created_at_ms BIGINT NOT NULL,
	PRIMARY KEY (p, seq),
	KEY _sync_commits_by_time (p, created_at_ms, seq)
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_changes (
	p VARBINARY(255) NOT NULL,
	seq BIGINT NOT NULL,
	idx INT NOT NULL,
	tbl VARBINARY(64) NOT NULL,
	row_id VARBINARY(255) NOT NULL,
	op VARBINARY(8) NOT NULL,
	scopes LONGBLOB NOT NULL,
	vals LONGBLOB NULL,
	row_version BIGINT NOT NULL,
	PRIMARY KEY (p, seq, idx)
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_change_scopes (
	p VARBINARY(255) NOT NULL,
	tbl VARBINARY(64) NOT NULL,
	variable VARBINARY(64) NOT NULL,
	value VARBINARY(1020) NOT NULL,
	seq BIGINT NOT NULL,
	idx INT NOT NULL,
	PRIMARY KEY (p, tbl, variable, value, seq, idx)
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_push_results (
	p VARBINARY(255) NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	client_commit_id VARBINARY(255) NOT NULL,
	result LONGBLOB NOT NULL,
	recorded_at_ms BIGINT NULL,
	PRIMARY KEY (p, client_id, client_commit_id),
	KEY _sync_push_results_by_time (p, recorded_at_ms, client_id, client_commit_id)
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_clients (
	p VARBINARY(255) NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	actor_id VARBINARY(255) NOT NULL,
	wire_version BIGINT NOT NULL,
	cursor_seq BIGINT NOT NULL,
	updated_at_ms BIGINT NOT NULL,
	subscriptions LONGBLOB NOT NULL,
	PRIMARY KEY (p, client_id),
	KEY _sync_clients_by_time (p, updated_at_ms, client_id),
	KEY _sync_clients_by_cursor (p, cursor_seq, updated_at_ms)
)` + tableOpts,
	// The tombstones of deleted rows (ROW-5): the version a row id had
	// when last deleted. Created by every open, so a store of an earlier
	// release gets it on its first open by this one.
	`CREATE TABLE IF NOT EXISTS _sync_tombstones (
	p VARBINARY(255) NOT NULL,
	tbl VARBINARY(255) NOT NULL,
	row_id VARBINARY(255) NOT NULL,
	version BIGINT NOT NULL,
	PRIMARY KEY (p, tbl, row_id)
)` + tableOpts,
	`CREATE TABLE IF NOT EXISTS _sync_registry (
	p VARBINARY(255) NOT NULL PRIMARY KEY,
	epoch LONGBLOB NOT NULL,
	epoch_required TINYINT NOT NULL,
	updated_at_ms BIGINT NOT NULL
)` + tableOpts,
}

// Meta statements.
const (
	selectMeta         = `SELECT v FROM _sync_meta WHERE k = ?`
	upsertMeta         = `INSERT INTO _sync_meta (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)`
	insertMetaIfAbsent = `INSERT INTO _sync_meta (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE k = k`
)

// Partition counter and lock (TX-1, SEQ).
const (
	// reservePartition locks the partition's row until the Tx ends
	// (creating it, inside the Tx, for a new partition) and reserves the
	// Tx's first seq in the same statement: max_seq + 1 is written and
	// comes back as the OK packet's insert id (LAST_INSERT_ID(expr)), so
	// no SELECT … FOR UPDATE is needed. Commit puts max_seq right when the
	// Tx appended no commit or several. The same statement appends the
	// Tx's outcome entry to the row's ring (outcome.go): ?2 = ?3 the Tx's
	// token, then max_seq before the Tx and CONNECTION_ID(), 8 bytes each,
	// big-endian; the ring keeps the last outcomeRingEntries entries. It
	// is assigned before max_seq, so it reads the old value (MySQL assigns
	// left to right, MariaDB too unless SIMULTANEOUS_ASSIGNMENT is set,
	// when every assignment reads old values anyway).
	reservePartition = `INSERT INTO _sync_partitions (p, max_seq, outcomes)
VALUES (?, LAST_INSERT_ID(1), CONCAT(?, UNHEX('0000000000000000'), UNHEX(LPAD(HEX(CONNECTION_ID()), 16, '0'))))
ON DUPLICATE KEY UPDATE
outcomes = RIGHT(CONCAT(outcomes, ?, UNHEX(LPAD(HEX(max_seq), 16, '0')), UNHEX(LPAD(HEX(CONNECTION_ID()), 16, '0'))), ` + outcomeRingBytes + `),
max_seq = LAST_INSERT_ID(max_seq + 1)`
	setMaxSeq     = `UPDATE _sync_partitions SET max_seq = ? WHERE p = ?`
	selectMaxSeq  = `SELECT max_seq FROM _sync_partitions WHERE p = ?`
	selectHorizon = `SELECT horizon_seq FROM _sync_horizons WHERE p = ?`
	// raiseHorizon never lowers it (HZ-1), atomically.
	raiseHorizon = `INSERT INTO _sync_horizons (p, horizon_seq) VALUES (?, ?)
ON DUPLICATE KEY UPDATE horizon_seq = GREATEST(horizon_seq, VALUES(horizon_seq))`
)

// Commit log statements.
const (
	insertCommit = `INSERT INTO _sync_commits (p, seq, client_id, client_commit_id, actor_id, created_at_ms)
VALUES (?, ?, ?, ?, ?, ?)`
	// commitSeqBefore: p, atMs → the largest retained seq created strictly
	// before atMs, NULL if none (HZ-3); served by _sync_commits_by_time.
	commitSeqBefore    = `SELECT MAX(seq) FROM _sync_commits WHERE p = ? AND created_at_ms < ?`
	selectPrunedScopes = `SELECT DISTINCT tbl, scopes FROM _sync_changes WHERE p = ? AND seq <= ?`
	pruneChangeScopes  = `DELETE FROM _sync_change_scopes WHERE p = ? AND tbl = ? AND variable = ? AND value = ? AND seq <= ?`
	pruneChanges       = `DELETE FROM _sync_changes WHERE p = ? AND seq <= ?`
	pruneCommits       = `DELETE FROM _sync_commits WHERE p = ? AND seq <= ?`
)

// batchRows is the largest number of rows one multi-row INSERT carries
// (upserts, changes, change-scope entries, blob references); longer lists
// are split, so at most batchRows statement texts of each kind are ever
// prepared, and a statement stays far below MySQL's 65,535 placeholders
// (maxPlaceholders). Statements are also split by size (Conn.stmtBytes).
const batchRows = 32

// maxPlaceholders is the protocol's limit of parameters per prepared
// statement.
const maxPlaceholders = 65535

// insertChangesSQL[n] and insertChangeScopesSQL[n] are the texts of
// insertChanges(n) and insertChangeScopes(n), 1 ≤ n ≤ batchRows.
var insertChangesSQL, insertChangeScopesSQL = func() (ch, cs [batchRows + 1]string) {
	for n := 1; n <= batchRows; n++ {
		ch[n], cs[n] = insertChanges(n), insertChangeScopes(n)
	}
	return ch, cs
}()

// insertChanges returns the INSERT of n changes (9 parameters each: p,
// seq, idx, tbl, row_id, op, scopes, vals, row_version).
func insertChanges(n int) string {
	return `INSERT INTO _sync_changes (p, seq, idx, tbl, row_id, op, scopes, vals, row_version) VALUES ` +
		placeholders(n, 9)
}

// insertChangeScopes returns the INSERT of n change-scope entries (6
// parameters each: p, tbl, variable, value, seq, idx).
func insertChangeScopes(n int) string {
	return `INSERT INTO _sync_change_scopes (p, tbl, variable, value, seq, idx) VALUES ` + placeholders(n, 6)
}

// placeholders returns n groups of k "?" each: "(?, ?), (?, ?)".
func placeholders(n, k int) string {
	one := "(" + strings.Repeat("?, ", k-1) + "?)"
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// qmarks returns n comma-separated "?".
func qmarks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// Push results (PR): first writer wins, a later insert is a no-op (PR-3).
// The primary key is the table's only unique key, so ON DUPLICATE KEY can
// fire on nothing else.
const (
	selectPushResult = `SELECT result FROM _sync_push_results WHERE p = ? AND client_id = ? AND client_commit_id = ?`
	// insertPushResult: the result's recordedAtMs becomes recorded_at_ms
	// (PR-7), read from the result column set just before it in the row.
	insertPushResult = `INSERT INTO _sync_push_results (p, client_id, client_commit_id, result, recorded_at_ms)
VALUES (?, ?, ?, ?, CAST(JSON_UNQUOTE(JSON_EXTRACT(CONVERT(result USING utf8mb4), '$.recordedAtMs')) AS SIGNED))
ON DUPLICATE KEY UPDATE p = p`
	// insertPushResultGuarded is insertPushResult without ON DUPLICATE
	// KEY: a result stored or staged under the key fails it with 1062
	// (GW-3).
	insertPushResultGuarded = `INSERT INTO _sync_push_results (p, client_id, client_commit_id, result, recorded_at_ms)
VALUES (?, ?, ?, ?, CAST(JSON_UNQUOTE(JSON_EXTRACT(CONVERT(result USING utf8mb4), '$.recordedAtMs')) AS SIGNED))`
)

// Client records (CR).
const (
	selectClient = `SELECT actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions
FROM _sync_clients WHERE p = ? AND client_id = ?`
	upsertClient = `INSERT INTO _sync_clients (p, client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE actor_id = VALUES(actor_id), wire_version = VALUES(wire_version),
	cursor_seq = VALUES(cursor_seq), updated_at_ms = VALUES(updated_at_ms), subscriptions = VALUES(subscriptions)`
	// listClientCursors: p, after client id (exclusive), limit → a range
	// read of the primary key that stops at the limit (CR-3).
	listClientCursors = `SELECT client_id, cursor_seq, updated_at_ms FROM _sync_clients
WHERE p = ? AND client_id > ? ORDER BY client_id LIMIT ?`
	deleteClients = `DELETE FROM _sync_clients WHERE p = ?`
	// bindClient: p, client id, actor id, updated_at_ms; stores the
	// record of a client bound by a push (wire version 0, cursor −1, no
	// subscriptions) unless one exists, whose row it then locks until the
	// Tx ends; a record of another actor fails it with erBadNull (strict
	// sql_mode: actor_id set to NULL), nothing changed (CR-7). One
	// statement, so one round trip; a racing insert of the key is waited
	// for.
	bindClient = `INSERT INTO _sync_clients (p, client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions)
VALUES (?, ?, ?, 0, -1, ?, '[]') ON DUPLICATE KEY UPDATE actor_id = IF(actor_id = VALUES(actor_id), actor_id, NULL)`
)

// Partition registry (REG).
const (
	touchPartition = `INSERT INTO _sync_registry (p, epoch, epoch_required, updated_at_ms) VALUES (?, ?, 0, ?)
ON DUPLICATE KEY UPDATE updated_at_ms = VALUES(updated_at_ms)`
	rotateEpoch = `INSERT INTO _sync_registry (p, epoch, epoch_required, updated_at_ms) VALUES (?, ?, 1, ?)
ON DUPLICATE KEY UPDATE epoch = VALUES(epoch), epoch_required = 1, updated_at_ms = VALUES(updated_at_ms)`
	selectRegistry = `SELECT p, epoch, epoch_required, updated_at_ms FROM _sync_registry WHERE p = ?`
	listRegistry   = `SELECT p, epoch, epoch_required, updated_at_ms FROM _sync_registry WHERE p > ? ORDER BY p LIMIT ?`
	listPartitions = `SELECT p FROM _sync_registry WHERE p > ? ORDER BY p LIMIT ?`
)

// Savepoint statements of a Tx (TX-8).
const (
	savepoint           = `SAVEPOINT syncstore_tx`
	rollbackToSavepoint = `ROLLBACK TO SAVEPOINT syncstore_tx`
)

// selectCommitHeads: after partition, limit → committed heads, a range
// read of _sync_partitions' primary key (fanout polling, FAN-1).
const selectCommitHeads = `SELECT p, max_seq FROM _sync_partitions WHERE p > ? AND max_seq > 0 ORDER BY p LIMIT ?`

// keepTombstoneSQL records the row's version as its id's tombstone,
// replacing an earlier one, before DeleteRow removes it (ROW-5): the
// partition, the table name, the partition again, the id. A missing row
// records nothing.
func keepTombstoneSQL(x *table) string {
	return "INSERT INTO _sync_tombstones (p, tbl, row_id, version) SELECT ?, ?, " + quoteIdent(x.def.PrimaryKey) + ", " +
		quoteIdent(versionColumn) + " FROM " + quoteIdent(x.def.Name) + " FORCE INDEX (PRIMARY) WHERE " + quoteIdent(partitionColumn) +
		" = ? AND " + quoteIdent(x.def.PrimaryKey) + " = ? ON DUPLICATE KEY UPDATE version = VALUES(version)"
}

// tombstoneSQL reads the id's row version while it exists, else its
// tombstone, else 0 (ROW-5): the partition, the id, the partition, the
// table name, the id.
func tombstoneSQL(x *table) string {
	return "SELECT COALESCE((SELECT " + quoteIdent(versionColumn) + " FROM " + quoteIdent(x.def.Name) + " WHERE " +
		quoteIdent(partitionColumn) + " = ? AND " + quoteIdent(x.def.PrimaryKey) + " = ?)," +
		" (SELECT version FROM _sync_tombstones WHERE p = ? AND tbl = ? AND row_id = ?), 0)"
}

// tombstonesInSQL reads the tombstones among n ids of one table (ROW-5):
// the partition, the table name, then the ids → row_id, version.
func tombstonesInSQL(n int) string {
	return "SELECT row_id, version FROM _sync_tombstones WHERE p = ? AND tbl = ? AND row_id IN (" + qmarks(n) + ")"
}

// guardNoTombstonesSQL is the guard of guarded creates (GW-1: base 0 is
// a row id with no row and no tombstone): an UPDATE that changes nothing
// and must match no row (guardMatch, want 0) — the partition, the table
// name, then the n ids.
func guardNoTombstonesSQL(n int) string {
	return "UPDATE _sync_tombstones SET version = version WHERE p = ? AND tbl = ? AND row_id IN (" + qmarks(n) + ")"
}
