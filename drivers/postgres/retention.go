package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// Retention (PR-7, CR-4, CR-5, run by sync.Store.Prune): the indexes that
// serve it, the bounded deletions, the active-cursor floor, and the
// upgrade of a format-1 store. TestPlansRetention pins the plans.

// upgradeFormat runs, inside initInfra's transaction (under the infra
// advisory lock, so concurrent openers wait), the upgrades from the stored
// format, one format at a time (a new store starts at infraFormat), then
// retentionDDL. An unknown format → CodeUnavailable.
func upgradeFormat(ctx context.Context, tx pgx.Tx, format string) error {
	for _, up := range []struct {
		from, to string
		stmts    []string
	}{{"1", "2", upgradeFormat1}, {"2", "3", upgradeFormat2}, {"3", "4", upgradeFormat3}, {"4", "5", upgradeFormat4}} {
		if format != up.from {
			continue
		}
		for _, q := range up.stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		format = up.to
	}
	if format != formatVersion {
		return driver.Errorf(driver.CodeUnavailable, "postgres: the store has storage format %s; this driver reads format %s", format, formatVersion)
	}
	for _, q := range retentionDDL {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// DeletePushResultsBefore deletes at most limit push results recorded
// before beforeMs, oldest first, and returns how many (PR-7).
func (c *Conn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.exec(ctx, "postgres: delete push results", sqlDeletePushResultsBefore, partition, beforeMs, limit)
}

// DeleteClientRecordsBefore deletes at most limit client records not
// updated since beforeMs, oldest first, and returns how many (CR-4).
func (c *Conn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.exec(ctx, "postgres: delete client records", sqlDeleteClientRecordsBefore, partition, beforeMs, limit)
}

// MinClientCursor returns the smallest cursor ≥ atLeast of a client
// record updated at or after updatedSinceMs (CR-5).
func (c *Conn) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (int64, bool, error) {
	var cur int64
	err := c.queryRow(ctx, c.pool, sqlMinClientCursor, []any{partition, updatedSinceMs, atLeast}, &cur)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return cur, true, nil
}
