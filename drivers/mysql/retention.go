package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
)

// Retention (PR-7, CR-4, CR-5, run by sync.Store.Prune): the bounded
// deletions, the active-cursor floor, and the upgrade of a format-1 store.
// A new store gets the column and indexes from infraDDL; TestPlanRetention
// pins the plans.

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

// DeletePushResultsBefore deletes at most limit push results recorded
// before beforeMs, oldest first, and returns how many (PR-7).
func (c *Conn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "mysql: delete push results", deletePushResultsBefore, partition, beforeMs, limit)
}

// DeleteClientRecordsBefore deletes at most limit client records not
// updated since beforeMs, oldest first, and returns how many (CR-4).
func (c *Conn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "mysql: delete client records", deleteClientRecordsBefore, partition, beforeMs, limit)
}

func (c *Conn) deleteBounded(ctx context.Context, what, q, partition string, beforeMs int64, limit int) (int64, error) {
	var n int64
	err := c.writeTx(ctx, what, func(tx *sql.Tx) error {
		res, err := c.exec(ctx, tx, q, partition, beforeMs, limit, partition, beforeMs)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// MinClientCursor returns the smallest cursor ≥ atLeast of a client
// record updated at or after updatedSinceMs (CR-5).
func (c *Conn) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (int64, bool, error) {
	var cur int64
	err := c.queryRow(ctx, nil, minClientCursor, []any{partition, atLeast, updatedSinceMs}, &cur)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return cur, true, nil
}

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

func indexExists(tbl, name string) func(ctx context.Context, conn *sql.Conn) (bool, error) {
	return func(ctx context.Context, conn *sql.Conn) (bool, error) {
		_, exists, err := indexDef(ctx, conn, tbl, name)
		return exists, err
	}
}

// upgradeFormat upgrades a store of an older format under the schema
// lock. An unknown format → CodeUnavailable, nothing changed.
func (c *Conn) upgradeFormat(ctx context.Context, format string) error {
	if format == formatVersion {
		return nil
	}
	if format != "1" && format != "2" {
		return driver.Errorf(driver.CodeUnavailable, "mysql: the store has storage format %s; this driver reads format %s", format, formatVersion)
	}
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return c.mapErr(ctx, err, "mysql: upgrade the store")
	}
	defer conn.Close()
	release, err := c.schemaLock(ctx, conn)
	if err != nil {
		return err
	}
	defer release()
	for _, up := range []struct {
		from, to string
		steps    []step
	}{{"1", "2", upgradeFormat1}, {"2", "3", upgradeFormat2}} {
		if format != up.from {
			continue
		}
		for _, s := range up.steps {
			if err := s.run(ctx, conn); err != nil {
				return c.mapErr(ctx, err, "mysql: upgrade the store to storage format "+up.to)
			}
		}
		format = up.to
	}
	return nil
}
