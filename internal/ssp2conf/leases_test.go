package ssp2conf

import (
	"errors"
	"testing"
	"time"

	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/sync"
)

// TestHostLeases: {leases: {ttlMs}} turns the server's leases on,
// setResolverOutage makes the resolver signal the outage, revokeLease
// revokes on the instance's partition.
func TestHostLeases(t *testing.T) {
	h := newHost(t, 0, 0)
	id := h.create(`,"leases":{"ttlMs":900000}`)
	ctl := func(op string, body any, out any) int { return h.post("/i/"+id+"/ctl/"+op, body, out) }
	h.host.mu.Lock()
	in := h.host.instances[id]
	h.host.mu.Unlock()
	if got := in.srv; got == nil {
		t.Fatal("no server")
	}
	ctl("setAllowedScopes", map[string]any{"actorId": "a", "allowed": map[string][]string{"project_id": {"p1"}}}, nil)
	if st := ctl("setResolverOutage", map[string]bool{"outage": true}, nil); st != 200 {
		t.Fatalf("setResolverOutage: %d", st)
	}
	if _, err := in.resolveScopes(t.Context(), identity("a"), "c"); !errors.Is(err, server.ErrAuthorizationUnavailable) {
		t.Fatalf("resolveScopes during an outage = %v; want the outage signal", err)
	}
	ctl("setResolverOutage", map[string]bool{"outage": false}, nil)
	if _, err := in.resolveScopes(t.Context(), identity("a"), "c"); err != nil {
		t.Fatalf("resolveScopes after the outage: %v", err)
	}

	l, err := in.store.IssueLease(t.Context(), "part-1", "c1", sync.LeaseRequest{ActorID: "a", NowMs: in.now().UnixMilli(), TTLMs: int64(15 * time.Minute / time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if st := ctl("revokeLease", map[string]string{"leaseId": l.LeaseID}, nil); st != 200 {
		t.Fatalf("revokeLease: %d", st)
	}
	got, _, err := in.store.GetLease(t.Context(), "part-1", "c1")
	if err != nil || !got.Revoked {
		t.Fatalf("after revokeLease: %+v, %v", got, err)
	}
	if st := ctl("revokeLease", map[string]string{"leaseId": ""}, nil); st != 400 {
		t.Fatalf("revokeLease of an empty id: %d, want 400", st)
	}
}
