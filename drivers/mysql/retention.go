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
