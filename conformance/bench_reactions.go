package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// w4Result is one W4 run: enqueue, then claim-and-complete, with the
// duration of each enqueue Tx, each claim and each completion.
type w4Result struct {
	enqueued, completed int
	enqueue, drain      time.Duration
	enqueueTx, claims   []time.Duration
	completes           []time.Duration
}

// runW4 is docs/performance.md's W4 on a fresh store: enqueue 10,000 reactions in
// 100 transactions of 100 (each Tx also pushes one commit, their source),
// then 4 workers loop claim (limit 50, lease 30 s) → complete each until a
// claim comes back empty. It checks that every reaction was completed
// exactly once (RX-3, RX-5) and that none is left pending or leased.
func runW4(ctx context.Context, conn driver.Conn) (w4Result, error) {
	var res w4Result
	rc, ok := conn.(driver.ReactionsConn)
	if !ok {
		return res, errNotImplemented(driver.CapReactions)
	}
	now := time.Now().UnixMilli()
	res.enqueueTx = make([]time.Duration, 0, w4Reactions/w4PerTx)
	start := time.Now()
	clk := clockAt(start)
	for b := 0; b < w4Reactions/w4PerTx; b++ {
		err := enqueueBatch(ctx, conn, b, now)
		clk.lap(&res.enqueueTx)
		if err != nil {
			return res, err
		}
	}
	res.enqueue, res.enqueued = time.Since(start), w4Reactions

	var mu gosync.Mutex
	done := make(map[string]int, w4Reactions)
	errs := make([]error, w4Workers)
	claims, completes := make([][]time.Duration, w4Workers), make([][]time.Duration, w4Workers)
	var wg gosync.WaitGroup
	start = time.Now()
	for w := 0; w < w4Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claims[w] = make([]time.Duration, 0, 2*w4Reactions/w4Workers/w4ClaimLimit)
			completes[w] = make([]time.Duration, 0, 2*w4Reactions/w4Workers)
			errs[w] = drainWorker(ctx, rc, "worker-"+strconv.Itoa(w), now, &claims[w], &completes[w], func(key string) {
				mu.Lock()
				done[key]++
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	res.drain = time.Since(start)
	res.claims, res.completes = slices.Concat(claims...), slices.Concat(completes...)
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for _, n := range done {
		if n != 1 {
			return res, fmt.Errorf("W4: a reaction was completed %d times (RX-3)", n)
		}
	}
	if len(done) != w4Reactions {
		return res, fmt.Errorf("W4: %d of %d reactions completed (RX-2, RX-3)", len(done), w4Reactions)
	}
	left, err := rc.ListReactions(ctx, BenchPartition, driver.ReactionListQuery{
		Statuses: []driver.ReactionStatus{driver.ReactionPending, driver.ReactionLeased}, Limit: 10})
	if err != nil {
		return res, fmt.Errorf("W4 ListReactions: %w", err)
	}
	if len(left) != 0 {
		return res, fmt.Errorf("W4: %d reactions still pending or leased after the workers finished (RX-5)", len(left))
	}
	res.completed = len(done)
	return res, nil
}

// enqueueBatch pushes batch b's source commit and its 100 reactions in one Tx.
func enqueueBatch(ctx context.Context, conn driver.Conn, b int, now int64) error {
	tx, err := conn.Begin(ctx, BenchPartition)
	if err != nil {
		return fmt.Errorf("W4 Begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rt, ok := tx.(driver.ReactionsTx)
	if !ok {
		return fmt.Errorf("W4: the Tx lacks the reactions Tx half (ERR-3)")
	}
	r := BenchTodo(b)
	if err := tx.UpsertRow(ctx, benchTable, r); err != nil {
		return fmt.Errorf("W4 UpsertRow: %w", err)
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: benchClient, ClientCommitID: "rx" + strconv.Itoa(b),
		ActorID: "bench-actor", CreatedAtMs: now, Changes: []driver.Change{upsertChange(benchTable, r)}})
	if err != nil {
		return fmt.Errorf("W4 AppendCommit: %w", err)
	}
	in := make([]driver.ReactionInput, w4PerTx)
	for i := range in {
		n := b*w4PerTx + i
		in[i] = driver.ReactionInput{Key: "rx-" + strconv.Itoa(n), Type: "notify", Payload: driver.JSON(`{"n":` + strconv.Itoa(n) + `}`),
			MaxAttempts: 5, CreatedAtMs: now - int64(w4Reactions-n)}
	}
	if err := rt.EnqueueReactions(ctx, seq, in); err != nil {
		return fmt.Errorf("W4 EnqueueReactions: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("W4 Commit: %w", err)
	}
	return nil
}

// drainWorker claims and completes until a claim comes back empty,
// appending each claim's and each completion's duration to *claims and
// *completes. With a 30 s lease and no failures, an empty claim means
// every remaining reaction is leased to another worker, which will
// complete it.
func drainWorker(ctx context.Context, rc driver.ReactionsConn, owner string, now int64, claims, completes *[]time.Duration,
	completed func(key string)) error {
	clk := startClock()
	for {
		batch, err := rc.ClaimReactions(ctx, BenchPartition, driver.ClaimRequest{Owner: owner, Types: []string{"notify"}, NowMs: now,
			LeaseMs: w4LeaseMs, Limit: w4ClaimLimit})
		clk.lap(claims)
		if err != nil {
			return fmt.Errorf("W4 ClaimReactions: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			ok, err := rc.CompleteReaction(ctx, BenchPartition, r.Key, owner, now)
			clk.lap(completes)
			if err != nil {
				return fmt.Errorf("W4 CompleteReaction: %w", err)
			}
			if !ok {
				return fmt.Errorf("W4: CompleteReaction by the lease owner returned false (RX-5)")
			}
			completed(r.Key)
		}
	}
}
