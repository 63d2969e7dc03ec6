package postgres

// formatVersion is the version of the infrastructure layout, stored in
// _sync_meta under metaFormat. Format 2 added
// _sync_push_results.recorded_at_ms (retention.go upgrades a format-1
// store when it is opened); format 3 the reaction record's version,
// source client ids and completion time (sql_reactions.go's
// upgradeFormat2); format 4 the commits' tx_token (upgradeFormat3); format
// 5 HZ-3's index on an expression of the partition, _sync_commits_before,
// in place of _sync_commits_by_time (upgradeFormat4).
const formatVersion = "5"

// infraFormat is the format of the layout infraDDL creates: a new store
// is recorded as format 2 and upgraded on the same open, by the same
// statements as a stored format-2 store.
const infraFormat = "2"

// Keys of _sync_meta.
const (
	metaFormat        = "format"
	metaSchemaVersion = "schema_version"
	metaSchemaLayout  = "schema_layout"
)

// notifyChannel is the LISTEN/NOTIFY channel of commit fanout (FAN-1).
// NOTIFY is scoped to one database, so every store has its own channel.
const notifyChannel = "syncstore_commits"

// Advisory lock keys (pg_advisory_xact_lock). They serialize DDL only —
// opening a store and EnsureSchema (SCH-7) — never partition writes,
// which serialize on the partition's row (TX-1).
const (
	lockKeyInfra  int64 = 0x73796e6373746f01 // "syncsto" + 1
	lockKeySchema int64 = 0x73796e6373746f02
)

// Every id and scope value column is text COLLATE "C": bytewise order
// (SCAN-1, REG-3) whatever the database's default collation.
const textC = `text COLLATE "C"`

