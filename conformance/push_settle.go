package conformance

import (
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for OUT: what Push answers once an attempt may have landed
// (OUT-1). The faults are pushFaultConn's (push_outcomes.go): commits
// that land or roll back and then answer commit_outcome_unknown, and an
// engine that goes down after an unknown answer.

func init() {
	register(
		Case{Name: "OUT-1/landed-then-unreachable-is-unknown", Run: outLandedUnreachable},
		Case{Name: "OUT-1/landed-then-begin-fails-is-settled-by-read", Run: outLandedBeginFails},
		Case{Name: "OUT-1/guarded-push-landed-then-unreachable", Run: outGuardedUnreachable},
	)
}

// downAfterUnknown makes f's engine go down (down: "begin" or "all") at
// the next unknown answer, and back up before the case goes on.
func downAfterUnknown(f *pushFaultConn, down string) {
	f.mu.Lock()
	f.afterUnknown = func() { f.down = down }
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
