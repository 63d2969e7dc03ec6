package conformance

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// Claims: due rows, order, limits (RX-2), concurrent claimers (RX-3) and
// the attempts cap (RX-4).

// rxExhausted is the code a claim records when it dead-letters a reaction
// whose attempts reached maxAttempts (RX-4).
const rxExhausted = "reaction.attempts_exhausted"

func init() {
	register(
		// Catches: exclusive due boundaries (availableAt < now, expiry <
		// now), claims of rows not yet due, or wrong lease fields.
		Case{Name: "RX-2/due-boundaries-inclusive", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			a, b := rxIn("a", "x", 1000), rxIn("b", "x", 1001)
			seq := rxEnqueue(t, conn, "p1", a, b)
			expectEqual(t, "claim at 999, before every availableAt (RX-2)", []string{},
				rxKeys(rxClaimAll(t, rc, "p1", "w1", 999, 500)))
			got := rxClaimAll(t, rc, "p1", "w1", 1000, 500)
			wantA := rxLeased(rxWant(a, seq), "w1", 1000, 500)
			expectEqual(t, "claim at 1000 = a's availableAt (RX-2: inclusive; attempts+1, owner, expiry now+lease)",
				[]driver.Reaction{wantA}, got)
			expectEqual(t, "a listed after its claim", wantA, rxGet(t, rc, "p1", "a"))
			expectEqual(t, "claim at 1499, a's lease not expired (RX-2)", []string{"b"},
				rxKeys(rxClaimAll(t, rc, "p1", "w2", 1499, 500)))
			got = rxClaimAll(t, rc, "p1", "w3", 1500, 700)
			expectEqual(t, "claim at 1500 = a's leaseExpiresAt (RX-2: inclusive reclaim)",
				[]driver.Reaction{rxLeased(wantA, "w3", 1500, 700)}, got)
		}},
		// Catches: a types filter ignored.
		Case{Name: "RX-2/types-filter", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("e1", "email", 1), rxIn("s1", "sms", 2), rxIn("p1", "push", 3), rxIn("e2", "email", 4))
			claim := func(types ...string) []string {
				return rxKeys(rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", Types: types, NowMs: 100, LeaseMs: rxLongLease, Limit: 100}))
			}
			expectEqual(t, "claim of an unknown type (RX-2)", []string{}, claim("nope"))
			expectEqual(t, "claim of types email, push (RX-2)", []string{"e1", "p1", "e2"}, claim("push", "email"))
			expectEqual(t, "claim of types sms, nope (RX-2)", []string{"s1"}, claim("sms", "nope"))
		}},
		// Catches: selection by createdAt instead of due time, or results
		// returned in due order instead of createdAt, key.
		Case{Name: "RX-2/selected-by-due-time-returned-by-created", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("a", "x", 100), rxIn("b", "x", 200), rxIn("c", "x", 300))
			expectEqual(t, "setup claim", []string{"a", "b", "c"}, rxKeys(rxClaimAll(t, rc, "p1", "w", 1000, 50)))
			// Due times now: c 1010 (retry), b 1020 (extended lease), a 1050 (lease).
			ok, err := rc.FailReaction(ctx, "p1", "c", "w", driver.FailRequest{NowMs: 1000, Retry: true, RetryAtMs: 1010, Code: "x.retry"})
			rxBool(t, "setup: FailReaction(c)", true, ok, err)
			ok, err = rc.ExtendReactionLease(ctx, "p1", "b", "w", 1000, 20)
			rxBool(t, "setup: ExtendReactionLease(b)", true, ok, err)
			got := rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w2", NowMs: 2000, LeaseMs: 50, Limit: 2})
			expectEqual(t, "claim of 2 among due times c 1010 < b 1020 < a 1050 (RX-2: selected by due time, returned by createdAt)",
				[]string{"b", "c"}, rxKeys(got))
			expectEqual(t, "a keeps its lease", "w", rxGet(t, rc, "p1", "a").LeaseOwner)
		}},
		// Catches: ties on due time broken by key instead of createdAt,
		// or keys ordered by a collation instead of bytewise.
		Case{Name: "RX-2/ties-by-created-then-key-bytewise", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			// Same due time 500 for all; createdAt decides first, then key bytewise.
			rxEnqueue(t, conn, "p1", rxIn("z-early", "x", 10), rxIn("a\u00e9", "x", 20), rxIn("az", "x", 20),
				rxIn("aZ", "x", 20), rxIn("a", "x", 20))
			rxClaimAll(t, rc, "p1", "w", 100, 50)
			for _, k := range []string{"z-early", "a\u00e9", "az", "aZ", "a"} {
				ok, err := rc.FailReaction(ctx, "p1", k, "w", driver.FailRequest{NowMs: 110, Retry: true, RetryAtMs: 500, Code: "x.retry"})
				rxBool(t, "setup: FailReaction", true, ok, err)
			}
			var order []string
			for range 5 {
				order = append(order, rxKeys(rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", NowMs: 600, LeaseMs: rxLongLease, Limit: 1}))...)
			}
			want := []string{"z-early", "a", "aZ", "az", "a\u00e9"}
			expectEqual(t, "claim order at equal due time (RX-2: createdAt, then key bytewise)", want, order)
			rxEnqueue(t, conn, "p2", rxIn("a\u00e9", "x", 20), rxIn("az", "x", 20), rxIn("z-early", "x", 10), rxIn("aZ", "x", 20), rxIn("a", "x", 20))
			expectEqual(t, "one claim's result order (RX-2: createdAt, then key bytewise)", want,
				rxKeys(rxClaimAll(t, rc, "p2", "w", 100, 50)))
		}},
		// Catches: a limit ignored or a claim that skips the earliest due rows.
		Case{Name: "RX-2/limit", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("r5", "x", 5), rxIn("r3", "x", 3), rxIn("r1", "x", 1), rxIn("r4", "x", 4), rxIn("r2", "x", 2))
			claim := func(limit int) []string {
				return rxKeys(rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", NowMs: 100, LeaseMs: rxLongLease, Limit: limit}))
			}
			expectEqual(t, "claim limit 2 (RX-2)", []string{"r1", "r2"}, claim(2))
			expectEqual(t, "claim limit 1 (RX-2)", []string{"r3"}, claim(1))
			expectEqual(t, "claim limit 10 (RX-2)", []string{"r4", "r5"}, claim(10))
			expectEqual(t, "claim after all leased (RX-2)", []string{}, claim(10))
		}},
		// Catches: completed or dead-letter rows leased again.
		Case{Name: "RX-2/terminal-rows-never-claimed", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("done", "x", 1), rxIn("dead", "x", 2))
			rxClaimAll(t, rc, "p1", "w", 10, 5)
			ok, err := rc.CompleteReaction(ctx, "p1", "done", "w", 11)
			rxBool(t, "setup: CompleteReaction", true, ok, err)
			ok, err = rc.FailReaction(ctx, "p1", "dead", "w", driver.FailRequest{NowMs: 11, Code: "x.fatal"})
			rxBool(t, "setup: FailReaction", true, ok, err)
			expectEqual(t, "claim far in the future (RX-2: only pending and leased rows)", []string{},
				rxKeys(rxClaimAll(t, rc, "p1", "w", 1e15, 5)))
		}},
		// Catches: claim input reaching the driver unchecked through sync.
		Case{Name: "RX-2/claim-input-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			s := rxStore(t, conn)
			rxEnqueue(t, conn, "p1", rxIn("a", "x", 1))
			ok := driver.ClaimRequest{Owner: "w", Types: []string{"x"}, NowMs: 10, LeaseMs: 10, Limit: 1}
			for _, tc := range []struct {
				name string
				p    string
				mod  func(*driver.ClaimRequest)
				code driver.Code
			}{
				{"empty partition", "", func(*driver.ClaimRequest) {}, driver.CodeInvalidArgument},
				{"empty owner", "p1", func(r *driver.ClaimRequest) { r.Owner = "" }, driver.CodeInvalidArgument},
				{"owner not UTF-8", "p1", func(r *driver.ClaimRequest) { r.Owner = "\xff" }, driver.CodeInvalidArgument},
				{"empty type", "p1", func(r *driver.ClaimRequest) { r.Types = []string{"x", ""} }, driver.CodeInvalidArgument},
				// RX-2: a claim names its types; an empty list is refused
				// and claims nothing (never "every type").
				{"no type (nil)", "p1", func(r *driver.ClaimRequest) { r.Types = nil }, driver.CodeInvalidArgument},
				{"no type (empty list)", "p1", func(r *driver.ClaimRequest) { r.Types = []string{} }, driver.CodeInvalidArgument},
				{"zero lease", "p1", func(r *driver.ClaimRequest) { r.LeaseMs = 0 }, driver.CodeInvalidArgument},
				{"limit 0", "p1", func(r *driver.ClaimRequest) { r.Limit = 0 }, driver.CodeInvalidLimit},
				{"limit 10001", "p1", func(r *driver.ClaimRequest) { r.Limit = 10001 }, driver.CodeInvalidLimit},
			} {
				req := ok
				tc.mod(&req)
				_, err := s.ClaimReactions(t.Context(), tc.p, req)
				expectCode(t, "Store.ClaimReactions with "+tc.name, err, tc.code)
			}
			expectEqual(t, "a after rejected claims (V-9)", rxWant(rxIn("a", "x", 1), 1), rxGet(t, rc, "p1", "a"))
		}},
		// Catches: two claimers handed the same row, or rows lost between
		// claim and complete. RX-3's required scale: 8 × 10,000.
		Case{Name: "RX-3/eight-claimers-ten-thousand-reactions", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			rxConcurrentClaimers(t, h, 8, 10000, 50)
		}},
		// Catches: a lease cap off by one, or exhausted rows leased again.
		Case{Name: "RX-4/expired-lease-at-cap-dead-letters", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			in := rxIn("r", "x", 100)
			in.MaxAttempts = 3
			seq := rxEnqueue(t, conn, "p1", in)
			want := rxWant(in, seq)
			for i, now := range []int64{100, 110, 120} {
				want = rxLeased(want, fmt.Sprintf("w%d", i), now, 10)
				expectEqual(t, fmt.Sprintf("claim %d of 3 (RX-4: attempts below the cap are leased)", i+1),
					[]driver.Reaction{want}, rxClaimAll(t, rc, "p1", fmt.Sprintf("w%d", i), now, 10))
			}
			expectEqual(t, "claim at 129, before the last lease expires (RX-4)", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "x", 129, 10)))
			expectEqual(t, "the row while its last lease runs", want, rxGet(t, rc, "p1", "r"))
			expectEqual(t, "claim at 130, the last lease expired (RX-4: never leased again)", []string{},
				rxKeys(rxClaimAll(t, rc, "p1", "x", 130, 10)))
			got := rxGet(t, rc, "p1", "r")
			rxExpectExhausted(t, got, 3, 130)
			ok, err := rc.CompleteReaction(ctx, "p1", "r", "w2", 131)
			rxBool(t, "CompleteReaction by the last owner after dead-lettering (RX-4, RX-5)", false, ok, err)
			expectEqual(t, "claim after dead-lettering (RX-4)", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "x", 1e12, 10)))
		}},
		// Catches: a row completed on its last attempt dead-lettered instead.
		Case{Name: "RX-4/last-attempt-can-complete", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			in := rxIn("r", "x", 100)
			in.MaxAttempts = 1
			rxEnqueue(t, conn, "p1", in)
			expectEqual(t, "claim of a 1-attempt row (RX-4)", []string{"r"}, rxKeys(rxClaimAll(t, rc, "p1", "w", 100, 10)))
			ok, err := rc.CompleteReaction(t.Context(), "p1", "r", "w", 105)
			rxBool(t, "CompleteReaction on the last attempt (RX-4)", true, ok, err)
			expectEqual(t, "status after completing the last attempt", driver.ReactionCompleted, rxGet(t, rc, "p1", "r").Status)
		}},
		// Catches: a retried row past its cap leased again.
		Case{Name: "RX-4/retry-past-cap-dead-letters", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			in := rxIn("r", "x", 100)
			in.MaxAttempts = 1
			rxEnqueue(t, conn, "p1", in)
			rxClaimAll(t, rc, "p1", "w", 100, 10)
			ok, err := rc.FailReaction(t.Context(), "p1", "r", "w", driver.FailRequest{NowMs: 105, Retry: true, RetryAtMs: 200, Code: "x.flaky"})
			rxBool(t, "FailReaction with retry", true, ok, err)
			expectEqual(t, "claim at the retry time of an exhausted row (RX-4)", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w", 200, 10)))
			rxExpectExhausted(t, rxGet(t, rc, "p1", "r"), 1, 200)
		}},
		// Catches: exhausted rows counted against the limit, starving
		// workers while due work waits behind them.
		Case{Name: "RX-4/exhausted-rows-do-not-consume-the-limit", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			var ins []driver.ReactionInput
			for i := range 3 {
				in := rxIn(fmt.Sprintf("old%d", i), "x", int64(10+i))
				in.MaxAttempts = 1
				ins = append(ins, in)
			}
			rxEnqueue(t, conn, "p1", ins...)
			rxClaimAll(t, rc, "p1", "w", 20, 10)             // all three at their cap, expiring at 30
			rxEnqueue(t, conn, "p1", rxIn("fresh", "x", 35)) // due after the exhausted rows
			got := rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", NowMs: 40, LeaseMs: 10, Limit: 1})
			expectEqual(t, "claim limit 1 behind three exhausted rows (RX-4)", []string{"fresh"}, rxKeys(got))
			for _, in := range ins {
				rxExpectExhausted(t, rxGet(t, rc, "p1", in.Key), 1, 40)
			}
		}},
	)
}

