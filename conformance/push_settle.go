package conformance

import (
	"fmt"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for OUT: what Push answers once an attempt may have landed
// (OUT-1), and its retries of write conflicts (OUT-2). The faults are
// pushFaultConn's (push_outcomes.go): commits that land or roll back and
// then answer commit_outcome_unknown or write_conflict, and an engine
// that goes down after an unknown answer.

func init() {
	register(
		Case{Name: "OUT-1/landed-then-unreachable-is-unknown", Run: outLandedUnreachable},
		Case{Name: "OUT-1/landed-then-begin-fails-is-settled-by-read", Run: outLandedBeginFails},
		Case{Name: "OUT-1/guarded-push-landed-then-unreachable", Run: outGuardedUnreachable},
		Case{Name: "OUT-2/write-conflicts-retried-past-any-count", Run: outConflictsRetried},
		Case{Name: "OUT-2/racing-pushes-all-land-by-default", Run: outRacingDefault},
	)
}

// downAfterUnknown makes f's engine go down (down: "begin" or "all") at
// the next unknown answer, and back up before the case goes on.
func downAfterUnknown(f *pushFaultConn, down string) {
	f.mu.Lock()
	f.afterUnknown = func() { f.setDown(down) }
	f.mu.Unlock()
}

// outUp brings f's engine back and ends the scripted faults.
func outUp(f *pushFaultConn) {
	f.mu.Lock()
	f.afterUnknown, f.down, f.steps = nil, "", nil
	f.mu.Unlock()
}

// Catches: an error that means "nothing written" (the engine's
// unavailable at the next Begin) answered for a push whose commit
// landed, so that the client sends the edit again under a new commit id.
func outLandedUnreachable(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil))
	f.script("landed")
	downAfterUnknown(f, "all")
	_, err := s.Push(t.Context(), "p1", req)
	expectCode(t, "OUT-1: a push that landed, its answer lost, the engine then unreachable", err, driver.CodeCommitOutcomeUnknown)
	outUp(f)
	r, err := s.Push(t.Context(), "p1", req)
	must(t, "OUT-1: the same push once the engine is back", err)
	expectEqual(t, "OUT-1: it answers the commit that landed", int64(1), r.CommitSeq)
	expectEqual(t, "OUT-1: as a replay", true, r.Replayed)

	// A rejection that landed: the same.
	req = pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(0)))
	f.script("landed")
	downAfterUnknown(f, "all")
	_, err = s.Push(t.Context(), "p1", req)
	expectCode(t, "OUT-1: a rejection that landed, its answer lost, the engine then unreachable", err, driver.CodeCommitOutcomeUnknown)
	outUp(f)
	r, err = s.Push(t.Context(), "p1", req)
	must(t, "OUT-1: the same rejected push once the engine is back", err)
	expectEqual(t, "OUT-1: it answers the stored rejection", driver.PushRejected, r.Status)

	// Lost, then unreachable: still unknown, never "nothing written"
	// (Push cannot know), and pushing again applies once.
	req = pushReq("c1", "k3", pushTodo("t3", "p7", "o1", "three", nil))
	f.script("lost")
	downAfterUnknown(f, "all")
	_, err = s.Push(t.Context(), "p1", req)
	expectCode(t, "OUT-1: a push lost with its answer, the engine then unreachable", err, driver.CodeCommitOutcomeUnknown)
	outUp(f)
	r, err = s.Push(t.Context(), "p1", req)
	must(t, "OUT-1: the same push once the engine is back", err)
	expectEqual(t, "OUT-1: it applies (nothing had landed)", driver.PushApplied, r.Status)
	expectEqual(t, "OUT-1: not a replay", false, r.Replayed)
	pushExpectSettled(t, f, 2, 3)
}

// Catches: the follow-up attempt's Begin error answered although a read
// of the push result (which still works) settles the outcome.
func outLandedBeginFails(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil))
	f.script("landed")
	downAfterUnknown(f, "begin")
	r, err := s.Push(t.Context(), "p1", req)
	must(t, "OUT-1: a push that landed, its answer lost, every later Begin failing", err)
	expectEqual(t, "OUT-1: status", driver.PushApplied, r.Status)
	expectEqual(t, "OUT-1: answered as its own", false, r.Replayed)
	expectEqual(t, "OUT-1: changes answered", 1, len(r.Changes))
	outUp(f)
	pushExpectSettled(t, f, 1, 1)
}

