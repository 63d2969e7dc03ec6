package driver

import "context"

// ---- auth leases (LEASE) ----

// LeaseGrant is what IssueLease stores for one (partition, client id)
// (LEASE-1). LeaseID is the id to store when no live lease of the same
// actor can be refreshed: a fresh, non-empty id (V-2) the caller minted.
// AllowedScopes is a JSON object of scope variable → list of values,
// stored and read back byte for byte (≤ MaxLeaseScopesBytes). The times
// are epoch ms from the caller's clock, IssuedAtMs ≥ 0 and ExpiresAtMs >
// IssuedAtMs; the driver compares no clock of its own.
type LeaseGrant struct {
	LeaseID       string
	ActorID       string
	AllowedScopes JSON
	IssuedAtMs    int64
	ExpiresAtMs   int64
}

// Lease is a stored auth-lease record (LEASE-1): the fields of the grant
// that stored it, the id it carries, and whether it was revoked (LEASE-3).
type Lease struct {
	LeaseID       string
	ActorID       string
	AllowedScopes JSON
	IssuedAtMs    int64
	ExpiresAtMs   int64
	Revoked       bool
}

// MaxLeaseScopesBytes bounds LeaseGrant.AllowedScopes (64 KiB).
const MaxLeaseScopesBytes = 64 << 10

// LeasesConn is the leases capability: one durable auth-lease record per
// (partition, client id), refreshed in place, revocable by its id
// (LEASE-1…LEASE-4). Input is validated by package sync before a driver
// is called.
type LeasesConn interface {
	// IssueLease stores g as the record of (partition, clientID) in one
	// atomic step and returns the stored record (LEASE-1). The record
	// keeps its stored LeaseID when it exists, is not revoked and has
	// g.ActorID; otherwise it takes g.LeaseID (LEASE-2). Either way it
	// is not revoked afterwards and carries g's actor, scopes and times.
	IssueLease(ctx context.Context, partition, clientID string, g LeaseGrant) (Lease, error)
	// GetLease returns the record of (partition, clientID), revoked or
	// not, or false when there is none (LEASE-1).
	GetLease(ctx context.Context, partition, clientID string) (Lease, bool, error)
	// RevokeLease marks revoked the record of partition carrying leaseID
	// and reports whether there was one; durable, and no record of
	// another partition changes (LEASE-3).
	RevokeLease(ctx context.Context, partition, leaseID string) (bool, error)
}