// rxExpectExhausted checks a row dead-lettered by a claim at now (RX-4).
func rxExpectExhausted(t T, got driver.Reaction, attempts int, now int64) {
	t.Helper()
	type shape struct {
		Status      driver.ReactionStatus
		Attempts    int
		Available   int64
		Owner       string
		Expiry      int64
		Code        string
		FailureAtMs int64
		Updated     int64
	}
	g := shape{Status: got.Status, Attempts: got.Attempts, Available: got.AvailableAtMs, Owner: got.LeaseOwner,
		Expiry: got.LeaseExpiresAtMs, Updated: got.UpdatedAtMs}
	if got.LastFailure != nil {
		g.Code, g.FailureAtMs = got.LastFailure.Code, got.LastFailure.AtMs
	}
	expectEqual(t, "reaction "+got.Key+" dead-lettered by a claim (RX-4)",
		shape{driver.ReactionDeadLetter, attempts, now, "", 0, rxExhausted, now, now}, g)
}

// rxConcurrentClaimers enqueues n reactions, runs workers claimers that
// loop claim(batch)/complete until nothing is due, and checks that every
// reaction was claimed and completed exactly once (RX-3). Retryable errors
// (an optimistic engine's write_conflict, TX-9) are retried.
func rxConcurrentClaimers(t T, h Harness, workers, n, batch int) {
	ctx := t.Context()
	conn, rc := rxConn(t, h)
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		ins := make([]driver.ReactionInput, 0, chunk)
		for j := i; j < i+chunk && j < n; j++ {
			ins = append(ins, driver.ReactionInput{Key: fmt.Sprintf("r%05d", j), Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: int64(j)})
		}
		rxEnqueue(t, conn, "p1", ins...)
	}
	const now = int64(1e12)
	retry := func(op func() error) error {
		var err error
		for range 50 {
			if err = op(); err == nil || !driver.IsRetryable(err) {
				return err
			}
		}
		return err
	}
	claimed := make([][]string, workers)
	var wg gosync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("worker-%d", w)
			for ctx.Err() == nil {
				var rs []driver.Reaction
				err := retry(func() (err error) {
					rs, err = rc.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: owner, Types: rxTypes, NowMs: now, LeaseMs: rxLongLease, Limit: batch})
					return err
				})
				if err != nil {
					t.Errorf("%s: ClaimReactions: %v", owner, err)
					return
				}
				if len(rs) == 0 {
					return
				}
				for _, r := range rs {
					claimed[w] = append(claimed[w], r.Key)
					if r.LeaseOwner != owner || r.Attempts != 1 {
						t.Errorf("%s claimed %s with owner %q attempts %d, want itself and 1 (RX-3: claimed twice?)", owner, r.Key, r.LeaseOwner, r.Attempts)
					}
					var ok bool
					err := retry(func() (err error) {
						ok, err = rc.CompleteReaction(ctx, "p1", r.Key, owner, now+1)
						return err
					})
					if err != nil || !ok {
						t.Errorf("%s: CompleteReaction(%s) = %v, %v; want true (RX-3)", owner, r.Key, ok, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]int, n)
	for _, keys := range claimed {
		for _, k := range keys {
			seen[k]++
		}
	}
	var dup, missing []string
	for i := range n {
		k := fmt.Sprintf("r%05d", i)
		switch c := seen[k]; {
		case c == 0:
			missing = append(missing, k)
		case c > 1:
			dup = append(dup, k)
		}
	}
	if len(dup) > 0 || len(missing) > 0 || len(seen) != n {
		t.Errorf("%d workers over %d reactions (RX-3): %d claimed twice or more (first: %v), %d never claimed (first: %v), %d distinct keys",
			workers, n, len(dup), rxFirst(dup), len(missing), rxFirst(missing), len(seen))
	}
	done, err := rc.ListReactions(context.WithoutCancel(ctx), "p1",
		driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionCompleted}, Limit: 10000})
	must(t, "ListReactions", err)
	if len(done) != min(n, 10000) {
		t.Errorf("%d reactions completed, want %d (RX-3)", len(done), n)
	}
}

func rxFirst(keys []string) []string { return keys[:min(len(keys), 5)] }
