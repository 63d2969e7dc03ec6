package conformance

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// Listing (RX-8), pruning (RX-9) and isolation from commit pruning (RX-10).

// rxCounts is PruneReactions' result in a comparable shape; Other sums
// every status that is not terminal (it must stay 0).
type rxCounts struct{ Completed, DeadLetter, Other int64 }

func rxPrune(t T, rc driver.ReactionsConn, p string, completedBefore, deadBefore int64, limit int) rxCounts {
	t.Helper()
	m, err := rc.PruneReactions(t.Context(), p, driver.ReactionPruneRequest{CompletedBeforeMs: completedBefore,
		DeadLetterBeforeMs: deadBefore, Limit: limit})
	if err != nil {
		t.Fatalf("PruneReactions: %v", err)
	}
	var c rxCounts
	for s, n := range m {
		switch s {
		case driver.ReactionCompleted:
			c.Completed += n
		case driver.ReactionDeadLetter:
			c.DeadLetter += n
		default:
			c.Other += n
		}
	}
	return c
}

// rxFinish moves leased rows of p1 (owner "w") to a terminal state at the
// given times: key → time, completed when done[key], else dead letter.
func rxFinish(t T, rc driver.ReactionsConn, keys []string, at []int64, done []bool) {
	t.Helper()
	for i, k := range keys {
		var ok bool
		var err error
		if done[i] {
			ok, err = rc.CompleteReaction(t.Context(), "p1", k, "w", at[i])
		} else {
			ok, err = rc.FailReaction(t.Context(), "p1", k, "w", driver.FailRequest{NowMs: at[i], Code: "x.fatal"})
		}
		rxBool(t, "setup: finish "+k, true, ok, err)
	}
}

