package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Retention (PR-7, CR-4, CR-5): the statements are
// sqlitesql.DeletePushResultsBefore, DeleteClientRecordsBefore and
// MinClientCursor, each served by its index (TestPlans pins them).

// DeletePushResultsBefore is driver.Conn's (PR-7): one bounded DELETE
// over the push results' recorded-at index.
func (c *Conn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "sqlite: delete push results", sqlitesql.DeletePushResultsBefore, partition, beforeMs, limit)
}

// DeleteClientRecordsBefore is driver.Conn's (CR-4): one bounded DELETE
// over the client records' updated-at index.
func (c *Conn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "sqlite: delete client records", sqlitesql.DeleteClientRecordsBefore, partition, beforeMs, limit)
}

func (c *Conn) deleteBounded(ctx context.Context, what, q, partition string, beforeMs int64, limit int) (int64, error) {
	var n int64
	err := c.writeTx(ctx, what, func(t *txStmts) (err error) {
		n, err = t.execResult(ctx, q, partition, beforeMs, limit)
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
	err := c.queryRow(ctx, c.reader(), sqlitesql.MinClientCursor, []any{partition, updatedSinceMs, atLeast}, &cur)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return cur, true, nil
}

// upgradeFormat takes the store from its stored format to
// d.FormatVersion inside initInfra's transaction, one format at a time
// (1 → 2: retention; 2 → 3: the reaction record), then creates the
// retention indexes (which need format 2's columns). A new store is
// recorded as d.InfraFormat and upgraded the same way. A format it does not
// know → CodeUnavailable, nothing changed.
func upgradeFormat(ctx context.Context, tx *sql.Tx, format string) error {
	for _, up := range []struct {
		from  string
		stmts []string
	}{{"1", sqlitesql.UpgradeFormat1}, {"2", sqlitesql.UpgradeFormat2}} {
		if format != up.from {
			continue
		}
		for _, q := range up.stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, sqlitesql.SelectMeta, sqlitesql.MetaFormat).Scan(&format); err != nil {
			return err
		}
	}
	if format != sqlitesql.FormatVersion {
		return driver.Errorf(driver.CodeUnavailable, "sqlite: the store has storage format %s; this driver reads format %s", format, sqlitesql.FormatVersion)
	}
	for _, q := range sqlitesql.RetentionDDL {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
