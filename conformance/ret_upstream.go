package conformance

import (
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for RET-10 and RET-11: the retention rule where it meets upstream
// Syncular's pruneCommitLog — no active client means no floor, and a
// policy can say zero. internal/retentioncheck runs the same histories
// through upstream's own code and compares the horizons.

func init() {
	register(
		Case{Name: "RET-10/no-active-client-prunes-to-the-minimum", Run: retNoActiveFloor},
		Case{Name: "RET-11/zero-means-zero-with-no-defaults", Run: retZeroFields},
		Case{Name: "RET-11/upstream-catalog-policies", Run: retCatalogPolicies},
	)
}

// retZero returns a NoDefaults policy at nowMs: active window and
// minimum zero, no force age, no garbage collection.
func retZero(nowMs int64) syncstore.RetentionPolicy {
	return syncstore.RetentionPolicy{NoDefaults: true, ForceAge: -1, PushResultRetention: -1, ClientRecordRetention: -1,
		Now: func() time.Time { return time.UnixMilli(nowMs) }}
}

// Catches: a floor of 0 when no client is active (the whole log kept
// until force age), a floor taken from an inactive client or from an
// active one whose cursor is below the horizon or −1, and the minimum
// not applied to the no-floor target.
func retNoActiveFloor(t T, h Harness) {
	conn, s := retStore(t, h)
	rep := retPrune(t, s, "empty", retOnly(retNow))
	expectEqual(t, "RET-10: report of an empty partition", syncstore.PruneReport{NowMs: retNow}, rep)

	// Five commits, no client record, the newest two kept: horizon 3.
	retCommits(t, conn, "p1", 5)
	pol := retOnly(retNow)
	pol.MinRetainedCommits = 2
	rep = retPrune(t, s, "p1", pol)
	expectEqual(t, "RET-10: report with no client record", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 5,
		Target: 3, HorizonAfter: 3, CommitsPruned: 3}, rep)
	expectEqual(t, "RET-10: log with no client record", retWantLog(3, 5), retLogOf(t, conn, "p1", 5))

	// An inactive client and an active one with no cursor (−1) hold
	// nothing: with no minimum, every commit goes.
	retCommits(t, conn, "p2", 10)
	retClient(t, conn, "p2", "old", 8, retNow-60_000)
	retClient(t, conn, "p2", "none", -1, retNow)
	rep = retPrune(t, s, "p2", retOnly(retNow))
	expectEqual(t, "RET-10: report with only an inactive client and a cursor of −1", syncstore.PruneReport{NowMs: retNow,
		MaxCommitSeq: 10, Target: 10, HorizonAfter: 10, CommitsPruned: 10}, rep)
	expectEqual(t, "RET-10: log with only an inactive client and a cursor of −1", retWantLog(10, 10), retLogOf(t, conn, "p2", 10))

	// An active cursor below the horizon has expired already: it is no
	// floor either.
	retCommits(t, conn, "p3", 10)
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(t.Context(), "p3", 5))
	_, err := conn.PruneCommitsThrough(t.Context(), "p3", 5)
	must(t, "PruneCommitsThrough(5)", err)
	retClient(t, conn, "p3", "expired", 3, retNow)
	pol.MinRetainedCommits = 2
	rep = retPrune(t, s, "p3", pol)
	expectEqual(t, "RET-10: report with only an expired active cursor", syncstore.PruneReport{NowMs: retNow,
		MaxCommitSeq: 10, Target: 8, HorizonBefore: 5, HorizonAfter: 8, CommitsPruned: 3}, rep)
	expectEqual(t, "RET-10: log with only an expired active cursor", retWantLog(8, 10), retLogOf(t, conn, "p3", 10))

	// Once a client is active again its cursor holds the log (RET-1).
	retClient(t, conn, "p3", "back", 9, retNow)
	pol.MinRetainedCommits = -1
	rep = retPrune(t, s, "p3", pol)
	expectEqual(t, "RET-10: horizon once a client is active at 9", int64(9), rep.HorizonAfter)
}