func init() {
	register(
		// Catches: List ignoring a filter, ordering oldest first, breaking
		// createdAt ties by ascending key, or ignoring the limit.
		Case{Name: "RX-8/filters-order-limit", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("a", "email", 10), rxIn("b", "sms", 20), rxIn("c", "email", 20),
				rxIn("d", "sms", 30), rxIn("e", "email", 40))
			rxClaimAll(t, rc, "p1", "w", 100, rxLongLease)
			rxFinish(t, rc, []string{"a", "b", "e"}, []int64{101, 102, 103}, []bool{true, false, true})
			ok, err := rc.FailReaction(ctx, "p1", "c", "w", driver.FailRequest{NowMs: 104, Retry: true, RetryAtMs: 5000, Code: "x.later"})
			rxBool(t, "setup: FailReaction(c)", true, ok, err)
			// a completed, b dead letter, c pending, d leased, e completed.
			list := func(st []driver.ReactionStatus, types []string, limit int) []string {
				rs, err := rc.ListReactions(ctx, "p1", driver.ReactionListQuery{Statuses: st, Types: types, Limit: limit})
				if err != nil {
					t.Fatalf("ListReactions: %v", err)
				}
				return rxKeys(rs)
			}
			S := func(s ...driver.ReactionStatus) []driver.ReactionStatus { return s }
			expectEqual(t, "List all (RX-8: createdAt desc, then key desc)", []string{"e", "d", "c", "b", "a"}, list(nil, nil, 100))
			expectEqual(t, "List completed", []string{"e", "a"}, list(S(driver.ReactionCompleted), nil, 100))
			expectEqual(t, "List pending + dead letter", []string{"c", "b"}, list(S(driver.ReactionPending, driver.ReactionDeadLetter), nil, 100))
			expectEqual(t, "List leased", []string{"d"}, list(S(driver.ReactionLeased), nil, 100))
			expectEqual(t, "List type sms", []string{"d", "b"}, list(nil, []string{"sms"}, 100))
			expectEqual(t, "List completed or leased of type email", []string{"e", "a"},
				list(S(driver.ReactionCompleted, driver.ReactionLeased), []string{"email"}, 100))
			expectEqual(t, "List of an unknown type", []string{}, list(nil, []string{"push"}, 100))
			expectEqual(t, "List limit 2 (RX-8)", []string{"e", "d"}, list(nil, nil, 2))
			expectEqual(t, "List pending limit 1", []string{"c"}, list(S(driver.ReactionPending), nil, 1))
			expectEqual(t, "List of another partition (P-1)", []driver.Reaction(nil), rxList(t, rc, "p2"))
		}},
		// Catches: list input reaching the driver unchecked through sync.
		Case{Name: "RX-8/list-input-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, _ := rxConn(t, h)
			s := rxStore(t, conn)
			for _, tc := range []struct {
				name string
				q    driver.ReactionListQuery
				code driver.Code
			}{
				{"limit 0", driver.ReactionListQuery{}, driver.CodeInvalidLimit},
				{"limit 10001", driver.ReactionListQuery{Limit: 10001}, driver.CodeInvalidLimit},
				{"an unknown status", driver.ReactionListQuery{Statuses: []driver.ReactionStatus{"done"}, Limit: 1}, driver.CodeInvalidArgument},
				{"an empty type", driver.ReactionListQuery{Types: []string{""}, Limit: 1}, driver.CodeInvalidArgument},
			} {
				_, err := s.ListReactions(t.Context(), "p1", tc.q)
				expectCode(t, "Store.ListReactions with "+tc.name+" (RX-8, V-5)", err, tc.code)
			}
		}},
		// Catches: inclusive cutoffs, one cutoff applied to both states,
		// or pending/leased rows pruned.
		Case{Name: "RX-9/strict-cutoff-per-status", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("ca", "x", 1), rxIn("cb", "x", 2), rxIn("da", "x", 3), rxIn("db", "x", 4),
				rxIn("p", "x", 5), rxIn("l", "x", 6))
			rxClaimAll(t, rc, "p1", "w", 50, rxLongLease)
			rxFinish(t, rc, []string{"ca", "cb", "da", "db"}, []int64{100, 200, 150, 250}, []bool{true, true, false, false})
			ok, err := rc.FailReaction(ctx, "p1", "p", "w", driver.FailRequest{NowMs: 60, Retry: true, RetryAtMs: 1e9, Code: "x.later"})
			rxBool(t, "setup: FailReaction(p)", true, ok, err)
			left := func() []string { return rxKeys(rxList(t, rc, "p1")) }
			expectEqual(t, "prune dead letters before 151 only", rxCounts{DeadLetter: 1}, rxPrune(t, rc, "p1", 0, 151, 100))
			expectEqual(t, "left after the first prune", []string{"l", "p", "db", "cb", "ca"}, left())
			expectEqual(t, "prune completed before 200, dead letters before 250 (RX-9: strict)", rxCounts{Completed: 1},
				rxPrune(t, rc, "p1", 200, 250, 100))
			expectEqual(t, "left after the second prune", []string{"l", "p", "db", "cb"}, left())
			expectEqual(t, "prune before 201 and 251", rxCounts{Completed: 1, DeadLetter: 1}, rxPrune(t, rc, "p1", 201, 251, 100))
			expectEqual(t, "prune with far cutoffs (RX-9: never pending or leased)", rxCounts{}, rxPrune(t, rc, "p1", 1e15, 1e15, 100))
			expectEqual(t, "left at the end", []string{"l", "p"}, left())
		}},
		// Catches: a prune over its limit, or one that deletes by creation
		// order instead of the oldest terminal rows first.
		Case{Name: "RX-9/limit-oldest-first", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("c3", "x", 1), rxIn("d2", "x", 2), rxIn("c2", "x", 3), rxIn("d1", "x", 4), rxIn("c1", "x", 5))
			rxClaimAll(t, rc, "p1", "w", 5, rxLongLease)
			rxFinish(t, rc, []string{"c1", "d1", "c2", "d2", "c3"}, []int64{10, 20, 30, 40, 50}, []bool{true, false, true, false, true})
			left := func() []string { return rxKeys(rxList(t, rc, "p1")) }
			expectEqual(t, "prune limit 2 (RX-9)", rxCounts{Completed: 1, DeadLetter: 1}, rxPrune(t, rc, "p1", 1e15, 1e15, 2))
			expectEqual(t, "left after pruning the 2 oldest (updated 10, 20)", []string{"c2", "d2", "c3"}, left())
			expectEqual(t, "prune limit 2 again", rxCounts{Completed: 1, DeadLetter: 1}, rxPrune(t, rc, "p1", 1e15, 1e15, 2))
			expectEqual(t, "left after pruning updated 30, 40", []string{"c3"}, left())
			expectEqual(t, "prune the last", rxCounts{Completed: 1}, rxPrune(t, rc, "p1", 1e15, 1e15, 2))
			expectEqual(t, "prune of nothing", rxCounts{}, rxPrune(t, rc, "p1", 1e15, 1e15, 2))
		}},
		// Catches: prune input reaching the driver unchecked through sync.
		Case{Name: "RX-9/prune-input-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, _ := rxConn(t, h)
			s := rxStore(t, conn)
			for _, limit := range []int{0, 10001} {
				_, err := s.PruneReactions(t.Context(), "p1", driver.ReactionPruneRequest{CompletedBeforeMs: 1, DeadLetterBeforeMs: 1, Limit: limit})
				expectCode(t, fmt.Sprintf("Store.PruneReactions with limit %d (RX-9, V-5)", limit), err, driver.CodeInvalidLimit)
			}
		}},
		// Catches: a prune and a retry of one dead letter that both win
		// (the retried row deleted) or both lose.
		Case{Name: "RX-9/prune-races-retry", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			for round := range 4 {
				rxPruneRetryRound(t, conn, rc, fmt.Sprintf("p%d", round), 30)
			}
		}},
		// Catches: commit pruning that deletes reactions of pruned commits.
		Case{Name: "RX-10/commit-pruning-keeps-reactions", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			for i := range 3 {
				rxEnqueue(t, conn, "p1", rxIn(fmt.Sprintf("r%d", i), "x", int64(10+i)))
			}
			rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", NowMs: 20, LeaseMs: rxLongLease, Limit: 1})
			ok, err := rc.CompleteReaction(ctx, "p1", "r0", "w", 21)
			rxBool(t, "setup: CompleteReaction", true, ok, err)
			before := rxList(t, rc, "p1")
			must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 3))
			n, err := conn.PruneCommitsThrough(ctx, "p1", 3)
			must(t, "PruneCommitsThrough", err)
			expectEqual(t, "commits pruned", int64(3), n)
			expectEqual(t, "reactions after commit pruning (RX-10)", before, rxList(t, rc, "p1"))
			expectEqual(t, "claim after commit pruning (RX-10)", []string{"r1", "r2"}, rxKeys(rxClaimAll(t, rc, "p1", "w", 30, 10)))
		}},
		// Catches: reaction pruning that deletes commits, rows or other state.
		Case{Name: "RX-10/reaction-pruning-keeps-the-rest", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			for i := range 3 {
				rxEnqueue(t, conn, "p1", rxIn(fmt.Sprintf("r%d", i), "x", int64(10+i)))
			}
			rxClaimAll(t, rc, "p1", "w", 20, rxLongLease)
			rxFinish(t, rc, []string{"r0", "r1", "r2"}, []int64{21, 22, 23}, []bool{true, false, true})
			must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 1))
			snap := func() any {
				maxSeq, err := conn.MaxCommitSeq(ctx, "p1")
				must(t, "MaxCommitSeq", err)
				hz, err := conn.HorizonSeq(ctx, "p1")
				must(t, "HorizonSeq", err)
				win, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"pr"}},
					AfterSeq: hz, ThroughSeq: maxSeq, LimitChanges: 100})
				must(t, "ReadCommitWindow", err)
				rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"owner": {"ow"}}, Limit: 100})
				must(t, "ScanRows", err)
				return []any{maxSeq, hz, win, rows}
			}
			before := snap()
			expectEqual(t, "reactions pruned", rxCounts{Completed: 2, DeadLetter: 1}, rxPrune(t, rc, "p1", 1e15, 1e15, 100))
			expectEqual(t, "commits, rows and horizon after reaction pruning (RX-10)", before, snap())
			if got := before.([]any)[0]; got != int64(3) {
				t.Errorf("setup: MaxCommitSeq %v, want 3", got)
			}
		}},
	)
}

