package conformance

import (
	"context"
	"fmt"
	"slices"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Rule group SEQ: the dense per-partition commit sequence (docs/contract.md
// SEQ-1…SEQ-6). Every commit these cases make records one upsert of a todo
// in project seqProject, so one window read returns the whole log.

// seqProject is the project scope every SEQ commit records.
const seqProject = "seq"

// seqThroughAll is a window's ThroughSeq beyond any commit a case makes.
const seqThroughAll int64 = 1 << 62

// seqWindow returns the retained commits of partition p with seq ≤ through
// that touch todos of project seqProject, oldest first.
func seqWindow(ctx context.Context, conn driver.Conn, p string, through int64) ([]driver.Commit, error) {
	return conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos,
		Filter: driver.ScopeFilter{"project": {seqProject}}, AfterSeq: 0, ThroughSeq: through, LimitChanges: 10000})
}

// seqRange returns [from, from+1, …, to].
func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// seqExpectLog checks that MaxCommitSeq is max and that the window read of
// the whole retained log (from the horizon: below it a read is
// cursor_expired, HZ-4) returns exactly the seqs want.
func seqExpectLog(t T, conn driver.Conn, p, rule string, max int64, want []int64) {
	t.Helper()
	got, err := conn.MaxCommitSeq(t.Context(), p)
	must(t, rule+": MaxCommitSeq", err)
	expectEqual(t, rule+": MaxCommitSeq", max, got)
	hz, err := conn.HorizonSeq(t.Context(), p)
	must(t, rule+": HorizonSeq", err)
	cs, err := conn.ReadCommitWindow(t.Context(), p, driver.WindowQuery{Table: tTodos,
		Filter: driver.ScopeFilter{"project": {seqProject}}, AfterSeq: hz, ThroughSeq: seqThroughAll, LimitChanges: 10000})
	must(t, rule+": ReadCommitWindow", err)
	expectEqual(t, rule+": committed seqs (window read)", want, seqs(cs))
}

// seqWriteOne, inside tx, upserts the todo id (project seqProject) and
// appends one commit recording it with ClientCommitID id; it returns the
// commit's seq.
func seqWriteOne(ctx context.Context, tx driver.Tx, id string) (int64, error) {
	row := todo(id, seqProject, "o")
	if err := tx.UpsertRow(ctx, tTodos, row); err != nil {
		return 0, err
	}
	return tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: id, ActorID: "a1",
		CreatedAtMs: 1700000000000, Changes: []driver.Change{upsertChange(tTodos, row)}})
}

// seqCommitted is one commit a writer made: its ClientCommitID and seq.
type seqCommitted struct {
	ID  string
	Seq int64
}

// seqRunWriters runs writers goroutines, each committing each times on p
// through RunInTx (retrying on write_conflict, TX-9); commit j of writer i
// has id "<prefix>-<i>-<j>". It waits for them and returns what was
// committed (in no particular order) and every error RunInTx returned.
func seqRunWriters(ctx context.Context, st *syncstore.Store, p, prefix string, writers, each int) ([]seqCommitted, []error) {
	var (
		mu   gosync.Mutex
		done []seqCommitted
		errs []error
		wg   gosync.WaitGroup
	)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				id := fmt.Sprintf("%s-%d-%d", prefix, i, j)
				var seq int64
				err := st.RunInTx(ctx, p, func(ctx context.Context, tx *syncstore.Tx) error {
					s, err := seqWriteOne(ctx, tx.Driver(), id)
					seq = s
					return err
				})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("writer %d commit %d: %w", i, j, err))
				} else {
					done = append(done, seqCommitted{ID: id, Seq: seq})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return done, errs
}

// seqExpectWriters checks the outcome of seqRunWriters: no error, the seqs
// the writers got are exactly 1…n, and the log holds each commit under the
// seq its writer was told (SEQ-4).
func seqExpectWriters(t T, conn driver.Conn, p string, done []seqCommitted, errs []error, n int) {
	t.Helper()
	for _, err := range errs {
		t.Errorf("SEQ-4: concurrent writer failed (only write_conflict may fail an attempt, and RunInTx retries it): %v", err)
	}
	got := make([]int64, 0, len(done))
	bySeq := map[int64]string{}
	for _, c := range done {
		got = append(got, c.Seq)
		bySeq[c.Seq] = c.ID
	}
	slices.Sort(got)
	expectEqual(t, "SEQ-4: seqs returned to the concurrent writers", seqRange(1, int64(n)), got)
	seqExpectLog(t, conn, p, "SEQ-4", int64(n), seqRange(1, int64(n)))
	cs, err := seqWindow(t.Context(), conn, p, seqThroughAll)
	must(t, "SEQ-4: ReadCommitWindow", err)
	for _, c := range cs {
		if want := bySeq[c.Seq]; c.ClientCommitID != want {
			t.Errorf("SEQ-4: commit %d holds ClientCommitID %q, but AppendCommit returned %d to %q", c.Seq, c.ClientCommitID, c.Seq, want)
		}
	}
}

