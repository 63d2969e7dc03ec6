package conformance

import (
	"context"
	"fmt"
	"maps"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Rule group TX, failures (docs/contract.md TX-6 cancelled contexts, TX-7
// unreachable engines, TX-8 CommitRejected).

// txExpectUnchanged checks that p still holds exactly the todo base (seq
// 1) and no result under key: what a failed Tx must leave behind.
func txExpectUnchanged(t T, conn driver.Conn, p, rule, key string, base driver.Row, absent ...string) {
	t.Helper()
	txExpectRow(t, conn, p, base.ID, rule+" (committed row kept)", &base)
	for _, id := range absent {
		txExpectRow(t, conn, p, id, rule+" (staged row not written)", nil)
	}
	txExpectLog(t, conn, p, rule, 1, []int64{1})
	prExpectAbsent(t, conn, p, key, rule+" (staged result not written)")
}

// txExpectLog is seqExpectLog for commits of txProject.
func txExpectLog(t T, conn driver.Conn, p, rule string, max int64, want []int64) {
	t.Helper()
	got := txSnapshot(t, conn, p)
	expectEqual(t, rule+": MaxCommitSeq", max, got.Max)
	expectEqual(t, rule+": committed seqs (window read)", want, seqs(got.Commits))
}

// txBeginWithin begins a Tx on p with the case's context, failing the case
// when Begin does not succeed within txGenerous (a connection left busy by
// an earlier Tx). The wait is bounded from outside, since the context given
// to Begin governs the whole Tx.
func txBeginWithin(t T, conn driver.Conn, p, rule string) driver.Tx {
	t.Helper()
	type begun struct {
		tx  driver.Tx
		err error
	}
	ch := make(chan begun, 1)
	go func() {
		tx, err := conn.Begin(t.Context(), p)
		ch <- begun{tx, err}
	}()
	b, ok := txRecv(ch, txGenerous)
	if !ok {
		// The goroutine ends with the case's context; release what it got.
		go func() {
			if b := <-ch; b.err == nil {
				_ = b.tx.Rollback(context.Background())
			}
		}()
		t.Fatalf("%s: a later Begin did not return within %s (a writer left busy?)", rule, txGenerous)
	}
	if b.err != nil {
		t.Fatalf("%s: a later Begin failed: %v", rule, b.err)
	}
	return b.tx
}

// txCancelled runs a Tx whose context is cancelled after the ops listed
// before "cancel" in the plan; Commit (with the cancelled context) must
// fail, nothing may be written, and the partition must be usable again.
func txCancelled(cancelBeforeAppend bool) func(t T, h Harness) {
	return func(t T, h Harness) {
		conn := openStore(t, h)
		base := todo("base", txProject, "o")
		push(t, conn, "p1", tTodos, base)
		cctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tx, err := conn.Begin(cctx, "p1")
		must(t, "Begin", err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		staged := todo("staged", txProject, "o")
		must(t, "UpsertRow", tx.UpsertRow(cctx, tTodos, staged))
		if cancelBeforeAppend {
			cancel()
		}
		// With the context already cancelled these may fail; either way
		// the Commit below must not succeed.
		seq, err := tx.AppendCommit(cctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k", CreatedAtMs: 1,
			Changes: []driver.Change{upsertChange(tTodos, staged)}})
		if err == nil {
			err = tx.PutPushResult(cctx, "c1", "k", prApplied(seq, "k"))
		}
		if !cancelBeforeAppend {
			must(t, "AppendCommit/PutPushResult before the cancel", err)
			cancel()
		}
		err = tx.Commit(cctx)
		if err == nil {
			t.Errorf("TX-6: Commit with a cancelled context succeeded")
		} else if driver.CodeOf(err) == "" {
			t.Errorf("ERR-1: Commit with a cancelled context returned %v, not a *driver.Error", err)
		}
		_ = tx.Rollback(context.Background())
		txExpectUnchanged(t, conn, "p1", "TX-6", "k", base, "staged")
		tx2 := txBeginWithin(t, conn, "p1", "TX-6")
		defer func() { _ = tx2.Rollback(context.Background()) }()
		expectEqual(t, "TX-6/SEQ-2: seq of the next commit", int64(2), stage(t, tx2, tTodos, todo("next", txProject, "o")))
		commit(t, tx2)
	}
}

func init() {
	register(
		// Catches: a driver that commits although the context was
		// cancelled, or leaves the connection in a transaction.
		Case{Name: "TX-6/cancel-before-commit", Run: txCancelled(false)},
		Case{Name: "TX-6/cancel-mid-tx", Run: txCancelled(true)},
		// Catches: Begin that ignores an already-cancelled context.
		Case{Name: "TX-6/begin-with-cancelled-context", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			cctx, cancel := context.WithCancel(t.Context())
			cancel()
			tx, err := conn.Begin(cctx, "p1")
			if err == nil {
				_ = tx.Rollback(context.Background())
				t.Errorf("TX-6: Begin with a cancelled context succeeded")
			} else if driver.CodeOf(err) == "" {
				t.Errorf("ERR-1: Begin with a cancelled context returned %v, not a *driver.Error", err)
			}
			tx2 := txBeginWithin(t, conn, "p1", "TX-6")
			defer func() { _ = tx2.Rollback(context.Background()) }()
			expectEqual(t, "TX-6: seq of the first commit", int64(1), stage(t, tx2, tTodos, todo("a", txProject, "o")))
			commit(t, tx2)
		}},
		// Catches: a waiting Begin that ignores its context, or one that,
		// cancelled, still takes the partition later (a leaked lock).
		Case{Name: "TX-6/cancel-while-waiting-for-begin", Run: txCancelWaitingBegin},

		// Catches: Begin that hangs on an unreachable engine.
		Case{Name: "TX-7/begin-unreachable-honours-deadline", Run: txUnreachable},

		// Catches: CommitRejected that commits staged writes, forgets the
		// result, or leaves the Tx usable.
		Case{Name: "TX-8/discards-staged-writes-and-stores-result", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, tx, base, _ := txToReject(t, h)
			rejected := prFull(driver.PushRejected, 0)
			must(t, "TX-8: CommitRejected", tx.CommitRejected(ctx, "c1", "k", rejected))
			txExpectUnchanged(t, conn, "p1", "TX-8", "other", base, "staged")
			prExpectStored(t, conn, "p1", "k", "TX-8", rejected)
			txExpectFinished(t, conn, tx, "CommitRejected", base)
			expectEqual(t, "TX-8/SEQ-2: seq of the next commit", int64(2), push(t, conn, "p1", tTodos, todo("next", txProject, "o")))
		}},
		// Catches: a driver that keeps a Tx's writes for Commit (to save
		// round trips) and, when a read of the Tx makes it write them
		// early (TX-3), has no way back for CommitRejected: writes sent
		// after the only savepoint it took, or without one.
		Case{Name: "TX-8/discards-writes-a-read-saw", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, tx, base, staged := txToReject(t, h)
			got, found, err := tx.GetRow(ctx, tTodos, staged.ID)
			must(t, "TX-3: GetRow of a row the Tx wrote", err)
			expectEqual(t, "TX-3: the Tx reads the row it wrote", true, found)
			expectEqual(t, "TX-3: the row the Tx wrote", staged, got)
			_, found, err = tx.GetPushResult(ctx, "c1", "other")
			must(t, "TX-3: GetPushResult of a result the Tx put", err)
			expectEqual(t, "TX-3: the Tx reads the result it put", true, found)
			must(t, "UpsertRow after the read", tx.UpsertRow(ctx, tTodos, todo("late", txProject, "o")))
			rejected := prFull(driver.PushRejected, 0)
			must(t, "TX-8: CommitRejected", tx.CommitRejected(ctx, "c1", "k", rejected))
			txExpectUnchanged(t, conn, "p1", "TX-8", "other", base, "staged", "late")
			prExpectStored(t, conn, "p1", "k", "TX-8", rejected)
			expectEqual(t, "TX-8/SEQ-2: seq of the next commit", int64(2), push(t, conn, "p1", tTodos, todo("next", txProject, "o")))
		}},
		// Catches: CommitRejected that overwrites an existing result.
		Case{Name: "TX-8/first-writer-wins", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			first := prPushWithResult(t, conn, "p1", "k", prApplied(0, "first"), todo("base", txProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			stage(t, tx, tTodos, todo("staged", txProject, "o"))
			must(t, "TX-8: CommitRejected for a key that holds a result", tx.CommitRejected(t.Context(), "c1", "k", prRejected()))
			prExpectStored(t, conn, "p1", "k", "TX-8 (existing result kept)", first)
			txExpectRow(t, conn, "p1", "staged", "TX-8", nil)
			txExpectLog(t, conn, "p1", "TX-8", 1, []int64{1})
		}},
		// Catches: a Tx that a constraint error aborts as a whole (e.g.
		// PostgreSQL without a savepoint), so CommitRejected cannot run.
		Case{Name: "TX-8/works-after-constraint-violation", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			owner := user("u1", "o", "taken@example.com")
			push(t, conn, "p1", tUsers, owner)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			fine := user("u3", "o", "free@example.com")
			must(t, "UpsertRow", tx.UpsertRow(ctx, tUsers, fine))
			expectCode(t, "SCH-10: UpsertRow colliding on a unique index",
				tx.UpsertRow(ctx, tUsers, user("u2", "o", "taken@example.com")), driver.CodeConstraintViolation)
			must(t, "TX-8: CommitRejected after a constraint violation", tx.CommitRejected(ctx, "c1", "k", prRejected()))
			prExpectStored(t, conn, "p1", "k", "TX-8", prRejected())
			rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o"}}, Limit: 100})
			must(t, "ScanRows", err)
			expectEqual(t, "TX-8: users after the rejected Tx", []driver.Row{owner}, rows)
			max, err := conn.MaxCommitSeq(ctx, "p1")
			must(t, "MaxCommitSeq", err)
			expectEqual(t, "TX-8: MaxCommitSeq", int64(1), max)
		}},
		// Catches: CommitRejected implemented as Rollback + a separate write,
		// letting a waiting Tx of the partition in between.
		Case{Name: "TX-8/no-tx-slips-in-between", Run: txRejectedNoSlip},
		// Catches: a driver that keeps a staged row's []byte or Values map
		// until Commit instead of what they held at the call, so a host
		// reusing its buffer after AppendCommit changes the row but not
		// its logged change.
		Case{Name: "TX-12/caller-reuses-its-values", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			buf := []byte("original")
			row := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
				Values: driver.Values{"id": "k1", "grp": "g", "s": "kept", "i": int64(1), "f": nil, "b": nil, "j": nil, "x": buf}}
			want := row
			want.Values = maps.Clone(row.Values)
			want.Values["x"] = []byte("original")
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			must(t, "UpsertRow", tx.UpsertRow(ctx, tKinds, row))
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k", ActorID: "a1", CreatedAtMs: 1700000000000,
				Changes: []driver.Change{upsertChange(tKinds, row)}})
			must(t, "AppendCommit", err)
			copy(buf, "CLOBBER!")
			row.Values["s"], row.Values["i"] = "changed", int64(2)
			commit(t, tx)
			got, found, err := conn.GetRow(ctx, "p1", tKinds, "k1")
			must(t, "GetRow", err)
			expectEqual(t, "TX-12: the row is found", true, found)
			expectEqual(t, "TX-12: the stored row holds the values of the call", want, got)
			cs, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tKinds,
				Filter: driver.ScopeFilter{"grp": {"g"}}, ThroughSeq: seqThroughAll, LimitChanges: 10})
			must(t, "ReadCommitWindow", err)
			if len(cs) != 1 || len(cs[0].Changes) != 1 {
				t.Fatalf("TX-12: the window holds %d commits, want 1 with 1 change: %+v", len(cs), cs)
			}
			expectEqual(t, "TX-12: the logged change holds the values of the call", want.Values, cs[0].Changes[0].Values)
		}},
	)
}

