package mysql

import (
	"context"
	"fmt"
	"math/rand/v2"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testlane"
)

// Fault and load tests (docs/reliability.md): server-side connection kills
// during pushes and claims, a storm of 1,000 pushes with random context
// deadlines, and 16 concurrent writers per partition. After each, every
// commit is whole or absent (rows, log, push result and reaction agree;
// TX-2, TX-6), sequences are dense (SEQ-1, SEQ-4), no transaction of the
// store is left open on the server (TX-6) and the store takes the next push.

// TestMySQLKillDuringPush: the server connection of a push's Tx is killed
// after each step; the push fails with a typed error, nothing of it lands,
// no transaction stays open, and the next push lands as the next commit.
func TestMySQLKillDuringPush(t *testing.T) {
	f := openFaultStore(t)
	ctx := context.Background()
	must := map[int]bool{}
	i := 0
	push := func() {
		t.Helper()
		if ok, err := faultPush(ctx, f.c, "P", i, nil); err != nil || !ok {
			t.Fatalf("push %d: %v", i, err)
		}
		must[i] = true
		i++
	}
	push()
	for _, step := range []string{"begun", "upserted", "appended", "resulted"} {
		ok, err := faultPush(ctx, f.c, "P", i, func(s string, tx *Tx) {
			if s != step {
				return
			}
			var id int64
			if err := tx.tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
				t.Fatalf("connection id: %v", err)
			}
			if err := f.kill(ctx, id); err != nil {
				t.Fatalf("kill: %v", err)
			}
		})
		if ok || err == nil {
			t.Fatalf("kill after %s: the push succeeded", step)
		}
		if driver.CodeOf(err) == "" {
			t.Errorf("kill after %s: error %v is not a *driver.Error (ERR-1)", step, err)
		}
		i++ // the killed push's key is not retried: it must stay absent
		push()
		if got := faulttest.Verify(t, f.c, "P", i, must); got != len(must) {
			t.Fatalf("after a kill at %s: %d pushes landed, want %d", step, got, len(must))
		}
	}
	f.expectNoOpenTx(t)
}

