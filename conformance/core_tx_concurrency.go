package conformance

import (
	"context"
	"fmt"
	"slices"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Rule group TX, serialization (docs/contract.md TX-1, TX-9). The cases judge
// outcomes, never the engine's name: an engine whose Begin waits must hand
// the partition over in order; an engine whose Begin returns at once
// (optimistic, D1) must fail the later Commit with write_conflict (TX-9).

const (
	// txBlockProbe is how long a case watches a Begin that a serializing
	// engine makes wait. A correct driver passes whatever it is; a
	// non-serializing one is caught because its Begin returns at once.
	txBlockProbe = 150 * time.Millisecond
	// txGenerous bounds waits that a correct driver ends in milliseconds.
	txGenerous = 10 * time.Second
	// txPrompt bounds how long a waiting Begin may take to notice that
	// its context was cancelled.
	txPrompt = 3 * time.Second
)

// txRecv receives from ch within d; ok is false on timeout.
func txRecv[V any](ch <-chan V, d time.Duration) (v V, ok bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-timer.C:
		return v, false
	}
}

// txHolder keeps the first Tx that calls hold open until release, so that
// the other writers of a race start while it is open: a driver that reads
// before it serializes (stale reads, lost updates) is then caught every
// time, not only when the scheduler happens to interleave the writers.
type txHolder struct {
	first, rel gosync.Once
	held       chan struct{}
	release    chan struct{}
}

func newTxHolder() *txHolder {
	return &txHolder{held: make(chan struct{}), release: make(chan struct{})}
}

// hold blocks the first caller until free; later callers return at once.
func (h *txHolder) hold() {
	me := false
	h.first.Do(func() { me = true; close(h.held) })
	if me {
		<-h.release
	}
}

// free releases the holder; safe to call more than once.
func (h *txHolder) free() { h.rel.Do(func() { close(h.release) }) }

// overlap waits until a Tx holds, gives the other writers txBlockProbe to
// start, then frees the holder. It reports false when no Tx ever held.
func (h *txHolder) overlap() bool {
	defer h.free()
	if _, ok := txRecv(h.held, txGenerous); !ok {
		return false
	}
	time.Sleep(txBlockProbe) // not a proof of anything: only lets the others start
	return true
}

// txStep is the outcome of one step of a Tx run in another goroutine.
type txStep struct {
	seq int64
	err error
}

// txCounterID is the id of the kinds row the counter cases increment.
const txCounterID = "counter"

// txCounterRow returns the counter row holding n (also its version).
func txCounterRow(n int64) driver.Row {
	return driver.Row{ID: txCounterID, ServerVersion: n, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": txCounterID, "grp": "g", "s": nil, "i": n, "f": nil, "b": nil, "j": nil, "x": nil}}
}

// txBump, inside tx, reads the counter (0 when absent), writes it + 1 and
// appends a commit recording the write under ClientCommitID id. It returns
// the commit's seq.
func txBump(ctx context.Context, tx driver.Tx, id string) (int64, error) {
	row, found, err := tx.GetRow(ctx, tKinds, txCounterID)
	if err != nil {
		return 0, err
	}
	var n int64
	if found {
		v, ok := row.Values["i"].(int64)
		if !ok {
			return 0, fmt.Errorf("counter value is %T, want int64", row.Values["i"])
		}
		n = v
	}
	next := txCounterRow(n + 1)
	if err := tx.UpsertRow(ctx, tKinds, next); err != nil {
		return 0, err
	}
	return tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: id, ActorID: "a1",
		CreatedAtMs: 1700000000000, Changes: []driver.Change{upsertChange(tKinds, next)}})
}

// txExpectCounter checks the counter's final value and the log's length.
func txExpectCounter(t T, conn driver.Conn, p, rule string, want int64) {
	t.Helper()
	row, found, err := conn.GetRow(t.Context(), p, tKinds, txCounterID)
	must(t, rule+": GetRow", err)
	if !found {
		t.Fatalf("%s: counter row not found", rule)
	}
	expectEqual(t, rule+": counter after concurrent increments (a lower value means lost updates)", want, row.Values["i"])
	max, err := conn.MaxCommitSeq(t.Context(), p)
	must(t, rule+": MaxCommitSeq", err)
	expectEqual(t, rule+": MaxCommitSeq after concurrent increments", want, max)
}

