// Package replicatest is the read-replica test every driver with replicas
// runs on its lane (REP-1…REP-3, docs/scaling.md): the same checks on a
// PostgreSQL hot standby and a MariaDB replica.
package replicatest

import (
	"context"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/sync"
)

// Lane is one primary database and its replica.
type Lane struct {
	// Primary is a store on the primary's (fresh) database.
	Primary *sync.Store
	// OpenReplica opens a store on the same database on the replica.
	OpenReplica func() (*sync.Store, error)
	// Pause and Resume stop and restart the replica's applying of the
	// primary's changes.
	Pause, Resume func(t *testing.T)
}

// Run checks REP-1…REP-3: a store on the replica is read-only; reads
// marked with sync.AllowReplica go to it and see one consistent earlier
// snapshot of the primary — shown by pausing the replica while the
// primary commits —; a window read whose cursor the replica has not
// reached is served by the primary; unmarked reads use the primary.
func Run(t *testing.T, l Lane) {
	ctx := context.Background()
	primary := l.Primary
	if err := primary.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := faulttest.Push(ctx, primary.Conn(), "p1", i); err != nil {
			t.Fatal(err)
		}
	}
	// The replica applies the database, then opens read-only.
	var replica *sync.Store
	var err error
	for range 400 {
		if replica, err = l.OpenReplica(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open the replica: %v", err)
	}
	defer replica.Close()
	waitApplied(t, replica, 3)
	if err := replica.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema on the replica (same schema, nothing to write): %v", err)
	}
	primary.SetReadReplica(replica)
	defer primary.SetReadReplica(nil)

	// Writes through the replica are refused, typed (REP-1).
	if err := replica.RunInTx(ctx, "p1", func(context.Context, *sync.Tx) error { return nil }); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("a Tx on the replica: %v, want %s", err, driver.CodeInvalidArgument)
	}
	if err := replica.SetHorizonSeq(ctx, "p1", 1); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("a write on the replica: %v, want %s", err, driver.CodeInvalidArgument)
	}
	if _, err := replica.Conn().MaxCommitSeq(ctx, "p1"); err != nil {
		t.Fatalf("the replica store after refused writes: %v", err)
	}

	// Pause the replica; the primary commits twice more.
	l.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			l.Resume(t)
		}
	}()
	for i := 3; i < 5; i++ {
		if err := faulttest.Push(ctx, primary.Conn(), "p1", i); err != nil {
			t.Fatal(err)
		}
	}
	rctx := sync.AllowReplica(ctx)
	filter := driver.ScopeFilter{"project": {"p"}}
	if got, err := primary.MaxCommitSeq(rctx, "p1"); err != nil || got != 3 {
		t.Fatalf("MaxCommitSeq from the paused replica = %d, %v; want 3 (REP-1)", got, err)
	}
	if got, err := primary.MaxCommitSeq(ctx, "p1"); err != nil || got != 5 {
		t.Fatalf("MaxCommitSeq unmarked = %d, %v; want 5 from the primary", got, err)
	}
	win, err := primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, ThroughSeq: 1 << 40, LimitChanges: 100})
	if err != nil || len(win) != 3 || win[len(win)-1].Seq != 3 {
		t.Fatalf("window from the replica: %d commits, %v; want commits 1…3, none newer than its head (REP-2)", len(win), err)
	}
	rows, err := primary.ScanRows(rctx, "p1", driver.ScanQuery{Table: "todos", Filter: filter, Limit: 100})
	if err != nil || len(rows) != 6 {
		t.Fatalf("scan from the replica: %d rows, %v; want the 6 rows of commits 1…3", len(rows), err)
	}
	// A client that pulled to 5 from the primary: the replica trails it,
	// so the primary serves the read and the cursor stays (REP-3).
	win, err = primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, AfterSeq: 5, ThroughSeq: 5, LimitChanges: 100})
	if err != nil || len(win) != 0 {
		t.Fatalf("window after cursor 5 with the replica at 3: %d commits, %v; want none and no error (REP-3)", len(win), err)
	}
	win, err = primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, AfterSeq: 4, ThroughSeq: 5, LimitChanges: 100})
	if err != nil || len(win) != 1 || win[0].Seq != 5 {
		t.Fatalf("window after cursor 4 with the replica at 3: %d commits, %v; want commit 5 from the primary (REP-3)", len(win), err)
	}
	l.Resume(t)
	resumed = true
	waitApplied(t, replica, 5)
	if got, err := primary.MaxCommitSeq(rctx, "p1"); err != nil || got != 5 {
		t.Fatalf("MaxCommitSeq from the resumed replica = %d, %v; want 5", got, err)
	}
}

// waitApplied waits (bounded by polls) until the replica's p1 reaches seq.
func waitApplied(t *testing.T, replica *sync.Store, seq int64) {
	t.Helper()
	var got int64
	var err error
	for range 400 {
		if got, err = replica.MaxCommitSeq(context.Background(), "p1"); err == nil && got >= seq {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the replica did not apply p1 to %d (at %d, %v)", seq, got, err)
}

// Bench measures W2 and W3 on the primary and on the replica after W1
// (conformance.BenchReadsFromReplica) and reports them as metrics; run
// with -benchtime 1x. primary is a fresh store's Conn; openReplica opens
// the same store on the replica.
func Bench(b *testing.B, primary driver.Conn, openReplica func() (driver.Conn, error)) {
	ctx := context.Background()
	if err := primary.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		b.Fatal(err)
	}
	// The replica needs the infrastructure the primary just made.
	var replica driver.Conn
	var err error
	for range 400 {
		if replica, err = openReplica(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		b.Fatalf("open the replica: %v", err)
	}
	defer replica.Close()
	for range 400 {
		if err = replica.EnsureSchema(ctx, conformance.TestSchema()); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		b.Fatalf("EnsureSchema on the replica: %v", err)
	}
	for range b.N {
		r, err := conformance.BenchReadsFromReplica(ctx, primary, replica, 5000)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.W2Primary, "W2-primary-changes/s")
		b.ReportMetric(r.W2Replica, "W2-replica-changes/s")
		b.ReportMetric(r.W3Primary, "W3-primary-rows/s")
		b.ReportMetric(r.W3Replica, "W3-replica-rows/s")
	}
}
