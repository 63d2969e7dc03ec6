package d1http

import (
	"context"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The leases capability (LEASE-1…LEASE-4), with the SQLite dialect's SQL
// (internal/sqlitesql/leases.go). D1 has no interactive transactions, and
// none is needed: issuing is one upsert whose conflict branch decides
// whether the stored id is kept, sent in one batch with the read of the
// stored record, so the record read is the one the upsert wrote. If the
// answer of a batch that landed is lost, the record is read again — a
// later write to the same client may then be what is read, which a caller
// could not tell from one racing right after the batch anyway.

var _ driver.LeasesConn = (*Conn)(nil)

// IssueLease stores g as the lease of (partition, clientID), keeping the
// stored id of a live lease of the same actor, and returns the stored
// record (LEASE-1, LEASE-2). Integers are bound as decimal text.
func (c *Conn) IssueLease(ctx context.Context, partition, clientID string, g driver.LeaseGrant) (driver.Lease, error) {
	const what = "d1http: issue a lease"
	a, err := c.write(ctx, what,
		st(sqlitesql.IssueLease, partition, clientID, g.LeaseID, g.ActorID, string(g.AllowedScopes), dec(g.IssuedAtMs), dec(g.ExpiresAtMs)),
		st(sqlitesql.SelectLease, partition, clientID))
	if err != nil {
		return driver.Lease{}, err
	}
	var rows [][]json.RawMessage
	if a.lost {
		if rows, err = c.rows(ctx, what, sqlitesql.SelectLease, partition, clientID); err != nil {
			return driver.Lease{}, err
		}
	} else {
		rows = a.res[len(a.res)-1].Results.Rows
	}
	if len(rows) != 1 {
		return driver.Lease{}, driver.Errorf(driver.CodeInternal, "%s: the issued lease is missing", what)
	}
	return decodeLease(rows[0])
}

// GetLease returns the lease of (partition, clientID) (LEASE-1).
func (c *Conn) GetLease(ctx context.Context, partition, clientID string) (driver.Lease, bool, error) {
	rows, err := c.rows(ctx, "d1http: read a lease", sqlitesql.SelectLease, partition, clientID)
	if err != nil || len(rows) == 0 {
		return driver.Lease{}, false, err
	}
	l, err := decodeLease(rows[0])
	return l, err == nil, err
}

// RevokeLease marks the lease of partition carrying leaseID revoked and
// reports whether there was one (LEASE-3), in one statement.
func (c *Conn) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	a, err := c.write(ctx, "d1http: revoke a lease", st(sqlitesql.RevokeLease, partition, leaseID))
	if err != nil {
		return false, err
	}
	if a.lost {
		return a.n > 0, nil
	}
	return a.res[0].Meta.Changes > 0, nil
}

func decodeLease(r []json.RawMessage) (driver.Lease, error) {
	var l driver.Lease
	var scopes string
	var revoked int64
	if len(r) != 6 {
		return driver.Lease{}, driver.Errorf(driver.CodeInternal, "d1http: stored lease is malformed")
	}
	err := firstErr(
		func() (e error) { l.LeaseID, e = rawString(r[0]); return },
		func() (e error) { l.ActorID, e = rawString(r[1]); return },
		func() (e error) { scopes, e = rawString(r[2]); return },
		func() (e error) { l.IssuedAtMs, e = rawInt(r[3]); return },
		func() (e error) { l.ExpiresAtMs, e = rawInt(r[4]); return },
		func() (e error) { revoked, e = rawInt(r[5]); return },
	)
	if err != nil {
		return driver.Lease{}, driver.Errorf(driver.CodeInternal, "d1http: stored lease is malformed")
	}
	l.AllowedScopes, l.Revoked = driver.JSON(scopes), revoked != 0
	return l, nil
}
