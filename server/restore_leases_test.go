package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// TestRestoreDropsRevokedLease is review30's restore finding on every
// engine (LEASE-5, docs/syncular.md "Backup and restore" and "Auth
// leases"): a client holds a lease at the backup point; after the copy
// the lease is revoked (the device was stolen); the copy is put back and
// RotateAllLogEpochs runs. The restored store holds the lease un-revoked,
// so unless the rotation deletes it, during a resolver outage it would
// authorize the stolen device's rounds again. With LEASE-5 every outage
// round of the client that needs authorization — a pull of a
// subscription or a push on the new epoch — is
// sync.auth_lease_required, nothing written, until a live round issues a
// fresh lease (a new id).
func TestRestoreDropsRevokedLease(t *testing.T) {
	bls := backupLanes()
	forEachLane(t, func(t *testing.T, l lane) {
		bl := bls[l.name]
		ctx := context.Background()
		dsn, ds := provisionForBackup(t, bl.drv, bl.base(t))
		var outage atomic.Bool
		open := func() (*env, func()) {
			st, err := sync.Open(l.name, dsn)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if err := st.EnsureSchema(ctx, ds); err != nil {
				t.Fatalf("EnsureSchema: %v", err)
			}
			e := newEnvOn(t, st, testSchema(), withLeases(15*time.Minute), withOutage(&outage))
			e.grant("alice", p1)
			return e, func() {
				e.ts.CloseClientConnections()
				e.ts.Close()
				_ = e.srv.Close()
				if err := st.Close(); err != nil {
					t.Fatalf("close the store: %v", err)
				}
			}
		}
		pull := func(ep string) []ssp2.Frame {
			return []ssp2.Frame{hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)}
		}

		// The backup point: c1 holds a live lease.
		e, stop := open()
		ep := e.epoch("alice", "c1")
		ls := leaseFrames(t, e.sync("alice", 2, pull(ep)...))
		if len(ls) != 1 {
			t.Fatalf("no lease issued: %+v", ls)
		}
		old := ls[0].LeaseID
		stop()
		restore, dropCopy, err := bl.drv.Backup(ctx, dsn)
		if err != nil {
			t.Fatalf("Backup: %v", err)
		}
		t.Cleanup(func() { _ = dropCopy(context.Background()) })

		// Past the copy: the lease is revoked.
		e, stop = open()
		if ok, err := e.srv.RevokeLease(ctx, "p1", old); err != nil || !ok {
			t.Fatalf("RevokeLease = %v, %v", ok, err)
		}
		stop()

		// The procedure: restore, rotate every epoch, then serve.
		if err := restore(ctx); err != nil {
			t.Fatalf("restore: %v", err)
		}
		st, err := sync.Open(l.name, dsn)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if n, err := RotateAllLogEpochs(ctx, st, time.UnixMilli(1_750_000_000_000)); err != nil || n != 1 {
			t.Fatalf("RotateAllLogEpochs = %d, %v; want 1 partition", n, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		e, stop = open()
		defer stop()
		if l, found, err := e.store.GetLease(ctx, "p1", "c1"); err != nil || found {
			t.Fatalf("the restored, rotated store holds c1's lease %+v (%v, %v); want none (LEASE-5)", l, found, err)
		}
		reg, err := e.store.ListPartitionRegistry(ctx, "", 10)
		if err != nil || len(reg) != 1 || reg[0].Epoch == ep {
			t.Fatalf("registry after the rotation %+v, %v", reg, err)
		}
		ep2 := reg[0].Epoch

		// The resolver is down: the lease of the backup point authorizes nothing.
		outage.Store(true)
		expectCode(t, e.post("alice", req(2, pull(ep2)...)), http.StatusUnauthorized, "sync.auth_lease_required")
		expectCode(t, e.post("alice", req(2, hdr("c1", ep2), commit("evil", upsert("tasks", "evil", e.task("evil", "p1", "x"))))),
			http.StatusUnauthorized, "sync.auth_lease_required")
		if _, found, _ := e.store.GetRow(ctx, "p1", "tasks", "evil"); found {
			t.Fatalf("a round during the outage wrote a row")
		}

		// A live round issues a fresh lease.
		outage.Store(false)
		ls = leaseFrames(t, e.sync("alice", 2, pull(ep2)...))
		if len(ls) != 1 || ls[0].LeaseID == old {
			t.Fatalf("after the restore %+v; want one lease with a fresh id (not %s)", ls, old)
		}
	})
}
