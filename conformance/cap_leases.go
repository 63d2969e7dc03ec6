package conformance

import (
	"errors"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases of the leases capability (docs/contract.md LEASE-1…LEASE-5): one
// durable auth-lease record per (partition, client id), refreshed in
// place under a stable id, revocable by that id; a revoked id never comes
// back; expiry is the caller's clock.

func init() {
	c := driver.CapLeases
	register(
		// Catches: a record not stored as given (scopes, times, actor), a
		// lease read for a client that has none, or one lost on reopen.
		Case{Name: "LEASE-1/issue-stores-the-record-durably", Capability: c, Run: leaseIssueStores},
		// Catches: a refresh that mints a new id, or keeps the old window or scopes.
		Case{Name: "LEASE-2/refresh-keeps-the-id-and-slides", Capability: c, Run: leaseRefreshSlides},
		// Catches: a lease of one actor refreshed as another actor's.
		Case{Name: "LEASE-2/another-actor-takes-a-fresh-id", Capability: c, Run: leaseOtherActor},
		// Catches: a revocation that is not stored, or a revoked id refreshed back to life.
		Case{Name: "LEASE-3/revoked-id-never-comes-back", Capability: c, Run: leaseRevokedStaysDead},
		// Catches: leases shared between partitions or clients, or a revocation reaching another partition.
		Case{Name: "LEASE-3/partitions-and-clients-are-isolated", Capability: c, Run: leaseIsolated},
		// Catches: Store input that reaches the driver, or a validity check off by one at the expiry instant.
		Case{Name: "LEASE-4/store-checks-input-and-expiry", Capability: c, Run: leaseStoreChecks},
		// Catches: leases that survive a log epoch rotation (a lease revoked
		// after a backup point authorizing rounds again once the backup is
		// restored and rotated), a rotation reaching another partition's
		// leases, or a refused rotation deleting leases.
		Case{Name: "LEASE-5/rotation-deletes-the-partitions-leases", Capability: c, Run: leaseRotationDeletes},
	)
}

// leaseConn returns the leases half of conn or fails the case.
func leaseConn(t T, conn driver.Conn) driver.LeasesConn {
	t.Helper()
	l, ok := conn.(driver.LeasesConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.LeasesConn although the case runs for capability %s", driver.CapLeases)
	}
	return l
}

func leaseIssue(t T, conn driver.Conn, p, client string, g driver.LeaseGrant) driver.Lease {
	t.Helper()
	l, err := leaseConn(t, conn).IssueLease(t.Context(), p, client, g)
	if err != nil {
		t.Fatalf("IssueLease(%s): %v", client, err)
	}
	return l
}

func leaseGet(t T, conn driver.Conn, p, client string) (driver.Lease, bool) {
	t.Helper()
	l, found, err := leaseConn(t, conn).GetLease(t.Context(), p, client)
	if err != nil {
		t.Fatalf("GetLease(%s): %v", client, err)
	}
	return l, found
}

func leaseRevoke(t T, conn driver.Conn, p, id string) bool {
	t.Helper()
	ok, err := leaseConn(t, conn).RevokeLease(t.Context(), p, id)
	if err != nil {
		t.Fatalf("RevokeLease(%s): %v", id, err)
	}
	return ok
}

func grant(id, actor, scopes string, at, ttl int64) driver.LeaseGrant {
	return driver.LeaseGrant{LeaseID: id, ActorID: actor, AllowedScopes: driver.JSON(scopes), IssuedAtMs: at, ExpiresAtMs: at + ttl}
}

func leaseOf(g driver.LeaseGrant, id string, revoked bool) driver.Lease {
	return driver.Lease{LeaseID: id, ActorID: g.ActorID, AllowedScopes: g.AllowedScopes, IssuedAtMs: g.IssuedAtMs, ExpiresAtMs: g.ExpiresAtMs, Revoked: revoked}
}

func leaseIssueStores(t T, h Harness) {
	conn := openStore(t, h)
	g := grant("lease_a", "actor-1", `{"project":["p1","*"],"owner":[]}`, 1_700_000_000_000, 900_000)
	expectEqual(t, "LEASE-1: the issued record", leaseOf(g, "lease_a", false), leaseIssue(t, conn, "p1", "c1", g))
	got, found := leaseGet(t, conn, "p1", "c1")
	expectEqual(t, "LEASE-1: found", true, found)
	expectEqual(t, "LEASE-1: the record read back", leaseOf(g, "lease_a", false), got)
	if _, found := leaseGet(t, conn, "p1", "c2"); found {
		t.Errorf("LEASE-1: GetLease of a client never issued a lease found one")
	}
	if h.Reopen != nil {
		again := h.Reopen(t, conn)
		got, found := leaseGet(t, again, "p1", "c1")
		expectEqual(t, "LEASE-1: found after reopen", true, found)
		expectEqual(t, "LEASE-1: the record after reopen", leaseOf(g, "lease_a", false), got)
	}
}

func leaseRefreshSlides(t T, h Harness) {
	conn := openStore(t, h)
	leaseIssue(t, conn, "p1", "c1", grant("lease_a", "actor-1", `{"project":["p1"]}`, 1000, 500))
	g2 := grant("lease_b", "actor-1", `{"project":["p1","p2"]}`, 1200, 500)
	expectEqual(t, "LEASE-2: the refreshed record keeps lease_a", leaseOf(g2, "lease_a", false), leaseIssue(t, conn, "p1", "c1", g2))
	got, _ := leaseGet(t, conn, "p1", "c1")
	expectEqual(t, "LEASE-2: the refreshed record read back", leaseOf(g2, "lease_a", false), got)
	// A refresh of an expired lease is still a refresh: the store compares no clock.
	g3 := grant("lease_c", "actor-1", `{}`, 9000, 1)
	expectEqual(t, "LEASE-2: a refresh after the window keeps lease_a", leaseOf(g3, "lease_a", false), leaseIssue(t, conn, "p1", "c1", g3))
}

func leaseOtherActor(t T, h Harness) {
	conn := openStore(t, h)
	leaseIssue(t, conn, "p1", "c1", grant("lease_a", "actor-1", `{"project":["p1"]}`, 1000, 500))
	g2 := grant("lease_b", "actor-2", `{"project":["p9"]}`, 1100, 500)
	expectEqual(t, "LEASE-2: another actor's issue", leaseOf(g2, "lease_b", false), leaseIssue(t, conn, "p1", "c1", g2))
	if leaseRevoke(t, conn, "p1", "lease_a") {
		t.Errorf("LEASE-3: revoking lease_a, which no record carries any more, reported one")
	}
}

func leaseRevokedStaysDead(t T, h Harness) {
	conn := openStore(t, h)
	g := grant("lease_a", "actor-1", `{"project":["p1"]}`, 1000, 500)
	leaseIssue(t, conn, "p1", "c1", g)
	if !leaseRevoke(t, conn, "p1", "lease_a") {
		t.Errorf("LEASE-3: RevokeLease(lease_a) reported no lease")
	}
	got, _ := leaseGet(t, conn, "p1", "c1")
	expectEqual(t, "LEASE-3: the revoked record", leaseOf(g, "lease_a", true), got)
	if h.Reopen != nil {
		got, _ := leaseGet(t, h.Reopen(t, conn), "p1", "c1")
		expectEqual(t, "LEASE-3: the revoked record after reopen", leaseOf(g, "lease_a", true), got)
	}
	if leaseRevoke(t, conn, "p1", "lease_zz") {
		t.Errorf("LEASE-3: RevokeLease of an id no record carries reported one")
	}
	g2 := grant("lease_b", "actor-1", `{"project":["p1"]}`, 1100, 500)
	expectEqual(t, "LEASE-3: an issue after the revocation takes the fresh id", leaseOf(g2, "lease_b", false), leaseIssue(t, conn, "p1", "c1", g2))
	g3 := grant("lease_c", "actor-1", `{"project":["p1"]}`, 1200, 500)
	expectEqual(t, "LEASE-3: the fresh id then slides", leaseOf(g3, "lease_b", false), leaseIssue(t, conn, "p1", "c1", g3))
}

func leaseIsolated(t T, h Harness) {
	conn := openStore(t, h)
	g := grant("lease_a", "actor-1", `{"project":["p1"]}`, 1000, 500)
	leaseIssue(t, conn, "p1", "c1", g)
	g2 := grant("lease_b", "actor-1", `{"project":["p2"]}`, 1000, 500)
	expectEqual(t, "LEASE-3: the same client in another partition", leaseOf(g2, "lease_b", false), leaseIssue(t, conn, "p2", "c1", g2))
	g3 := grant("lease_c", "actor-1", `{"project":["p1"]}`, 1000, 500)
	expectEqual(t, "LEASE-3: another client in the partition", leaseOf(g3, "lease_c", false), leaseIssue(t, conn, "p1", "c2", g3))
	if leaseRevoke(t, conn, "p2", "lease_a") {
		t.Errorf("LEASE-3: RevokeLease(p2, lease_a) found p1's lease")
	}
	if !leaseRevoke(t, conn, "p1", "lease_c") {
		t.Errorf("LEASE-3: RevokeLease(p1, lease_c) reported no lease")
	}
	for _, w := range []struct {
		p, client string
		want      driver.Lease
	}{{"p1", "c1", leaseOf(g, "lease_a", false)}, {"p2", "c1", leaseOf(g2, "lease_b", false)}, {"p1", "c2", leaseOf(g3, "lease_c", true)}} {
		got, _ := leaseGet(t, conn, w.p, w.client)
		expectEqual(t, "LEASE-3: the lease of "+w.p+"/"+w.client, w.want, got)
	}
}

func leaseStoreChecks(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	store := syncstore.OpenConn(conn)
	ok := syncstore.LeaseRequest{ActorID: "actor-1", AllowedScopes: map[string][]string{"project": {"p1"}}, NowMs: 1000, TTLMs: 500}
	bad := []struct {
		what      string
		p, client string
		r         func(r syncstore.LeaseRequest) syncstore.LeaseRequest
	}{
		{"empty partition", "", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { return r }},
		{"empty client id", "p1", "", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { return r }},
		{"empty actor", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { r.ActorID = ""; return r }},
		{"zero TTL", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { r.TTLMs = 0; return r }},
		{"TTL over a year", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { r.TTLMs = syncstore.MaxLeaseTTLMs + 1; return r }},
		{"negative clock", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest { r.NowMs = -1; return r }},
		{"NUL in a scope value", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest {
			r.AllowedScopes = map[string][]string{"project": {"a\x00b"}}
			return r
		}},
		{"scopes over 64 KiB", "p1", "c1", func(r syncstore.LeaseRequest) syncstore.LeaseRequest {
			big := make([]string, 0, 3000)
			for i := 0; i < 3000; i++ {
				big = append(big, "value-number-"+string(rune('a'+i%26))+"-padded-to-be-long-enough")
			}
			r.AllowedScopes = map[string][]string{"project": big}
			return r
		}},
	}
	for _, b := range bad {
		_, err := store.IssueLease(ctx, b.p, b.client, b.r(ok))
		errExpectTyped(t, "LEASE-4: IssueLease with "+b.what, err, driver.CodeInvalidArgument)
	}
	if _, found := leaseGet(t, conn, "p1", "c1"); found {
		t.Fatalf("LEASE-4: a refused IssueLease stored a lease (V-9)")
	}
	l, err := store.IssueLease(ctx, "p1", "c1", ok)
	must(t, "Store.IssueLease", err)
	if l.LeaseID == "" || l.IssuedAtMs != 1000 || l.ExpiresAtMs != 1500 || l.Revoked || l.ActorID != "actor-1" {
		t.Errorf("LEASE-4: Store.IssueLease = %+v; want a fresh id, issued at 1000, expiring at 1500", l)
	}
	expectEqual(t, "LEASE-4: scopes", map[string][]string{"project": {"p1"}}, l.AllowedScopes)
	if !l.ValidAt(1499) || l.ValidAt(1500) {
		t.Errorf("LEASE-4: ValidAt(1499) = %v, ValidAt(1500) = %v; want valid strictly before expiry", l.ValidAt(1499), l.ValidAt(1500))
	}
	again, err := store.IssueLease(ctx, "p1", "c1", syncstore.LeaseRequest{ActorID: "actor-1", AllowedScopes: map[string][]string{}, NowMs: 2000, TTLMs: 500})
	must(t, "Store.IssueLease (refresh)", err)
	expectEqual(t, "LEASE-4: the refresh keeps the id", l.LeaseID, again.LeaseID)
	revoked, err := store.RevokeLease(ctx, "p1", l.LeaseID)
	must(t, "Store.RevokeLease", err)
	got, found, err := store.GetLease(ctx, "p1", "c1")
	must(t, "Store.GetLease", err)
	if !revoked || !found || !got.Revoked || got.ValidAt(2001) {
		t.Errorf("LEASE-4: after RevokeLease (reported %v) GetLease = %+v, %v; want a revoked, invalid lease", revoked, got, found)
	}
	fresh, err := store.IssueLease(ctx, "p1", "c1", ok)
	must(t, "Store.IssueLease (after revocation)", err)
	if fresh.LeaseID == l.LeaseID || fresh.Revoked {
		t.Errorf("LEASE-4: the issue after a revocation = %+v; want a fresh id, not revoked", fresh)
	}
	_, err = store.RevokeLease(ctx, "p1", "")
	if !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("LEASE-4: RevokeLease with an empty id = %v; want invalid_argument", err)
	}
}