// txToReject opens a store whose p1 holds base (commit 1) and begins a Tx
// on p1 that retitles base, stages staged as commit 2 and puts the result
// "other": the writes the TX-8 cases have CommitRejected discard. The Tx
// is rolled back when t ends.
func txToReject(t T, h Harness) (conn driver.Conn, tx driver.Tx, base, staged driver.Row) {
	t.Helper()
	ctx := t.Context()
	conn = openStore(t, h)
	base = todo("base", txProject, "o")
	push(t, conn, "p1", tTodos, base)
	tx = begin(t, conn, "p1")
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, txRetitled(base, "changed")))
	staged = todo("staged", txProject, "o")
	expectEqual(t, "TX-8: seq of the staged commit", int64(2), stage(t, tx, tTodos, staged))
	must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "other", prApplied(2, "other")))
	return conn, tx, base, staged
}

// txCancelWaitingBegin: while Tx 1 holds p1, a second Begin waits with a
// context that is then cancelled. It must return (an error wrapping the
// context's end as unavailable, per Conn.Begin), and the partition must
// be usable after Tx 1 ends.
func txCancelWaitingBegin(t T, h Harness) {
	conn := openStore(t, h)
	tx1 := begin(t, conn, "p1")
	stage(t, tx1, tTodos, todo("one", txProject, "o"))
	cctx, cancel := context.WithCancel(t.Context())
	var wg gosync.WaitGroup
	var tx2 driver.Tx // set by the goroutine before wg.Done
	defer func() {
		cancel()
		_ = tx1.Rollback(context.Background())
		wg.Wait()
		if tx2 != nil {
			_ = tx2.Rollback(context.Background())
		}
	}()
	res := make(chan error, 1)
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(started)
		tx, err := conn.Begin(cctx, "p1")
		tx2 = tx
		res <- err
	}()
	<-started
	err, early := txRecv(res, txBlockProbe)
	cancel()
	if !early {
		var ok bool
		if err, ok = txRecv(res, txPrompt); !ok {
			t.Fatalf("TX-6: a waiting Begin did not return within %s after its context was cancelled", txPrompt)
		}
	}
	switch {
	case early && err == nil:
		t.Logf("TX-6: Begin returned while another Tx of the partition was open (optimistic engine)")
	case err == nil:
		t.Errorf("TX-6: a waiting Begin whose context was cancelled returned a Tx")
	default:
		expectCode(t, "TX-6: a waiting Begin whose context was cancelled (Conn.Begin: unavailable)", err, driver.CodeUnavailable)
	}
	wg.Wait()
	if tx2 != nil {
		_ = tx2.Rollback(context.Background())
	}
	must(t, "Rollback", tx1.Rollback(t.Context()))
	tx3 := txBeginWithin(t, conn, "p1", "TX-6")
	defer func() { _ = tx3.Rollback(context.Background()) }()
	stage(t, tx3, tTodos, todo("a", txProject, "o"))
	commit(t, tx3)
	txExpectRow(t, conn, "p1", "one", "TX-6 (rolled back)", nil)
	a := todo("a", txProject, "o")
	txExpectRow(t, conn, "p1", "a", "TX-6 (committed by the Tx begun after the cancelled wait)", &a)
}

