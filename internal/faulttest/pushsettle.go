package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// SettleTarget is a store whose next commit can land with its answer
// lost, the engine then unreachable, for PushSettle.
type SettleTarget struct {
	// Conn is the faulted store (the suite's schema ensured); Push runs
	// over sync.OpenConn(Conn).
	Conn driver.Conn
	// Schema is the conformance suite's (conformance.TestSchema).
	Schema driver.Schema
	// Arm makes the next commit (Commit or CommitRejected of any Tx) reach
	// the engine and its answer be lost; from that moment the engine is
	// unreachable: every later connection or request fails — the next cut
	// ones, or (cut < 0) all until Restore. fired reports whether the
	// armed fault met a commit.
	Arm func(cut int) (fired func() bool)
	// Restore makes the engine reachable again.
	Restore func()
}

// SettleCounts is what PushSettle saw: of the pushes whose commit landed,
// how many Push answered with their result, with commit_outcome_unknown,
// or with another error (one that says nothing was written: wrong, OUT-1).
type SettleCounts struct {
	Seeds, Landed, Result, Unknown, WronglyNotWritten int
	// NotLanded counts pushes that did not land (the fault met no commit
	// of theirs); their answers are checked by the replay that follows.
	NotLanded int
}

func (c SettleCounts) String() string {
	return fmt.Sprintf("%d seeds: %d landed: %d answered the result, %d answered commit_outcome_unknown, %d wrongly answered an error meaning nothing written; %d did not land",
		c.Seeds, c.Landed, c.Result, c.Unknown, c.WronglyNotWritten, c.NotLanded)
}

// SettleSeeds is how many seeds PushSettle runs: 20, or 200 when
// SYNCSTORE_TEST_FULL=1.
func SettleSeeds() int {
	if os.Getenv("SYNCSTORE_TEST_FULL") == "1" {
		return 200
	}
	return 20
}

// PushSettle checks OUT-1 on a real engine: for each seed, in a partition
// of its own, a warm-up push, then a push whose commit lands and whose
// answer is lost, the engine unreachable from that moment (for every
// later connection, or for the next 0…5, chosen by the seed), under a
// deadline of deadline. Push must answer the push's result or
// commit_outcome_unknown — never an error that says nothing was written.
// Once the engine is back, the same push must answer the stored result,
// and the partition must hold the warm-up and the push once each. Half
// of the seeds push with base versions (the guarded path, PUSH-9, where
// the driver has it), half without. It returns the counts.
func PushSettle(t *testing.T, tg SettleTarget, seeds int, deadline time.Duration) SettleCounts {
	t.Helper()
	st := sync.OpenConn(tg.Conn)
	if err := st.EnsureSchema(t.Context(), tg.Schema); err != nil {
		t.Fatal(err)
	}
	var n SettleCounts
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 27))
		part := fmt.Sprintf("s%04d", seed)
		guarded := rng.IntN(2) == 0
		cut := -1
		if rng.IntN(3) != 0 {
			cut = rng.IntN(6)
		}
		var base func(int64) *int64
		if guarded {
			base = sync.Version
		} else {
			base = func(int64) *int64 { return nil }
		}
		req := func(k string, title string, v int64) sync.PushRequest {
			vals := driver.Values{"id": "t-" + part, "title": title, "done": false, "project_id": "p", "owner_id": "o",
				"updated_at": int64(1700000000000)}
			return sync.PushRequest{ClientID: "c", ClientCommitID: k, ActorID: "a",
				Ops: []sync.PushOp{{Table: "todos", RowID: "t-" + part, Op: driver.OpUpsert, BaseVersion: base(v), Values: vals}}}
		}
		if _, err := st.Push(t.Context(), part, req("warm", "warm", 0)); err != nil {
			t.Fatalf("seed %d: warm-up push: %v", seed, err)
		}
		push := req("k", "edit", 1)
		fired := tg.Arm(cut)
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		r, err := st.Push(ctx, part, push)
		cancel()
		tg.Restore()
		n.Seeds++
		// A pooled connection the cut broke may fail the first read after
		// Restore with a retryable error: read up to three times.
		stored, landed, rerr := tg.Conn.GetPushResult(t.Context(), part, "c", "k")
		for try := 1; try < 3 && rerr != nil && driver.CodeOf(rerr).Retryable(); try++ {
			stored, landed, rerr = tg.Conn.GetPushResult(t.Context(), part, "c", "k")
		}
		if rerr != nil {
			t.Fatalf("seed %d: reading the push result: %v", seed, rerr)
		}
		what := fmt.Sprintf("seed %d (guarded %v, cut %d)", seed, guarded, cut)
		if !fired() {
			t.Errorf("%s: the fault met no commit (Push: %v)", what, err)
		}
		if !landed {
			n.NotLanded++
			if err == nil {
				t.Errorf("%s: Push answered %+v, but nothing landed", what, r.PushResult)
			}
		} else {
			n.Landed++
			switch code := driver.CodeOf(err); {
			case err == nil:
				n.Result++
				if r.Replayed || r.Status != stored.Status || r.CommitSeq != stored.CommitSeq {
					t.Errorf("%s: Push answered %+v (replayed %v); stored %+v", what, r.PushResult, r.Replayed, stored)
				}
			case code == driver.CodeCommitOutcomeUnknown:
				n.Unknown++
			default:
				n.WronglyNotWritten++
				t.Errorf("OUT-1: %s: the push landed, Push answered %v", what, err)
			}
		}
		again, err := st.Push(t.Context(), part, push)
		if err != nil {
			t.Fatalf("%s: the same push again: %v", what, err)
		}
		if landed && (!again.Replayed || again.CommitSeq != stored.CommitSeq) {
			t.Errorf("%s: the same push again answered %+v (replayed %v); stored %+v", what, again.PushResult, again.Replayed, stored)
		}
		if max, err := tg.Conn.MaxCommitSeq(t.Context(), part); err != nil {
			t.Fatal(err)
		} else if max != 2 {
			t.Errorf("PUSH-7: %s: the partition holds %d commits; want 2 (the warm-up and the push, once)", what, max)
		}
	}
	t.Logf("OUT-1: %s", n)
	return n
}

// ProxyTarget is the SettleTarget of c, whose connections all go through
// p: Arm drops the reply to the next COMMIT and cuts the proxy then
// (ArmDropAndCut).
func ProxyTarget(c driver.Conn, schema driver.Schema, p *Proxy) SettleTarget {
	return SettleTarget{Conn: c, Schema: schema, Restore: p.Restore, Arm: func(cut int) func() bool {
		f := p.ArmDropAndCut(cut)
		return func() bool {
			select {
			case <-f.Fired():
				return true
			default:
				return false
			}
		}
	}}
}