func leaseRotationDeletes(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	live := grant("lease_a", "actor-1", `{"project":["p1"]}`, 1000, 500)
	leaseIssue(t, conn, "p1", "c1", live)
	leaseIssue(t, conn, "p1", "c2", grant("lease_b", "actor-2", `{"project":["p1"]}`, 1000, 500))
	if !leaseRevoke(t, conn, "p1", "lease_b") {
		t.Fatalf("LEASE-3: RevokeLease(p1, lease_b) reported no lease")
	}
	other := grant("lease_c", "actor-1", `{"project":["p2"]}`, 1000, 500)
	leaseIssue(t, conn, "p2", "c1", other)
	if _, err := conn.TouchPartition(ctx, "p1", 900, "e0"); err != nil {
		t.Fatalf("TouchPartition(p1): %v", err)
	}
	// A refused rotation changes nothing.
	if _, err := conn.RotatePartitionLogEpoch(ctx, "p1", "", 1100); err == nil {
		t.Fatalf("REG-2: RotatePartitionLogEpoch with an empty epoch succeeded")
	}
	got, found := leaseGet(t, conn, "p1", "c1")
	expectEqual(t, "LEASE-5: p1/c1 after a refused rotation found", true, found)
	expectEqual(t, "LEASE-5: p1/c1 after a refused rotation", leaseOf(live, "lease_a", false), got)

	if _, err := conn.RotatePartitionLogEpoch(ctx, "p1", "e1", 1200); err != nil {
		t.Fatalf("RotatePartitionLogEpoch(p1): %v", err)
	}
	check := func(conn driver.Conn, when string) {
		t.Helper()
		for _, client := range []string{"c1", "c2"} {
			if l, found := leaseGet(t, conn, "p1", client); found {
				t.Errorf("LEASE-5: %s, p1/%s still holds a lease: %+v", when, client, l)
			}
		}
		got, found := leaseGet(t, conn, "p2", "c1")
		expectEqual(t, "LEASE-5: "+when+", p2/c1 found", true, found)
		expectEqual(t, "LEASE-5: "+when+", p2/c1 untouched", leaseOf(other, "lease_c", false), got)
	}
	check(conn, "after the rotation")
	if h.Reopen != nil {
		conn = h.Reopen(t, conn)
		check(conn, "after the rotation and a reopen")
	}
	if leaseRevoke(t, conn, "p1", "lease_a") {
		t.Errorf("LEASE-5: RevokeLease(p1, lease_a) after the rotation reported a lease")
	}
	// The next issue is a first one: it takes the grant's fresh id.
	g := grant("lease_d", "actor-1", `{"project":["p1"]}`, 1300, 500)
	expectEqual(t, "LEASE-5: the first issue after the rotation", leaseOf(g, "lease_d", false), leaseIssue(t, conn, "p1", "c1", g))
}