// infraDDL creates the infrastructure tables; every statement is
// idempotent, and Open runs them under lockKeyInfra in one transaction.
var infraDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_meta (
	key ` + textC + ` PRIMARY KEY,
	value text NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS _sync_partitions (
	partition ` + textC + ` PRIMARY KEY,
	max_seq bigint NOT NULL,
	horizon_seq bigint NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS _sync_commits (
	partition ` + textC + ` NOT NULL,
	seq bigint NOT NULL,
	client_id ` + textC + ` NOT NULL,
	client_commit_id ` + textC + ` NOT NULL,
	actor_id ` + textC + ` NOT NULL,
	created_at_ms bigint NOT NULL,
	PRIMARY KEY (partition, seq))`,
	`CREATE TABLE IF NOT EXISTS _sync_changes (
	partition ` + textC + ` NOT NULL,
	seq bigint NOT NULL,
	idx integer NOT NULL,
	tbl ` + textC + ` NOT NULL,
	row_id ` + textC + ` NOT NULL,
	op text NOT NULL,
	scopes text NOT NULL,
	vals text,
	row_version bigint NOT NULL,
	PRIMARY KEY (partition, seq, idx))`,
	`CREATE TABLE IF NOT EXISTS _sync_change_scopes (
	partition ` + textC + ` NOT NULL,
	tbl ` + textC + ` NOT NULL,
	variable ` + textC + ` NOT NULL,
	value ` + textC + ` NOT NULL,
	seq bigint NOT NULL,
	idx integer NOT NULL,
	PRIMARY KEY (partition, tbl, variable, value, seq, idx))`,
	`CREATE TABLE IF NOT EXISTS _sync_push_results (
	partition ` + textC + ` NOT NULL,
	client_id ` + textC + ` NOT NULL,
	client_commit_id ` + textC + ` NOT NULL,
	result text NOT NULL,
	recorded_at_ms bigint,
	PRIMARY KEY (partition, client_id, client_commit_id))`,
	`CREATE TABLE IF NOT EXISTS _sync_clients (
	partition ` + textC + ` NOT NULL,
	client_id ` + textC + ` NOT NULL,
	actor_id ` + textC + ` NOT NULL,
	wire_version bigint NOT NULL,
	cursor bigint NOT NULL,
	updated_at_ms bigint NOT NULL,
	subscriptions text NOT NULL,
	PRIMARY KEY (partition, client_id))`,
	// The tombstones of deleted rows (ROW-5): the version a row id had
	// when last deleted. Created by every open, so a store of an earlier
	// release gets it on its first open by this one.
	`CREATE TABLE IF NOT EXISTS _sync_tombstones (
	partition ` + textC + ` NOT NULL,
	tbl ` + textC + ` NOT NULL,
	row_id ` + textC + ` NOT NULL,
	version bigint NOT NULL,
	PRIMARY KEY (partition, tbl, row_id))`,
	`CREATE TABLE IF NOT EXISTS _sync_registry (
	partition ` + textC + ` PRIMARY KEY,
	epoch text NOT NULL,
	epoch_required boolean NOT NULL,
	updated_at_ms bigint NOT NULL)`,
}

// sqlExistingIndexes returns the store's schema (current_schema(), where
// infraDDL created its tables) and which of the index names in $1
// (text[]) exist in it, as text[]. Only that schema is looked in: an
// unqualified name would resolve along the whole search path, to another
// store's index in a later schema.
const sqlExistingIndexes = `SELECT current_schema(), coalesce(array_agg(n), '{}') FROM unnest($1::text[]) AS n
WHERE EXISTS (SELECT 1 FROM pg_class AS r JOIN pg_namespace AS ns ON ns.oid = r.relnamespace
	WHERE r.relname = n AND r.relkind = 'i' AND ns.nspname = current_schema())`

// Meta statements.
const (
	sqlSelectMeta         = `SELECT value FROM _sync_meta WHERE key = $1`
	sqlUpsertMeta         = `INSERT INTO _sync_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`
	sqlInsertMetaIfAbsent = `INSERT INTO _sync_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`
)

// Partition counters and the partition lock (TX-1, SEQ, HZ).
const (
	// sqlEnsurePartition creates the partition's row if missing, so it can
	// be locked. A concurrent Begin on a new partition waits on the
	// uncommitted insert, so the partition is serialized from its first
	// transaction on.
	sqlEnsurePartition = `INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES ($1, 0, 0) ON CONFLICT (partition) DO NOTHING`
	// sqlLockPartition takes the partition's row lock for the rest of the
	// transaction and reads its committed max seq (TX-1, SEQ-1) and the
	// transaction's id, its backend's pid and the server's incarnation
	// (backend), which settle a commit whose answer was lost (TX-10; the
	// row lock has assigned the id already, so reading them costs nothing).
	sqlLockPartition     = `SELECT max_seq, pg_current_xact_id()::text::bigint, pg_backend_pid(), ` + sqlIncarnation + ` FROM _sync_partitions WHERE partition = $1 FOR UPDATE`
	sqlSetMaxSeq         = `UPDATE _sync_partitions SET max_seq = $2 WHERE partition = $1`
	sqlSelectSeqs        = `SELECT max_seq, horizon_seq FROM _sync_partitions WHERE partition = $1`
	sqlSetHorizon        = `UPDATE _sync_partitions SET horizon_seq = $2 WHERE partition = $1`
	sqlSavepointTx       = `SAVEPOINT syncstore_tx`
	sqlRollbackToTx      = `ROLLBACK TO SAVEPOINT syncstore_tx`
	sqlSavepointOp       = `SAVEPOINT syncstore_op`
	sqlReleaseOp         = `RELEASE SAVEPOINT syncstore_op`
	sqlRollbackToOp      = `ROLLBACK TO SAVEPOINT syncstore_op`
	sqlNotify            = `SELECT pg_notify($1, $2)`
	sqlAllPartitionSeqs  = `SELECT partition, max_seq FROM _sync_partitions WHERE max_seq > 0`
	sqlEngineVersionText = `SHOW server_version`
)

const (
	// sqlGuardSeq opens a deferred Tx's Commit pipeline (Tx.commitDeferred):
	// $1 partition, $2 the max seq its seqs were allocated from, $3 its
	// last seq. It takes the partition's row lock (waiting for another
	// Conn's Tx, then re-reading the row: READ COMMITTED) and moves the max
	// seq from $2 to $3, returning the transaction's id, its backend's pid
	// and the server's incarnation (backend, TX-10) and 1;
	// when the max is no longer $2 (another Conn committed) or the row is
	// gone, it updates nothing and divides by zero (SQLSTATE 22012), which
	// aborts the pipeline before any write: a write conflict (TX-9).
	sqlGuardSeq = `WITH g AS (UPDATE _sync_partitions SET max_seq = $3 WHERE partition = $1 AND max_seq = $2 RETURNING 1)
SELECT pg_current_xact_id()::text::bigint, pg_backend_pid(), ` + sqlIncarnation + `, 1 / (SELECT count(*)::int FROM g)`
)

// Commit log statements.
const (
	// sqlInsertCommit: $7 tx_token is a Tx's random mark on its first
	// commit (NULL on the others), by which settleByCommit tells the Tx's
	// commit from another store's at the same seq (TX-10; format 4).
	sqlInsertCommit = `INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms, tx_token)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// sqlInsertChanges inserts every change of one commit in one statement
	// from parallel arrays ($3 idx … $9 row_version).
	sqlInsertChanges = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT $1, $2, u.idx, u.tbl, u.row_id, u.op, u.scopes, u.vals, u.row_version
FROM unnest($3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[])
	AS u(idx, tbl, row_id, op, scopes, vals, row_version)`
	// sqlInsertChangeScopes inserts the change-scope index entries of one
	// commit: one per (change, scope variable), from parallel arrays.
	sqlInsertChangeScopes = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT $1, u.tbl, u.variable, u.value, $2, u.idx
FROM unnest($3::text[], $4::text[], $5::text[], $6::integer[]) AS u(tbl, variable, value, idx)`
	// sqlCommitSeqBefore (HZ-3) names the partition by the expression
	// _sync_commits_before leads with (upgradeFormat4), so that index
	// serves it and no other statement can take it.
	sqlCommitSeqBefore = `SELECT max(seq) FROM _sync_commits WHERE (partition || '') = $1 AND created_at_ms < $2`
	// sqlPruneChangeScopes deletes the change-scope entries of the pruned
	// changes (HZ-2: cost follows what is pruned): each entry is found by
	// its whole primary key, built from its change's scopes, in a
	// sub-query the planner cannot flatten (OFFSET 0), and deleted by its
	// tuple id. Flattened, the planner hashed the scopes (json_each_text
	// is estimated at 100 rows) and probed the index by (partition, table,
	// seq, idx) alone, walking every entry of the table for each change:
	// a first prune of 20,000 changes ran 54 s (TestPruneChangeScopesCost).
	sqlPruneChangeScopes = `DELETE FROM _sync_change_scopes
WHERE ctid = ANY (ARRAY(
	SELECT e.ctid FROM _sync_changes AS ch
	CROSS JOIN LATERAL json_each_text(ch.scopes::json) AS j
	CROSS JOIN LATERAL (
		SELECT cs.ctid FROM _sync_change_scopes AS cs
		WHERE cs.partition = ch.partition AND cs.tbl = ch.tbl AND cs.variable = j.key AND cs.value = j.value
			AND cs.seq = ch.seq AND cs.idx = ch.idx
		OFFSET 0) AS e
	WHERE ch.partition = $1 AND ch.seq <= $2))`
	sqlPruneChanges = `DELETE FROM _sync_changes WHERE partition = $1 AND seq <= $2`
	sqlPruneCommits = `DELETE FROM _sync_commits WHERE partition = $1 AND seq <= $2`
)

