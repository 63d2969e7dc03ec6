package conformance

import (
	"context"
	"fmt"
	"math"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for RET-1…RET-7: the retention rule of sync.Store.Prune over any
// driver (the engine is portable, so the suite judges engine and driver
// together). RET-8 and RET-9 (concurrency) are in ret_concurrency.go.
//
// Setup: retCommits writes commit i (1…n) created at i·1000 ms, so
// "created before t" and "seq ≤ s" line up; policies name every rule they
// use and switch the others off (retOnly), and fix the clock.

func init() {
	register(
		Case{Name: "RET-1/floor-is-the-lowest-active-cursor", Run: retFloorLowestActive},
		Case{Name: "RET-1/active-window-boundary-inclusive", Run: retActiveBoundary},
		Case{Name: "RET-1/cursors-below-the-horizon-hold-nothing", Run: retBelowHorizonIgnored},
		Case{Name: "RET-2/commits-older-than-force-age-go", Run: retForceAge},
		Case{Name: "RET-2/negative-force-age-never", Run: retForceAgeOff},
		Case{Name: "RET-3/never-past-max-minus-min-retained", Run: retMinRetained},
		Case{Name: "RET-3/default-policy-keeps-the-newest-thousand", Run: retDefaultPolicy},
		Case{Name: "RET-4/horizon-never-lowered-leftovers-pruned", Run: retNeverLowered},
		Case{Name: "RET-4/steps-of-limit-commits-resumable", Run: retStepsResumable},
		Case{Name: "RET-5/results-older-than-retention-bounded", Run: retResultsGC},
		Case{Name: "RET-5/negative-retention-keeps-results", Run: retResultsKept},
		Case{Name: "RET-6/records-inactive-past-retention-bounded", Run: retRecordsGC},
		Case{Name: "RET-7/invalid-policy-writes-nothing", Run: retInvalidPolicy},
	)
}

// retNow is the clock of most RET cases (epoch ms).
const retNow = int64(100_000)

// retOnly returns a policy at nowMs with every rule off: no force age,
// no minimum, no garbage collection; an active window of 10 s.
func retOnly(nowMs int64) syncstore.RetentionPolicy {
	return syncstore.RetentionPolicy{ActiveWindow: 10 * time.Second, ForceAge: -1, MinRetainedCommits: -1,
		PushResultRetention: -1, ClientRecordRetention: -1, Now: func() time.Time { return time.UnixMilli(nowMs) }}
}

// retStore returns a fresh store and the sync.Store over it (not closed:
// the harness closes the Conn).
func retStore(t T, h Harness) (driver.Conn, *syncstore.Store) {
	t.Helper()
	conn := openStore(t, h)
	return conn, syncstore.OpenConn(conn)
}

// retCommits writes commits 1…n on p, commit i created at i·1000 ms,
// each upserting todo "t<i>" of project p7.
func retCommits(t T, conn driver.Conn, p string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		winWrite(t, conn, p, winMeta(int64(1000*i)), winUp(tTodos, todo(fmt.Sprintf("t%d", i), "p7", "u1")))
	}
}

// retPrune runs Prune or fails the case.
func retPrune(t T, s *syncstore.Store, p string, pol syncstore.RetentionPolicy) syncstore.PruneReport {
	t.Helper()
	rep, err := s.Prune(t.Context(), p, pol)
	must(t, "Prune", err)
	return rep
}

// retLog is what is left of p's log written by retCommits(n): the
// horizon and the seqs a reader at the horizon gets, and which of 1…n
// CommitSeqBefore still finds (commit i answers at i·1000+1 iff it is
// retained, since every commit before it is pruned first).
type retLog struct {
	Horizon  int64
	Window   []int64 // seqs of a window read after the horizon
	Retained []int64 // seqs 1…n still retained
}