// Catches: a guarded push (PUSH-9) whose unknown outcome is followed by
// an unreachable engine answered with the follow-up's error.
func outGuardedUnreachable(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	if _, ok := f.Conn.(driver.GuardedBeginner); ok {
		s = syncstore.OpenConn(&pushGuardedFaultConn{f})
		must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	}
	v := syncstore.Version
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", v(0)))
	f.script("landed")
	downAfterUnknown(f, "all")
	_, err := s.Push(t.Context(), "p1", req)
	expectCode(t, "OUT-1: a guarded push that landed, the engine then unreachable", err, driver.CodeCommitOutcomeUnknown)
	outUp(f)
	req2 := pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "two", v(1)))
	f.script("landed")
	downAfterUnknown(f, "begin")
	r, err := s.Push(t.Context(), "p1", req2)
	must(t, "OUT-1: a guarded push that landed, every later Begin failing", err)
	expectEqual(t, "OUT-1: its result", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}, r.Ops)
	expectEqual(t, "OUT-1: answered as its own", false, r.Replayed)
	outUp(f)
	r, err = s.Push(t.Context(), "p1", req)
	must(t, "OUT-1: the first push again", err)
	expectEqual(t, "OUT-1: it answers the commit that landed", int64(1), r.CommitSeq)
	pushExpectSettled(t, f, 2, 2)
}

// Catches: Push giving up on write conflicts after a fixed number of
// attempts although its context lives and the policy sets no bound; a
// policy's bound not kept.
func outConflictsRetried(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	conflicts := make([]string, 40)
	for i := range conflicts {
		conflicts[i] = "conflict"
	}
	s.SetRetryPolicy(syncstore.RetryPolicy{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond})
	f.script(conflicts...)
	r, err := s.Push(t.Context(), "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "OUT-2: a push meeting 40 write conflicts, no bound set", err)
	expectEqual(t, "OUT-2: status", driver.PushApplied, r.Status)
	expectEqual(t, "OUT-2: commit", int64(1), r.CommitSeq)
	s.SetRetryPolicy(syncstore.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond})
	f.script("conflict", "conflict", "conflict", "conflict")
	_, err = s.Push(t.Context(), "p1", pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil)))
	expectCode(t, "OUT-2: a push meeting more write conflicts than MaxAttempts 3", err, driver.CodeWriteConflict)
	outUp(f)
	pushExpectSettled(t, f, 1, 1)
	_, found, err := f.Conn.GetPushResult(t.Context(), "p1", "c1", "k2")
	must(t, "GetPushResult", err)
	expectEqual(t, "OUT-2: the bounded push's result stored", false, found)
}

// Catches: racing pushes on one partition that fail with write_conflict
// under the default policy (an optimistic engine, TX-9), or retries that
// apply twice (gaps or extra seqs).
func outRacingDefault(t T, h Harness) {
	conn, s := pushStore(t, h)
	const workers, each = 12, 20
	var wg gosync.WaitGroup
	failed := make([][]string, workers)
	for w := range workers {
		wg.Go(func() {
			id := fmt.Sprintf("w%02d", w)
			for i := range each {
				r, err := s.Push(t.Context(), "p1", pushReq(id, fmt.Sprintf("k%d", i),
					pushTodo(fmt.Sprintf("%s-%d", id, i), "p7", "o1", "x", nil)))
				if err == nil && (r.Status != driver.PushApplied || r.Replayed) {
					err = fmt.Errorf("%s, replayed %v: %+v", r.Status, r.Replayed, r.Ops)
				}
				if err != nil {
					failed[w] = append(failed[w], fmt.Sprintf("push %d: %v", i, err))
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for w, f := range failed {
		n += len(f)
		if len(f) > 0 {
			t.Errorf("OUT-2: worker %d: %d of %d pushes failed, the first: %s", w, len(f), each, f[0])
		}
	}
	if n > 0 {
		t.Fatalf("OUT-2: %d of %d racing pushes failed", n, workers*each)
	}
	seq, err := conn.MaxCommitSeq(t.Context(), "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "OUT-2: commits after the race", int64(workers*each), seq)
	log := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, workers*each))
	want := make([]int64, workers*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	expectEqual(t, "OUT-2: the log's seqs", want, seqs(log))
}
