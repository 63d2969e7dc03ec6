package sync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
)

// Auth leases (capability leases, LEASE-1…LEASE-4): one durable record per
// (partition, client id) recording the scopes an actor was allowed when
// it was last authorized live, for how long that grant may stand in for
// the live authority, and whether the host revoked it. The SSP2 server
// (SPEC §7.3) issues and refreshes one on every round whose scopes
// resolved live and falls back to it during an authorization outage.
// Times come from the caller's clock (epoch ms); the store compares none
// of its own.

var (
	idLease      = idKind{"lease id", MaxIDBytes, "V-2"}
	idScopeValue = idKind{"allowed scope value", MaxIDBytes, "LEASE-4"}
)

// MaxLeaseTTLMs bounds a lease's lifetime (one year, in ms; LEASE-4).
const MaxLeaseTTLMs = 366 * 24 * 60 * 60 * 1000

// Lease is a stored auth lease (LEASE-1): LeaseID is the revocation
// handle, stable across refreshes (LEASE-2); AllowedScopes maps a scope
// variable to its allowed values ("*" = any value), as issued;
// ExpiresAtMs = IssuedAtMs + the TTL it was issued with.
type Lease struct {
	LeaseID       string
	ActorID       string
	AllowedScopes map[string][]string
	IssuedAtMs    int64
	ExpiresAtMs   int64
	Revoked       bool
}

// ValidAt reports whether the lease authorizes at nowMs (epoch ms): not
// revoked and nowMs < ExpiresAtMs — invalid at the expiry instant itself
// (LEASE-4).
func (l Lease) ValidAt(nowMs int64) bool {
	return !l.Revoked && nowMs < l.ExpiresAtMs
}

// LeaseRequest is one issuance or refresh (LEASE-1, LEASE-2): the actor
// (V-2), its resolved allowed scopes (keys and values V-2 text; their
// JSON ≤ 64 KiB), the caller's clock NowMs (≥ 0) and TTLMs
// (1…MaxLeaseTTLMs).
type LeaseRequest struct {
	ActorID       string
	AllowedScopes map[string][]string
	NowMs         int64
	TTLMs         int64
}

// IssueLease is a capability call (LEASE-1, LEASE-2).
//
// IssueLease stores the lease of (partition, clientID): r's actor and
// scopes, issued at r.NowMs, expiring at r.NowMs + r.TTLMs, not revoked.
// It keeps the stored lease id when the stored lease is of the same actor
// and not revoked (a sliding refresh), else mints a fresh random id
// ("lease_" + 32 hex digits) — a revoked id never comes back. Returns the
// stored lease. Checks: V-1 partition, V-2 client id, actor, scope keys
// and values, scopes ≤ 64 KiB of JSON, NowMs ≥ 0, TTLMs 1…MaxLeaseTTLMs
// (CodeInvalidArgument, nothing stored). Capability leases: without it →
// CodeUnsupported (ERR-2).
func (s *Store) IssueLease(ctx context.Context, partition, clientID string, r LeaseRequest) (_ Lease, err error) {
	defer s.observe(&ctx, "Store.IssueLease", partition).done(&err)
	if err := checkCtx(ctx, "IssueLease"); err != nil {
		return Lease{}, err
	}
	const op = "IssueLease"
	lc, ok := s.conn.(driver.LeasesConn)
	if !ok {
		return Lease{}, s.unsupported(op, CapLeases)
	}
	if err := idPartition.check(op, partition); err != nil {
		return Lease{}, err
	}
	if err := idClient.check(op, clientID); err != nil {
		return Lease{}, err
	}
	if err := idActor.check(op, r.ActorID); err != nil {
		return Lease{}, err
	}
	if r.NowMs < 0 {
		return Lease{}, argErr(op, "LEASE-4", "NowMs is %d, below 0", r.NowMs)
	}
	if r.TTLMs < 1 || r.TTLMs > MaxLeaseTTLMs {
		return Lease{}, argErr(op, "LEASE-4", "TTLMs is %d, outside 1…%d", r.TTLMs, int64(MaxLeaseTTLMs))
	}
	scopes, err := encodeLeaseScopes(op, r.AllowedScopes)
	if err != nil {
		return Lease{}, err
	}
	id, err := newLeaseID()
	if err != nil {
		return Lease{}, err
	}
	stored, err := lc.IssueLease(ctx, partition, clientID, driver.LeaseGrant{
		LeaseID: id, ActorID: r.ActorID, AllowedScopes: scopes,
		IssuedAtMs: r.NowMs, ExpiresAtMs: r.NowMs + r.TTLMs,
	})
	if err != nil {
		return Lease{}, err
	}
	return decodeLease(stored)
}

