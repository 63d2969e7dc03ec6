package postgres

// retentionDDL creates the indexes retention reads; initInfra runs it
// after upgradeFormat (a format-1 store has no recorded_at_ms yet).
var retentionDDL = []string{
	// Push results oldest first (PR-7).
	`CREATE INDEX IF NOT EXISTS _sync_push_results_by_time ON _sync_push_results (partition, recorded_at_ms, client_id, client_commit_id)`,
	// The active-cursor floor walks cursors upward and stops at the first
	// recent record (CR-5); _sync_clients_by_time (sql_admin.go) serves CR-4.
	`CREATE INDEX IF NOT EXISTS _sync_clients_by_cursor ON _sync_clients (partition, cursor, updated_at_ms)`,
}

// upgradeFormat1 takes a format-1 store to format 2: recorded_at_ms is
// added and filled from each stored result's recordedAtMs, read from the
// text's start as driver.EncodePushResult writes it (status, optional
// commitSeq, recordedAtMs); a result that does not start so takes the
// upgrade's time, so it is kept a whole retention period. PostgreSQL 15
// has no non-throwing JSON validity test, and a cast of an undecodable
// result (PR-5) must not fail the upgrade. A result that a process of the
// previous release stores after the upgrade has no recorded_at_ms and is
// never collected by age.
var upgradeFormat1 = []string{
	`ALTER TABLE _sync_push_results ADD COLUMN IF NOT EXISTS recorded_at_ms bigint`,
	`UPDATE _sync_push_results SET recorded_at_ms = coalesce(
	CASE WHEN result ~ '^\{"status":"[a-z]+",("commitSeq":[0-9]+,)?"recordedAtMs":-?[0-9]{1,18}[,}]'
		THEN substring(result from '^\{"status":"[a-z]+",(?:"commitSeq":[0-9]+,)?"recordedAtMs":(-?[0-9]+)')::bigint END,
	(extract(epoch from clock_timestamp()) * 1000)::bigint)`,
	`UPDATE _sync_meta SET value = '2' WHERE key = 'format' AND value = '1'`,
}

// Retention statements. A deletion picks its rows in index order with
// FOR UPDATE SKIP LOCKED, so concurrent Prunes each delete rows of their
// own (a full batch while enough are old) and never wait on each other or
// on a pull refreshing a record; a record refreshed before the pick locks
// it no longer matches and is not picked (READ COMMITTED re-checks the
// locked row). The pick is a MATERIALIZED CTE, run once (as an IN
// sub-query the planner may rescan it, and each rescan skips the rows the
// last one locked, so LIMIT would bound nothing), and the rows go by
// their ctid (a Tid Scan: no join that could turn into a scan of the
// partition).
const (
	sqlDeletePushResultsBefore = `WITH picked AS MATERIALIZED (
	SELECT ctid FROM _sync_push_results WHERE partition = $1 AND recorded_at_ms < $2
	ORDER BY recorded_at_ms, client_id, client_commit_id LIMIT $3 FOR UPDATE SKIP LOCKED)
DELETE FROM _sync_push_results WHERE ctid = ANY (ARRAY(SELECT ctid FROM picked))`
	sqlDeleteClientRecordsBefore = `WITH picked AS MATERIALIZED (
	SELECT ctid FROM _sync_clients WHERE partition = $1 AND updated_at_ms < $2
	ORDER BY updated_at_ms, client_id LIMIT $3 FOR UPDATE SKIP LOCKED)
DELETE FROM _sync_clients WHERE ctid = ANY (ARRAY(SELECT ctid FROM picked))`
	sqlMinClientCursor = `SELECT cursor FROM _sync_clients WHERE partition = $1 AND cursor >= $3 AND updated_at_ms >= $2
ORDER BY cursor LIMIT 1`
)
