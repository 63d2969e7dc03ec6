package d1http

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// TestBeginFromLastCommitStaleStamp: Conn A knows the partition's stamp
// and max seq from its last push, so its next Begin reads nothing; Conn B
// (another store on the same database) pushes in between. A's push on the
// stale stamp fails with write_conflict and writes nothing (TX-9); its
// retry reads at Begin (the partition is backed off) and lands as the
// next seq: the log stays 1…N with every push once (SEQ-4).
func TestBeginFromLastCommitStaleStamp(t *testing.T) {
	ctx := context.Background()
	srv, _ := newDouble(t)
	dsn, _, err := Driver{}.Provision(ctx, "d1://acct?token="+testToken+"&endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a, b := openProvisioned(t, dsn), openProvisioned(t, dsn)
	for i, c := range []*Conn{a, b} {
		if _, err := w1Push(ctx, c, i); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	before := srv.Stats().Requests
	_, err = w1Push(ctx, a, 2)
	if driver.CodeOf(err) != driver.CodeWriteConflict {
		t.Fatalf("A's push on a stale stamp: %v; want write_conflict", err)
	}
	if n := srv.Stats().Requests - before; n != 1 {
		t.Fatalf("A's push on a known stamp took %d requests, want 1", n)
	}
	cm := conformance.W1Commit(2)
	if _, found, err := a.GetPushResult(ctx, conformance.BenchPartition, cm.ClientID, cm.ClientCommitID); err != nil || found {
		t.Fatalf("the conflicting push left a result: %v, %v", found, err)
	}
	before = srv.Stats().Requests
	if _, err := w1Push(ctx, a, 2); err != nil {
		t.Fatalf("A's retry: %v", err)
	}
	if n := srv.Stats().Requests - before; n != 2 {
		t.Fatalf("A's retry took %d requests, want 2 (the partition is backed off: Begin reads)", n)
	}
	for i := range 3 {
		cm := conformance.W1Commit(i)
		r, found, err := b.GetPushResult(ctx, conformance.BenchPartition, cm.ClientID, cm.ClientCommitID)
		if err != nil || !found || r.CommitSeq != int64(i+1) {
			t.Fatalf("push %d: result %+v, found %v, %v; want commit seq %d", i, r, found, err, i+1)
		}
	}
}