func retLogOf(t T, conn driver.Conn, p string, n int) retLog {
	t.Helper()
	ctx := t.Context()
	var l retLog
	var err error
	l.Horizon, err = conn.HorizonSeq(ctx, p)
	must(t, "HorizonSeq", err)
	l.Window = seqs(winRead(t, conn, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7"}},
		AfterSeq: l.Horizon, ThroughSeq: math.MaxInt64, LimitChanges: winAll}))
	for i := 1; i <= n; i++ {
		s, err := conn.CommitSeqBefore(ctx, p, int64(1000*i+1))
		must(t, "CommitSeqBefore", err)
		if s == int64(i) {
			l.Retained = append(l.Retained, s)
		}
	}
	return l
}

// retWantLog is the log of retCommits(n) pruned through horizon h.
func retWantLog(h int64, n int) retLog {
	l := retLog{Horizon: h}
	for i := h + 1; i <= int64(n); i++ {
		l.Window = append(l.Window, i)
		l.Retained = append(l.Retained, i)
	}
	return l
}

// Catches: the floor taken from every client (an inactive or a
// bootstrapping one, cursor −1), from the most recent client, or from
// the largest cursor; a horizon raised without pruning, or pruning past it.
func retFloorLowestActive(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "a", 6, retNow-1000)
	retClient(t, conn, "p1", "b", 4, retNow-5000)
	retClient(t, conn, "p1", "c", 2, retNow-20000) // inactive
	retClient(t, conn, "p1", "d", -1, retNow)      // bootstrapping
	rep := retPrune(t, s, "p1", retOnly(retNow))
	expectEqual(t, "RET-1: report", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10, Floor: 4, Active: true,
		Target: 4, HorizonAfter: 4, CommitsPruned: 4}, rep)
	expectEqual(t, "RET-1: log after Prune", retWantLog(4, 10), retLogOf(t, conn, "p1", 10))
	// The floor follows the cursors: b catches up, a is now the lowest.
	retClient(t, conn, "p1", "b", 9, retNow)
	rep = retPrune(t, s, "p1", retOnly(retNow))
	expectEqual(t, "RET-1: report after b advanced", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10, Floor: 6,
		Active: true, Target: 6, HorizonBefore: 4, HorizonAfter: 6, CommitsPruned: 2}, rep)
	expectEqual(t, "RET-1: log after b advanced", retWantLog(6, 10), retLogOf(t, conn, "p1", 10))
}

// Catches: `>` instead of `>=` at now − ActiveWindow (a client that pulled
// exactly ActiveWindow ago is active), or the window counted in seconds.
func retActiveBoundary(t T, h Harness) {
	conn, s := retStore(t, h)
	for _, c := range []struct {
		p        string
		bAt      int64
		wantHzn  int64
		wantNote string
	}{{"p1", retNow - 10_000, 4, "exactly ActiveWindow ago"}, {"p2", retNow - 10_001, 6, "1 ms before the window"}} {
		retCommits(t, conn, c.p, 10)
		retClient(t, conn, c.p, "a", 6, retNow)
		retClient(t, conn, c.p, "b", 4, c.bAt)
		rep := retPrune(t, s, c.p, retOnly(retNow))
		expectEqual(t, "RET-1: horizon with the lowest cursor's client updated "+c.wantNote, c.wantHzn, rep.HorizonAfter)
	}
}

// Catches: a floor taken from a cursor already below the horizon (that
// client must bootstrap anyway): it would stall pruning for everyone.
func retBelowHorizonIgnored(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(t.Context(), "p1", 5))
	_, err := conn.PruneCommitsThrough(t.Context(), "p1", 5)
	must(t, "PruneCommitsThrough(5)", err)
	retClient(t, conn, "p1", "expired", 3, retNow)
	retClient(t, conn, "p1", "at-horizon", 5, retNow-1)
	retClient(t, conn, "p1", "ahead", 8, retNow)
	rep := retPrune(t, s, "p1", retOnly(retNow))
	expectEqual(t, "RET-1: floor with a cursor at the horizon", int64(5), rep.Floor)
	expectEqual(t, "RET-1: horizon with a cursor at the horizon", int64(5), rep.HorizonAfter)
	retClient(t, conn, "p1", "at-horizon", 9, retNow)
	rep = retPrune(t, s, "p1", retOnly(retNow))
	expectEqual(t, "RET-1: report once only a cursor below the horizon is lower", syncstore.PruneReport{NowMs: retNow,
		MaxCommitSeq: 10, Floor: 8, Active: true, Target: 8, HorizonBefore: 5, HorizonAfter: 8, CommitsPruned: 3}, rep)
	expectEqual(t, "RET-1: log", retWantLog(8, 10), retLogOf(t, conn, "p1", 10))
}