// rxPruneRetryRound dead-letters n reactions of partition p, then races a
// goroutine retrying each against goroutines pruning dead letters a few at
// a time. Each row must end either retried (RetryReaction true, row
// pending) or pruned (counted, row gone), never both nor neither (RX-9).
func rxPruneRetryRound(t T, conn driver.Conn, rc driver.ReactionsConn, p string, n int) {
	ctx := t.Context()
	ins := make([]driver.ReactionInput, n)
	for i := range ins {
		ins[i] = rxIn(fmt.Sprintf("k%02d", i), "x", int64(i))
	}
	rxEnqueue(t, conn, p, ins...)
	rxClaimAll(t, rc, p, "w", 100, rxLongLease)
	for _, in := range ins {
		ok, err := rc.FailReaction(ctx, p, in.Key, "w", driver.FailRequest{NowMs: 100, Code: "x.fatal"})
		rxBool(t, "setup: FailReaction", true, ok, err)
	}
	retried := make([]bool, n)
	var pruned, other int64
	var mu gosync.Mutex
	var wg gosync.WaitGroup
	retrying := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(retrying)
		for i := n - 1; i >= 0; i-- { // from the newest, while prunes take the oldest
			ok, err := rxRetryable(func() (bool, error) { return rc.RetryReaction(ctx, p, ins[i].Key, 300) })
			if err != nil {
				t.Errorf("RetryReaction: %v", err)
			}
			retried[i] = ok
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				finished := false
				select {
				case <-retrying:
					finished = true
				default:
				}
				var m map[driver.ReactionStatus]int64
				_, err := rxRetryable(func() (bool, error) {
					var err error
					m, err = rc.PruneReactions(ctx, p, driver.ReactionPruneRequest{CompletedBeforeMs: 1e15, DeadLetterBeforeMs: 200, Limit: 3})
					return true, err
				})
				if err != nil {
					t.Errorf("PruneReactions: %v", err)
					return
				}
				mu.Lock()
				got := m[driver.ReactionDeadLetter]
				pruned += got
				for s, c := range m {
					if s != driver.ReactionDeadLetter {
						other += c
					}
				}
				mu.Unlock()
				if finished && got == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	var wantLeft []string
	nRetried := int64(0)
	for i := n - 1; i >= 0; i-- {
		if retried[i] {
			wantLeft = append(wantLeft, ins[i].Key)
			nRetried++
		}
	}
	rs, err := rc.ListReactions(context.WithoutCancel(ctx), p, driver.ReactionListQuery{Limit: 1000})
	must(t, "ListReactions", err)
	for _, r := range rs {
		if r.Status != driver.ReactionPending || r.Attempts != 0 {
			t.Errorf("%s: %s left %s with %d attempts, want pending with 0 (RX-9: a retried row is never pruned)", p, r.Key, r.Status, r.Attempts)
		}
	}
	expectEqual(t, p+": rows left = rows whose retry won (RX-9)", wantLeft, rxKeys(rs))
	if pruned+nRetried != int64(n) || other != 0 {
		t.Errorf("%s: %d pruned + %d retried (other states pruned: %d), want %d in all: exactly one of prune and retry wins each row (RX-9)",
			p, pruned, nRetried, other, n)
	}
}

// rxRetryable runs op, retrying retryable errors (TX-9) a bounded number
// of times.
func rxRetryable(op func() (bool, error)) (bool, error) {
	var ok bool
	var err error
	for range 50 {
		if ok, err = op(); err == nil || !driver.IsRetryable(err) {
			return ok, err
		}
	}
	return ok, err
}
