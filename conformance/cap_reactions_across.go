package conformance

import (
	"fmt"
	"sort"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Cases of the reactions-across capability (RX-12): one claim across
// partitions, fair between them, under every rule of a claim (RX-2…RX-4).

// rxAcross returns a fresh store and its two reaction halves.
func rxAcross(t T, h Harness) (driver.Conn, driver.ReactionsConn, driver.ReactionsAcrossConn) {
	t.Helper()
	conn := openStore(t, h)
	rc, ok := conn.(driver.ReactionsConn)
	ac, ok2 := conn.(driver.ReactionsAcrossConn)
	if !ok || !ok2 {
		t.Fatalf("the Conn does not implement driver.ReactionsConn and driver.ReactionsAcrossConn although the case runs for capability %s", driver.CapReactionsAcross)
	}
	return conn, rc, ac
}

// rxClaimDue claims across partitions or fails the case; req.Types nil
// claims rxTypes.
func rxClaimDue(t T, ac driver.ReactionsAcrossConn, req driver.DueClaimRequest) []driver.PartitionReaction {
	t.Helper()
	if req.Types == nil {
		req.Types = rxTypes
	}
	rs, err := ac.ClaimDueReactions(t.Context(), req)
	if err != nil {
		t.Fatalf("ClaimDueReactions(owner %q, now %d, partitions %v): %v", req.Owner, req.NowMs, req.Partitions, err)
	}
	return rs
}

// rxPartKeys returns "partition/key" of each claimed reaction, in order.
func rxPartKeys(rs []driver.PartitionReaction) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Partition + "/" + r.Key
	}
	return out
}

func init() {
	register(
		// Catches: a claim across partitions in plain due order (the
		// partition with a backlog starves the others), or one that does
		// not rank within each partition in claim order.
		Case{Name: "RX-12/fair-between-partitions", Capability: driver.CapReactionsAcross, Run: func(t T, h Harness) {
			conn, _, ac := rxAcross(t, h)
			const backlog, chunk = 10000, 1000
			for i := 0; i < backlog; i += chunk {
				ins := make([]driver.ReactionInput, 0, chunk)
				for j := i; j < i+chunk; j++ {
					ins = append(ins, driver.ReactionInput{Key: fmt.Sprintf("r%05d", j), Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: int64(j)})
				}
				rxEnqueue(t, conn, "p1", ins...)
			}
			rxEnqueue(t, conn, "p2", rxIn("lone", "x", backlog))
			rxEnqueue(t, conn, "p3", rxIn("a", "x", backlog+1), rxIn("b", "x", backlog+2))
			got := rxPartKeys(rxClaimDue(t, ac, driver.DueClaimRequest{ClaimRequest: driver.ClaimRequest{Owner: "w", NowMs: 1e9, LeaseMs: rxLongLease, Limit: 10}}))
			want := []string{"p1/r00000", "p1/r00001", "p1/r00002", "p1/r00003", "p1/r00004", "p1/r00005", "p1/r00006", "p2/lone", "p3/a", "p3/b"}
			expectEqual(t, "a claim of 10 with 10,000 due in p1, 1 in p2, 2 in p3 (RX-12: every partition's first rows by rank before more of p1's; sorted by partition, createdAt, key)", want, got)
			got = rxPartKeys(rxClaimDue(t, ac, driver.DueClaimRequest{ClaimRequest: driver.ClaimRequest{Owner: "w", NowMs: 1e9, LeaseMs: rxLongLease, Limit: 3}}))
			expectEqual(t, "the next claim of 3 (RX-12: p1 alone is due, in claim order)", []string{"p1/r00007", "p1/r00008", "p1/r00009"}, got)
		}},
		// Catches: a claim across partitions that breaks a rule of a claim
		// (RX-2 inclusive boundaries, types, lease fields; RX-4
		// dead-lettering outside the limit) or ignores its partition list.
		Case{Name: "RX-12/claim-rules-hold-across-partitions", Capability: driver.CapReactionsAcross, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc, ac := rxAcross(t, h)
			a, b, c := rxIn("a", "x", 1000), rxIn("b", "x", 1001), rxIn("c", "sms", 1)
			e := rxIn("e", "x", 10)
			e.MaxAttempts = 1
			seqA := rxEnqueue(t, conn, "p1", a)
			seqB := rxEnqueue(t, conn, "p2", b)
			rxEnqueue(t, conn, "p3", c)
			rxEnqueue(t, conn, "p4", e)
			expectEqual(t, "setup: e leased at its last attempt", []string{"e"},
				rxKeys(rxClaim(t, rc, "p4", driver.ClaimRequest{Owner: "w0", Types: []string{"x"}, NowMs: 10, LeaseMs: 5, Limit: 1})))
			x := []string{"x"}
			due := func(owner string, now, lease int64, limit int, types []string, parts ...string) []driver.PartitionReaction {
				return rxClaimDue(t, ac, driver.DueClaimRequest{Partitions: parts,
					ClaimRequest: driver.ClaimRequest{Owner: owner, Types: types, NowMs: now, LeaseMs: lease, Limit: limit}})
			}
			expectEqual(t, "claim of x at 999, before a's availableAt (RX-12, RX-2)", []string{}, rxPartKeys(due("w1", 999, 500, 1, x)))
			rxExpectExhausted(t, rxGet(t, rc, "p4", "e"), 1, 999)
			wantA := rxLeased(rxWant(a, seqA), "w1", 1000, 500)
			expectEqual(t, "claim of x at 1000 = a's availableAt, limit 1 (RX-12: inclusive; attempts+1, owner, expiry; the exhausted e did not take the limit)",
				[]driver.PartitionReaction{{Partition: "p1", Reaction: wantA}}, due("w1", 1000, 500, 1, x))
			expectEqual(t, "a as stored", wantA, rxGet(t, rc, "p1", "a"))
			expectEqual(t, "claim of x in p3 only (RX-12: the list and the types both filter)", []string{}, rxPartKeys(due("w2", 2000, 500, 10, x, "p3")))
			expectEqual(t, "claim of sms in p3 only", []string{"p3/c"}, rxPartKeys(due("w2", 2000, 500, 10, []string{"sms"}, "p3")))
			expectEqual(t, "claim of x in p1 at 1500 = a's expiry (RX-12: inclusive reclaim; p2 not listed)",
				[]driver.PartitionReaction{{Partition: "p1", Reaction: rxLeased(wantA, "w3", 1500, 700)}}, due("w3", 1500, 700, 10, x, "p1"))
			expectEqual(t, "claim of x everywhere at 1600", []driver.PartitionReaction{{Partition: "p2", Reaction: rxLeased(rxWant(b, seqB), "w4", 1600, 100)}},
				due("w4", 1600, 100, 10, x))
			ok, err := rc.CompleteReaction(ctx, "p2", "b", "w4", 1650)
			rxBool(t, "setup: CompleteReaction(b)", true, ok, err)
			expectEqual(t, "claim far in the future (RX-12: terminal rows never claimed; the leases of a and c expired)", []string{"p1/a", "p3/c"},
				rxPartKeys(due("w5", 1e15, 10, 10, rxTypes)))
		}},
		// Catches: two claims across partitions handed the same row, or
		// rows lost between claim and complete.
		Case{Name: "RX-12/eight-claimers-across-partitions", Capability: driver.CapReactionsAcross, Run: func(t T, h Harness) {
			rxConcurrentDue(t, h, 8, 20, 50, 10)
		}},
	)
}