// Catches: NoDefaults ignored (a zero field read as the default), a zero
// active window that counts records updated before now (or not those at
// now or later), a zero force age that takes the commit created at now,
// a zero minimum read as "keep everything", zero result or record
// retention deleting what was written at now, or a zero Limit refused.
func retZeroFields(t T, h Harness) {
	conn, s := retStore(t, h)
	// ActiveWindow 0: only records updated at now or later are active.
	retCommits(t, conn, "p1", 10)
	retClient(t, conn, "p1", "a", 4, retNow-1)
	retClient(t, conn, "p1", "b", 6, retNow)
	retClient(t, conn, "p1", "c", 5, retNow+5000)
	rep := retPrune(t, s, "p1", retZero(retNow))
	expectEqual(t, "RET-11: report with a zero active window", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10,
		Floor: 5, Active: true, Target: 5, HorizonAfter: 5, CommitsPruned: 5}, rep)
	expectEqual(t, "RET-11: log with a zero active window", retWantLog(5, 10), retLogOf(t, conn, "p1", 10))

	// ForceAge 0: every commit created before now; commit 10, created at
	// now, stays.
	retCommits(t, conn, "p2", 10)
	retClient(t, conn, "p2", "slow", 2, 10_000)
	pol := retZero(10_000)
	pol.ForceAge = 0
	rep = retPrune(t, s, "p2", pol)
	expectEqual(t, "RET-11: report with a zero force age", syncstore.PruneReport{NowMs: 10_000, MaxCommitSeq: 10,
		Floor: 2, Active: true, ForceSeq: 9, Target: 9, HorizonAfter: 9, CommitsPruned: 9}, rep)

	// MinRetainedCommits 0: a caught-up client lets the whole log go.
	retCommits(t, conn, "p3", 10)
	retClient(t, conn, "p3", "fast", 10, retNow)
	rep = retPrune(t, s, "p3", retZero(retNow))
	expectEqual(t, "RET-11: report with a zero minimum", syncstore.PruneReport{NowMs: retNow, MaxCommitSeq: 10,
		Floor: 10, Active: true, Target: 10, HorizonAfter: 10, CommitsPruned: 10}, rep)

	// PushResultRetention and ClientRecordRetention 0: what was written
	// before now goes, what was written at now stays.
	keys := []retKey{{"c1", "k1", retNow - 1}, {"c1", "k2", retNow}}
	retPutResults(t, conn, "p4", keys)
	retClient(t, conn, "p4", "before", 1, retNow-1)
	retClient(t, conn, "p4", "at", 1, retNow)
	pol = retZero(retNow)
	pol.PushResultRetention, pol.ClientRecordRetention = 0, 0
	rep = retPrune(t, s, "p4", pol)
	expectEqual(t, "RET-11: results and records deleted with zero retention", [2]int64{1, 1},
		[2]int64{rep.PushResultsDeleted, rep.ClientRecordsDeleted})
	expectEqual(t, "RET-11: results left with zero retention", []bool{false, true}, retResultsLeft(t, conn, "p4", keys))
	expectEqual(t, "RET-11: records left with zero retention", []string{"at"}, retClientsLeft(t, conn, "p4", "before", "at"))

	// A zero ClientRecordRetention is shorter than a non-zero window.
	seeded := hzSeed(t, conn, "p5")
	before := hzCapture(t, conn, "p5", seeded)
	pol.ActiveWindow = time.Second
	_, err := s.Prune(t.Context(), "p5", pol)
	expectCode(t, "RET-11: NoDefaults with ClientRecordRetention 0 and ActiveWindow 1 s", err, driver.CodeInvalidArgument)
	expectEqual(t, "RET-11: store after the refused Prune", before, hzCapture(t, conn, "p5", seeded))

	// Without NoDefaults the same zeros are the defaults (14 days, 30
	// days, 1,000): nothing of a 10-commit log goes.
	retCommits(t, conn, "p6", 10)
	retClient(t, conn, "p6", "a", 4, retNow-1)
	pol = retZero(retNow)
	pol.NoDefaults = false
	rep = retPrune(t, s, "p6", pol)
	expectEqual(t, "RET-11: report of the same zeros without NoDefaults", syncstore.PruneReport{NowMs: retNow,
		MaxCommitSeq: 10, Floor: 4, Active: true}, rep)
}

