package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for RET-8 (concurrent Prunes) and RET-9 (a Prune racing pushes
// and pulls). Every storm is bounded by counts, never by time.

func init() {
	register(
		Case{Name: "RET-8/concurrent-prunes-end-as-one", Run: retConcurrentPrunes},
		Case{Name: "RET-9/pulls-racing-prunes-and-pushes-never-meet-a-gap", Run: retRacingPulls},
	)
}

// retGC is a policy at retNow that also collects every push result and
// the client records older than 30 s, Limit per call.
func retGC(minRetained int64, limit int) syncstore.RetentionPolicy {
	pol := retOnly(retNow)
	pol.MinRetainedCommits, pol.Limit = minRetained, limit
	pol.PushResultRetention, pol.ClientRecordRetention = time.Millisecond, 30*time.Second
	return pol
}

// retTotals adds up PruneReports.
type retTotals struct{ Commits, Results, Records int64 }

func (r *retTotals) add(rep syncstore.PruneReport) {
	r.Commits += rep.CommitsPruned
	r.Results += rep.PushResultsDeleted
	r.Records += rep.ClientRecordsDeleted
}

// Catches: concurrent Prunes that lower each other's horizon, count a
// deleted commit, result or record twice, deadlock or fail on each
// other's deletions, or leave commits at or below the final horizon.
// Six Prunes with two policies (targets 80 and 90), three of them through
// a second instance of the store when the harness can open one, each run
// until it reports nothing More; they must end as one Prune would.
func retConcurrentPrunes(t T, h Harness) {
	conn := openStore(t, h)
	other := conn
	if h.Reopen != nil {
		other = h.Reopen(t, conn)
	}
	stores := []*syncstore.Store{syncstore.OpenConn(conn), syncstore.OpenConn(other)}
	const n, results, oldRecords = 120, 50, 30
	retCommits(t, conn, "p1", n)
	for i := range 10 {
		retClient(t, conn, "p1", fmt.Sprintf("active-%d", i), int64(90+i), retNow)
	}
	for i := range oldRecords {
		retClient(t, conn, "p1", fmt.Sprintf("old-%02d", i), 1, int64(1000+i))
	}
	keys := make([]retKey, results)
	for i := range keys {
		keys[i] = retKey{"c", fmt.Sprintf("k%02d", i), int64(1000 + i)}
	}
	retPutResults(t, conn, "p1", keys)

	var mu gosync.Mutex
	var total retTotals
	errs := make([]error, 6)
	var wg gosync.WaitGroup
	for g := range 6 {
		pol := retGC(-1, 7) // target 90
		if g%2 == 1 {
			pol = retGC(40, 7) // target 80
		}
		s := stores[g/3]
		wg.Go(func() {
			for range 100 {
				rep, err := s.Prune(t.Context(), "p1", pol)
				mu.Lock()
				total.add(rep)
				mu.Unlock()
				if err != nil {
					errs[g] = err
					return
				}
				if !rep.More {
					return
				}
			}
			errs[g] = errors.New("still More after 100 calls")
		})
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("RET-8: Prune %d: %v", g, err)
		}
	}
	expectEqual(t, "RET-8: log after concurrent Prunes", retWantLog(90, n), retLogOf(t, conn, "p1", n))
	expectEqual(t, "RET-8: commits, results and records deleted, summed over every Prune", retTotals{90, results, oldRecords}, total)
	expectEqual(t, "RET-8: results left", make([]bool, results), retResultsLeft(t, conn, "p1", keys))
	for i := range 10 {
		if _, found := crGet(t, conn, "p1", fmt.Sprintf("active-%d", i)); !found {
			t.Errorf("RET-8: active client %d's record was deleted", i)
		}
	}
}

// retPush writes commit i (created at i·1000 ms, upserting todo "t<i>")
// on p through conn, retrying a lost optimistic race (TX-9) a bounded
// number of times.
func retPush(ctx context.Context, conn driver.Conn, p string, i int) error {
	row := todo(fmt.Sprintf("t%d", i), "p7", "u1")
	for attempt := 0; ; attempt++ {
		tx, err := conn.Begin(ctx, p)
		if err == nil {
			if err = tx.UpsertRow(ctx, tTodos, row); err == nil {
				meta := winMeta(int64(1000 * i))
				meta.Changes = []driver.Change{upsertChange(tTodos, row)}
				if _, err = tx.AppendCommit(ctx, meta); err == nil {
					err = tx.Commit(ctx)
				}
			}
			_ = tx.Rollback(context.Background())
		}
		if err == nil || driver.CodeOf(err) != driver.CodeWriteConflict || attempt == 50 {
			return err
		}
	}
}

// retPuller is one client pulling p7's todos from its cursor.
type retPuller struct {
	id      string
	reads   int // pulls in the run, spread over the writer's progress
	cursor  int64
	record  bool // keeps a client record (holds the floor); else a stale reader
	pages   int
	expired int
}

