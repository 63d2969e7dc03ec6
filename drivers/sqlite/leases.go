package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The leases capability (LEASE-1…LEASE-4), with the SQLite dialect's SQL
// (internal/sqlitesql/leases.go): issuing is one upsert and the read of
// its result, in one write transaction.

var _ driver.LeasesConn = (*Conn)(nil)

// IssueLease stores g as the lease of (partition, clientID), keeping the
// stored id of a live lease of the same actor, and returns the stored
// record (LEASE-1, LEASE-2).
func (c *Conn) IssueLease(ctx context.Context, partition, clientID string, g driver.LeaseGrant) (driver.Lease, error) {
	var l driver.Lease
	err := c.writeTx(ctx, "sqlite: issue a lease", func(t *txStmts) error {
		if err := t.exec(ctx, sqlitesql.IssueLease, partition, clientID, g.LeaseID, g.ActorID, string(g.AllowedScopes), g.IssuedAtMs, g.ExpiresAtMs); err != nil {
			return err
		}
		var found bool
		var err error
		l, found, err = c.getLease(ctx, t, partition, clientID)
		if err == nil && !found {
			err = driver.Errorf(driver.CodeInternal, "sqlite: the issued lease is missing")
		}
		return err
	})
	return l, err
}

// GetLease returns the lease of (partition, clientID) (LEASE-1).
func (c *Conn) GetLease(ctx context.Context, partition, clientID string) (driver.Lease, bool, error) {
	return c.getLease(ctx, c.reader(), partition, clientID)
}

func (c *Conn) getLease(ctx context.Context, r runner, partition, clientID string) (driver.Lease, bool, error) {
	var l driver.Lease
	var scopes string
	var revoked int64
	err := c.queryRow(ctx, r, sqlitesql.SelectLease, []any{partition, clientID},
		&l.LeaseID, &l.ActorID, &scopes, &l.IssuedAtMs, &l.ExpiresAtMs, &revoked)
	if err == sql.ErrNoRows {
		return driver.Lease{}, false, nil
	}
	if err != nil {
		return driver.Lease{}, false, err
	}
	l.AllowedScopes, l.Revoked = driver.JSON(scopes), revoked != 0
	return l, true, nil
}

// RevokeLease marks the lease of partition carrying leaseID revoked and
// reports whether there was one (LEASE-3).
func (c *Conn) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	var n int64
	err := c.writeTx(ctx, "sqlite: revoke a lease", func(t *txStmts) error {
		var err error
		n, err = t.execResult(ctx, sqlitesql.RevokeLease, partition, leaseID)
		return err
	})
	return n > 0, err
}
