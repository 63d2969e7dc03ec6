package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Retention (PR-7, CR-4, CR-5, run by sync.Store.Prune): the SQLite
// dialect's statements (drivers/sqlite's TestPlans pins their plans, and
// TestRetentionPlans here checks them on the D1 double), and the upgrade
// of a format-1 store.

// DeletePushResultsBefore (driver.Conn, PR-7) sends
// sqlitesql.DeletePushResultsBefore as one batch.
func (c *Conn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "d1http: delete push results", sqlitesql.DeletePushResultsBefore, partition, beforeMs, limit)
}

// DeleteClientRecordsBefore (driver.Conn, CR-4) sends
// sqlitesql.DeleteClientRecordsBefore as one batch.
func (c *Conn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	return c.deleteBounded(ctx, "d1http: delete client records", sqlitesql.DeleteClientRecordsBefore, partition, beforeMs, limit)
}

// deleteBounded sends one deletion as a batch; the count also survives a
// lost answer (the batch's changes() note).
func (c *Conn) deleteBounded(ctx context.Context, what, q, partition string, beforeMs int64, limit int) (int64, error) {
	a, err := c.write(ctx, what, st(q, partition, num(beforeMs), limit))
	if err != nil {
		return 0, err
	}
	if a.lost {
		return a.n, nil
	}
	return a.res[0].Meta.Changes, nil
}

// MinClientCursor returns the smallest cursor ≥ atLeast of a client
// record updated at or after updatedSinceMs (CR-5).
func (c *Conn) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (int64, bool, error) {
	rows, err := c.rows(ctx, "d1http: min client cursor", d1sql.D1MinClientCursor, partition, num(updatedSinceMs), num(atLeast))
	if err != nil || len(rows) == 0 {
		return 0, false, err
	}
	cur, err := rawInt(rows[0][0])
	if err != nil {
		return 0, false, driver.Errorf(driver.CodeInternal, "d1http: stored client cursor is malformed")
	}
	return cur, true, nil
}

// upgradeFormat takes the store from its stored format to
// d.FormatVersion, one format at a time (1 → 2: retention; 2 → 3: the
// reaction record; a new store starts at d.InfraFormat), then creates the
// retention indexes (which need format 2's columns). D1 has no
// interactive transaction: each upgrade is one atomic batch, and when a
// concurrent opener's batch won (this one then fails on the column it
// already added) the stored format says so.
func (c *Conn) upgradeFormat(ctx context.Context, format string) error {
	for _, up := range []struct {
		from, to string
		stmts    []string
	}{{"1", "2", sqlitesql.UpgradeFormat1}, {"2", "3", sqlitesql.UpgradeFormat2}} {
		if format != up.from {
			continue
		}
		stmts := make([]stmt, len(up.stmts))
		for i, q := range up.stmts {
			stmts[i] = st(q)
		}
		if _, err := c.cl.write(ctx, "d1http: upgrade the store to storage format "+up.to, stmts); err != nil {
			// A concurrent opener's batch may have won (this one then
			// failed on a column it already added): the stored format says.
			now, ferr := c.storedFormat(ctx)
			if ferr != nil || now == up.from {
				return err
			}
		}
		var err error
		if format, err = c.storedFormat(ctx); err != nil {
			return err
		}
	}
	if format != sqlitesql.FormatVersion {
		return driver.Errorf(driver.CodeUnavailable, "d1http: the store has storage format %s; this driver reads format %s", format, sqlitesql.FormatVersion)
	}
	stmts := make([]stmt, len(sqlitesql.RetentionDDL))
	for i, q := range sqlitesql.RetentionDDL {
		stmts[i] = st(q)
	}
	_, err := c.cl.write(ctx, "d1http: create the retention indexes", stmts)
	return err
}