// retUpstream maps upstream Syncular's RetentionOptions (nil: absent) onto
// a policy as docs/retention.md says: DefaultRetentionPolicy with
// NoDefaults, each present option set; ages in ms.
func retUpstream(nowMs int64, activeWindowMs, ageForceMs, minRetainedCommits *int64) syncstore.RetentionPolicy {
	pol := syncstore.DefaultRetentionPolicy
	pol.NoDefaults = true
	if activeWindowMs != nil {
		pol.ActiveWindow = time.Duration(*activeWindowMs) * time.Millisecond
	}
	if ageForceMs != nil {
		pol.ForceAge = time.Duration(*ageForceMs) * time.Millisecond
	}
	if minRetainedCommits != nil {
		pol.MinRetainedCommits = *minRetainedCommits
	}
	pol.Now = func() time.Time { return time.UnixMilli(nowMs) }
	return pol
}

func retInt(v int64) *int64 { return &v }

// Catches: a policy that cannot say what upstream's conformance catalog
// asks of a server's prune: {activeWindowMs: 0, ageForceMs: 0,
// minRetainedCommits: 0} takes the horizon to the max commit seq, the same
// with minRetainedCommits 1,000 holds it, and {minRetainedCommits: 1}
// (the rest absent: upstream's defaults) keeps the newest commit.
func retCatalogPolicies(t T, h Harness) {
	conn, s := retStore(t, h)
	const hour = int64(3600_000)
	zero := retInt(0)
	// lifecycle: three commits, a client at 2, an hour passes.
	retCommits(t, conn, "p1", 3)
	retClient(t, conn, "p1", "a", 2, 3000)
	rep := retPrune(t, s, "p1", retUpstream(3000+hour, zero, zero, zero))
	expectEqual(t, "RET-11: horizon after {0, 0, 0}", int64(3), rep.HorizonAfter)
	// One more commit, a client pulls at the horizon, another hour passes.
	winWrite(t, conn, "p1", winMeta(3000+hour), winUp(tTodos, todo("t4", "p7", "u1")))
	retClient(t, conn, "p1", "bd", 4, 3000+hour)
	rep = retPrune(t, s, "p1", retUpstream(3000+2*hour, zero, zero, retInt(1000)))
	expectEqual(t, "RET-11: horizon after {0, 0, 1000}", int64(3), rep.HorizonAfter)

	// window: eight recent commits, a client caught up a minute ago.
	retCommits(t, conn, "p2", 8)
	retClient(t, conn, "p2", "a", 8, 8000)
	rep = retPrune(t, s, "p2", retUpstream(68_000, nil, nil, retInt(1)))
	expectEqual(t, "RET-11: report after {minRetainedCommits: 1}", syncstore.PruneReport{NowMs: 68_000, MaxCommitSeq: 8,
		Floor: 8, Active: true, Target: 7, HorizonAfter: 7, CommitsPruned: 7}, rep)
	// Absent options are upstream's defaults: a policy of none keeps
	// the newest 1,000 (here all) commits.
	retCommits(t, conn, "p3", 8)
	rep = retPrune(t, s, "p3", retUpstream(68_000, nil, nil, nil))
	expectEqual(t, "RET-11: horizon with every option absent", int64(0), rep.HorizonAfter)
}