// Push results (PR).
const (
	sqlSelectPushResult = `SELECT result FROM _sync_push_results WHERE partition = $1 AND client_id = $2 AND client_commit_id = $3`
	// sqlInsertPushResult: $4 is driver.EncodePushResult text; its
	// recordedAtMs becomes recorded_at_ms (PR-7). First writer wins (PR-3).
	sqlInsertPushResult = sqlInsertPushResultGuarded + `
ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`
	// sqlInsertPushResultGuarded is sqlInsertPushResult failing (23505)
	// when a result is stored or staged under the key (GW-3).
	sqlInsertPushResultGuarded = `INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms)
VALUES ($1, $2, $3, $4::text, ($4::text::json ->> 'recordedAtMs')::bigint)`
)

// bindConstraint names the failure of sqlBindGuard (CR-7).
const bindConstraint = "sync_client_bound"

// Client records (CR).
const (
	sqlSelectClient = `SELECT actor_id, wire_version, cursor, updated_at_ms, subscriptions
FROM _sync_clients WHERE partition = $1 AND client_id = $2`
	sqlUpsertClient = `INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (partition, client_id) DO UPDATE SET actor_id = EXCLUDED.actor_id,
	wire_version = EXCLUDED.wire_version, cursor = EXCLUDED.cursor,
	updated_at_ms = EXCLUDED.updated_at_ms, subscriptions = EXCLUDED.subscriptions`
	// sqlListClientCursors: $1 partition, $2 after client id (exclusive),
	// $3 limit; a walk of the primary key that stops at the limit (CR-3).
	sqlListClientCursors = `SELECT client_id, cursor, updated_at_ms FROM _sync_clients
WHERE partition = $1 AND client_id > $2 ORDER BY client_id LIMIT $3`
	sqlDeleteClients = `DELETE FROM _sync_clients WHERE partition = $1`
	// sqlBindClient: $1 partition, $2 client id, $3 actor id, $4
	// updated_at_ms; stores the record of a client bound by a push (wire
	// version 0, cursor −1, no subscriptions) unless one exists, waiting
	// for a racing insert of the same key to end (CR-7).
	sqlBindClient = `INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
VALUES ($1, $2, $3, 0, -1, $4, '[]') ON CONFLICT (partition, client_id) DO NOTHING`
	// sqlBindGuard: $1 partition, $2 client id, $3 actor id. After
	// sqlBindClient (READ COMMITTED: it sees the record a racing Tx
	// committed), fails the transaction when the record is bound to
	// another actor, casting the text bindConstraint to an integer (SQLSTATE
	// 22P02, its message naming bindConstraint and nothing else). The cast
	// reads a column, so it is never folded at planning time.
	sqlBindGuard = `SELECT CASE WHEN actor_id = $3 THEN 0 ELSE ('` + bindConstraint + `' || left(actor_id, 0))::int END
FROM _sync_clients WHERE partition = $1 AND client_id = $2`
)

