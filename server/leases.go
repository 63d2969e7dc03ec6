package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// Auth leases (SPEC §7.3). A lease is kept by the store (capability
// leases, docs/contract.md LEASE-1…LEASE-4), one per (partition, client
// id): the actor's allowed scopes as last resolved live, valid for
// Leases.TTL after that round. The server issues or refreshes it on every
// round whose scopes resolved live and sends it as LEASE (§7.3.2); when
// ResolveScopes reports an outage (ErrAuthorizationUnavailable) the round
// is authorized against the stored lease instead, exactly as if the
// resolver had returned its scopes, and refreshes nothing (§7.3.3).

// ErrAuthorizationUnavailable is the outage signal of SPEC §7.3.3: a
// ResolveScopes error that matches it (errors.Is) says the live authority
// is unreachable, not that it refused. A sync round then falls back to
// the client's stored lease: a valid lease of the same actor authorizes
// with its scopes; none, an expired one or another actor's fails the
// round with sync.auth_lease_required, a revoked one with
// sync.auth_lease_revoked (request-level, §10.2). With leases off every
// outage is sync.auth_lease_required. A segment download and a realtime
// registration never use a lease: there an outage fails closed like any
// resolver error (§3.2 rule 5).
var ErrAuthorizationUnavailable = errors.New("server: live authorization is unavailable")

// Leases configures SPEC §7.3 auth leases. The zero value is off.
type Leases struct {
	// TTL is a lease's lifetime after the round that issued or last
	// refreshed it: the sliding window of §7.3.3, 1 ms…366 days
	// (sync.MaxLeaseTTLMs). 0 turns leases off. SPEC's suggested value
	// is 15 minutes.
	TTL time.Duration
}

func (l Leases) on() bool { return l.TTL != 0 }

// check validates l against store: a TTL in range, and a store that keeps
// leases.
func (l Leases) check(store *sync.Store) error {
	if !l.on() {
		return nil
	}
	if l.TTL < time.Millisecond || l.TTL.Milliseconds() > sync.MaxLeaseTTLMs {
		return fmt.Errorf("server: Config.Leases.TTL is %v; want 1ms…%v (SPEC §7.3.3)", l.TTL, time.Duration(sync.MaxLeaseTTLMs)*time.Millisecond)
	}
	if !store.Supports(sync.CapLeases) {
		return errors.New("server: Config.Leases needs a store with the leases capability (docs/contract.md LEASE); this driver has none")
	}
	return nil
}

// RevokeLease revokes the lease of partition whose id is leaseID (SPEC
// §7.3.4) and reports whether there was one. The revocation is durable:
// a round of its client that would be lease-authorized then fails with
// sync.auth_lease_revoked, and the next round authorized live issues the
// client a fresh lease id. Local data is never touched. Errors: the
// store's (sync.storage.invalid_argument for an empty or over-long id,
// sync.storage.unsupported without the leases capability).
func (s *Server) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	return s.store.RevokeLease(ctx, partition, leaseID)
}

// resolveRound is resolve for a sync round (§3.2 step 3) with §7.3.3 on
// top: a live answer issues or refreshes the client's lease (when leases
// are on) and returns it for the LEASE frame; an outage authorizes
// against the stored lease. A returned *ssp2.Error fails the request;
// any other error is a storage failure.
func (s *Server) resolveRound(ctx context.Context, id Identity, clientID string) (grant, *ssp2.Lease, error) {
	allowed, err := s.cfg.ResolveScopes(ctx, id, clientID)
	if errors.Is(err, ErrAuthorizationUnavailable) {
		g, err := s.leaseGrant(ctx, id, clientID)
		return g, nil, err
	}
	if err != nil {
		var pe *ssp2.Error
		if errors.As(err, &pe) {
			return grant{}, nil, pe
		}
		s.log.LogAttrs(ctx, levelInfo, "ssp2 server: scope resolution failed; failing closed", errAttr(err))
		return grant{}, nil, nil
	}
	g, err := s.grantOf(ctx, allowed)
	if err != nil || !s.cfg.Leases.on() {
		return g, nil, err
	}
	l, err := s.store.IssueLease(ctx, id.Partition, clientID, sync.LeaseRequest{
		ActorID: id.ActorID, AllowedScopes: allowed, NowMs: s.nowMs(), TTLMs: s.cfg.Leases.TTL.Milliseconds(),
	})
	if err != nil {
		// A storage failure — or resolved scopes the store cannot keep
		// (over 64 KiB of JSON: a host's resolver bug, never the client's).
		return grant{}, nil, err
	}
	return g, &ssp2.Lease{LeaseID: l.LeaseID, ExpiresAtMs: l.ExpiresAtMs}, nil
}

// leaseGrant authorizes an outage round against the client's stored
// lease (§7.3.3, §7.3.4).
func (s *Server) leaseGrant(ctx context.Context, id Identity, clientID string) (grant, error) {
	if !s.cfg.Leases.on() {
		return grant{}, perr(ssp2.CodeAuthLeaseRequired, "live authorization is unavailable and this server issues no auth leases (§7.3.3)")
	}
	l, found, err := s.store.GetLease(ctx, id.Partition, clientID)
	if err != nil {
		return grant{}, err
	}
	switch {
	case !found || l.ActorID != id.ActorID:
		return grant{}, perr(ssp2.CodeAuthLeaseRequired, "live authorization is unavailable and this client holds no auth lease (§7.3.3)")
	case l.Revoked:
		return grant{}, perr(ssp2.CodeAuthLeaseRevoked, "live authorization is unavailable and this client's auth lease was revoked (§7.3.4)")
	case !l.ValidAt(s.nowMs()):
		return grant{}, perr(ssp2.CodeAuthLeaseRequired, "live authorization is unavailable and this client's auth lease expired (§7.3.3)")
	}
	return s.grantOf(ctx, l.AllowedScopes)
}