// seqObserve runs writers×each commits on p in the background and calls
// observe repeatedly until they are done, then once more. observe returns
// a non-empty description of a violation, which ends the observation. It
// returns the violations found (at most one per observer) and the number
// of observations made.
func seqObserve(t T, conn driver.Conn, p string, writers, each, observers int,
	observe func(ctx context.Context) string) (violations []string, polls int64) {
	t.Helper()
	ctx := t.Context()
	st := syncstore.OpenConn(conn)
	var finished atomic.Bool
	var (
		mu    gosync.Mutex
		count atomic.Int64
		wg    gosync.WaitGroup
	)
	for range observers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				last := finished.Load()
				count.Add(1)
				if v := observe(ctx); v != "" {
					mu.Lock()
					violations = append(violations, v)
					mu.Unlock()
					return
				}
				if last {
					return
				}
			}
		}()
	}
	done, errs := seqRunWriters(ctx, st, p, "w", writers, each)
	finished.Store(true)
	wg.Wait()
	seqExpectWriters(t, conn, p, done, errs, writers*each)
	return violations, count.Load()
}

func init() {
	register(
		// Catches: a first commit numbered 0 or from a global counter; a
		// next seq that is not max+1.
		Case{Name: "SEQ-1/first-is-one-then-max-plus-one", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			seqExpectLog(t, conn, "p1", "SEQ-1 (empty partition)", 0, nil)
			for want := int64(1); want <= 3; want++ {
				got := push(t, conn, "p1", tTodos, todo(fmt.Sprintf("r%d", want), seqProject, "o"))
				expectEqual(t, fmt.Sprintf("SEQ-1: seq of commit #%d", want), want, got)
			}
			seqExpectLog(t, conn, "p1", "SEQ-1", 3, []int64{1, 2, 3})
		}},
		// Catches: one sequence shared by every partition.
		Case{Name: "SEQ-1/per-partition", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			for range 3 {
				push(t, conn, "p1", tTodos, todo(fmt.Sprintf("a%d", nextID()), seqProject, "o"))
			}
			expectEqual(t, "SEQ-1: first commit of a second partition", int64(1),
				push(t, conn, "p2", tTodos, todo("b1", seqProject, "o")))
			expectEqual(t, "SEQ-1: next commit of the first partition", int64(4),
				push(t, conn, "p1", tTodos, todo("a-next", seqProject, "o")))
			expectEqual(t, "SEQ-1: next commit of the second partition", int64(2),
				push(t, conn, "p2", tTodos, todo("b2", seqProject, "o")))
			seqExpectLog(t, conn, "p1", "SEQ-1 (p1)", 4, []int64{1, 2, 3, 4})
			seqExpectLog(t, conn, "p2", "SEQ-1 (p2)", 2, []int64{1, 2})
		}},

		// Catches: a rolled-back AppendCommit that still advances the
		// partition's counter, leaving a gap.
		Case{Name: "SEQ-2/rollback-consumes-nothing", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("r1", seqProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			expectEqual(t, "SEQ-2: seq inside the Tx that will roll back", int64(2), stage(t, tx, tTodos, todo("r2", seqProject, "o")))
			expectEqual(t, "SEQ-2: second seq inside the Tx that will roll back", int64(3), stage(t, tx, tTodos, todo("r3", seqProject, "o")))
			must(t, "Rollback", tx.Rollback(t.Context()))
			seqExpectLog(t, conn, "p1", "SEQ-2 (after rollback)", 1, []int64{1})
			expectEqual(t, "SEQ-2: seq of the next commit after a rollback", int64(2),
				push(t, conn, "p1", tTodos, todo("r4", seqProject, "o")))
			seqExpectLog(t, conn, "p1", "SEQ-2", 2, []int64{1, 2})
		}},
		// Catches: CommitRejected that keeps the discarded commit's number.
		Case{Name: "SEQ-2/rejected-consumes-nothing", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("r1", seqProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			expectEqual(t, "SEQ-2: seq inside the Tx that will be rejected", int64(2), stage(t, tx, tTodos, todo("r2", seqProject, "o")))
			must(t, "CommitRejected", tx.CommitRejected(t.Context(), "c1", "rejected-1", prRejected()))
			seqExpectLog(t, conn, "p1", "SEQ-2 (after CommitRejected)", 1, []int64{1})
			expectEqual(t, "SEQ-2: seq of the next commit after a rejection", int64(2),
				push(t, conn, "p1", tTodos, todo("r3", seqProject, "o")))
			seqExpectLog(t, conn, "p1", "SEQ-2", 2, []int64{1, 2})
		}},

		// Catches: a second AppendCommit in one Tx that re-reads the stored
		// max (getting the same number twice) or skips a number.
		Case{Name: "SEQ-3/commits-in-one-tx-are-consecutive", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("r0", seqProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			var got []int64
			for _, id := range []string{"x", "y", "z"} {
				s, err := seqWriteOne(ctx, tx, id)
				must(t, "SEQ-3: AppendCommit", err)
				got = append(got, s)
			}
			expectEqual(t, "SEQ-3: seqs of three commits in one Tx", []int64{2, 3, 4}, got)
			commit(t, tx)
			seqExpectLog(t, conn, "p1", "SEQ-3", 4, []int64{1, 2, 3, 4})
			cs, err := seqWindow(ctx, conn, "p1", seqThroughAll)
			must(t, "ReadCommitWindow", err)
			var gotIDs []string
			for _, c := range cs[1:] {
				gotIDs = append(gotIDs, c.ClientCommitID)
				for _, ch := range c.Changes {
					if ch.RowID != c.ClientCommitID {
						t.Errorf("SEQ-3: commit %d carries the change of row %q, want row %q", c.Seq, ch.RowID, c.ClientCommitID)
					}
				}
			}
			expectEqual(t, "SEQ-3: commits 2…4 in append order", []string{"x", "y", "z"}, gotIDs)
		}},

		// Catches: seq allocation outside the partition's serialization
		// (duplicates or gaps under concurrency).
		Case{Name: "SEQ-4/16-concurrent-writers", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			done, errs := seqRunWriters(t.Context(), syncstore.OpenConn(conn), "p1", "w", 16, 1)
			seqExpectWriters(t, conn, "p1", done, errs, 16)
		}},
		// Catches: the same, with writers that commit repeatedly.
		Case{Name: "SEQ-4/8-writers-5-commits-each", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			done, errs := seqRunWriters(t.Context(), syncstore.OpenConn(conn), "p1", "w", 8, 5)
			seqExpectWriters(t, conn, "p1", done, errs, 40)
		}},

		// Catches: a max seq published before the commit's rows of the
		// log (e.g. a counter updated outside the commit's transaction).
		Case{Name: "SEQ-5/max-never-ahead-of-readable", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			violations, polls := seqObserve(t, conn, "p1", 4, 6, 1, func(ctx context.Context) string {
				m, err := conn.MaxCommitSeq(ctx, "p1")
				if err != nil {
					return fmt.Sprintf("MaxCommitSeq: %v", err)
				}
				cs, err := seqWindow(ctx, conn, "p1", m)
				if err != nil {
					return fmt.Sprintf("ReadCommitWindow: %v", err)
				}
				if d := diff(seqRange(1, m), seqs(cs)); d != "" {
					return fmt.Sprintf("MaxCommitSeq was %d but a window read through it returned other commits %s", m, d)
				}
				return ""
			})
			for _, v := range violations {
				t.Errorf("SEQ-5: %s", v)
			}
			t.Logf("SEQ-5: %d observations during the writes", polls)
		}},
		// Catches: MaxCommitSeq computed as MAX(seq) over retained commits
		// (drops to 0 after pruning, and numbers are then reused).
		Case{Name: "SEQ-5/pruning-never-lowers-max-nor-reuses", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			for i := range 3 {
				push(t, conn, "p1", tTodos, todo(fmt.Sprintf("r%d", i), seqProject, "o"))
			}
			must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 3))
			n, err := conn.PruneCommitsThrough(ctx, "p1", 3)
			must(t, "PruneCommitsThrough", err)
			expectEqual(t, "SEQ-5: commits pruned", int64(3), n)
			seqExpectLog(t, conn, "p1", "SEQ-5 (everything pruned)", 3, nil)
			expectEqual(t, "SEQ-5: seq of the first commit after pruning everything", int64(4),
				push(t, conn, "p1", tTodos, todo("after", seqProject, "o")))
			seqExpectLog(t, conn, "p1", "SEQ-5 (after pruning and a new commit)", 4, []int64{4})
			if h.Reopen == nil {
				t.Logf("SEQ-5: the check through a second Conn needs Harness.Reopen; skipped")
				return
			}
			second := h.Reopen(t, conn)
			must(t, "EnsureSchema on the second Conn", second.EnsureSchema(ctx, TestSchema()))
			seqExpectLog(t, second, "p1", "SEQ-5 (second Conn)", 4, []int64{4})
		}},

		// Catches: commits made visible out of order (a reader sees n+1
		// while n is still uncommitted: a gap in the log it reads).
		Case{Name: "SEQ-6/readers-see-a-dense-prefix", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			violations, polls := seqObserve(t, conn, "p1", 4, 6, 2, func(ctx context.Context) string {
				cs, err := seqWindow(ctx, conn, "p1", seqThroughAll)
				if err != nil {
					return fmt.Sprintf("ReadCommitWindow: %v", err)
				}
				got := seqs(cs)
				if d := diff(seqRange(1, int64(len(got))), got); d != "" {
					return fmt.Sprintf("a window read returned a log with a gap %s", d)
				}
				m, err := conn.MaxCommitSeq(ctx, "p1")
				if err != nil {
					return fmt.Sprintf("MaxCommitSeq: %v", err)
				}
				if m < int64(len(got)) {
					return fmt.Sprintf("MaxCommitSeq %d, read after a window read that returned commit %d", m, len(got))
				}
				return ""
			})
			for _, v := range violations {
				t.Errorf("SEQ-6: %s", v)
			}
			t.Logf("SEQ-6: %d observations during the writes", polls)
		}},
	)
}