// rxConcurrentDue enqueues perPart reactions in each of parts partitions,
// runs workers claimers across partitions (limit batch) until every
// reaction is completed, and checks that each was claimed exactly once.
func rxConcurrentDue(t T, h Harness, workers, parts, perPart, batch int) {
	ctx := t.Context()
	conn, rc, ac := rxAcross(t, h)
	n := parts * perPart
	for p := range parts {
		ins := make([]driver.ReactionInput, perPart)
		for i := range ins {
			ins[i] = driver.ReactionInput{Key: fmt.Sprintf("r%03d", i), Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: int64(i)}
		}
		rxEnqueue(t, conn, fmt.Sprintf("p%02d", p), ins...)
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
	var done atomic.Int64
	claimed := make([][]string, workers)
	var wg gosync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("worker-%d", w)
			// A claim racing others may come back empty while rows are
			// due (RX-12); a claimer stops once every row is done, or
			// after many empty claims in a row.
			for empty := 0; ctx.Err() == nil && done.Load() < int64(n) && empty < 2000; {
				var rs []driver.PartitionReaction
				err := retry(func() (err error) {
					rs, err = ac.ClaimDueReactions(ctx, driver.DueClaimRequest{ClaimRequest: driver.ClaimRequest{Owner: owner, Types: rxTypes, NowMs: now, LeaseMs: rxLongLease, Limit: batch}})
					return err
				})
				if err != nil {
					t.Errorf("%s: ClaimDueReactions: %v", owner, err)
					return
				}
				if len(rs) == 0 {
					empty++
					continue
				}
				empty = 0
				for _, r := range rs {
					claimed[w] = append(claimed[w], r.Partition+"/"+r.Key)
					if r.LeaseOwner != owner || r.Attempts != 1 {
						t.Errorf("%s claimed %s/%s with owner %q attempts %d, want itself and 1 (RX-12: claimed twice?)", owner, r.Partition, r.Key, r.LeaseOwner, r.Attempts)
					}
					var ok bool
					err := retry(func() (err error) {
						ok, err = rc.CompleteReaction(ctx, r.Partition, r.Key, owner, now+1)
						return err
					})
					if err != nil || !ok {
						t.Errorf("%s: CompleteReaction(%s/%s) = %v, %v; want true (RX-12)", owner, r.Partition, r.Key, ok, err)
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, keys := range claimed {
		for _, k := range keys {
			seen[k]++
		}
	}
	var dup, missing []string
	for p := range parts {
		for i := range perPart {
			k := fmt.Sprintf("p%02d/r%03d", p, i)
			switch seen[k] {
			case 0:
				missing = append(missing, k)
			case 1:
			default:
				dup = append(dup, k)
			}
		}
	}
	sort.Strings(dup)
	if len(dup) > 0 || len(missing) > 0 {
		t.Errorf("%d claimers across %d partitions: %d reactions claimed more than once (first %v), %d never (first %v) (RX-12)",
			workers, parts, len(dup), rxFirst(dup), len(missing), rxFirst(missing))
	}
}