// TestMySQLKillStorm: while 6 writers push (retrying a failed push until
// its result is stored, as a host does) and 3 workers claim and complete
// reactions, a killer ends a random server connection of the store every
// 1–6 ms. Afterwards every push landed exactly once and whole, each
// reaction was completed at most once, every reaction can still be
// claimed and completed, and no transaction is left open.
func TestMySQLKillStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	f := openFaultStore(t)
	ctx := context.Background()
	const pushes, writers, claimers = 240, 6, 3
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var (
		next, kills, pushErrs, claimErrs atomic.Int64
		clock                            atomic.Int64 // logical ms for leases
		done                             = make(chan struct{})
		wg, bg                           gosync.WaitGroup
		completedMu                      gosync.Mutex
		completed                        = map[string]int{}
	)
	bg.Go(func() { // the killer
		rng := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(1+rng.IntN(5)) * time.Millisecond):
			}
			ids, err := f.sessions(ctx)
			if err != nil || len(ids) == 0 {
				continue
			}
			if err := f.kill(ctx, ids[rng.IntN(len(ids))]); err == nil {
				kills.Add(1)
			}
		}
	})
	for w := range claimers {
		bg.Go(func() {
			owner := fmt.Sprint("w", w)
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := f.c.ClaimReactions(ctx, "P", driver.ClaimRequest{Owner: owner, NowMs: clock.Add(1), LeaseMs: 200, Limit: 5})
				if err != nil {
					claimErrs.Add(1)
					continue
				}
				for _, r := range got {
					if ok, err := f.c.CompleteReaction(ctx, "P", r.Key, owner, clock.Load()); err == nil && ok {
						completedMu.Lock()
						completed[r.Key]++
						completedMu.Unlock()
					}
				}
			}
		})
	}
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < pushes; i = int(next.Add(1) - 1) {
				for attempt := 0; ; attempt++ {
					_, err := faultPush(ctx, f.c, "P", i, nil)
					if err == nil {
						break
					}
					pushErrs.Add(1)
					if driver.CodeOf(err) == "" || attempt > 50 {
						errs <- fmt.Errorf("push %d attempt %d: %v", i, attempt, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d kills, %d failed push attempts, %d failed claims", kills.Load(), pushErrs.Load(), claimErrs.Load())
	if kills.Load() < 20 {
		t.Fatalf("only %d kills: the storm did not exercise the store", kills.Load())
	}
	all := map[int]bool{}
	for i := range pushes {
		all[i] = true
	}
	if got := faulttest.Verify(t, f.c, "P", pushes, all); got != pushes {
		t.Fatalf("%d pushes landed, want %d", got, pushes)
	}
	for k, n := range completed {
		if n > 1 {
			t.Fatalf("reaction %s completed %d times (RX-3, RX-5)", k, n)
		}
	}
	// Drain: every reaction not yet completed is claimable once its lease
	// expired, and completes.
	for now := int64(1 << 40); ; now++ {
		got, err := f.c.ClaimReactions(ctx, "P", driver.ClaimRequest{Owner: "drain", NowMs: now, LeaseMs: 1, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			if ok, err := f.c.CompleteReaction(ctx, "P", r.Key, "drain", now); err != nil || !ok {
				t.Fatalf("complete %s after the storm: %v %v", r.Key, ok, err)
			}
		}
	}
	rx, err := f.c.ListReactions(ctx, "P", driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionCompleted}, Limit: 10_000})
	if err != nil || len(rx) != pushes {
		t.Fatalf("%d reactions completed after the drain, want %d (%v)", len(rx), pushes, err)
	}
	f.expectNoOpenTx(t)
}

// TestMySQLCancelStorm: 1,000 pushes from 8 goroutines over two
// partitions, each under a context that ends after a random 0–15 ms (one in
// five without a deadline). Afterwards no transaction of the store is open
// on the server, every push that returned success landed, every other push
// is whole or absent, sequences are dense, and each partition takes the
// next push (TX-6, SEQ-1, PR-4).
func TestMySQLCancelStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	f := openFaultStore(t)
	const pushes, workers = 1000, 8
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	parts := []string{"P", "Q"}
	var (
		next     atomic.Int64
		mu       gosync.Mutex
		wg       gosync.WaitGroup
		mustLand = map[string]map[int]bool{"P": {}, "Q": {}}
		failed   atomic.Int64
		bad      = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := int(next.Add(1) - 1); i < pushes; i = int(next.Add(1) - 1) {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(5) != 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(15_000))*time.Microsecond)
				}
				p := parts[i%2]
				ok, err := faultPush(ctx, f.c, p, i, nil)
				cancel()
				switch {
				case err == nil && ok:
					mu.Lock()
					mustLand[p][i] = true
					mu.Unlock()
				case err == nil:
					bad <- fmt.Errorf("push %d found its result already stored", i)
					return
				case driver.CodeOf(err) == "":
					bad <- fmt.Errorf("push %d: error %v is not a *driver.Error (ERR-1)", i, err)
					return
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatal(err)
	}
	t.Logf("%d of %d pushes failed on their context", failed.Load(), pushes)
	if failed.Load() < 50 || failed.Load() > pushes-50 {
		t.Fatalf("%d failed pushes: the storm did not mix landed and cancelled pushes", failed.Load())
	}
	f.expectNoOpenTx(t)
	for k, p := range parts {
		// Keys of the other partition are absent here: verify over all
		// keys, and count only this partition's.
		landed := faulttest.Verify(t, f.c, p, pushes, mustLand[p])
		if landed < len(mustLand[p]) {
			t.Fatalf("%s: %d landed < %d succeeded", p, landed, len(mustLand[p]))
		}
		if ok, err := faultPush(context.Background(), f.c, p, pushes+k, nil); err != nil || !ok {
			t.Fatalf("%s: push after the storm: %v", p, err)
		}
		if got := faulttest.Verify(t, f.c, p, pushes+2, mustLand[p]); got != landed+1 {
			t.Fatalf("%s: %d landed after one more push, want %d", p, got, landed+1)
		}
	}
}

// TestMySQLSixteenWriters: 16 goroutines push to each of two partitions at
// once, each push a read-modify-write of a counter row plus a push result:
// each partition's sequence is exactly 1…N with no lost update (TX-1,
// SEQ-4, PR-3). Counts are smaller under -race.
func TestMySQLSixteenWriters(t *testing.T) {
	f := openFaultStore(t)
	per := 10
	if faulttest.RaceEnabled() {
		per = 5
	}
	faulttest.SixteenWriters(t, f.c, per)
	f.expectNoOpenTx(t)
}
