package ssp2conf

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/server"
)

// The leases capability of upstream's catalog (SPEC §7.3): the create
// option {leases: {ttlMs}} turns on the server's auth leases
// (server.Config.Leases), setResolverOutage makes the resolver report
// server.ErrAuthorizationUnavailable, revokeLease is server.RevokeLease on
// the instance's partition.

// parseLeases reads upstream's ServerLeaseOptions: absent or null is off.
func parseLeases(raw json.RawMessage) (server.Leases, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return server.Leases{}, nil
	}
	var o struct {
		TTLMs int64 `json:"ttlMs"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return server.Leases{}, badRequest("leases: %v", err)
	}
	if o.TTLMs < 1 {
		return server.Leases{}, badRequest("leases.ttlMs must be ≥ 1")
	}
	return server.Leases{TTL: time.Duration(o.TTLMs) * time.Millisecond}, nil
}

// leaseControl serves setResolverOutage and revokeLease.
func (in *instance) leaseControl(r *http.Request, op string) (any, error) {
	if op == "setResolverOutage" {
		var req struct {
			Outage bool `json:"outage"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		in.mu.Lock()
		in.outage = req.Outage
		in.mu.Unlock()
		return struct{}{}, nil
	}
	var req struct {
		LeaseID string `json:"leaseId"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.LeaseID == "" {
		return nil, badRequest("revokeLease: leaseId is empty")
	}
	if _, err := in.srv.RevokeLease(r.Context(), in.partition, req.LeaseID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// The leases capability, forwarded to the instance's Conn (every driver
// the host runs has it); a Conn without it answers unsupported.

func (c faultConn) leases() (driver.LeasesConn, error) {
	l, ok := c.Conn.(driver.LeasesConn)
	if !ok {
		return nil, &driver.Error{Code: driver.CodeUnsupported, OpIndex: -1, Capability: driver.CapLeases, Message: "the store's Conn has no leases capability"}
	}
	return l, nil
}

func (c faultConn) IssueLease(ctx context.Context, partition, clientID string, g driver.LeaseGrant) (driver.Lease, error) {
	l, err := c.leases()
	if err != nil {
		return driver.Lease{}, err
	}
	return l.IssueLease(ctx, partition, clientID, g)
}

func (c faultConn) GetLease(ctx context.Context, partition, clientID string) (driver.Lease, bool, error) {
	l, err := c.leases()
	if err != nil {
		return driver.Lease{}, false, err
	}
	return l.GetLease(ctx, partition, clientID)
}

func (c faultConn) RevokeLease(ctx context.Context, partition, leaseID string) (bool, error) {
	l, err := c.leases()
	if err != nil {
		return false, err
	}
	return l.RevokeLease(ctx, partition, leaseID)
}
