package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// Read replicas (REP-1…REP-3, docs/scaling.md). Open on a hot standby
// (pg_is_in_recovery()) opens the Conn read-only: nothing is created or
// upgraded, the stored format must already be this driver's, and every
// write is refused before it reaches the server. A host hands such a
// store to the primary's sync.Store.SetReadReplica; every read of the
// driver is one statement (a window read one per round), so each serves
// one snapshot of the standby, which is the primary at some earlier
// commit, with the partition's head read in the same snapshot.

// inRecovery reports whether the server is a standby in recovery.
func inRecovery(ctx context.Context, q querier) (bool, error) {
	var rec bool
	err := q.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
	return rec, err
}

// openReplica checks a standby's stored format instead of creating the
// infrastructure (a standby is read-only).
func (c *Conn) openReplica(ctx context.Context) error {
	var format string
	err := c.pool.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && format != formatVersion) {
		return driver.Errorf(driver.CodeSchemaMismatch,
			"postgres: the standby holds no store of this driver's format %s yet (open the primary first and let the standby replay it)", formatVersion)
	}
	return c.mapErr(ctx, err, "postgres: open the standby")
}

// errReplica is every write's error on a Conn opened on a standby.
func errReplica(what string) error {
	return driver.Errorf(driver.CodeInvalidArgument,
		"%s: the store is a read-only replica (a hot standby); write through the primary (REP-1)", what)
}