// Catches: force age ignored while an active cursor is low, `<=` at the
// cutoff (commit 6 is created exactly ForceAge before now and stays), the
// age counted from the newest commit instead of now.
func retForceAge(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "slow", 2, 20_000)
	pol := retOnly(20_000)
	pol.ForceAge = 14 * time.Second
	rep := retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-2: report", syncstore.PruneReport{NowMs: 20_000, MaxCommitSeq: 10, Floor: 2, Active: true,
		ForceSeq: 5, Target: 5, HorizonAfter: 5, CommitsPruned: 5}, rep)
	expectEqual(t, "RET-2: log", retWantLog(5, 10), retLogOf(t, conn, "p1", 10))
}

// Catches: a negative ForceAge read as "everything is old" (or as the
// default) instead of "never".
func retForceAgeOff(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "slow", 2, math.MaxInt64/2)
	pol := retOnly(math.MaxInt64 / 2)
	rep := retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-2: report with ForceAge off", syncstore.PruneReport{NowMs: math.MaxInt64 / 2, MaxCommitSeq: 10,
		Floor: 2, Active: true, Target: 2, HorizonAfter: 2, CommitsPruned: 2}, rep)
}

// Catches: the minimum applied to the floor but not to force age (or
// the reverse), off by one, or a minimum above MaxCommitSeq that wraps.
func retMinRetained(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "fast", 9, 50_000)
	pol := retOnly(50_000)
	pol.MinRetainedCommits = 3
	rep := retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-3: report, floor capped", syncstore.PruneReport{NowMs: 50_000, MaxCommitSeq: 10, Floor: 9,
		Active: true, Target: 7, HorizonAfter: 7, CommitsPruned: 7}, rep)
	expectEqual(t, "RET-3: log", retWantLog(7, 10), retLogOf(t, conn, "p1", 10))

	retCommits(t, conn, "p2", 10)
	pol.MinRetainedCommits, pol.ForceAge = 4, time.Second // every commit is older than 1 s at 50 s
	rep = retPrune(t, s, "p2", pol)
	expectEqual(t, "RET-3: report, force age capped", syncstore.PruneReport{NowMs: 50_000, MaxCommitSeq: 10,
		ForceSeq: 10, Target: 6, HorizonAfter: 6, CommitsPruned: 6}, rep)

	retCommits(t, conn, "p3", 10)
	retClient(t, conn, "p3", "fast", 10, 50_000)
	pol.MinRetainedCommits = 11
	rep = retPrune(t, s, "p3", pol)
	expectEqual(t, "RET-3: report, minimum above MaxCommitSeq", syncstore.PruneReport{NowMs: 50_000, MaxCommitSeq: 10,
		Floor: 10, Active: true, ForceSeq: 10}, rep)
	pol.MinRetainedCommits = 0 // the default, 1,000
	rep = retPrune(t, s, "p3", pol)
	expectEqual(t, "RET-3: target with the default minimum", int64(0), rep.Target)
	pol.MinRetainedCommits = -1
	rep = retPrune(t, s, "p3", pol)
	expectEqual(t, "RET-3: horizon with no minimum", int64(10), rep.HorizonAfter)
}

