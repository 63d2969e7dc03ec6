package mysql

import (
	"context"
	"fmt"
	"math"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// enqueue pushes one commit with reactions inputs in partition p.
func enqueue(t testing.TB, c *Conn, p string, ins ...driver.ReactionInput) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx, p)
	if err != nil {
		t.Errorf("Begin: %v", err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc-" + ins[0].Key, CreatedAtMs: 1})
	if err == nil {
		err = tx.(*Tx).EnqueueReactions(ctx, seq, ins)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		t.Errorf("enqueue %d reactions: %v", len(ins), err)
	}
}

func rxInputs(prefix string, n int, maxAttempts int) []driver.ReactionInput {
	out := make([]driver.ReactionInput, n)
	for i := range out {
		out[i] = driver.ReactionInput{Key: fmt.Sprintf("%s%05d", prefix, i), Type: "x", Payload: "{}",
			MaxAttempts: maxAttempts, CreatedAtMs: int64(i)}
	}
	return out
}

// TestReactionsNoLockErrorReachesCaller: 8 claimers (short leases, so
// leases expire and rows are re-claimed or dead-lettered), a pruner, a
// retrier and pushes enqueuing more reactions, all on one partition: no
// call may return an error (a deadlock or lock-wait timeout must be
// retried inside the driver), and no row is leased to two owners at once.
func TestReactionsNoLockErrorReachesCaller(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	const p = "p"
	enqueue(t, c, p, rxInputs("a", 1500, 2)...)
	var now atomic.Int64
	now.Store(10_000)
	var stop atomic.Bool
	var errs atomic.Int64
	fail := func(what string, err error) {
		if err != nil {
			errs.Add(1)
			t.Errorf("%s: %v (code %s)", what, err, driver.CodeOf(err))
		}
	}
	var wg gosync.WaitGroup
	var claimedMu gosync.Mutex
	holder := map[string]string{} // key → owner of the live lease
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for i := 0; i < 40 && !stop.Load(); i++ {
				at := now.Add(7)
				rs, err := c.ClaimReactions(ctx, p, driver.ClaimRequest{Owner: owner, NowMs: at, LeaseMs: 20, Limit: 25})
				fail("ClaimReactions", err)
				for j, r := range rs {
					claimedMu.Lock()
					holder[r.Key] = owner
					claimedMu.Unlock()
					switch j % 4 {
					case 0:
						_, err = c.FailReaction(ctx, p, r.Key, owner, driver.FailRequest{NowMs: at, Retry: true, RetryAtMs: at + 5, Code: "x.retry"})
					case 1:
						_, err = c.ExtendReactionLease(ctx, p, r.Key, owner, at, 10)
					case 2:
						// Left to expire: re-claimed or dead-lettered later.
					default:
						_, err = c.CompleteReaction(ctx, p, r.Key, owner, at)
					}
					fail("owner operation", err)
				}
			}
		}()
	}
	wg.Add(3)
	go func() { // pruner
		defer wg.Done()
		for i := 0; i < 60 && !stop.Load(); i++ {
			_, err := c.PruneReactions(ctx, p, driver.ReactionPruneRequest{CompletedBeforeMs: now.Load(), DeadLetterBeforeMs: now.Load(), Limit: 30})
			fail("PruneReactions", err)
		}
	}()
	go func() { // operator retrying dead letters
		defer wg.Done()
		for i := 0; i < 200 && !stop.Load(); i++ {
			_, err := c.RetryReaction(ctx, p, fmt.Sprintf("a%05d", i*7%1500), now.Load())
			fail("RetryReaction", err)
		}
	}()
	go func() { // pushes enqueuing more
		defer wg.Done()
		for i := 0; i < 20 && !stop.Load(); i++ {
			enqueue(t, c, p, rxInputs(fmt.Sprintf("b%02d-", i), 50, 3)...)
		}
	}()
	wg.Wait()
	if errs.Load() > 0 {
		t.Fatalf("%d calls failed", errs.Load())
	}
	// Every lease still running belongs to the last claimer of the row.
	rs, err := c.ListReactions(ctx, p, driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionLeased}, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if holder[r.Key] != r.LeaseOwner {
			t.Errorf("%s is leased to %q, but the last claim returned it to %q (RX-3)", r.Key, r.LeaseOwner, holder[r.Key])
		}
	}
}

// TestReactionsEnqueueLargeBatchIsAtomic: a batch longer than one INSERT
// whose last row repeats a stored key stages nothing (RX-1).
func TestReactionsEnqueueLargeBatchIsAtomic(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	enqueue(t, c, "p", driver.ReactionInput{Key: "dup", Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: 1})
	ins := append(rxInputs("k", enqueueBatchRows+10, 1), driver.ReactionInput{Key: "dup", Type: "x", Payload: "{}", MaxAttempts: 1})
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	err = tx.(*Tx).EnqueueReactions(ctx, 1, ins)
	if driver.CodeOf(err) != driver.CodeDuplicateReactionKey {
		t.Fatalf("enqueue with a stored key: %v, want %s", err, driver.CodeDuplicateReactionKey)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit after a failed enqueue: %v", err)
	}
	rs, err := c.ListReactions(ctx, "p", driver.ReactionListQuery{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Key != "dup" {
		t.Errorf("after a failed batch of %d: %d reactions stored, want only the earlier one (RX-1)", len(ins), len(rs))
	}
}

// TestPlanReactions: claims walk _sync_reactions_claim in claim order (no
// filesort), dead-lettering walks _sync_reactions_exhausted, listing and
// pruning their indexes — never a scan of the table.
func TestPlanReactions(t *testing.T) {
	c := openStore(t)
	for i := range 4 {
		enqueue(t, c, fmt.Sprintf("p%d", i), rxInputs("r", 300, 2)...)
	}
	if _, err := c.db.Exec("ANALYZE TABLE _sync_reactions"); err != nil {
		t.Fatal(err)
	}
	r := map[string]string{"_sync_reactions": "_sync_reactions_claim"}
	expectPlan(t, "claim", explain(t, c, claimSelect(0), "p1", 100, 50), r, false)
	expectPlan(t, "claim of two types", explain(t, c, claimSelect(2), "p1", 100, "x", "y", 50), r, false)
	expectPlan(t, "dead-letter selection", explain(t, c, claimSelectExhausted(0), "p1", 100),
		map[string]string{"_sync_reactions": "_sync_reactions_exhausted"}, false)
	expectPlan(t, "list", explain(t, c, listReactions([]string{"pending", "completed"}, 0),
		"p1", "pending", int64(math.MaxInt64), int64(math.MaxInt64), keyAboveAll, 10,
		"p1", "completed", int64(math.MaxInt64), int64(math.MaxInt64), keyAboveAll, 10, 10),
		map[string]string{"_sync_reactions": "_sync_reactions_list"}, true)
	expectPlan(t, "list after a cursor", explain(t, c, listReactions([]string{"pending"}, 0),
		"p1", "pending", 150, 150, "r1", 10, 10),
		map[string]string{"_sync_reactions": "_sync_reactions_list"}, true)
	expectPlan(t, "prune candidates", explain(t, c, pruneCandidates, "p1", 100, 10, "p1", 100, 10, 10),
		map[string]string{"_sync_reactions": "_sync_reactions_prune"}, true)
}