func init() {
	register(
		// Catches: two open Txs of one partition both allocating seq 1 and
		// both committing (Begin that does not serialize), or a second
		// Begin that never returns after the first Tx ends.
		Case{Name: "TX-1/same-partition-serialized", Run: txSamePartition},
		// Catches: lost updates — read-modify-write Txs of one partition
		// that overlap (e.g. BEGIN DEFERRED, READ COMMITTED without a
		// partition lock).
		Case{Name: "TX-1/read-modify-write-no-lost-update", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			st := syncstore.OpenConn(conn)
			const writers, each = 8, 3
			var wg gosync.WaitGroup
			holder := newTxHolder()
			defer holder.free()
			errs := make([]error, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range each {
						err := st.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
							_, err := txBump(ctx, tx.Driver(), fmt.Sprintf("w%d-%d", i, j))
							if err == nil {
								holder.hold()
							}
							return err
						})
						if err != nil {
							errs[i] = err
							return
						}
					}
				}()
			}
			if !holder.overlap() {
				t.Errorf("TX-1: no writer staged its increment within %s", txGenerous)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("TX-1: writer %d: %v", i, err)
				}
			}
			txExpectCounter(t, conn, "p1", "TX-1", writers*each)
		}},
		// Catches: a Tx on one partition that blocks another partition for
		// good (a lock never released), or, when the harness says the
		// engine runs partitions in parallel, one that waits at all.
		Case{Name: "TX-1/other-partition-independent", Run: txOtherPartition},

		// Catches: an optimistic engine that turns a lost race into another
		// error (constraint violation on the commit's primary key, internal)
		// or that commits both sides of a race.
		Case{Name: "TX-9/lost-race-is-write-conflict", Run: txLostRace},
		// Catches: a lost race on a unique index surfacing as
		// constraint_violation, or a losing push stored as a rejection.
		Case{Name: "TX-9/unique-claim-race", Run: txUniqueClaimRace},
	)
}

// txSamePartition: Tx 1 on p1 stages commit 1; Tx 2 on p1 is begun in
// another goroutine and stages a commit. Either Tx 2 waits for Tx 1 and
// gets seq 2, or (optimistic) it runs alongside, and then its Commit after
// Tx 1's must fail with write_conflict.
func txSamePartition(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	tx1 := begin(t, conn, "p1")
	expectEqual(t, "TX-1: seq of the first Tx's commit", int64(1), stage(t, tx1, tTodos, todo("first", txProject, "o")))

	gctx, cancel := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	defer func() { cancel(); _ = tx1.Rollback(context.Background()); wg.Wait() }()
	appended := make(chan txStep, 1)
	commitNow := make(chan struct{})
	committed := make(chan error, 1)
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(started)
		tx2, err := conn.Begin(gctx, "p1")
		if err != nil {
			appended <- txStep{err: fmt.Errorf("Begin: %w", err)}
			return
		}
		defer func() { _ = tx2.Rollback(context.Background()) }()
		seq, err := seqWriteOne(gctx, tx2, "second")
		appended <- txStep{seq: seq, err: err}
		if err != nil {
			return
		}
		select {
		case <-commitNow:
			committed <- tx2.Commit(gctx)
		case <-gctx.Done():
		}
	}()

	<-started
	step, overlapped := txRecv(appended, txBlockProbe)
	if overlapped {
		// Tx 2 began and allocated a seq while Tx 1 is open.
		t.Logf("TX-1: Begin returned while another Tx of the partition was open; holding the engine to optimistic serialization (TX-9)")
		must(t, "TX-1: second Tx", step.err)
		expectEqual(t, "TX-4: seq allocated by a Tx overlapping an uncommitted one", int64(1), step.seq)
		commit(t, tx1)
		close(commitNow)
		err, ok := txRecv(committed, txGenerous)
		if !ok {
			t.Fatalf("TX-1: Commit of the second Tx did not return")
		}
		expectCode(t, "TX-1/TX-9: Commit of a Tx that overlapped a committed Tx of the same partition", err, driver.CodeWriteConflict)
		seqExpectLog(t, conn, "p1", "TX-1", 1, nil)
		txExpectRow(t, conn, "p1", "second", "TX-9 (the losing Tx wrote nothing)", nil)
		return
	}
	commit(t, tx1)
	step, ok := txRecv(appended, txGenerous)
	if !ok {
		t.Fatalf("TX-1: the second Tx of the partition did not proceed within %s after the first committed", txGenerous)
	}
	must(t, "TX-1: second Tx", step.err)
	expectEqual(t, "TX-1: seq of the Tx that waited for the first", int64(2), step.seq)
	close(commitNow)
	err, ok := txRecv(committed, txGenerous)
	if !ok {
		t.Fatalf("TX-1: Commit of the second Tx did not return")
	}
	must(t, "TX-1: Commit of the second Tx", err)
	max, err := conn.MaxCommitSeq(ctx, "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "TX-1: MaxCommitSeq", int64(2), max)
}