// Catches: a zero policy that prunes (a zero minimum instead of the
// default 1,000) or fails; defaults applied to a zero Now.
func retDefaultPolicy(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "fast", 10, time.Now().UnixMilli())
	rep := retPrune(t, s, "p1", syncstore.RetentionPolicy{})
	if rep.Target != 0 || rep.HorizonAfter != 0 || rep.CommitsPruned != 0 {
		t.Errorf("RET-3: the zero policy pruned 10 commits' log (default minimum 1,000): %+v", rep)
	}
	if !rep.Active || rep.Floor != 10 || rep.ForceSeq != 10 {
		t.Errorf("RET-3: the zero policy's floor and force age (defaults 14 and 30 days, clock time.Now) = %+v; want floor 10, force seq 10", rep)
	}
	expectEqual(t, "RET-3: log after the zero policy", retWantLog(0, 10), retLogOf(t, conn, "p1", 10))
}

// Catches: a Prune that lowers the horizon to its target, or that leaves
// the commits at or below the horizon a crashed Prune (or a host's own
// SetHorizonSeq) left behind.
func retNeverLowered(t T, h Harness) {
	conn, s := retStore(t, h)
	retCommits(t, conn, "p1", 10)
	must(t, "SetHorizonSeq(8)", conn.SetHorizonSeq(t.Context(), "p1", 8))
	retClient(t, conn, "p1", "a", 8, retNow)
	retClient(t, conn, "p1", "b", 9, retNow)
	rep := retPrune(t, s, "p1", retOnly(retNow))
	expectEqual(t, "RET-4: report", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10, Floor: 8, Active: true,
		Target: 8, HorizonBefore: 8, HorizonAfter: 8, CommitsPruned: 8}, rep)
	expectEqual(t, "RET-4: log", retWantLog(8, 10), retLogOf(t, conn, "p1", 10))
	pol := retOnly(retNow)
	pol.MinRetainedCommits = 5 // target 5 < horizon 8
	rep = retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-4: report with a target below the horizon", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10,
		Floor: 8, Active: true, Target: 5, HorizonBefore: 8, HorizonAfter: 8}, rep)
	expectEqual(t, "RET-4: log after a target below the horizon", retWantLog(8, 10), retLogOf(t, conn, "p1", 10))
}

// retSpy records the horizon raises and commit prunes Prune makes, and
// fails the failAt-th PruneCommitsThrough (1-based; 0 = never) with
// CodeUnavailable before the driver runs it, as a crash between a step's
// two calls would leave the store.
type retSpy struct {
	driver.Conn
	mu     gosync.Mutex
	calls  []string
	failAt int
	prunes int
}

func (s *retSpy) SetHorizonSeq(ctx context.Context, p string, seq int64) error {
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("SetHorizonSeq(%d)", seq))
	s.mu.Unlock()
	return s.Conn.SetHorizonSeq(ctx, p, seq)
}

func (s *retSpy) PruneCommitsThrough(ctx context.Context, p string, seq int64) (int64, error) {
	s.mu.Lock()
	s.prunes++
	fail := s.prunes == s.failAt
	s.mu.Unlock()
	if fail {
		s.mu.Lock()
		s.calls = append(s.calls, fmt.Sprintf("PruneCommitsThrough(%d) failed", seq))
		s.mu.Unlock()
		return 0, driver.Errorf(driver.CodeUnavailable, "retSpy: injected failure")
	}
	n, err := s.Conn.PruneCommitsThrough(ctx, p, seq)
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("PruneCommitsThrough(%d) = %d", seq, n))
	s.mu.Unlock()
	return n, err
}