// Partition registry (REG).
const (
	sqlTouchPartition = `INSERT INTO _sync_registry (partition, epoch, epoch_required, updated_at_ms) VALUES ($1, $2, false, $3)
ON CONFLICT (partition) DO UPDATE SET updated_at_ms = EXCLUDED.updated_at_ms
RETURNING partition, epoch, epoch_required, updated_at_ms`
	sqlRotateEpoch = `INSERT INTO _sync_registry (partition, epoch, epoch_required, updated_at_ms) VALUES ($1, $2, true, $3)
ON CONFLICT (partition) DO UPDATE SET epoch = EXCLUDED.epoch, epoch_required = true, updated_at_ms = EXCLUDED.updated_at_ms
RETURNING partition, epoch, epoch_required, updated_at_ms`
	sqlListRegistry = `SELECT partition, epoch, epoch_required, updated_at_ms FROM _sync_registry
WHERE partition > $1 ORDER BY partition LIMIT $2`
	sqlListPartitions = `SELECT partition FROM _sync_registry WHERE partition > $1 ORDER BY partition LIMIT $2`
)

// Tombstone statements (ROW-5).
const (
	// sqlTombstonesIn: $1 partition, $2 table, $3 ids (text[]) → row_id,
	// version of the ids that have a tombstone.
	sqlTombstonesIn = `SELECT row_id, version FROM _sync_tombstones WHERE partition = $1 AND tbl = $2 AND row_id = ANY($3::text[])`
	// sqlGuardNoTombstones is the guard of guarded creates (GW-1: base 0
	// is a row id with no row and no tombstone): $1 partition, $2 table,
	// $3 ids (text[]); it divides by zero (SQLSTATE 22012:
	// CodeWriteConflict) when one of the ids has a tombstone.
	sqlGuardNoTombstones = `SELECT 1 / (1 - (EXISTS (SELECT 1 FROM _sync_tombstones WHERE partition = $1 AND tbl = $2 AND row_id = ANY($3::text[])))::int)`
)