// txOtherPartition: a Tx on p1 is open while a Tx on p2 is begun.
func txOtherPartition(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	tx1 := begin(t, conn, "p1")
	stage(t, tx1, tTodos, todo("one", txProject, "o"))
	gctx, cancel := context.WithCancel(ctx)
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
	begun := make(chan txStep, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tx, err := conn.Begin(gctx, "p2")
		tx2 = tx
		begun <- txStep{err: err}
	}()
	if h.ParallelPartitions {
		step, ok := txRecv(begun, 5*time.Second)
		if !ok {
			t.Fatalf("TX-1: Begin on p2 waited for the open Tx of p1 (Harness.ParallelPartitions is set)")
		}
		must(t, "TX-1: Begin on p2", step.err)
		expectEqual(t, "TX-1: seq of p2's first commit", int64(1), stage(t, tx2, tTodos, todo("two", txProject, "o")))
		commit(t, tx2)
		max, err := conn.MaxCommitSeq(ctx, "p2")
		must(t, "MaxCommitSeq", err)
		expectEqual(t, "TX-1: p2's commit is visible while p1's Tx is open", int64(1), max)
		commit(t, tx1)
	} else {
		commit(t, tx1)
		step, ok := txRecv(begun, txGenerous)
		if !ok {
			t.Fatalf("TX-1: Begin on p2 did not return within %s after p1's Tx ended", txGenerous)
		}
		must(t, "TX-1: Begin on p2", step.err)
		expectEqual(t, "TX-1: seq of p2's first commit", int64(1), stage(t, tx2, tTodos, todo("two", txProject, "o")))
		commit(t, tx2)
	}
	for _, p := range []string{"p1", "p2"} {
		max, err := conn.MaxCommitSeq(ctx, p)
		must(t, "MaxCommitSeq", err)
		expectEqual(t, "TX-1: MaxCommitSeq of "+p, int64(1), max)
	}
}

// txLostRace: writers increment the counter at driver level, retrying by
// hand so that every attempt's outcome is seen: each attempt must succeed
// or fail with write_conflict, and nothing else.
func txLostRace(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	const writers, each, maxAttempts = 6, 3, 200
	var (
		mu        gosync.Mutex
		bad       []string
		done      []seqCommitted
		conflicts int
		wg        gosync.WaitGroup
		holder    = newTxHolder()
	)
	defer holder.free()
	attempt := func(id string) (int64, error) {
		tx, err := conn.Begin(ctx, "p1")
		if err != nil {
			return 0, err
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		seq, err := txBump(ctx, tx, id)
		if err == nil {
			err = tx.PutPushResult(ctx, "c1", id, prApplied(seq, id))
		}
		if err == nil {
			holder.hold()
			err = tx.Commit(ctx)
		}
		return seq, err
	}
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				id := fmt.Sprintf("w%d-%d", i, j)
				for n := 1; ; n++ {
					seq, err := attempt(id)
					mu.Lock()
					switch {
					case err == nil:
						done = append(done, seqCommitted{ID: id, Seq: seq})
					case driver.CodeOf(err) == driver.CodeWriteConflict && n < maxAttempts:
						conflicts++
					case driver.CodeOf(err) == driver.CodeWriteConflict:
						bad = append(bad, fmt.Sprintf("%s: still write_conflict after %d attempts (livelock?)", id, n))
					default:
						bad = append(bad, fmt.Sprintf("%s attempt %d: %v (code %q)", id, n, err, driver.CodeOf(err)))
					}
					mu.Unlock()
					if err == nil || driver.CodeOf(err) != driver.CodeWriteConflict || n >= maxAttempts {
						break
					}
				}
			}
		}()
	}
	if !holder.overlap() {
		t.Errorf("TX-9: no writer staged its increment within %s", txGenerous)
	}
	wg.Wait()
	for _, b := range bad {
		t.Errorf("TX-9: an attempt ended neither in success nor in a retried write_conflict: %s", b)
	}
	t.Logf("TX-9: %d commits, %d write conflicts retried", len(done), conflicts)
	txExpectCounter(t, conn, "p1", "TX-9", int64(len(done)))
	got := make([]int64, 0, len(done))
	for _, c := range done {
		got = append(got, c.Seq)
		prExpectStored(t, conn, "p1", c.ID, "TX-9 (result of a committed attempt)", prApplied(c.Seq, c.ID))
	}
	slices.Sort(got)
	expectEqual(t, "TX-9: seqs of the committed attempts", seqRange(1, int64(writers*each)), got)
}