func (s *retSpy) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// Catches: one transaction deleting the whole range (unbounded on a big
// log), a step that deletes before it raises the horizon (a pull between
// the two would meet a gap without cursor_expired, RET-9), and a Prune
// that, interrupted, does not resume: a step's commits left behind.
func retStepsResumable(t T, h Harness) {
	conn := openStore(t, h)
	spy := &retSpy{Conn: conn, failAt: 2}
	s := syncstore.OpenConn(spy)
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "a", 7, retNow)
	pol := retOnly(retNow)
	pol.Limit = 3
	rep, err := s.Prune(t.Context(), "p1", pol)
	expectCode(t, "RET-4: Prune with an injected failure", err, driver.CodeUnavailable)
	expectEqual(t, "RET-4: calls of the interrupted Prune",
		[]string{"SetHorizonSeq(3)", "PruneCommitsThrough(3) = 3", "SetHorizonSeq(6)", "PruneCommitsThrough(6) failed"}, spy.take())
	expectEqual(t, "RET-4: report of the interrupted Prune", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10,
		Floor: 7, Active: true, Target: 7, HorizonAfter: 6, CommitsPruned: 3}, rep)
	rep = retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-4: calls of the next Prune",
		[]string{"PruneCommitsThrough(6) = 3", "SetHorizonSeq(7)", "PruneCommitsThrough(7) = 1"}, spy.take())
	expectEqual(t, "RET-4: report of the next Prune", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10,
		Floor: 7, Active: true, Target: 7, HorizonBefore: 6, HorizonAfter: 7, CommitsPruned: 4}, rep)
	expectEqual(t, "RET-4: log", retWantLog(7, 10), retLogOf(t, conn, "p1", 10))
}

// Catches: results deleted at the cutoff or after it, the limit ignored
// (or More wrong), results of another partition deleted, retention
// counted in seconds.
func retResultsGC(t T, h Harness) {
	conn, s := retStore(t, h)
	keys := []retKey{{"c1", "k1", 1000}, {"c1", "k2", 2000}, {"c2", "k1", 3000}, {"c2", "k2", 3500}, {"c3", "k1", 6000}}
	retPutResults(t, conn, "p1", keys)
	retPutResults(t, conn, "p2", keys)
	pol := retOnly(10_000)
	pol.PushResultRetention, pol.Limit = 6500*time.Millisecond, 2 // cutoff 3500
	for i, want := range []struct {
		n    int64
		more bool
		left []bool
	}{{2, true, []bool{false, false, true, true, true}}, {1, false, []bool{false, false, false, true, true}}, {0, false, []bool{false, false, false, true, true}}} {
		rep := retPrune(t, s, "p1", pol)
		expectEqual(t, fmt.Sprintf("RET-5: results deleted and More, call %d", i+1), [2]any{want.n, want.more},
			[2]any{rep.PushResultsDeleted, rep.More})
		expectEqual(t, fmt.Sprintf("RET-5: results left after call %d", i+1), want.left, retResultsLeft(t, conn, "p1", keys))
	}
	expectEqual(t, "RET-5: results of the other partition", []bool{true, true, true, true, true}, retResultsLeft(t, conn, "p2", keys))
}

// Catches: a negative retention read as zero (delete everything) or as
// the default.
func retResultsKept(t T, h Harness) {
	conn, s := retStore(t, h)
	keys := []retKey{{"c1", "k1", math.MinInt64}, {"c1", "k2", 1000}}
	retPutResults(t, conn, "p1", keys)
	rep := retPrune(t, s, "p1", retOnly(math.MaxInt64/2))
	expectEqual(t, "RET-5: results deleted with PushResultRetention off", int64(0), rep.PushResultsDeleted)
	expectEqual(t, "RET-5: results left", []bool{true, true}, retResultsLeft(t, conn, "p1", keys))
}

// Catches: records deleted at the cutoff, active records deleted, the
// limit ignored, More wrong, another partition's records deleted.
func retRecordsGC(t T, h Harness) {
	conn, s := retStore(t, h)
	ids := []string{"a", "b", "c", "d", "e"}
	for _, p := range []string{"p1", "p2"} {
		for i, at := range []int64{1000, 2000, 3000, 70_000, 95_000} {
			retClient(t, conn, p, ids[i], 5, at)
		}
	}
	pol := retOnly(retNow)
	pol.ClientRecordRetention, pol.Limit = 30*time.Second, 2 // cutoff 70,000
	for i, want := range []struct {
		n    int64
		more bool
		left []string
	}{{2, true, []string{"c", "d", "e"}}, {1, false, []string{"d", "e"}}, {0, false, []string{"d", "e"}}} {
		rep := retPrune(t, s, "p1", pol)
		expectEqual(t, fmt.Sprintf("RET-6: records deleted and More, call %d", i+1), [2]any{want.n, want.more},
			[2]any{rep.ClientRecordsDeleted, rep.More})
		expectEqual(t, fmt.Sprintf("RET-6: records left after call %d", i+1), want.left, retClientsLeft(t, conn, "p1", ids...))
	}
	expectEqual(t, "RET-6: records of the other partition", ids, retClientsLeft(t, conn, "p2", ids...))
}

