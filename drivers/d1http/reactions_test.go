package d1http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
)

// rxSeed enqueues n reactions "kNN" created at 1…n in one push of p1.
func rxSeed(t *testing.T, conn *Conn, n int) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.UpsertRow(ctx, "kinds", kindsRow("src", 1)); err != nil {
		t.Fatal(err)
	}
	ins := make([]driver.ReactionInput, n)
	for i := range ins {
		ins[i] = driver.ReactionInput{Key: fmt.Sprintf("k%02d", i), Type: "x", Payload: "{}", MaxAttempts: 5, CreatedAtMs: int64(i + 1)}
	}
	if err := tx.(driver.ReactionsTx).EnqueueReactions(ctx, 1, ins); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func rxStatuses(t *testing.T, conn *Conn) map[driver.ReactionStatus]int {
	t.Helper()
	rs, err := conn.ListReactions(context.Background(), "p1", driver.ReactionListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[driver.ReactionStatus]int{}
	for _, r := range rs {
		out[r.Status]++
	}
	return out
}

// TestReactionsLostAnswers hides the answer of batches that landed
// (reset or timeout after apply): a claim still returns exactly the rows
// it leased, an owner operation its true outcome, and a prune its counts
// per status; nothing is applied twice.
func TestReactionsLostAnswers(t *testing.T) {
	ctx := context.Background()
	for name, kind := range map[string]d1test.FaultKind{"reset-after-apply": d1test.FaultResetAfter, "timeout-after-apply": d1test.FaultTimeoutAfter} {
		t.Run(name, func(t *testing.T) {
			srv, _ := newDouble(t)
			conn := openOn(t, srv, "&request_timeout_ms=300")
			rxSeed(t, conn, 6)

			srv.Inject(d1test.Fault{Kind: kind, Writes: true})
			got, err := conn.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w", NowMs: 100, LeaseMs: 50, Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range got {
				keys = append(keys, r.Key)
				if r.Attempts != 1 || r.LeaseOwner != "w" || r.LeaseExpiresAtMs != 150 {
					t.Errorf("recovered claim of %s: %+v, want attempts 1, owner w, expiry 150", r.Key, r)
				}
			}
			if strings.Join(keys, ",") != "k00,k01,k02,k03" {
				t.Errorf("claim with a lost answer returned %v, want k00…k03", keys)
			}
			if srv.FaultsFired(kind) != 1 {
				t.Fatalf("the fault fired %d times, want 1", srv.FaultsFired(kind))
			}
			if s := rxStatuses(t, conn); s[driver.ReactionLeased] != 4 || s[driver.ReactionPending] != 2 {
				t.Errorf("statuses after the claim: %v, want 4 leased, 2 pending (applied once)", s)
			}

			for i, k := range []string{"k00", "k01", "k02"} {
				srv.Inject(d1test.Fault{Kind: kind, Writes: true})
				var ok bool
				if i < 2 {
					ok, err = conn.CompleteReaction(ctx, "p1", k, "w", 110)
				} else {
					ok, err = conn.FailReaction(ctx, "p1", k, "w", driver.FailRequest{NowMs: 110, Code: "x.failed"})
				}
				if err != nil || !ok {
					t.Errorf("owner operation on %s with a lost answer: %v, %v; want true", k, ok, err)
				}
			}
			srv.Inject(d1test.Fault{Kind: kind, Writes: true})
			ok, err := conn.CompleteReaction(ctx, "p1", "k04", "w", 110)
			if err != nil || ok {
				t.Errorf("completing a pending row with a lost answer: %v, %v; want false", ok, err)
			}

			srv.Inject(d1test.Fault{Kind: kind, Writes: true})
			counts, err := conn.PruneReactions(ctx, "p1", driver.ReactionPruneRequest{CompletedBeforeMs: 1000, DeadLetterBeforeMs: 1000, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if counts[driver.ReactionCompleted] != 2 || counts[driver.ReactionDeadLetter] != 1 {
				t.Errorf("prune with a lost answer counted %v, want 2 completed, 1 dead letter", counts)
			}
			if s := rxStatuses(t, conn); len(s) != 2 || s[driver.ReactionLeased] != 1 || s[driver.ReactionPending] != 2 {
				t.Errorf("statuses after the prune: %v, want 1 leased, 2 pending", s)
			}
		})
	}
}

// TestPruneLimitSpansStatuses checks the two-statement prune: the limit
// takes the oldest terminal rows across both statuses (RX-9).
func TestPruneLimitSpansStatuses(t *testing.T) {
	ctx := context.Background()
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "")
	rxSeed(t, conn, 6)
	if _, err := conn.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w", NowMs: 100, LeaseMs: 50, Limit: 6}); err != nil {
		t.Fatal(err)
	}
	// Terminal at: k00 completed 10, k01 dead 11, k02 completed 12, k03 dead 13, k04 completed 14.
	for i, k := range []string{"k00", "k01", "k02", "k03", "k04"} {
		var ok bool
		var err error
		if i%2 == 0 {
			ok, err = conn.CompleteReaction(ctx, "p1", k, "w", int64(10+i))
		} else {
			ok, err = conn.FailReaction(ctx, "p1", k, "w", driver.FailRequest{NowMs: int64(10 + i), Code: "x.failed"})
		}
		if err != nil || !ok {
			t.Fatalf("setup %s: %v %v", k, ok, err)
		}
	}
	counts, err := conn.PruneReactions(ctx, "p1", driver.ReactionPruneRequest{CompletedBeforeMs: 1000, DeadLetterBeforeMs: 1000, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if counts[driver.ReactionCompleted] != 2 || counts[driver.ReactionDeadLetter] != 1 {
		t.Errorf("prune of the 3 oldest (k00 c, k01 d, k02 c): %v, want 2 completed, 1 dead letter", counts)
	}
	rs, err := conn.ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range rs {
		left = append(left, r.Key)
	}
	if strings.Join(left, ",") != "k05,k04,k03" {
		t.Errorf("left after the prune: %v, want k05,k04,k03", left)
	}
}

// A claim across partitions whose answer was lost after it landed still
// returns exactly the rows it leased (D1ClaimRecoverAcross), and a
// partition list longer than one D1 value is claimed in parts (RX-12).
func TestClaimDueReactionsLostAnswerAndLongList(t *testing.T) {
	ctx := context.Background()
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "&request_timeout_ms=300")
	rxSeed(t, conn, 3)
	srv.Inject(d1test.Fault{Kind: d1test.FaultResetAfter, Writes: true})
	got, err := conn.ClaimDueReactions(ctx, driver.DueClaimRequest{ClaimRequest: driver.ClaimRequest{Owner: "w", Types: []string{"x"}, NowMs: 100, LeaseMs: 50, Limit: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range got {
		keys = append(keys, r.Partition+"/"+r.Key)
		if r.Attempts != 1 || r.LeaseOwner != "w" || r.LeaseExpiresAtMs != 150 {
			t.Errorf("recovered claim of %s: %+v, want attempts 1, owner w, expiry 150", r.Key, r)
		}
	}
	if strings.Join(keys, ",") != "p1/k00,p1/k01" {
		t.Errorf("claim across with a lost answer returned %v, want p1/k00, p1/k01", keys)
	}

	// 10,000 names of 200 bytes: about 2 MB of JSON, over one D1 value.
	parts := make([]string, 10000)
	for i := range parts {
		parts[i] = fmt.Sprintf("%05d%s", i, strings.Repeat("x", 195))
	}
	parts[9999] = "p1"
	got, err = conn.ClaimDueReactions(ctx, driver.DueClaimRequest{Partitions: parts,
		ClaimRequest: driver.ClaimRequest{Owner: "w2", Types: []string{"x"}, NowMs: 100, LeaseMs: 50, Limit: 10}})
	if err != nil || len(got) != 1 || got[0].Key != "k02" {
		t.Errorf("claim across a 2 MB partition list: %v, %v; want p1/k02", got, err)
	}
}
