package server

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// withOutage wraps the env's resolver: while outage is set it reports
// ErrAuthorizationUnavailable (SPEC §7.3.3's signal).
func withOutage(outage *atomic.Bool) envOption {
	return func(c *Config) {
		inner := c.ResolveScopes
		c.ResolveScopes = func(ctx context.Context, id Identity, clientID string) (map[string][]string, error) {
			if outage.Load() {
				return nil, ErrAuthorizationUnavailable
			}
			return inner(ctx, id, clientID)
		}
	}
}

func withLeases(ttl time.Duration) envOption {
	return func(c *Config) { c.Leases = Leases{TTL: ttl} }
}

// leaseFrames returns the LEASE frames of m, checking that one sits right
// after RESP_HEADER (§7.3.2).
func leaseFrames(t *testing.T, m *ssp2.Message) []*ssp2.Lease {
	t.Helper()
	out := framesOf[*ssp2.Lease](m)
	if len(out) > 0 {
		if _, ok := m.Frames[1].(*ssp2.Lease); !ok {
			t.Fatalf("LEASE is not right after RESP_HEADER: frame 1 is %T", m.Frames[1])
		}
	}
	return out
}

// TestLeases: SPEC §7.3 on every lane — issuance and sliding refresh on
// live rounds, lease-authorized service during an outage (no refresh),
// expiry and revocation as request-level errors, recovery with a fresh id.
func TestLeases(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		var outage atomic.Bool
		const ttl = 15 * time.Minute
		e := newEnv(t, l, withLeases(ttl), withOutage(&outage))
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		pull := func(frames ...ssp2.Frame) []ssp2.Frame {
			return append(frames, &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
		}

		m := e.sync("alice", 2, pull(hdr("c1", ep))...)
		ls := leaseFrames(t, m)
		start := e.clock.Now().UnixMilli()
		if len(ls) != 1 || !strings.HasPrefix(ls[0].LeaseID, "lease_") || ls[0].ExpiresAtMs != start+ttl.Milliseconds() {
			t.Fatalf("issued %+v; want one lease expiring at %d", ls, start+ttl.Milliseconds())
		}
		id := ls[0].LeaseID

		// Sliding refresh: same id, later expiry.
		e.clock.Advance(time.Minute)
		ls = leaseFrames(t, e.sync("alice", 2, pull(hdr("c1", ep))...))
		if len(ls) != 1 || ls[0].LeaseID != id || ls[0].ExpiresAtMs != start+time.Minute.Milliseconds()+ttl.Milliseconds() {
			t.Fatalf("refreshed %+v; want %s slid by a minute", ls, id)
		}
		stored, _, err := e.store.GetLease(context.Background(), "p1", "c1")
		if err != nil || stored.ActorID != "alice" || len(stored.AllowedScopes["project_id"]) != 1 {
			t.Fatalf("stored lease %+v %v", stored, err)
		}

		// Outage: the write is authorized by the lease; no LEASE, no refresh.
		outage.Store(true)
		m = e.sync("alice", 2, pull(hdr("c1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "offline"))))...)
		if r := framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushApplied {
			t.Fatalf("lease-authorized push %+v", r)
		}
		if len(leaseFrames(t, m)) != 0 {
			t.Fatalf("an outage round sent LEASE")
		}
		if secs := sections(m); secs[0].start.Status != ssp2.SubActive {
			t.Fatalf("lease-authorized pull %+v", secs[0].start)
		}
		// Still §3.4: a scope the lease does not hold is forbidden.
		m = e.sync("alice", 2, hdr("c1", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p2", "other"))))
		if r := framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushRejected || r.Results[0].Code != "sync.forbidden" {
			t.Fatalf("push outside the lease %+v", r)
		}
		// Another actor on the client's lease: required.
		e.grant("bob", p1)
		expectCode(t, e.post("bob", req(2, pull(hdr("c2", ep))...)), http.StatusUnauthorized, "sync.auth_lease_required")

		// Past the window (measured from the last live refresh): required.
		e.clock.Advance(ttl)
		expectCode(t, e.post("alice", req(2, pull(hdr("c1", ep))...)), http.StatusUnauthorized, "sync.auth_lease_required")

		// Recovery issues the same id again (not revoked, same actor).
		outage.Store(false)
		if ls = leaseFrames(t, e.sync("alice", 2, pull(hdr("c1", ep))...)); len(ls) != 1 || ls[0].LeaseID != id {
			t.Fatalf("after recovery %+v", ls)
		}

		// Revocation: the outage round fails revoked, nothing written;
		// recovery mints a fresh id.
		if ok, err := e.srv.RevokeLease(context.Background(), "p1", id); err != nil || !ok {
			t.Fatalf("RevokeLease = %v, %v", ok, err)
		}
		outage.Store(true)
		expectCode(t, e.post("alice", req(2, hdr("c1", ep), commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "blocked"))))),
			http.StatusUnauthorized, "sync.auth_lease_revoked")
		if _, found, _ := e.store.GetRow(context.Background(), "p1", "tasks", "t3"); found {
			t.Fatalf("a revoked lease wrote t3")
		}
		outage.Store(false)
		if ls = leaseFrames(t, e.sync("alice", 2, pull(hdr("c1", ep))...)); len(ls) != 1 || ls[0].LeaseID == id {
			t.Fatalf("after revocation %+v; want a fresh id", ls)
		}
	})
}

// TestLeasesOff: the zero Config issues nothing, and an outage is
// sync.auth_lease_required (§7.3.3 zero-config).
func TestLeasesOff(t *testing.T) {
	var outage atomic.Bool
	e := newEnv(t, sqliteLane(), withOutage(&outage))
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	if ls := leaseFrames(t, e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))); len(ls) != 0 {
		t.Fatalf("a feature-off server sent %+v", ls)
	}
	outage.Store(true)
	expectCode(t, e.post("alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))),
		http.StatusUnauthorized, "sync.auth_lease_required")
	if _, found, err := e.store.GetLease(context.Background(), "p1", "c1"); err != nil || found {
		t.Fatalf("a feature-off server stored a lease (%v, %v)", found, err)
	}
}

// TestLeasesConfig: New refuses a TTL out of range.
func TestLeasesConfig(t *testing.T) {
	for _, ttl := range []time.Duration{time.Microsecond, -time.Second, time.Duration(sync.MaxLeaseTTLMs+1) * time.Millisecond} {
		st := sqliteLane().open(t)
		sch := testSchema()
		ds, _ := sch.DriverSchema()
		if err := st.EnsureSchema(context.Background(), ds); err != nil {
			t.Fatal(err)
		}
		_, err := New(st, Config{Schema: sch, Authenticate: func(*http.Request) (Identity, error) { return Identity{}, nil },
			ResolveScopes: func(context.Context, Identity, string) (map[string][]string, error) { return nil, nil },
			Leases:        Leases{TTL: ttl}})
		if err == nil || !strings.Contains(err.Error(), "Leases.TTL") {
			t.Errorf("New with Leases.TTL %v = %v; want refused", ttl, err)
		}
	}
}

func expectCode(t *testing.T, res httpResult, status int, code string) {
	t.Helper()
	if res.status != status || errorCode(res) != code {
		t.Fatalf("got %d %v; want %d %s", res.status, res.err, status, code)
	}
}