// txUnreachable: Begin on an unreachable engine with a 2 s deadline must
// return an error within the deadline plus slack, never hang.
func txUnreachable(t T, h Harness) {
	if h.Unreachable == nil {
		t.Skipf("TX-7 needs Harness.Unreachable")
	}
	conn := h.Unreachable(t)
	const deadline, slack = 2 * time.Second, 3 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	res := make(chan error, 1)
	start := time.Now()
	go func() {
		tx, err := conn.Begin(ctx, "p1")
		if err == nil {
			_ = tx.Rollback(context.Background())
		}
		res <- err
	}()
	err, ok := txRecv(res, deadline+slack)
	if !ok {
		t.Fatalf("TX-7: Begin on an unreachable engine did not return within %s (deadline %s)", deadline+slack, deadline)
	}
	elapsed := time.Since(start)
	if err == nil {
		t.Fatalf("TX-7: Begin on an unreachable engine succeeded")
	}
	if driver.CodeOf(err) == "" {
		t.Errorf("ERR-1: Begin on an unreachable engine returned %v, not a *driver.Error", err)
	}
	t.Logf("TX-7: Begin failed after %s: %v", elapsed.Round(time.Millisecond), err)
}

// txRejectedNoSlip: while Tx 1 (stage, then CommitRejected for key k) is
// open, a push of the same key waits to begin. If the waiter was blocked
// by Tx 1, it must find the rejected result (CommitRejected kept the
// partition); an optimistic engine may let either side win, consistently:
// a CommitRejected that lost fails with write_conflict and stored nothing.
func txRejectedNoSlip(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	st := syncstore.OpenConn(conn)
	push(t, conn, "p1", tTodos, todo("base", txProject, "o"))
	for round := range 2 {
		key := fmt.Sprintf("k%d", round)
		base, err := conn.MaxCommitSeq(ctx, "p1")
		must(t, "MaxCommitSeq", err)
		tx := begin(t, conn, "p1")
		defer func() { _ = tx.Rollback(context.Background()) }()
		stage(t, tx, tTodos, todo("staged-"+key, txProject, "o"))
		began := make(chan struct{})
		var once gosync.Once
		var (
			wg       gosync.WaitGroup
			waited   driver.PushResult
			found    bool
			waitErr  error
			finished = make(chan struct{})
			started  = make(chan struct{})
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(finished)
			close(started)
			waitErr = st.RunInTx(ctx, "p1", func(ctx context.Context, wtx *syncstore.Tx) error {
				once.Do(func() { close(began) })
				var err error
				waited, found, err = prIdempotentPush(ctx, wtx.Driver(), key, "waiter")
				return err
			})
		}()
		<-started
		_, early := txRecv(began, txBlockProbe)
		if early {
			// The waiter runs alongside: let it get as far as it can (read
			// the key, stage its push, maybe commit) before the rejection.
			time.Sleep(txBlockProbe)
		}
		err = tx.CommitRejected(ctx, "c1", key, prRejected())
		_ = tx.Rollback(context.Background())
		if _, ok := txRecv(finished, txGenerous); !ok {
			t.Fatalf("TX-8: the waiting push did not finish within %s after CommitRejected", txGenerous)
		}
		wg.Wait()
		rejectErr := err
		if !early || driver.CodeOf(rejectErr) != driver.CodeWriteConflict {
			must(t, "TX-8: CommitRejected", rejectErr)
		}
		must(t, "TX-8: the waiting push", waitErr)
		stored, ok, err := conn.GetPushResult(ctx, "p1", "c1", key)
		must(t, "GetPushResult", err)
		if !ok {
			t.Fatalf("TX-8: no result stored for %s", key)
		}
		if rejectErr == nil && stored.Status != driver.PushRejected {
			// An optimistic engine must fail the rejection that lost the
			// race with write_conflict, so the caller replays the stored
			// result instead of answering "rejected" (TX-9, TX-10).
			t.Errorf("TX-8: CommitRejected returned nil, but the racing push's %s result is stored", stored.Status)
		}
		if rejectErr != nil && stored.Status == driver.PushRejected {
			t.Errorf("TX-8: CommitRejected failed with %v, but a rejected result is stored", rejectErr)
		}
		max, err := conn.MaxCommitSeq(ctx, "p1")
		must(t, "MaxCommitSeq", err)
		prExpectExact(t, "TX-8: the waiting push read the stored result", stored, waited)
		if !early || stored.Status == driver.PushRejected {
			prExpectExact(t, "TX-8: stored result (the waiting push must not slip in before it)", prRejected(), stored)
			expectEqual(t, "TX-8: the waiting push found the rejected result", true, found)
			expectEqual(t, "TX-8: MaxCommitSeq (no commit slipped in)", base, max)
		} else {
			t.Logf("TX-8: the waiting push ran alongside (optimistic engine) and won")
			expectEqual(t, "TX-8: the winning push's commit", base+1, stored.CommitSeq)
			expectEqual(t, "TX-8: MaxCommitSeq", base+1, max)
		}
		txExpectRow(t, conn, "p1", "staged-"+key, "TX-8 (staged row discarded)", nil)
	}
	max, err := conn.MaxCommitSeq(ctx, "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "TX-8: seq of the next commit", max+1, push(t, conn, "p1", tTodos, todo("next", txProject, "o")))
}
