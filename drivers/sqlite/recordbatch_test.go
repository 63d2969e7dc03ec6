package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// waitFor yields until cond holds (no clock: the goroutines it waits for
// run in this process).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatalf("never: %s", what)
		}
		runtime.Gosched()
	}
}

func testRecord(i int) driver.ClientRecord {
	return driver.ClientRecord{ClientID: fmt.Sprintf("c%02d", i), ActorID: "a", WireVersion: 2,
		Cursor: int64(i), UpdatedAtMs: int64(1000 + i),
		Subscriptions: []driver.Subscription{{ID: "s", Table: "todos", Scopes: map[string][]string{"project_id": {"p"}}}}}
}

// N client records put at once while the writer is taken are written in
// one writer transaction, each as put (recordBatcher).
func TestRecordWritesShareOneWriterTransaction(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	holder, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	before := c.recs.txs.Load()
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- c.PutClientRecord(ctx, "p1", testRecord(i)) }()
	}
	waitFor(t, "16 records queued", func() bool { return c.recs.queued() == n })
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := c.recs.txs.Load() - before; got != 1 {
		t.Fatalf("%d concurrent record writes took %d writer transactions, want 1", n, got)
	}
	for i := range n {
		rec, ok, err := c.GetClientRecord(ctx, "p1", testRecord(i).ClientID)
		if err != nil || !ok || rec.Cursor != int64(i) || rec.UpdatedAtMs != int64(1000+i) || len(rec.Subscriptions) != 1 {
			t.Fatalf("record %d: %+v %v %v", i, rec, ok, err)
		}
	}
}

// A put whose ctx ends while its record waits for the writer returns the
// ctx's error and writes nothing; the others queued with it are written.
func TestRecordWriteCancelledWhileQueuedWritesNothing(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	holder, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- c.PutClientRecord(cctx, "p1", testRecord(0)) }()
	stays := make(chan error, 1)
	waitFor(t, "record 0 queued", func() bool { return c.recs.queued() == 1 })
	go func() { stays <- c.PutClientRecord(ctx, "p1", testRecord(1)) }()
	waitFor(t, "record 1 queued", func() bool { return c.recs.queued() == 2 })
	cancel()
	waitFor(t, "record 0 leaves the queue", func() bool { return c.recs.queued() == 1 })
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-stays; err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.GetClientRecord(ctx, "p1", testRecord(0).ClientID); err != nil || ok {
		t.Fatalf("cancelled record written: %v %v", ok, err)
	}
	if _, ok, err := c.GetClientRecord(ctx, "p1", testRecord(1).ClientID); err != nil || !ok {
		t.Fatalf("record 1 not written: %v %v", ok, err)
	}
}

// The gate picks the record batch as often as the records it would
// write weigh against the other waiters (each waiter alike): with 9
// records and 1 transaction waiting, the batch goes first 9 times in 10.
// Counted over 4,000 releases; the bounds are 15 standard deviations
// wide (a weight of 1 would give 2,000).
func TestWriterGateWeighsTheBatchByItsRecords(t *testing.T) {
	ctx := context.Background()
	batchFirst := 0
	const trials = 4000
	for range trials {
		g := writerGate{weight: func() int { return 9 }}
		if err := g.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		var wg gosync.WaitGroup
		var mu gosync.Mutex
		var order []bool
		for _, batch := range []bool{true, false} {
			wg.Go(func() {
				if err := g.acquire(ctx, batch); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, batch)
				mu.Unlock()
				g.release()
			})
		}
		waitFor(t, "two waiters", func() bool { hi, lo := g.waiting(); return hi == 1 && lo == 1 })
		g.release()
		wg.Wait()
		if order[0] {
			batchFirst++
		}
	}
	if batchFirst < 3320 || batchFirst > 3880 {
		t.Fatalf("batch first %d of %d, want ≈ 3,600 (9 in 10)", batchFirst, trials)
	}
}
