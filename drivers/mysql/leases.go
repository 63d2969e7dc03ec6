package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
)

// The leases capability (LEASE-1…LEASE-4). One table, _sync_leases, keyed
// (p, client_id): one record per client, refreshed in place; an index
// (p, lease_id) serves revocation by id. Issuing is one INSERT … ON
// DUPLICATE KEY UPDATE whose first assignment keeps the stored id only for
// a live record of the same actor (MySQL applies the assignments left to
// right, so it reads the record as stored), then the read of the record,
// in one transaction: the row lock orders a revocation racing a refresh.
// The store compares no clock.

var leasesDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_leases (
	p VARBINARY(255) NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	lease_id VARBINARY(255) NOT NULL,
	actor_id VARBINARY(255) NOT NULL,
	allowed_scopes LONGBLOB NOT NULL,
	issued_at_ms BIGINT NOT NULL,
	expires_at_ms BIGINT NOT NULL,
	revoked TINYINT NOT NULL,
	PRIMARY KEY (p, client_id),
	KEY _sync_leases_by_id (p, lease_id)
)` + tableOpts,
}

func init() { infraDDL = append(infraDDL, leasesDDL...) }

const (
	// issueLease: p, client id, candidate lease id, actor id, allowed
	// scopes, issued at, expires at (LEASE-1, LEASE-2).
	issueLease = `INSERT INTO _sync_leases (p, client_id, lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked)
VALUES (?, ?, ?, ?, ?, ?, ?, 0)
ON DUPLICATE KEY UPDATE
	lease_id = IF(revoked = 0 AND actor_id = VALUES(actor_id), lease_id, VALUES(lease_id)),
	actor_id = VALUES(actor_id), allowed_scopes = VALUES(allowed_scopes),
	issued_at_ms = VALUES(issued_at_ms), expires_at_ms = VALUES(expires_at_ms), revoked = 0`
	// selectLease: p, client id (LEASE-1).
	selectLease = `SELECT lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked FROM _sync_leases
WHERE p = ? AND client_id = ?`
	// revokeLease: p, lease id (LEASE-3); counts matched rows (clientFoundRows).
	revokeLease = `UPDATE _sync_leases SET revoked = 1 WHERE p = ? AND lease_id = ?`
	// deleteLeases: p; run by a log epoch rotation in its transaction
	// (LEASE-5, REG-2).
	deleteLeases = `DELETE FROM _sync_leases WHERE p = ?`
)

var _ driver.LeasesConn = (*Conn)(nil)

// IssueLease stores g as the lease of (partition, clientID), keeping the
// stored id of a live lease of the same actor, and returns the stored
// record (LEASE-1, LEASE-2), in one transaction.
func (c *Conn) IssueLease(ctx context.Context, partition, clientID string, g driver.LeaseGrant) (driver.Lease, error) {
	var l driver.Lease
	err := c.writeTx(ctx, "mysql: issue a lease", func(tx *sql.Tx) error {
		if _, err := c.exec(ctx, tx, issueLease, partition, clientID, g.LeaseID, g.ActorID, string(g.AllowedScopes), g.IssuedAtMs, g.ExpiresAtMs); err != nil {
			return err
		}
		var found bool
		var err error
		l, found, err = c.leaseRow(ctx, tx, partition, clientID)
		if err == nil && !found {
			err = driver.Errorf(driver.CodeInternal, "mysql: the issued lease is missing")
		}
		return err
	})
	return l, err
}

// GetLease returns the lease of (partition, clientID) (LEASE-1).
func (c *Conn) GetLease(ctx context.Context, partition, clientID string) (driver.Lease, bool, error) {
	return c.leaseRow(ctx, nil, partition, clientID)
}

func (c *Conn) leaseRow(ctx context.Context, tx *sql.Tx, partition, clientID string) (driver.Lease, bool, error) {
	var l driver.Lease
	var scopes []byte
	var revoked int64
	err := c.queryRow(ctx, tx, selectLease, []any{partition, clientID}, &l.LeaseID, &l.ActorID, &scopes, &l.IssuedAtMs, &l.ExpiresAtMs, &revoked)
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
// reports whether there was one (LEASE-3), in one statement.
func (c *Conn) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	var n int64
	err := c.check()
	if err == nil {
		err = c.retry(ctx, func() error {
			res, err := c.exec(ctx, nil, revokeLease, partition, leaseID)
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		})
	}
	return n > 0, c.mapErr(ctx, err, "mysql: revoke a lease")
}