// Catches: a bad policy that reaches the driver (something is written),
// or that is silently clamped; a wrong code.
func retInvalidPolicy(t T, h Harness) {
	conn, s := retStore(t, h)
	seeded := hzSeed(t, conn, "p1")
	retClient(t, conn, "p1", "fast", 6, retNow)
	retClient(t, conn, "p1", "gone", 1, 1000)
	seeded.clients = append(seeded.clients, "fast", "gone")
	before := hzCapture(t, conn, "p1", seeded)
	ok := retOnly(retNow)
	ok.PushResultRetention, ok.ClientRecordRetention = time.Millisecond, 10*time.Second
	bad := func(f func(p *syncstore.RetentionPolicy)) syncstore.RetentionPolicy { p := ok; f(&p); return p }
	for _, c := range []struct {
		name string
		p    string
		pol  syncstore.RetentionPolicy
		code driver.Code
	}{
		{"empty partition", "", ok, driver.CodeInvalidArgument},
		{"negative ActiveWindow", "p1", bad(func(p *syncstore.RetentionPolicy) { p.ActiveWindow = -time.Second }), driver.CodeInvalidArgument},
		{"ActiveWindow under 1 ms", "p1", bad(func(p *syncstore.RetentionPolicy) { p.ActiveWindow = time.Microsecond }), driver.CodeInvalidArgument},
		{"ForceAge under 1 ms", "p1", bad(func(p *syncstore.RetentionPolicy) { p.ForceAge = 1 }), driver.CodeInvalidArgument},
		{"PushResultRetention under 1 ms", "p1", bad(func(p *syncstore.RetentionPolicy) { p.PushResultRetention = 999 * time.Microsecond }), driver.CodeInvalidArgument},
		{"ClientRecordRetention under 1 ms", "p1", bad(func(p *syncstore.RetentionPolicy) { p.ClientRecordRetention = time.Nanosecond }), driver.CodeInvalidArgument},
		{"ClientRecordRetention shorter than ActiveWindow", "p1", bad(func(p *syncstore.RetentionPolicy) {
			p.ClientRecordRetention = 10*time.Second - time.Millisecond
		}), driver.CodeInvalidArgument},
		{"default ClientRecordRetention shorter than ActiveWindow", "p1", bad(func(p *syncstore.RetentionPolicy) {
			p.ClientRecordRetention, p.ActiveWindow = 0, 91*24*time.Hour
		}), driver.CodeInvalidArgument},
		{"negative Limit", "p1", bad(func(p *syncstore.RetentionPolicy) { p.Limit = -1 }), driver.CodeInvalidLimit},
		{"Limit above 10,000", "p1", bad(func(p *syncstore.RetentionPolicy) { p.Limit = 10001 }), driver.CodeInvalidLimit},
	} {
		rep, err := s.Prune(t.Context(), c.p, c.pol)
		expectCode(t, "RET-7: Prune with "+c.name, err, c.code)
		expectEqual(t, "RET-7: report of a refused Prune ("+c.name+")", syncstore.PruneReport{}, rep)
		expectEqual(t, "RET-7: store after a refused Prune ("+c.name+")", before, hzCapture(t, conn, "p1", seeded))
	}
	// The same policy, valid, does prune: the refusals above were the policy's.
	rep := retPrune(t, s, "p1", ok)
	if rep.CommitsPruned == 0 || rep.PushResultsDeleted == 0 || rep.ClientRecordsDeleted == 0 {
		t.Errorf("RET-7: the valid policy pruned nothing (%+v): the case cannot tell a refusal from a no-op", rep)
	}
}
