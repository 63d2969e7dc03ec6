package sqlitesql

// FormatVersion is the version of the infrastructure layout, stored in
// _sync_meta under MetaFormat. Format 2 added
// _sync_push_results.recorded_at_ms (retention.go upgrades a format-1
// store when it is opened); format 3 the reaction record's version,
// source client ids and completion time (reactions.go's UpgradeFormat2).
const FormatVersion = "3"

// InfraFormat is the format of the layout InfraDDL creates: a new store is
// recorded as format 2 and upgraded to FormatVersion on the same open, by
// the same statements as a stored format-2 store.
const InfraFormat = "2"

// Keys of _sync_meta.
const (
	MetaFormat        = "format"
	MetaSchemaVersion = "schema_version"
	MetaSchemaLayout  = "schema_layout"
)

// InfraDDL creates the infrastructure tables; every statement is
// idempotent (IF NOT EXISTS), so it runs on every open, inside one write
// transaction.
var InfraDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_meta (
	key TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_partitions (
	partition TEXT NOT NULL PRIMARY KEY,
	max_seq INTEGER NOT NULL,
	horizon_seq INTEGER NOT NULL
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_commits (
	partition TEXT NOT NULL,
	seq INTEGER NOT NULL,
	client_id TEXT NOT NULL,
	client_commit_id TEXT NOT NULL,
	actor_id TEXT NOT NULL,
	created_at_ms INTEGER NOT NULL,
	PRIMARY KEY (partition, seq)
) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS _sync_commits_by_time ON _sync_commits (partition, created_at_ms, seq)`,
	`CREATE TABLE IF NOT EXISTS _sync_changes (
	partition TEXT NOT NULL,
	seq INTEGER NOT NULL,
	idx INTEGER NOT NULL,
	tbl TEXT NOT NULL,
	row_id TEXT NOT NULL,
	op TEXT NOT NULL,
	scopes TEXT NOT NULL,
	vals TEXT,
	row_version INTEGER NOT NULL,
	PRIMARY KEY (partition, seq, idx)
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_change_scopes (
	partition TEXT NOT NULL,
	tbl TEXT NOT NULL,
	variable TEXT NOT NULL,
	value TEXT NOT NULL,
	seq INTEGER NOT NULL,
	idx INTEGER NOT NULL,
	PRIMARY KEY (partition, tbl, variable, value, seq, idx)
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_push_results (
	partition TEXT NOT NULL,
	client_id TEXT NOT NULL,
	client_commit_id TEXT NOT NULL,
	result TEXT NOT NULL,
	recorded_at_ms INTEGER,
	PRIMARY KEY (partition, client_id, client_commit_id)
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_clients (
	partition TEXT NOT NULL,
	client_id TEXT NOT NULL,
	actor_id TEXT NOT NULL,
	wire_version INTEGER NOT NULL,
	cursor INTEGER NOT NULL,
	updated_at_ms INTEGER NOT NULL,
	subscriptions TEXT NOT NULL,
	PRIMARY KEY (partition, client_id)
) WITHOUT ROWID`,
	// The tombstones of deleted rows (ROW-5): the version a row id had
	// when last deleted. Created by every open, so a store of an earlier
	// release gets it on its first open by this one.
	`CREATE TABLE IF NOT EXISTS _sync_tombstones (
	partition TEXT NOT NULL,
	tbl TEXT NOT NULL,
	row_id TEXT NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (partition, tbl, row_id)
) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS _sync_registry (
	partition TEXT NOT NULL PRIMARY KEY,
	epoch TEXT NOT NULL,
	epoch_required INTEGER NOT NULL,
	updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID`,
}

// Meta statements.
const (
	// SelectMeta: ?1 key → value.
	SelectMeta = `SELECT value FROM _sync_meta WHERE key = ?1`
	// UpsertMeta: ?1 key, ?2 value.
	UpsertMeta = `INSERT INTO _sync_meta (key, value) VALUES (?1, ?2)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	// InsertMetaIfAbsent: ?1 key, ?2 value; keeps an existing value.
	InsertMetaIfAbsent = `INSERT INTO _sync_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING`
)

// Partition counters (SEQ, HZ).
const (
	// SelectCommitHeads: ?1 after partition, ?2 limit → (partition,
	// max_seq) of partitions with commits, ascending: a range read of the
	// primary key (commit fanout by polling, FAN-1).
	SelectCommitHeads = `SELECT partition, max_seq FROM _sync_partitions WHERE partition > ?1 AND max_seq > 0 ORDER BY partition LIMIT ?2`
	// SelectPartitionSeqs: ?1 partition → max_seq, horizon_seq (no row: both 0).
	SelectPartitionSeqs = `SELECT max_seq, horizon_seq FROM _sync_partitions WHERE partition = ?1`
	// NextSeq allocates the next commitSeq of ?1 and returns it (SEQ-1,
	// SEQ-3): max_seq + 1, or 1 for a partition without commits. Runs
	// inside the write transaction, so a rollback consumes nothing (SEQ-2).
	NextSeq = `INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES (?1, 1, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = max_seq + 1
RETURNING max_seq`
	// SetMaxSeq: ?1 partition, ?2 max_seq (for engines that allocate by
	// reading SelectPartitionSeqs first, e.g. D1's batches).
	SetMaxSeq = `INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES (?1, ?2, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = excluded.max_seq`
	// SetHorizon: ?1 partition, ?2 horizon. The caller has checked HZ-1
	// (never lower, never past max_seq), so the partition row exists.
	SetHorizon = `UPDATE _sync_partitions SET horizon_seq = ?2 WHERE partition = ?1`
)

// Commit log statements.
const (
	// InsertCommit: ?1 partition, ?2 seq, ?3 client_id, ?4 client_commit_id, ?5 actor_id, ?6 created_at_ms.
	InsertCommit = `INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)`
	// InsertChanges records every change of commit ?2 of partition ?1 in
	// one statement: ?3 is a JSON array (ChangesJSON) with one element per
	// change, in commit order: [table, row id, op, scopes object, values
	// (driver.EncodeValues text as a JSON string, null for a delete), row
	// version (0 for a delete)]. The element's index is the change's idx.
	InsertChanges = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT ?1, ?2, c.key, c.value ->> 0, c.value ->> 1, c.value ->> 2, c.value -> 3, c.value ->> 4, c.value ->> 5
FROM json_each(?3) AS c`
	// InsertChangeScopes writes the change-scope index entries of the same
	// changes, one per (change, scope variable): ?1 partition, ?2 seq, ?3
	// the same JSON array as InsertChanges.
	InsertChangeScopes = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT ?1, c.value ->> 0, s.key, s.value, ?2, c.key
FROM json_each(?3) AS c, json_each(c.value -> 3) AS s`
	// CommitSeqBefore: ?1 partition, ?2 atMs → the largest retained seq
	// created strictly before atMs, NULL if none (HZ-3). Served by
	// _sync_commits_by_time.
	CommitSeqBefore = `SELECT max(seq) FROM _sync_commits WHERE partition = ?1 AND created_at_ms < ?2`
	// PruneChangeScopes deletes the change-scope entries of the changes of
	// commits ≤ ?2 of partition ?1, each looked up by its full primary key
	// (HZ-2: cost proportional to what is pruned, never to the store).
	PruneChangeScopes = `DELETE FROM _sync_change_scopes
WHERE (partition, tbl, variable, value, seq, idx) IN (
	SELECT ch.partition, ch.tbl, j.key, j.value, ch.seq, ch.idx
	FROM _sync_changes AS ch, json_each(ch.scopes) AS j
	WHERE ch.partition = ?1 AND ch.seq <= ?2)`
	// PruneChanges: ?1 partition, ?2 seq.
	PruneChanges = `DELETE FROM _sync_changes WHERE partition = ?1 AND seq <= ?2`
	// PruneCommits: ?1 partition, ?2 seq; rows affected = commits removed.
	PruneCommits = `DELETE FROM _sync_commits WHERE partition = ?1 AND seq <= ?2`
)

// Push results (PR).
const (
	// SelectPushResult: ?1 partition, ?2 client_id, ?3 client_commit_id → result.
	SelectPushResult = `SELECT result FROM _sync_push_results WHERE partition = ?1 AND client_id = ?2 AND client_commit_id = ?3`
	// InsertPushResult: ?1 partition, ?2 client_id, ?3 client_commit_id,
	// ?4 result (driver.EncodePushResult text, whose recordedAtMs becomes
	// recorded_at_ms for retention, PR-7). First writer wins (PR-3): a
	// later insert is ignored.
	InsertPushResult = `INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms)
VALUES (?1, ?2, ?3, ?4, ?4 ->> '$.recordedAtMs') ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`
)

// Client records (CR).
const (
	// SelectClient: ?1 partition, ?2 client_id → actor_id, wire_version, cursor, updated_at_ms, subscriptions.
	SelectClient = `SELECT actor_id, wire_version, cursor, updated_at_ms, subscriptions
FROM _sync_clients WHERE partition = ?1 AND client_id = ?2`
	// UpsertClient: ?1 partition, ?2 client_id, ?3 actor_id, ?4 wire_version,
	// ?5 cursor, ?6 updated_at_ms, ?7 subscriptions JSON; replaces (CR-1).
	UpsertClient = `INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (partition, client_id) DO UPDATE SET actor_id = excluded.actor_id,
	wire_version = excluded.wire_version, cursor = excluded.cursor,
	updated_at_ms = excluded.updated_at_ms, subscriptions = excluded.subscriptions`
	// ListClientCursors: ?1 partition, ?2 after client id (exclusive; ""
	// = from the first), ?3 limit → client_id, cursor, updated_at_ms
	// ascending by client_id (CR-2, CR-3); a walk of the primary key that
	// stops at the limit.
	ListClientCursors = `SELECT client_id, cursor, updated_at_ms FROM _sync_clients
WHERE partition = ?1 AND client_id > ?2 ORDER BY client_id LIMIT ?3`
	// SelectClientActor: ?1 partition, ?2 client_id → actor_id (CR-7).
	SelectClientActor = `SELECT actor_id FROM _sync_clients WHERE partition = ?1 AND client_id = ?2`
	// BindClient: ?1 partition, ?2 client_id, ?3 actor_id, ?4
	// updated_at_ms; stores the record of a client bound by a push
	// (wire version 0, cursor −1, no subscriptions) unless one exists
	// (CR-7).
	BindClient = `INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
VALUES (?1, ?2, ?3, 0, -1, ?4, '[]') ON CONFLICT (partition, client_id) DO NOTHING`
	// DeleteClients: ?1 partition (REG-2).
	DeleteClients = `DELETE FROM _sync_clients WHERE partition = ?1`
)

// Partition registry (REG).
const (
	// TouchPartition: ?1 partition, ?2 initial epoch, ?3 updated_at_ms;
	// registers or refreshes only the time; returns the stored entry (REG-1).
	TouchPartition = `INSERT INTO _sync_registry (partition, epoch, epoch_required, updated_at_ms) VALUES (?1, ?2, 0, ?3)
ON CONFLICT (partition) DO UPDATE SET updated_at_ms = excluded.updated_at_ms
RETURNING partition, epoch, epoch_required, updated_at_ms`
	// RotateEpoch: ?1 partition, ?2 epoch, ?3 updated_at_ms; returns the stored entry (REG-2).
	RotateEpoch = `INSERT INTO _sync_registry (partition, epoch, epoch_required, updated_at_ms) VALUES (?1, ?2, 1, ?3)
ON CONFLICT (partition) DO UPDATE SET epoch = excluded.epoch, epoch_required = 1, updated_at_ms = excluded.updated_at_ms
RETURNING partition, epoch, epoch_required, updated_at_ms`
	// ListRegistry: ?1 after partition (exclusive), ?2 limit; ascending (REG-3).
	ListRegistry = `SELECT partition, epoch, epoch_required, updated_at_ms FROM _sync_registry
WHERE partition > ?1 ORDER BY partition LIMIT ?2`
	// ListPartitions: ?1 after partition (exclusive), ?2 limit; ascending (REG-3).
	ListPartitions = `SELECT partition FROM _sync_registry WHERE partition > ?1 ORDER BY partition LIMIT ?2`
)

// EngineVersion returns the engine's version text.
const EngineVersion = `SELECT sqlite_version()`

// Savepoint statements of a write transaction (TX-8): Savepoint runs right
// after BEGIN; RollbackToSavepoint discards everything the transaction
// staged while keeping it (and so the write lock) open.
const (
	Savepoint           = `SAVEPOINT syncstore_tx`
	RollbackToSavepoint = `ROLLBACK TO SAVEPOINT syncstore_tx`
)

// ReadStatements lists the fixed statements a driver runs outside a write
// transaction, so it can prepare them once on its readers.
var ReadStatements = []string{
	SelectMeta, SelectPartitionSeqs, CommitSeqBefore, SelectPushResult,
	SelectClient, ListClientCursors, ListRegistry, ListPartitions,
	WindowSingle, WindowList, WindowBound, EngineVersion,
}

// InfraStatements lists every fixed statement above (not the DDL), so a
// driver can prepare them all once per connection.
var InfraStatements = []string{
	SelectMeta, UpsertMeta, InsertMetaIfAbsent,
	SelectPartitionSeqs, NextSeq, SetMaxSeq, SetHorizon,
	InsertCommit, InsertChanges, InsertChangeScopes, CommitSeqBefore,
	PruneChangeScopes, PruneChanges, PruneCommits,
	SelectPushResult, InsertPushResult,
	SelectClient, UpsertClient, ListClientCursors, DeleteClients, SelectClientActor, BindClient,
	TouchPartition, RotateEpoch, ListRegistry, ListPartitions,
	WindowSingle, WindowList, WindowBound, EngineVersion, Savepoint, RollbackToSavepoint,
}
