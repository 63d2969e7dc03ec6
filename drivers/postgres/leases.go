package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// The leases capability (LEASE-1…LEASE-4). One table, _sync_leases, keyed
// (partition, client_id): one record per client, refreshed in place; an
// index (partition, lease_id) serves revocation by id. Issuing is one
// upsert … RETURNING whose conflict branch keeps the stored id only for a
// live record of the same actor, so a revocation racing a refresh is
// ordered by the row lock: it either lands first (the upsert stores the
// fresh id) or marks the refreshed record. The store compares no clock.

var leasesDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_leases (
	partition ` + textC + ` NOT NULL,
	client_id ` + textC + ` NOT NULL,
	lease_id ` + textC + ` NOT NULL,
	actor_id ` + textC + ` NOT NULL,
	allowed_scopes text NOT NULL,
	issued_at_ms bigint NOT NULL,
	expires_at_ms bigint NOT NULL,
	revoked boolean NOT NULL,
	PRIMARY KEY (partition, client_id))`,
	`CREATE INDEX IF NOT EXISTS _sync_leases_by_id ON _sync_leases (partition, lease_id)`,
}

func init() { infraDDL = append(infraDDL, leasesDDL...) }

const (
	// sqlIssueLease: $1 partition, $2 client id, $3 candidate lease id, $4
	// actor id, $5 allowed scopes, $6 issued at, $7 expires at → the
	// stored record (LEASE-1, LEASE-2).
	sqlIssueLease = `INSERT INTO _sync_leases AS l (partition, client_id, lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked)
VALUES ($1, $2, $3, $4, $5, $6, $7, false)
ON CONFLICT (partition, client_id) DO UPDATE SET
	lease_id = CASE WHEN NOT l.revoked AND l.actor_id = EXCLUDED.actor_id THEN l.lease_id ELSE EXCLUDED.lease_id END,
	actor_id = EXCLUDED.actor_id, allowed_scopes = EXCLUDED.allowed_scopes,
	issued_at_ms = EXCLUDED.issued_at_ms, expires_at_ms = EXCLUDED.expires_at_ms, revoked = false
RETURNING lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked`
	// sqlSelectLease: $1 partition, $2 client id (LEASE-1).
	sqlSelectLease = `SELECT lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked FROM _sync_leases
WHERE partition = $1 AND client_id = $2`
	// sqlRevokeLease: $1 partition, $2 lease id (LEASE-3).
	sqlRevokeLease = `UPDATE _sync_leases SET revoked = true WHERE partition = $1 AND lease_id = $2`
	// sqlDeleteLeases: $1 partition; run by a log epoch rotation in its
	// transaction (LEASE-5, REG-2).
	sqlDeleteLeases = `DELETE FROM _sync_leases WHERE partition = $1`
)

var _ driver.LeasesConn = (*Conn)(nil)

// IssueLease stores g as the lease of (partition, clientID), keeping the
// stored id of a live lease of the same actor, in one statement, and
// returns the stored record (LEASE-1, LEASE-2).
func (c *Conn) IssueLease(ctx context.Context, partition, clientID string, g driver.LeaseGrant) (driver.Lease, error) {
	l, _, err := c.leaseRow(ctx, sqlIssueLease, partition, clientID, g.LeaseID, g.ActorID, string(g.AllowedScopes), g.IssuedAtMs, g.ExpiresAtMs)
	return l, err
}

// GetLease returns the lease of (partition, clientID) (LEASE-1).
func (c *Conn) GetLease(ctx context.Context, partition, clientID string) (driver.Lease, bool, error) {
	return c.leaseRow(ctx, sqlSelectLease, partition, clientID)
}

func (c *Conn) leaseRow(ctx context.Context, q string, args ...any) (driver.Lease, bool, error) {
	var l driver.Lease
	var scopes string
	err := c.queryRow(ctx, c.pool, q, args, &l.LeaseID, &l.ActorID, &scopes, &l.IssuedAtMs, &l.ExpiresAtMs, &l.Revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.Lease{}, false, nil
	}
	if err != nil {
		return driver.Lease{}, false, err
	}
	l.AllowedScopes = driver.JSON(scopes)
	return l, true, nil
}

// RevokeLease marks the lease of partition carrying leaseID revoked and
// reports whether there was one (LEASE-3), in one statement.
func (c *Conn) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	n, err := c.exec(ctx, "postgres: revoke a lease", sqlRevokeLease, partition, leaseID)
	return n > 0, err
}