// pull reads one window from the cursor up to the head and checks it: the
// read fails with sync.cursor_expired (then the horizon has passed the
// cursor, and the puller starts again at the head, as after a bootstrap)
// or returns commits cursor+1, cursor+2, … with no gap (every commit
// touches p7). It then moves the cursor as Pull does and, for a client,
// stores its record.
func (pl *retPuller) pull(ctx context.Context, conn driver.Conn, p string) error {
	const limit = 7
	through, err := conn.MaxCommitSeq(ctx, p)
	if err != nil {
		return err
	}
	after := min(pl.cursor, through)
	commits, err := conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos,
		Filter: driver.ScopeFilter{"project": {"p7"}}, AfterSeq: after, ThroughSeq: through, LimitChanges: limit})
	switch {
	case driver.CodeOf(err) == driver.CodeCursorExpired:
		h, herr := conn.HorizonSeq(ctx, p)
		if herr != nil {
			return herr
		}
		if h <= after {
			return fmt.Errorf("cursor_expired for cursor %d, yet the horizon is %d", after, h)
		}
		pl.expired++
		pl.cursor = through
	case err != nil:
		return err
	default:
		pl.pages++
		for j, c := range commits {
			if want := after + 1 + int64(j); c.Seq != want {
				return fmt.Errorf("window after cursor %d returned seqs %v: a gap at %d, and no cursor_expired", after, seqs(commits), want)
			}
		}
		if len(commits) < limit {
			pl.cursor = through // WIN-5: nothing else up to the head
		} else {
			pl.cursor = commits[len(commits)-1].Seq
		}
	}
	if !pl.record {
		return nil
	}
	rec := crRecord(pl.id)
	rec.Cursor, rec.UpdatedAtMs = pl.cursor, retNow
	return conn.PutClientRecord(ctx, p, rec)
}

// Catches: a Prune that deletes before it raises the horizon, or past it,
// or a driver whose window read checks the horizon in another snapshot
// than it reads the log (HZ-4): a puller would get a page with a gap and
// no cursor_expired. A writer pushes 120 commits while three clients pull
// (their cursors hold the floor; one is slow), a stale reader re-reads old
// cursors, and a pruner alternates the cursor floor with a force age that
// cuts ahead of the slow client.
func retRacingPulls(t T, h Harness) {
	conn := openStore(t, h)
	s := syncstore.OpenConn(conn)
	ctx := t.Context()
	const pre, pushes, forceMin = 10, 120, 4
	retCommits(t, conn, "p1", pre)
	// a and b pull at every other commit, c (slow) at every sixth: the
	// force-age Prunes cut ahead of it.
	pullers := []*retPuller{{id: "a", record: true, reads: 60}, {id: "b", record: true, reads: 60},
		{id: "c", record: true, reads: 20}, {id: "stale", reads: 80}}
	for _, pl := range pullers[:3] {
		retClient(t, conn, "p1", pl.id, 0, retNow)
	}
	// Everyone keeps pace with the writer (retProgress), so the storm
	// interleaves on a fast engine as on a slow one.
	progress := newRetProgress()
	var wg gosync.WaitGroup
	fail := make(chan error, 8)
	wg.Go(func() {
		defer progress.finish()
		for i := pre + 1; i <= pre+pushes; i++ {
			if err := retPush(ctx, conn, "p1", i); err != nil {
				fail <- fmt.Errorf("push %d: %w", i, err)
				return
			}
			progress.advance()
		}
	})
	for k, pl := range pullers {
		wg.Go(func() {
			for r := range pl.reads {
				progress.wait(r * pushes / pl.reads)
				if !pl.record { // the stale reader starts over from far behind
					pl.cursor = int64((r * 5) % (pre + pushes))
				}
				if err := pl.pull(ctx, conn, "p1"); err != nil {
					fail <- fmt.Errorf("puller %d, read %d: %w", k, r, err)
					return
				}
			}
		})
	}
	var total retTotals
	const prunes = pushes + 4
	wg.Go(func() {
		floor := retOnly(retNow)
		floor.MinRetainedCommits, floor.Limit = 3, 4
		force := floor
		force.ForceAge, force.MinRetainedCommits = time.Millisecond, forceMin // every commit is old: target max − forceMin
		force.Now = func() time.Time { return time.UnixMilli(math.MaxInt64 / 2) }
		for i := range prunes {
			progress.wait(i)
			pol := floor
			if i%3 == 2 {
				pol = force
			}
			rep, err := s.Prune(ctx, "p1", pol)
			total.add(rep)
			if err != nil {
				fail <- fmt.Errorf("prune %d: %w", i, err)
				return
			}
		}
	})
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Errorf("RET-9: %v", err)
	}
	if t.Failed() {
		return
	}
	hz, err := conn.HorizonSeq(ctx, "p1")
	must(t, "HorizonSeq", err)
	expectEqual(t, "RET-9: log after the storm", retWantLog(hz, pre+pushes), retLogOf(t, conn, "p1", pre+pushes))
	expectEqual(t, "RET-9: commits pruned, summed over every Prune", hz, total.Commits)
	if hz < pre+pushes-forceMin {
		t.Errorf("RET-9: the horizon is %d after the last force-age Prune; want at least %d", hz, pre+pushes-forceMin)
	}
	for _, pl := range pullers {
		t.Logf("RET-9: puller %s: %d pages, %d cursor_expired", pl.id, pl.pages, pl.expired)
	}
	t.Logf("RET-9: %d Prunes, horizon %d", prunes, hz)
}

// retProgress counts the writer's commits; others wait for a count.
type retProgress struct {
	mu   gosync.Mutex
	cond *gosync.Cond
	n    int
	done bool
}

func newRetProgress() *retProgress {
	p := &retProgress{}
	p.cond = gosync.NewCond(&p.mu)
	return p
}

func (p *retProgress) advance() { p.mu.Lock(); p.n++; p.mu.Unlock(); p.cond.Broadcast() }
func (p *retProgress) finish()  { p.mu.Lock(); p.done = true; p.mu.Unlock(); p.cond.Broadcast() }

// wait returns once the writer has written n commits or stopped.
func (p *retProgress) wait(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n < n && !p.done {
		p.cond.Wait()
	}
}
