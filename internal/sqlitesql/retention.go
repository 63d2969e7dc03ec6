package sqlitesql

// Retention in the SQLite dialect (PR-7, CR-4, CR-5, run by
// sync.Store.Prune): the indexes that serve it, the bounded deletions, the
// active-cursor floor, and the upgrade of a format-1 store.

// RetentionDDL creates the indexes retention reads. A driver runs it after
// UpgradeFormat1 (a format-1 store has no recorded_at_ms yet), on every
// open; every statement is idempotent.
var RetentionDDL = []string{
	// Push results oldest first (PR-7).
	`CREATE INDEX IF NOT EXISTS _sync_push_results_by_time ON _sync_push_results (partition, recorded_at_ms, client_id, client_commit_id)`,
	// The active-cursor floor walks cursors upward and stops at the first
	// recent record (CR-5); _sync_clients_by_time (admin.go) serves CR-4.
	`CREATE INDEX IF NOT EXISTS _sync_clients_by_cursor ON _sync_clients (partition, cursor, updated_at_ms)`,
}

// UpgradeFormat1 takes a format-1 store to format 2, in one
// transaction, right after InfraDDL: it adds recorded_at_ms and fills it
// from each stored result's recordedAtMs (a result whose time cannot be
// read takes the upgrade's time, so it is kept a whole retention period),
// then records the new format. A result that a process of the previous
// release stores after the upgrade has no recorded_at_ms and is never
// collected by age. The statements take no arguments.
var UpgradeFormat1 = []string{
	`ALTER TABLE _sync_push_results ADD COLUMN recorded_at_ms INTEGER`,
	// Nested CASEs: json_type fails on text that is not JSON, and only
	// CASE promises not to evaluate a branch it does not take.
	`UPDATE _sync_push_results SET recorded_at_ms = coalesce(
	CASE WHEN json_valid(result) THEN
		CASE WHEN json_type(result, '$.recordedAtMs') = 'integer' THEN result ->> '$.recordedAtMs' END
	END,
	CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))`,
	`UPDATE _sync_meta SET value = '2' WHERE key = '` + MetaFormat + `' AND value = '1'`,
}

// Retention statements.
const (
	// DeletePushResultsBefore: ?1 partition, ?2 beforeMs (exclusive), ?3
	// limit. Deletes the oldest results (recorded_at_ms, client id, client
	// commit id) recorded before ?2, found by _sync_push_results_by_time
	// and deleted by primary key (PR-7). Rows without recorded_at_ms are
	// never candidates.
	DeletePushResultsBefore = `DELETE FROM _sync_push_results WHERE partition = ?1 AND (client_id, client_commit_id) IN (
	SELECT client_id, client_commit_id FROM _sync_push_results INDEXED BY _sync_push_results_by_time
	WHERE partition = ?1 AND recorded_at_ms < ?2 ORDER BY recorded_at_ms, client_id, client_commit_id LIMIT ?3)`
	// DeleteClientRecordsBefore: ?1 partition, ?2 beforeMs (exclusive), ?3
	// limit. Deletes the records not updated since ?2, oldest first
	// (updated_at_ms, client id), found by _sync_clients_by_time and
	// deleted by primary key (CR-4). SQLite runs one write at a time, so
	// no put can refresh a record between the two.
	DeleteClientRecordsBefore = `DELETE FROM _sync_clients WHERE partition = ?1 AND client_id IN (
	SELECT client_id FROM _sync_clients INDEXED BY _sync_clients_by_time
	WHERE partition = ?1 AND updated_at_ms < ?2 ORDER BY updated_at_ms, client_id LIMIT ?3)`
	// MinClientCursor: ?1 partition, ?2 updatedSinceMs (inclusive), ?3
	// atLeast → the smallest cursor ≥ ?3 of a record updated at or after
	// ?2, no row when none (CR-5): _sync_clients_by_cursor is walked from
	// ?3 upward and the walk stops at the first recent record.
	MinClientCursor = `SELECT cursor FROM _sync_clients INDEXED BY _sync_clients_by_cursor
WHERE partition = ?1 AND cursor >= ?3 AND updated_at_ms >= ?2 ORDER BY cursor LIMIT 1`
)

func init() {
	InfraStatements = append(InfraStatements, DeletePushResultsBefore, DeleteClientRecordsBefore, MinClientCursor)
	ReadStatements = append(ReadStatements, MinClientCursor)
}

// Format1DDL creates, as storage format 1 did, the tables format 2
// changed: _sync_push_results without recorded_at_ms, and _sync_meta
// (which says format 1 once Format1InsertMeta ran). It is the upgrade's
// starting point; the drivers' upgrade tests build a format-1 store from
// it, which the driver's own InfraDDL then completes.
var Format1DDL = []string{
	`CREATE TABLE _sync_meta (
	key TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID`,
	`CREATE TABLE _sync_push_results (
	partition TEXT NOT NULL,
	client_id TEXT NOT NULL,
	client_commit_id TEXT NOT NULL,
	result TEXT NOT NULL,
	PRIMARY KEY (partition, client_id, client_commit_id)
) WITHOUT ROWID`,
}

// Statements that write a format-1 store (upgrade tests): the meta row
// and a push result (?1 partition, ?2 client_id, ?3 client_commit_id, ?4
// result text). Client records are written with UpsertClient, the same in
// both formats.
const (
	Format1InsertMeta       = `INSERT INTO _sync_meta (key, value) VALUES ('` + MetaFormat + `', '1')`
	Format1InsertPushResult = `INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result) VALUES (?1, ?2, ?3, ?4)`
)
