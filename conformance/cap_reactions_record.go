package conformance

import (
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
)

// The reaction record as upstream keeps it (RX-1, RX-5, RX-7, RX-8,
// RX-11): version, source client id and client commit id, completion
// time; GetReaction; listing resumable by an after-key cursor.

func init() {
	register(
		// Catches: a record that loses or rounds its version (JSON
		// transports), or drops its source client ids, on any read path.
		Case{Name: "RX-1/record-kept-as-given", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			ins := []driver.ReactionInput{rxIn("a", "x", 1), rxIn("b", "x", 2), rxIn("c", "x", 3)}
			ins[0].Version, ins[0].SourceClientID, ins[0].SourceClientCommitID = 0, "", "" // a server-made commit
			ins[1].Version, ins[1].SourceClientID, ins[1].SourceClientCommitID = 1<<53+1, "clïent-🚀", "commït-\u0301"
			ins[2].Version = math.MaxInt64
			seq := rxEnqueue(t, conn, "p1", ins...)
			var want []driver.Reaction
			for _, in := range ins {
				w := rxWant(in, seq)
				want = append(want, w)
				expectEqual(t, "RX-1: "+in.Key+" read back (GetReaction)", w, rxGet(t, rc, "p1", in.Key))
			}
			got := rxClaimAll(t, rc, "p1", "w", 10, rxLongLease)
			for i := range want {
				want[i] = rxLeased(want[i], "w", 10, rxLongLease)
			}
			expectEqual(t, "RX-1: the record as a claim returns it", want, got)
		}},
		// Catches: a GetReaction that crosses partitions, invents a row,
		// or lets bad input through sync.
		Case{Name: "RX-11/get-reaction", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			in := rxIn("k", "x", 5)
			seq := rxEnqueue(t, conn, "p1", in)
			expectEqual(t, "RX-11: GetReaction of an enqueued reaction", rxWant(in, seq), rxGet(t, rc, "p1", "k"))
			for _, c := range []struct{ p, key string }{{"p1", "missing"}, {"p2", "k"}, {"p1", "K"}} {
				r, found, err := rc.GetReaction(ctx, c.p, c.key)
				must(t, "GetReaction", err)
				expectEqual(t, fmt.Sprintf("RX-11: GetReaction(%s, %s) finds none (P-1)", c.p, c.key), false, found)
				expectEqual(t, "RX-11: GetReaction of none returns the zero Reaction", driver.Reaction{}, r)
			}
			s := rxStore(t, conn)
			for _, c := range []struct{ name, p, key string }{{"empty partition", "", "k"}, {"empty key", "p1", ""},
				{"key not UTF-8", "p1", "\xff"}, {"257-byte key", "p1", string(make([]byte, 257))}} {
				_, _, err := s.GetReaction(ctx, c.p, c.key)
				expectCode(t, "Store.GetReaction with "+c.name, err, driver.CodeInvalidArgument)
			}
		}},
		// Catches: a listing that cannot be resumed (reactions beyond the
		// first page unreachable), one that repeats or skips rows at equal
		// createdAt, or one that needs the cursor's row to still exist.
		Case{Name: "RX-8/list-pages-resume-after-cursor", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			var ins []driver.ReactionInput
			for i := range 23 {
				typ := "x"
				if i%4 == 0 {
					typ = "y"
				}
				ins = append(ins, rxIn(fmt.Sprintf("r%02d", (i*7)%23), typ, int64(100+i/3))) // ties of three
			}
			rxEnqueue(t, conn, "p1", ins...)
			rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", Types: []string{"x"}, NowMs: 200, LeaseMs: rxLongLease, Limit: 5})
			for _, q := range []driver.ReactionListQuery{{}, {Types: []string{"y"}},
				{Statuses: []driver.ReactionStatus{driver.ReactionPending}}} {
				q.Limit = 10000
				all, err := rc.ListReactions(ctx, "p1", q)
				must(t, "ListReactions", err)
				for _, size := range []int{1, 4, 10} {
					var paged []driver.Reaction
					page := q
					page.Limit = size
					for n := 0; ; n++ {
						rs, err := rc.ListReactions(ctx, "p1", page)
						must(t, "ListReactions (a page)", err)
						paged = append(paged, rs...)
						if len(rs) < size || n > 30 {
							break
						}
						last := rs[len(rs)-1]
						page.AfterKey, page.AfterCreatedAtMs = last.Key, last.CreatedAtMs
					}
					expectEqual(t, fmt.Sprintf("RX-8: pages of %d after the cursor, joined, are the listing (statuses %v, types %v)",
						size, q.Statuses, q.Types), rxKeys(all), rxKeys(paged))
				}
			}
			// A cursor whose reaction does not exist (pruned meanwhile):
			// the page starts after its place in the order.
			rs, err := rc.ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 4, AfterCreatedAtMs: 104, AfterKey: "r05z"})
			must(t, "ListReactions after a vanished cursor", err)
			all := rxList(t, rc, "p1")
			var want []string
			for _, r := range all {
				if r.CreatedAtMs < 104 || (r.CreatedAtMs == 104 && r.Key < "r05z") {
					want = append(want, r.Key)
				}
			}
			expectEqual(t, "RX-8: a page after a cursor whose reaction is gone", want[:4], rxKeys(rs))
			_, err = rxStore(t, conn).ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 4, AfterKey: "a\x00b"})
			expectCode(t, "Store.ListReactions with a cursor key holding NUL (V-2)", err, driver.CodeInvalidArgument)
		}},
		// Catches: completedAt not recorded, or kept after the row leaves
		// the completed state; a retry that keeps the failure it cleared.
		Case{Name: "RX-7/retry-clears-failure-completed-keeps-time", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			a, b := rxIn("a", "x", 1), rxIn("b", "x", 2)
			b.MaxAttempts = 1
			rxEnqueue(t, conn, "p1", a, b)
			rxClaimAll(t, rc, "p1", "w", 10, rxLongLease)
			ok, err := rc.CompleteReaction(ctx, "p1", "a", "w", 42)
			rxBool(t, "CompleteReaction", true, ok, err)
			expectEqual(t, "RX-5: completedAt of a completed reaction", int64(42), rxGet(t, rc, "p1", "a").CompletedAtMs)
			ok, err = rc.FailReaction(ctx, "p1", "b", "w", driver.FailRequest{NowMs: 50, Code: "x.fatal"})
			rxBool(t, "FailReaction", true, ok, err)
			expectEqual(t, "RX-6: a dead letter has no completedAt", int64(0), rxGet(t, rc, "p1", "b").CompletedAtMs)
			ok, err = rc.RetryReaction(ctx, "p1", "b", 60)
			rxBool(t, "RetryReaction", true, ok, err)
			r := rxGet(t, rc, "p1", "b")
			if r.LastFailure != nil {
				t.Errorf("RX-7: the last failure after an operator retry = %+v, want none (cleared)", *r.LastFailure)
			}
			expectEqual(t, "RX-7: completedAt after a retry", int64(0), r.CompletedAtMs)
		}},
	)
}
