package conformance

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-1's race and PUSH-7: pushes racing on one partition, and
// commits whose outcome the driver reports unknown (TX-10), settled by
// the engine. The unknown outcomes are made by pushFaultConn, a wrapper of
// the driver's Conn whose Commit and CommitRejected land (or roll back)
// and then answer commit_outcome_unknown, as a lost answer would.

func init() {
	register(
		Case{Name: "PUSH-1/racing-identical-pushes-one-commit", Run: pushRace},
		Case{Name: "PUSH-7/concurrent-pushes-all-land-dense", Run: pushConcurrent},
		Case{Name: "PUSH-7/unknown-outcome-that-landed-is-not-applied-again", Run: pushUnknownLanded},
		Case{Name: "PUSH-7/unknown-outcome-that-did-not-land-applies-once", Run: pushUnknownLost},
		Case{Name: "PUSH-7/unsettled-outcome-is-returned-then-learned", Run: pushUnknownUnsettled},
		Case{Name: "PUSH-7/unknown-outcome-of-a-guarded-push", Run: pushUnknownGuarded},
	)
}

// Catches: a replay check outside the partition's serialization (two
// commits for one key), or a loser that answers its own result instead of
// the stored one.
func pushRace(t T, h Harness) {
	conn, s := pushStore(t, h)
	s.SetRetryPolicy(syncstore.RetryPolicy{MaxAttempts: 1000})
	const rounds, racers = 4, 4
	for r := range rounds {
		req := pushReq("c1", fmt.Sprintf("k%d", r), pushTodo(fmt.Sprintf("t%d", r), "p7", "o1", "x", nil),
			pushTodo("shared", "p7", "o1", fmt.Sprintf("round %d", r), nil))
		var (
			wg    gosync.WaitGroup
			start = make(chan struct{})
			resps [racers]syncstore.PushResponse
			errs  [racers]error
		)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resps[i], errs[i] = s.Push(t.Context(), "p1", req)
			}()
		}
		close(start)
		wg.Wait()
		fresh := 0
		for i := range racers {
			must(t, fmt.Sprintf("PUSH-1: racer %d of round %d", i, r), errs[i])
			if !resps[i].Replayed {
				fresh++
			}
			expectEqual(t, fmt.Sprintf("PUSH-1: racer %d's result in round %d", i, r), resps[0].PushResult, resps[i].PushResult)
		}
		expectEqual(t, fmt.Sprintf("PUSH-1: racers that applied in round %d", r), 1, fresh)
		expectEqual(t, fmt.Sprintf("PUSH-1: round %d's commit", r), int64(r+1), resps[0].CommitSeq)
	}
	seq, err := conn.MaxCommitSeq(t.Context(), "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "PUSH-1: commits after the races", int64(rounds), seq)
	row, _, err := conn.GetRow(t.Context(), "p1", tTodos, "shared")
	must(t, "GetRow", err)
	expectEqual(t, "PUSH-1: the shared row's version (one bump per round)", int64(rounds), row.ServerVersion)
}

// Catches: a write conflict of an optimistic engine returned to the
// caller instead of retried, or a retry that applies twice (gaps or
// extra versions).
func pushConcurrent(t T, h Harness) {
	conn, s := pushStore(t, h)
	s.SetRetryPolicy(syncstore.RetryPolicy{MaxAttempts: 1000})
	const workers, each = 4, 6
	var wg gosync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("w%d", w)
			for i := range each {
				r, err := s.Push(t.Context(), "p1", pushReq(id, fmt.Sprintf("k%d", i),
					pushTodo(id, "p7", "o1", fmt.Sprintf("edit %d", i), syncstore.Version(int64(i)))))
				if err == nil && (r.Status != driver.PushApplied || r.Replayed) {
					err = fmt.Errorf("push %d: %s, replayed %v: %+v", i, r.Status, r.Replayed, r.Ops)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		must(t, fmt.Sprintf("PUSH-7: worker %d", w), err)
	}
	log := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, workers*each))
	want := make([]int64, workers*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	expectEqual(t, "PUSH-7: the log's seqs", want, seqs(log))
	for w := range workers {
		row, _, err := conn.GetRow(t.Context(), "p1", tTodos, fmt.Sprintf("w%d", w))
		must(t, "GetRow", err)
		expectEqual(t, fmt.Sprintf("PUSH-7: worker %d's row version", w), int64(each), row.ServerVersion)
	}
}

