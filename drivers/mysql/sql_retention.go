package mysql

import (
	"context"
	"database/sql"
)

// Retention statements. A deletion picks its rows in a derived table that
// walks the time index in order (FORCE INDEX: a single-table DELETE …
// ORDER BY … LIMIT takes no index hint, and the optimizer prefers the
// primary key's range and a filesort of the whole partition) and stops at
// the limit, then deletes them by primary key; InnoDB's READ COMMITTED
// re-reads a row another transaction changed, so the bound is checked on
// the row deleted (a pull that refreshed a record keeps it, CR-4).
// Arguments: p, beforeMs, limit, p, beforeMs.
const (
	deletePushResultsBefore = `DELETE r FROM _sync_push_results AS r
JOIN (SELECT client_id, client_commit_id FROM _sync_push_results FORCE INDEX (_sync_push_results_by_time)
	WHERE p = ? AND recorded_at_ms < ? ORDER BY recorded_at_ms, client_id, client_commit_id LIMIT ?) AS picked
	ON r.client_id = picked.client_id AND r.client_commit_id = picked.client_commit_id
WHERE r.p = ? AND r.recorded_at_ms < ?`
	deleteClientRecordsBefore = `DELETE r FROM _sync_clients AS r
JOIN (SELECT client_id FROM _sync_clients FORCE INDEX (_sync_clients_by_time)
	WHERE p = ? AND updated_at_ms < ? ORDER BY updated_at_ms, client_id LIMIT ?) AS picked
	ON r.client_id = picked.client_id
WHERE r.p = ? AND r.updated_at_ms < ?`
	// minClientCursor: p, atLeast, updatedSinceMs. FORCE INDEX keeps the
	// walk in cursor order, stopping at the first recent record.
	minClientCursor = `SELECT cursor_seq FROM _sync_clients FORCE INDEX (_sync_clients_by_cursor)
WHERE p = ? AND cursor_seq >= ? AND updated_at_ms >= ? ORDER BY cursor_seq LIMIT 1`
)

// upgradeFormat1 takes a format-1 store to format 2. MySQL commits each
// DDL statement on its own, so every step checks the catalog first and an
// interrupted upgrade re-runs to completion; the schema lock serializes
// concurrent openers. recorded_at_ms is filled from each stored result's
// recordedAtMs; a result whose time cannot be read takes the upgrade's
// time, so it is kept a whole retention period. A result that a process
// of the previous release stores after the upgrade has no recorded_at_ms
// and is never collected by age.
var upgradeFormat1 = []step{
	{sql: `ALTER TABLE _sync_push_results ADD COLUMN recorded_at_ms BIGINT NULL`,
		done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			ty, err := columnDataType(ctx, conn, "_sync_push_results", "recorded_at_ms")
			return ty != "", err
		}},
	// Nested CASEs: MySQL's JSON functions fail on text that is not JSON,
	// and only CASE promises not to evaluate a branch it does not take.
	{sql: `UPDATE _sync_push_results SET recorded_at_ms = COALESCE(
	CASE WHEN JSON_VALID(CONVERT(result USING utf8mb4)) THEN
		CASE WHEN JSON_TYPE(JSON_EXTRACT(CONVERT(result USING utf8mb4), '$.recordedAtMs')) = 'INTEGER'
		THEN CAST(JSON_UNQUOTE(JSON_EXTRACT(CONVERT(result USING utf8mb4), '$.recordedAtMs')) AS SIGNED) END
	END,
	CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED))
WHERE recorded_at_ms IS NULL`},
	{sql: `ALTER TABLE _sync_push_results ADD KEY _sync_push_results_by_time (p, recorded_at_ms, client_id, client_commit_id)`,
		done: indexExists("_sync_push_results", "_sync_push_results_by_time")},
	{sql: `ALTER TABLE _sync_clients ADD KEY _sync_clients_by_cursor (p, cursor_seq, updated_at_ms)`,
		done: indexExists("_sync_clients", "_sync_clients_by_cursor")},
	{sql: `UPDATE _sync_meta SET v = '2' WHERE k = 'format' AND v = '1'`},
}
