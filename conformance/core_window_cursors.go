package conformance

import (
	"fmt"
	"math"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Cases for HZ-4 (a window read below the horizon is cursor_expired,
// decided in the snapshot of the read) and WIN-8 (a window read beyond
// the head is cursor_ahead; afterSeq above throughSeq is invalid). A
// cursor is never served silently: either the read returns everything
// after it, or it fails with a code that says why not.

func init() {
	register(
		Case{Name: "WIN-8/beyond-the-head-is-cursor-ahead", Run: curBeyondHead},
		Case{Name: "WIN-8/through-beyond-the-head-reads-to-the-head", Run: curThroughBeyondHead},
		Case{Name: "WIN-8/after-above-through-invalid-argument", Run: curAfterAboveThrough},
		Case{Name: "HZ-4/below-the-horizon-is-cursor-expired", Run: curBelowHorizon},
		Case{Name: "HZ-4/at-the-horizon-is-served", Run: curAtHorizon},
		Case{Name: "HZ-4/pruner-racing-readers-never-leaves-a-gap", Run: curPrunerRacingReaders},
	)
}

// curFilters are the filter shapes every cursor check reads with: one
// value, a value list, two keys (the other key checked per candidate), and
// a key with an empty list, which matches nothing but is still a read of
// the window, so its cursor is checked like any other's.
var curFilters = []driver.ScopeFilter{
	{"project": {"p7"}},
	{"project": {"p8", "p7"}},
	{"owner": {"u1", "u2"}, "project": {"p7", "p8", "p9"}},
	{"project": {}},
}

// curLog writes n commits on p: commit i (1-based) upserts todo "<p>-i" in
// project p7 (p8 when i%3 == 0) for owner u1 (u2 when i is even); it
// returns the log.
func curLog(t T, conn driver.Conn, p string, n int) []driver.Commit {
	t.Helper()
	var log []driver.Commit
	for i := 1; i <= n; i++ {
		project, owner := "p7", "u1"
		if i%3 == 0 {
			project = "p8"
		}
		if i%2 == 0 {
			owner = "u2"
		}
		log = append(log, winWrite(t, conn, p, winMeta(int64(1000+i)), winUp(tTodos, todo(fmt.Sprintf("%s-%d", p, i), project, owner))))
	}
	return log
}

// curExpect reads q and checks that it fails with code and returns no
// commit, with a typed error that names no partition (ERR-1, V-10).
func curExpect(t T, conn driver.Conn, p string, q driver.WindowQuery, code driver.Code, rule, why string) {
	t.Helper()
	got, err := conn.ReadCommitWindow(t.Context(), p, q)
	what := fmt.Sprintf("%s: ReadCommitWindow(%v, (%d, %d], limit %d) %s", rule, winFmt(q.Filter), q.AfterSeq, q.ThroughSeq,
		q.LimitChanges, why)
	if err == nil {
		t.Errorf("%s = seqs %v, nil; want error %s", what, seqs(got), code)
		return
	}
	errExpectTyped(t, what, err, code, p)
	if len(got) != 0 {
		t.Errorf("%s returned commits %v with its error; want none", what, seqs(got))
	}
}

// curServed reads q and checks the result against the whole log written
// (winModel): a served cursor misses nothing, pruned or not.
func curServed(t T, conn driver.Conn, p string, log []driver.Commit, q driver.WindowQuery, rule, why string) []driver.Commit {
	t.Helper()
	got, err := conn.ReadCommitWindow(t.Context(), p, q)
	what := fmt.Sprintf("%s: ReadCommitWindow(%v, (%d, %d], limit %d) %s", rule, winFmt(q.Filter), q.AfterSeq, q.ThroughSeq,
		q.LimitChanges, why)
	if err != nil {
		t.Errorf("%s: %v; want it served", what, err)
		return nil
	}
	expectEqual(t, what, winModel(log, q), got)
	return got
}

// curQ is a window query on todos.
func curQ(f driver.ScopeFilter, after, through int64, limit int) driver.WindowQuery {
	return driver.WindowQuery{Table: tTodos, Filter: f, AfterSeq: after, ThroughSeq: through, LimitChanges: limit}
}

// Catches: a cursor beyond the partition's head (a restored backup, a
// replica behind, a client of another store) answered with an empty page,
// so the client believes it is up to date; a head taken from another
// partition, or lowered by pruning (SEQ-5).
func curBeyondHead(t T, h Harness) {
	conn := openStore(t, h)
	log := curLog(t, conn, "p1", 3)
	curLog(t, conn, "p2", 9)
	const rule = "WIN-8"
	for _, f := range curFilters {
		for _, after := range []int64{4, 5, 9, 99, math.MaxInt64 - 1} {
			for _, through := range []int64{after, after + 1, math.MaxInt64} {
				curExpect(t, conn, "p1", curQ(f, after, through, winAll), driver.CodeCursorAhead, rule, "with head 3")
			}
		}
		curServed(t, conn, "p1", log, curQ(f, 3, 3, winAll), rule, "at the head")
		curServed(t, conn, "p1", log, curQ(f, 3, math.MaxInt64, winAll), rule, "at the head")
		curServed(t, conn, "p1", log, curQ(f, 2, 1<<40, 1), rule, "one below the head")
		curExpect(t, conn, "unknown", curQ(f, 1, 1<<40, winAll), driver.CodeCursorAhead, rule, "on an unknown partition (head 0)")
		curServed(t, conn, "unknown", nil, curQ(f, 0, 1<<40, winAll), rule, "from 0 on an unknown partition")
	}
	// Pruning never lowers the head: a cursor at the head stays served.
	must(t, "SetHorizonSeq(3)", conn.SetHorizonSeq(t.Context(), "p1", 3))
	_, err := conn.PruneCommitsThrough(t.Context(), "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)
	for _, f := range curFilters {
		curServed(t, conn, "p1", log, curQ(f, 3, 1<<40, winAll), rule, "at the head after pruning every commit")
		curExpect(t, conn, "p1", curQ(f, 4, 1<<40, winAll), driver.CodeCursorAhead, rule, "after pruning every commit")
	}
}

// Catches: a throughSeq beyond the head refused or clamped wrongly: a
// window may always be read "through the newest" with a large bound.
func curThroughBeyondHead(t T, h Harness) {
	conn := openStore(t, h)
	log := curLog(t, conn, "p1", 6)
	const rule = "WIN-8"
	for _, f := range curFilters {
		for _, through := range []int64{7, 1 << 40, math.MaxInt64} {
			for _, after := range []int64{0, 2, 5, 6} {
				curServed(t, conn, "p1", log, curQ(f, after, through, winAll), rule, "through beyond the head 6")
			}
			curServed(t, conn, "p1", log, curQ(f, 0, through, 2), rule, "through beyond the head 6")
		}
	}
}

// Catches: afterSeq above throughSeq passed to the driver (or answered
// with an empty page) instead of an invalid_argument that cites WIN-8;
// cursor_ahead changed on its way through the Store, or skipped for a
// filter the Store answers itself.
func curAfterAboveThrough(t T, h Harness) {
	conn, s := vdStore(t, h)
	ctx := t.Context()
	curLog(t, conn, "p1", 4)
	for _, f := range curFilters {
		for _, c := range []struct{ after, through int64 }{{1, 0}, {4, 3}, {5, 4}, {math.MaxInt64, 1}} {
			got, err := s.ReadCommitWindow(ctx, "p1", curQ(f, c.after, c.through, winAll))
			what := fmt.Sprintf("WIN-8: Store.ReadCommitWindow(%v, after %d, through %d)", winFmt(f), c.after, c.through)
			errExpectTyped(t, what, err, driver.CodeInvalidArgument, "p1")
			if err != nil && !strings.Contains(err.Error(), "WIN-8") {
				t.Errorf("%s: message %q does not cite WIN-8", what, err.Error())
			}
			if len(got) != 0 {
				t.Errorf("%s returned commits %v with its error", what, seqs(got))
			}
		}
		// The Store passes the driver's cursor errors on unchanged, for
		// every filter, an empty value list included.
		_, err := s.ReadCommitWindow(ctx, "p1", curQ(f, 5, 1<<40, winAll))
		errExpectTyped(t, fmt.Sprintf("WIN-8: Store.ReadCommitWindow(%v) beyond the head", winFmt(f)), err, driver.CodeCursorAhead, "p1")
		got, err := s.ReadCommitWindow(ctx, "p1", curQ(f, 4, 4, winAll))
		must(t, "WIN-8: Store.ReadCommitWindow at the head, afterSeq = throughSeq", err)
		expectEqual(t, "WIN-8: Store.ReadCommitWindow at the head", []driver.Commit(nil), got)
	}
}

// Catches: a cursor below the horizon served with the commits that are
// still there (a client at cursor 0 silently misses the pruned ones
// forever); the check made only once a prune removed something, only for
// some filter shapes, only when the window holds a commit, against
// another partition's horizon, or skipped by the Store.
func curBelowHorizon(t T, h Harness) {
	conn, s := vdStore(t, h)
	ctx := t.Context()
	log := curLog(t, conn, "p1", 8)
	other := curLog(t, conn, "p2", 8)
	const rule = "HZ-4"
	check := func(horizon int64, why string) {
		t.Helper()
		for _, f := range curFilters {
			for after := int64(0); after < horizon; after++ {
				for _, through := range []int64{after, horizon - 1, horizon, 8, 1 << 40} {
					if through < after {
						continue
					}
					curExpect(t, conn, "p1", curQ(f, after, through, winAll), driver.CodeCursorExpired, rule,
						fmt.Sprintf("with horizon %d %s", horizon, why))
				}
				curExpect(t, conn, "p1", curQ(f, after, 1<<40, 1), driver.CodeCursorExpired, rule,
					fmt.Sprintf("with horizon %d %s", horizon, why))
			}
			// P-1: p2's horizon is 0; its cursors are all served.
			curServed(t, conn, "p2", other, curQ(f, 0, 1<<40, winAll), rule, "on another partition")
		}
	}
	// Raised but nothing pruned yet: the horizon alone decides.
	must(t, "SetHorizonSeq(3)", conn.SetHorizonSeq(ctx, "p1", 3))
	check(3, "before any prune")
	_, err := conn.PruneCommitsThrough(ctx, "p1", 2)
	must(t, "PruneCommitsThrough(2)", err)
	check(3, "pruned through 2")
	_, err = conn.PruneCommitsThrough(ctx, "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)
	check(3, "pruned through 3")
	// Cursor 4, pruned through 5: 5 is gone, so 6…8 alone would be a gap.
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(ctx, "p1", 5))
	_, err = conn.PruneCommitsThrough(ctx, "p1", 5)
	must(t, "PruneCommitsThrough(5)", err)
	check(5, "pruned through 5")
	for _, f := range curFilters {
		curServed(t, conn, "p1", log, curQ(f, 5, 1<<40, winAll), rule, "at the horizon 5")
		// Through the Store, which passes the driver's error on unchanged.
		got, err := s.ReadCommitWindow(ctx, "p1", curQ(f, 4, 1<<40, winAll))
		errExpectTyped(t, fmt.Sprintf("HZ-4: Store.ReadCommitWindow(%v) below the horizon", winFmt(f)), err, driver.CodeCursorExpired, "p1")
		if len(got) != 0 {
			t.Errorf("HZ-4: Store.ReadCommitWindow(%v) below the horizon returned commits %v", winFmt(f), seqs(got))
		}
	}
}

// Catches: afterSeq equal to the horizon refused (`afterSeq <= horizon`):
// the commits after the horizon are all retained, so that cursor is whole.
func curAtHorizon(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	log := curLog(t, conn, "p1", 8)
	const rule = "HZ-4"
	for _, step := range []struct{ horizon, prune int64 }{{0, 0}, {2, 0}, {2, 2}, {6, 4}, {8, 8}} {
		must(t, fmt.Sprintf("SetHorizonSeq(%d)", step.horizon), conn.SetHorizonSeq(ctx, "p1", step.horizon))
		_, err := conn.PruneCommitsThrough(ctx, "p1", step.prune)
		must(t, fmt.Sprintf("PruneCommitsThrough(%d)", step.prune), err)
		why := fmt.Sprintf("with horizon %d, pruned through %d", step.horizon, step.prune)
		for _, f := range curFilters {
			for after := step.horizon; after <= 8; after++ {
				curServed(t, conn, "p1", log, curQ(f, after, 1<<40, winAll), rule, why)
				curServed(t, conn, "p1", log, curQ(f, after, after, winAll), rule, why)
				curServed(t, conn, "p1", log, curQ(f, after, 1<<40, 1), rule, why)
			}
		}
	}
}

// curRaceCommits, curRaceStep and curRaceHorizon size the race: the
// pruner raises the horizon by curRaceStep and prunes through it until it
// reaches curRaceHorizon, while readers page the log from old cursors.
const (
	curRaceCommits = 160
	curRaceStep    = 4
	curRaceHorizon = 120
	curRaceReaders = 4
	curRaceMinRead = 24 // every reader makes at least this many reads
)

// Catches: the horizon read apart from the commits (a statement, request
// or round of its own), so a prune that lands in between lets pruned
// commits go missing without an error; a multi-round read whose later
// rounds see a prune its first round did not; a cursor_expired that is
// not true (the horizon never passed the cursor). Every read must return
// exactly what the whole log holds after its cursor (winModel), or
// cursor_expired while the horizon is above the cursor.
func curPrunerRacingReaders(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	log := curLog(t, conn, "p1", curRaceCommits)
	filters := []driver.ScopeFilter{
		{"project": {"p7"}},
		{"project": {"p7", "p8"}},
		{"owner": {"u1", "u2"}, "project": {"p7"}},
		{"owner": {"u2", "u1"}, "project": {"p8", "p9"}},
	}
	var (
		done    atomic.Bool
		expired atomic.Int64
		served  atomic.Int64
		wg      gosync.WaitGroup
	)
	wg.Go(func() {
		defer done.Store(true)
		for hz := int64(curRaceStep); hz <= curRaceHorizon; hz += curRaceStep {
			if err := conn.SetHorizonSeq(ctx, "p1", hz); err != nil {
				t.Errorf("HZ-4: pruner: SetHorizonSeq(%d): %v", hz, err)
				return
			}
			if _, err := conn.PruneCommitsThrough(ctx, "p1", hz); err != nil {
				t.Errorf("HZ-4: pruner: PruneCommitsThrough(%d): %v", hz, err)
				return
			}
		}
	})
	for r := range curRaceReaders {
		wg.Go(func() {
			f := filters[r%len(filters)]
			limit := 2 + r
			var cursor int64
			for n := 0; n < curRaceMinRead || !done.Load(); n++ {
				if t.Failed() {
					return
				}
				q := curQ(f, cursor, 1<<40, limit)
				got, err := conn.ReadCommitWindow(ctx, "p1", q)
				if driver.CodeOf(err) == driver.CodeCursorExpired {
					expired.Add(1)
					hz, herr := conn.HorizonSeq(ctx, "p1")
					if herr != nil {
						t.Errorf("HZ-4: reader %d: HorizonSeq: %v", r, herr)
						return
					}
					if hz <= cursor {
						t.Errorf("HZ-4: reader %d: cursor %d expired, but the horizon is %d (it never passed the cursor)", r, cursor, hz)
						return
					}
					if len(got) != 0 {
						t.Errorf("HZ-4: reader %d: cursor_expired at cursor %d came with commits %v", r, cursor, seqs(got))
						return
					}
					cursor = hz // a bootstrap would resume here
					continue
				}
				if err != nil {
					t.Errorf("HZ-4: reader %d: ReadCommitWindow after %d: %v", r, cursor, err)
					return
				}
				served.Add(1)
				if d := diff(winModel(log, q), got); d != "" {
					t.Errorf("HZ-4: reader %d: ReadCommitWindow(%v, after %d, limit %d) while pruning is not the log after the cursor "+
						"(a silent gap) %s", r, winFmt(f), cursor, limit, d)
					return
				}
				if len(winRowIDs(got)) < limit { // a short page: the log is read to its end (WIN-5)
					cursor = int64(n % 7) // back to an old cursor, which the pruner may have passed
					continue
				}
				cursor = got[len(got)-1].Seq
			}
		})
	}
	wg.Wait()
	t.Logf("HZ-4: %d reads served, %d cursor_expired while pruning through %d", served.Load(), expired.Load(), curRaceHorizon)
	if t.Failed() {
		return
	}
	// Settled: the horizon is curRaceHorizon.
	for _, f := range filters {
		curExpect(t, conn, "p1", curQ(f, 0, 1<<40, winAll), driver.CodeCursorExpired, "HZ-4", "after the race")
		curExpect(t, conn, "p1", curQ(f, curRaceHorizon-1, 1<<40, winAll), driver.CodeCursorExpired, "HZ-4", "after the race")
		curServed(t, conn, "p1", log, curQ(f, curRaceHorizon, 1<<40, winAll), "HZ-4", "after the race")
	}
}