// txUniqueClaimRace: writers race to claim one email: each, in a Tx, scans
// org o and, when nobody holds the email, inserts its own user with it and
// pushes. Exactly one claim lands; no attempt fails with anything but
// write_conflict; no push result other than the winner's is stored.
func txUniqueClaimRace(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	st := syncstore.OpenConn(conn)
	const writers, email = 6, "shared@example.com"
	var (
		mu     gosync.Mutex
		opErrs []error
		wg     gosync.WaitGroup
		errs   = make([]error, writers)
		holder = newTxHolder()
	)
	defer holder.free()
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("u%d", i)
			errs[i] = st.RunInTx(ctx, "p1", func(ctx context.Context, stx *syncstore.Tx) error {
				claimed, err := txClaimEmail(ctx, stx.Driver(), id, email)
				if claimed {
					holder.hold()
				}
				if err != nil {
					mu.Lock()
					opErrs = append(opErrs, fmt.Errorf("claim %s: %w", id, err))
					mu.Unlock()
				}
				return err
			})
		}()
	}
	if !holder.overlap() {
		t.Errorf("TX-9: no writer staged a claim within %s", txGenerous)
	}
	wg.Wait()
	for i, err := range errs {
		if c := driver.CodeOf(err); err != nil && c != driver.CodeWriteConflict {
			t.Errorf("TX-9: claim u%d ended with %v (code %q); want success or write_conflict", i, err, c)
		}
	}
	for _, err := range opErrs {
		if c := driver.CodeOf(err); c != driver.CodeWriteConflict {
			t.Errorf("TX-9: an operation of a racing claim failed with other than write_conflict: %v (code %q)", err, c)
		}
	}
	rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o"}}, Limit: 100})
	must(t, "ScanRows", err)
	if len(rows) != 1 {
		t.Fatalf("TX-9: users after the claim race: got %v, want exactly one", ids(rows))
	}
	winner := rows[0].ID
	max, err := conn.MaxCommitSeq(ctx, "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "TX-9: commits after the claim race", int64(1), max)
	for i := range writers {
		key := fmt.Sprintf("u%d", i)
		if key == winner {
			prExpectStored(t, conn, "p1", key, "TX-9 (winner)", prApplied(1, key))
		} else {
			prExpectAbsent(t, conn, "p1", key, "TX-9 (a lost race must not be stored as an outcome)")
		}
	}
}

// txClaimEmail, inside tx: when no user of org o has email, inserts user id
// with it, appends a commit and stores an applied result under (c1, id);
// claimed reports that all of this was staged.
func txClaimEmail(ctx context.Context, tx driver.Tx, id, email string) (claimed bool, err error) {
	rows, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o"}}, Limit: 100})
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if r.Values["email"] == email {
			return false, nil
		}
	}
	u := user(id, "o", email)
	if err := tx.UpsertRow(ctx, tUsers, u); err != nil {
		return false, err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: id, ActorID: "a1",
		CreatedAtMs: 1700000000000, Changes: []driver.Change{upsertChange(tUsers, u)}})
	if err != nil {
		return false, err
	}
	return true, tx.PutPushResult(ctx, "c1", id, prApplied(seq, id))
}