// Catches: an unknown outcome answered as an error although the commit
// landed, a second application (a second commit), or the push's own
// result answered as a replay.
func pushUnknownLanded(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	f.script("landed")
	r, err := s.Push(t.Context(), "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "PUSH-7: Push over a commit that landed with its answer lost", err)
	expectEqual(t, "PUSH-7: status", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: replayed", false, r.Replayed)
	expectEqual(t, "PUSH-7: changes answered", 1, len(r.Changes))
	// The same for a rejection that landed: never applied instead.
	f.script("landed")
	r, err = s.Push(t.Context(), "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(0))))
	must(t, "PUSH-7: Push over a rejection that landed with its answer lost", err)
	expectEqual(t, "PUSH-7: rejection status", driver.PushRejected, r.Status)
	expectEqual(t, "PUSH-7: rejection replayed", false, r.Replayed)
	pushExpectSettled(t, f, 1, 2)
}

// Catches: an unknown outcome taken as "applied" without checking (the
// commit is lost), or as final (an error although a retry would apply).
func pushUnknownLost(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	f.script("lost")
	r, err := s.Push(t.Context(), "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "PUSH-7: Push over a commit lost with its answer", err)
	expectEqual(t, "PUSH-7: status", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: commit", int64(1), r.CommitSeq)
	f.script("lost")
	r, err = s.Push(t.Context(), "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(0))))
	must(t, "PUSH-7: Push over a rejection lost with its answer", err)
	expectEqual(t, "PUSH-7: rejection status", driver.PushRejected, r.Status)
	pushExpectSettled(t, f, 1, 2)
}

// Catches: an outcome that cannot be learned answered as applied or as
// rejected; a later identical push that applies a second time.
func pushUnknownUnsettled(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil))
	f.script("lost", "lost", "lost", "lost", "lost", "lost")
	_, err := s.Push(t.Context(), "p1", req)
	expectCode(t, "PUSH-7: a push whose every commit is lost with its answer", err, driver.CodeCommitOutcomeUnknown)
	f.script()
	r, err := s.Push(t.Context(), "p1", req)
	must(t, "PUSH-7: the same push again", err)
	expectEqual(t, "PUSH-7: it applies (nothing had landed)", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: not a replay", false, r.Replayed)
	// Landed every time, answers lost every time: the first landed, the
	// rest read it back — applied once, answered as its own.
	req = pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil))
	f.script("landed", "landed", "landed", "landed", "landed", "landed")
	r, err = s.Push(t.Context(), "p1", req)
	if err == nil {
		expectEqual(t, "PUSH-7: a push whose answers are all lost, settled", driver.PushApplied, r.Status)
	} else {
		expectCode(t, "PUSH-7: a push whose answers are all lost", err, driver.CodeCommitOutcomeUnknown)
	}
	f.script()
	r, err = s.Push(t.Context(), "p1", req)
	must(t, "PUSH-7: the same push again", err)
	expectEqual(t, "PUSH-7: the result of the commit that landed", int64(2), r.CommitSeq)
	pushExpectSettled(t, f, 2, 2)
}

// Catches: a guarded push (PUSH-9) whose unknown outcome is answered as
// an error although it landed, applied a second time by the read-first
// push that settles it, answered as a replay of itself, or answered as
// applied when nothing landed.
func pushUnknownGuarded(t T, h Harness) {
	f, s := pushFaultStore(t, h)
	if _, ok := f.Conn.(driver.GuardedBeginner); ok {
		s = syncstore.OpenConn(&pushGuardedFaultConn{f})
		must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	}
	v := syncstore.Version
	f.script("landed")
	r, err := s.Push(t.Context(), "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", v(0))))
	must(t, "PUSH-7: a guarded push that landed with its answer lost", err)
	expectEqual(t, "PUSH-7: status", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: replayed", false, r.Replayed)
	expectEqual(t, "PUSH-7: changes answered", 1, len(r.Changes))
	f.script("lost")
	r, err = s.Push(t.Context(), "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "two", v(1))))
	must(t, "PUSH-7: a guarded push lost with its answer", err)
	expectEqual(t, "PUSH-7: its status", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: its commit", int64(2), r.CommitSeq)
	expectEqual(t, "PUSH-7: its version", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}, r.Ops)
	req := pushReq("c1", "k3", pushTodo("t1", "p7", "o1", "three", v(2)))
	f.script("lost", "lost", "lost", "lost", "lost", "lost")
	_, err = s.Push(t.Context(), "p1", req)
	expectCode(t, "PUSH-7: a guarded push whose every commit is lost with its answer", err, driver.CodeCommitOutcomeUnknown)
	f.script()
	r, err = s.Push(t.Context(), "p1", req)
	must(t, "PUSH-7: the same push again", err)
	expectEqual(t, "PUSH-7: it applies (nothing had landed)", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-7: not a replay", false, r.Replayed)
	pushExpectSettled(t, f, 3, 3)
	row, _, err := f.Conn.GetRow(t.Context(), "p1", tTodos, "t1")
	must(t, "GetRow", err)
	expectEqual(t, "PUSH-7: t1's version (one bump per push)", int64(3), row.ServerVersion)
}

// pushGuardedFaultConn is pushFaultConn for a driver.GuardedBeginner: its
// guarded Txs end by the same script.
type pushGuardedFaultConn struct{ *pushFaultConn }

func (c *pushGuardedFaultConn) BeginGuarded(ctx context.Context, p string) (driver.GuardedTx, error) {
	if c.isDown("begin") {
		return nil, errScriptedDown
	}
	tx, err := c.Conn.(driver.GuardedBeginner).BeginGuarded(ctx, p)
	if err != nil {
		return nil, err
	}
	return &pushGuardedFaultTx{GuardedTx: tx, end: &pushFaultTx{Tx: tx, c: c.pushFaultConn}}, nil
}

type pushGuardedFaultTx struct {
	driver.GuardedTx
	end *pushFaultTx
}

func (t *pushGuardedFaultTx) Commit(ctx context.Context) error { return t.end.Commit(ctx) }

func (t *pushGuardedFaultTx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return t.end.CommitRejected(ctx, clientID, clientCommitID, r)
}

// pushExpectSettled checks that the partition holds exactly commits
// commits and that each of the results stored for keys k1…k<results> of
// client c1 is found.
func pushExpectSettled(t T, f *pushFaultConn, commits int64, results int) {
	t.Helper()
	seq, err := f.Conn.MaxCommitSeq(t.Context(), "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "PUSH-7: commits in the partition", commits, seq)
	for i := 1; i <= results; i++ {
		_, found, err := f.Conn.GetPushResult(t.Context(), "p1", "c1", fmt.Sprintf("k%d", i))
		must(t, "GetPushResult", err)
		expectEqual(t, fmt.Sprintf("PUSH-7: result of k%d stored", i), true, found)
	}
}

// pushFaultStore returns a fault wrapper over a fresh store and a
// sync.Store over the wrapper, TestSchema ensured.
func pushFaultStore(t T, h Harness) (*pushFaultConn, *syncstore.Store) {
	t.Helper()
	f := &pushFaultConn{Conn: openStore(t, h)}
	s := syncstore.OpenConn(f)
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	return f, s
}

// pushFaultConn wraps a Conn so that the ends of its Txs follow a script:
// for each Commit or CommitRejected, the next step — "landed": done, then
// answered commit_outcome_unknown; "lost": rolled back, then answered
// commit_outcome_unknown; "conflict": rolled back, then answered
// write_conflict (TX-9); no step left: done as the driver does it. After
// an unknown answer, afterUnknown (if set) runs: it may take the engine
// down (setDown). It drops the driver's capabilities (the cases need
// none).
type pushFaultConn struct {
	driver.Conn
	mu           gosync.Mutex
	steps        []string
	afterUnknown func()
	// down: "" the engine answers; "begin": every Begin fails with
	// unavailable (GetPushResult answers); "all": Begin and GetPushResult
	// fail with unavailable.
	down string
}

// setDown sets how far the engine is down ("", "begin", "all").
func (c *pushFaultConn) setDown(down string) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *pushFaultConn) isDown(call string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down == "all" || (c.down == "begin" && call == "begin")
}

var errScriptedDown = driver.Errorf(driver.CodeUnavailable, "conformance: the engine cannot be reached (scripted)")

func (c *pushFaultConn) GetPushResult(ctx context.Context, p, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	if c.isDown("read") {
		return driver.PushResult{}, false, errScriptedDown
	}
	return c.Conn.GetPushResult(ctx, p, clientID, clientCommitID)
}

func (c *pushFaultConn) script(steps ...string) {
	c.mu.Lock()
	c.steps = steps
	c.mu.Unlock()
}

func (c *pushFaultConn) next() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.steps) == 0 {
		return ""
	}
	s := c.steps[0]
	c.steps = c.steps[1:]
	return s
}

func (c *pushFaultConn) Begin(ctx context.Context, p string) (driver.Tx, error) {
	if c.isDown("begin") {
		return nil, errScriptedDown
	}
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &pushFaultTx{Tx: tx, c: c}, nil
}

type pushFaultTx struct {
	driver.Tx
	c *pushFaultConn
}

func (t *pushFaultTx) end(ctx context.Context, do func() error) error {
	switch t.c.next() {
	case "landed":
		if err := do(); err != nil {
			return err
		}
	case "lost":
		if err := t.Tx.Rollback(ctx); err != nil {
			return err
		}
	case "conflict":
		if err := t.Tx.Rollback(ctx); err != nil {
			return err
		}
		return driver.Errorf(driver.CodeWriteConflict, "conformance: another transaction of the partition committed first (scripted, TX-9)")
	default:
		return do()
	}
	t.c.mu.Lock()
	after := t.c.afterUnknown
	t.c.mu.Unlock()
	if after != nil {
		after()
	}
	return driver.Errorf(driver.CodeCommitOutcomeUnknown, "conformance: the commit's answer was lost (scripted, TX-10)")
}

func (t *pushFaultTx) Commit(ctx context.Context) error {
	return t.end(ctx, func() error { return t.Tx.Commit(ctx) })
}

func (t *pushFaultTx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return t.end(ctx, func() error { return t.Tx.CommitRejected(ctx, clientID, clientCommitID, r) })
}