// GetLease is a capability call (LEASE-1): the lease of (partition,
// clientID), revoked or expired as stored, or false when none was
// issued. It reads the primary, never a read replica: a revocation is
// seen at once. Checks: V-1 partition, V-2 client id. Capability leases:
// without it → CodeUnsupported (ERR-2).
func (s *Store) GetLease(ctx context.Context, partition, clientID string) (_ Lease, _ bool, err error) {
	defer s.observe(&ctx, "Store.GetLease", partition).done(&err)
	if err := checkCtx(ctx, "GetLease"); err != nil {
		return Lease{}, false, err
	}
	const op = "GetLease"
	lc, ok := s.conn.(driver.LeasesConn)
	if !ok {
		return Lease{}, false, s.unsupported(op, CapLeases)
	}
	if err := idPartition.check(op, partition); err != nil {
		return Lease{}, false, err
	}
	if err := idClient.check(op, clientID); err != nil {
		return Lease{}, false, err
	}
	stored, found, err := lc.GetLease(ctx, partition, clientID)
	if err != nil || !found {
		return Lease{}, false, err
	}
	l, err := decodeLease(stored)
	return l, err == nil, err
}

// RevokeLease is a capability call (LEASE-3): it marks revoked the lease
// of partition whose id is leaseID and reports whether there was one.
// Durable: the next IssueLease for its client mints a fresh id. Checks:
// V-1 partition, V-2 lease id. Capability leases: without it →
// CodeUnsupported (ERR-2).
func (s *Store) RevokeLease(ctx context.Context, partition, leaseID string) (_ bool, err error) {
	defer s.observe(&ctx, "Store.RevokeLease", partition).done(&err)
	if err := checkCtx(ctx, "RevokeLease"); err != nil {
		return false, err
	}
	const op = "RevokeLease"
	lc, ok := s.conn.(driver.LeasesConn)
	if !ok {
		return false, s.unsupported(op, CapLeases)
	}
	if err := idPartition.check(op, partition); err != nil {
		return false, err
	}
	if err := idLease.check(op, leaseID); err != nil {
		return false, err
	}
	return lc.RevokeLease(ctx, partition, leaseID)
}

// encodeLeaseScopes checks allowed and returns its JSON, keys sorted.
func encodeLeaseScopes(op string, allowed map[string][]string) (driver.JSON, error) {
	norm := make(map[string][]string, len(allowed))
	for k, vals := range allowed {
		if err := idFilterKey.check(op, k); err != nil {
			return "", err
		}
		for _, v := range vals {
			if err := idScopeValue.check(op, v); err != nil {
				return "", err
			}
		}
		if vals == nil {
			vals = []string{}
		}
		norm[k] = vals
	}
	b, err := json.Marshal(norm) // encoding/json sorts map keys
	if err != nil {
		return "", driver.Wrap(CodeInternal, err, "%s: encode allowed scopes", op)
	}
	if len(b) > driver.MaxLeaseScopesBytes {
		return "", argErr(op, "LEASE-4", "allowed scopes are %d bytes of JSON, over the %d-byte limit", len(b), driver.MaxLeaseScopesBytes)
	}
	return driver.JSON(b), nil
}

// decodeLease turns a stored record into a Lease; a record whose scopes
// do not decode is CodeInternal.
func decodeLease(d driver.Lease) (Lease, error) {
	l := Lease{LeaseID: d.LeaseID, ActorID: d.ActorID, IssuedAtMs: d.IssuedAtMs, ExpiresAtMs: d.ExpiresAtMs, Revoked: d.Revoked}
	if err := json.Unmarshal([]byte(d.AllowedScopes), &l.AllowedScopes); err != nil || l.AllowedScopes == nil {
		return Lease{}, driver.Errorf(CodeInternal, "the stored lease's allowed scopes are not a JSON object (LEASE-1)")
	}
	return l, nil
}

// newLeaseID mints "lease_" + 128 random bits in hex.
func newLeaseID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", driver.Wrap(CodeInternal, err, "mint a lease id")
	}
	return "lease_" + hex.EncodeToString(b[:]), nil
}
