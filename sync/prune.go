package sync

import (
	"context"
	"math"
	"time"
)

// RetentionPolicy configures Prune (rule group RET). Its zero value is
// DefaultRetentionPolicy: a zero field takes the default's value — unless
// NoDefaults is set, which makes a zero retention field mean zero
// (RET-11). Durations count in whole milliseconds (a positive duration
// under 1 ms is CodeInvalidArgument). docs/retention.md explains the
// defaults, how to choose others, and how upstream Syncular's retention
// options (activeWindowMs, ageForceMs, minRetainedCommits) map onto it.
type RetentionPolicy struct {
	// ActiveWindow: a client whose record was updated (by a pull) at most
	// this long ago is active, and its cursor holds the log (RET-1); with
	// no active client nothing but MinRetainedCommits holds it (RET-10).
	// Zero with NoDefaults: only records updated at now or later are
	// active. Must not be negative.
	ActiveWindow time.Duration
	// ForceAge: commits created longer ago than this may be pruned even
	// when an active cursor still needs them (RET-2); that client then
	// gets sync.cursor_expired and bootstraps. Zero with NoDefaults: every
	// commit created before now. Negative: never.
	ForceAge time.Duration
	// MinRetainedCommits: the newest commits always kept: the horizon
	// never passes MaxCommitSeq − MinRetainedCommits (RET-3), whatever
	// the cursors and ages. Zero with NoDefaults, or negative: no minimum.
	MinRetainedCommits int64
	// PushResultRetention: push results recorded longer ago than this are
	// deleted (RET-5). It is how long a client may retry an
	// unacknowledged push and still get its stored result: a retry after
	// it is applied again. Zero with NoDefaults: every result recorded
	// before now goes. Negative: kept forever.
	PushResultRetention time.Duration
	// ClientRecordRetention: client records not updated for longer than
	// this are deleted (RET-6); the client is then unknown until its next
	// pull. At least ActiveWindow, so an active client's record is never
	// deleted. Zero with NoDefaults: every record not updated since now
	// goes (ActiveWindow must then be zero too). Negative: kept forever.
	ClientRecordRetention time.Duration
	// Limit bounds one call (1…10,000, CodeInvalidLimit): each
	// transaction prunes at most Limit commits, and one call deletes at
	// most Limit push results and at most Limit client records (RET-4…RET-6).
	// 0 is the default, 1,000, with or without NoDefaults.
	Limit int
	// Now is the clock whose epoch milliseconds the rule compares with
	// commit, result and record times. nil: time.Now, with or without
	// NoDefaults.
	Now func() time.Time
	// NoDefaults makes a zero ActiveWindow, ForceAge, MinRetainedCommits,
	// PushResultRetention or ClientRecordRetention mean zero instead of
	// DefaultRetentionPolicy's value (RET-11). To leave some fields at
	// their defaults and set others to zero, start from a copy of
	// DefaultRetentionPolicy:
	//
	//	pol := sync.DefaultRetentionPolicy
	//	pol.NoDefaults, pol.ForceAge, pol.MinRetainedCommits = true, 0, 0
	NoDefaults bool
}

// DefaultRetentionPolicy holds the values of RetentionPolicy's zero
// fields: clients that pulled within 14 days hold the log; commits older
// than 30 days go regardless; the newest 1,000 commits always stay; push
// results and client records are kept 90 days (three times the force age:
// a client away that long has long lost its place in the log, and a push
// it still retries after 90 days is applied again); at most 1,000 of each
// per call. Upstream Syncular's pruneCommitLog uses the same three commit
// rules and the same first three values (docs/retention.md lists where the
// rules differ).
var DefaultRetentionPolicy = RetentionPolicy{
	ActiveWindow:          14 * 24 * time.Hour,
	ForceAge:              30 * 24 * time.Hour,
	MinRetainedCommits:    1000,
	PushResultRetention:   90 * 24 * time.Hour,
	ClientRecordRetention: 90 * 24 * time.Hour,
	Limit:                 1000,
}

// RecordRefresh returns the record refresh age (Store.SetRecordRefresh,
// PULL-13) that keeps RET-1 for a host pruning with p: one thousandth
// of the ActiveWindow p resolves to, in whole milliseconds (20 min 9.6 s
// for the default 14 days), so a client that pulled within 99.9 % of
// the window before a Prune is active in it. 0 (every pull writes) when
// that window is zero or p is invalid (RET-7).
func (p RetentionPolicy) RecordRefresh() time.Duration {
	r, err := p.resolve("RecordRefresh")
	if err != nil {
		return 0
	}
	return (r.ActiveWindow / 1000).Truncate(time.Millisecond)
}

// PruneReport says what one Prune call decided and did (RET-4).
type PruneReport struct {
	// NowMs is the time the rule was evaluated at (epoch ms).
	NowMs int64
	// MaxCommitSeq is the partition's max commit seq as Prune read it.
	MaxCommitSeq int64
	// Floor is the active-cursor floor: the smallest cursor at or above
	// HorizonBefore among active clients (RET-1); Active is false, and
	// Floor 0, when no active client holds the log — then no floor bounds
	// Target (RET-10).
	Floor  int64
	Active bool
	// ForceSeq is the newest commit created before NowMs − ForceAge (0:
	// none, or ForceAge disabled) (RET-2).
	ForceSeq int64
	// Target is the horizon the policy asks for: max(Floor, ForceSeq),
	// or with no active client the cap alone (RET-10), capped at
	// MaxCommitSeq − MinRetainedCommits and at least 0 (RET-3). Below
	// HorizonBefore it changes nothing: the horizon never drops.
	Target int64
	// HorizonBefore and HorizonAfter are the partition's horizon when
	// Prune started and when it ended; HorizonAfter may exceed Target when
	// another Prune raised it meanwhile.
	HorizonBefore, HorizonAfter int64
	// CommitsPruned, PushResultsDeleted and ClientRecordsDeleted count
	// what this call deleted.
	CommitsPruned        int64
	PushResultsDeleted   int64
	ClientRecordsDeleted int64
	// More reports that push-result or client-record collection stopped at
	// Limit: more may be due, call Prune again.
	More bool
}

// Prune applies the retention rule to partition (rule group RET):
//
//  1. Target horizon: the smallest cursor at or above the current horizon
//     among clients whose record was updated within ActiveWindow (RET-1),
//     raised to the newest commit created before now − ForceAge (RET-2),
//     capped at MaxCommitSeq − MinRetainedCommits (RET-3). With no such
//     client there is no floor: the target is the cap (RET-10), as in
//     upstream Syncular's pruneCommitLog.
//  2. The horizon is raised to the target and the commits through it are
//     pruned, in steps of at most Limit commits; each step raises the
//     horizon before it deletes, so a pull never meets a gap without
//     sync.cursor_expired (RET-9). The horizon never drops (HZ-1, RET-4);
//     commits left by an interrupted Prune are pruned first.
//  3. At most Limit push results recorded before now − PushResultRetention
//     (RET-5) and at most Limit client records not updated since now −
//     ClientRecordRetention (RET-6) are deleted, oldest first; More says
//     whether another call has more to do.
//
// Run it per partition on a schedule (docs/retention.md), from any number
// of instances at once: concurrent Prunes end as one would (RET-8). Input:
// V-1 and the policy (RET-7: CodeInvalidArgument, Limit → CodeInvalidLimit;
// RET-11 for NoDefaults);
// nothing is written on bad input. On a driver error Prune stops and
// returns the report of what it did so far with the error; everything it
// did is committed and a later call resumes.
func (s *Store) Prune(ctx context.Context, partition string, policy RetentionPolicy) (_ PruneReport, err error) {
	defer s.observe(&ctx, "Store.Prune", partition).done(&err)
	const op = "Prune"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition)); err != nil {
		return PruneReport{}, err
	}
	pol, err := policy.resolve(op)
	if err != nil {
		return PruneReport{}, err
	}
	s.lowerRecordRefresh(policy)
	rep := PruneReport{NowMs: pol.Now().UnixMilli()}
	if err := s.pruneCommits(ctx, partition, pol, &rep); err != nil {
		return rep, err
	}
	limit := int64(pol.Limit)
	if ms, on := pol.msOf(pol.PushResultRetention); on {
		n, err := s.conn.DeletePushResultsBefore(ctx, partition, subSat(rep.NowMs, ms), pol.Limit)
		rep.PushResultsDeleted, rep.More = n, n >= limit
		if err != nil {
			return rep, err
		}
	}
	if ms, on := pol.msOf(pol.ClientRecordRetention); on {
		n, err := s.conn.DeleteClientRecordsBefore(ctx, partition, subSat(rep.NowMs, ms), pol.Limit)
		rep.ClientRecordsDeleted, rep.More = n, rep.More || n >= limit
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pruneCommits is steps 1 and 2 of Prune.
func (s *Store) pruneCommits(ctx context.Context, p string, pol RetentionPolicy, rep *PruneReport) error {
	var err error
	if rep.HorizonBefore, err = s.conn.HorizonSeq(ctx, p); err != nil {
		return err
	}
	rep.HorizonAfter = rep.HorizonBefore
	if rep.MaxCommitSeq, err = s.conn.MaxCommitSeq(ctx, p); err != nil {
		return err
	}
	activeMs, _ := pol.msOf(pol.ActiveWindow)
	if rep.Floor, rep.Active, err = s.conn.MinClientCursor(ctx, p, subSat(rep.NowMs, activeMs), rep.HorizonBefore); err != nil {
		return err
	}
	if !rep.Active {
		rep.Floor = 0
	}
	if ms, on := pol.msOf(pol.ForceAge); on {
		if rep.ForceSeq, err = s.conn.CommitSeqBefore(ctx, p, subSat(rep.NowMs, ms)); err != nil {
			return err
		}
	}
	ceiling := rep.MaxCommitSeq
	if pol.MinRetainedCommits >= 0 {
		ceiling = max(0, rep.MaxCommitSeq-pol.MinRetainedCommits)
	}
	floor := rep.Floor
	if !rep.Active {
		floor = math.MaxInt64 // RET-10: no active cursor, no floor
	}
	rep.Target = min(max(floor, rep.ForceSeq), ceiling)

	// Commits an interrupted Prune left at or below the horizon go first,
	// then the horizon rises in steps of at most Limit commits, each
	// raised before its commits are deleted.
	through := rep.HorizonBefore
	if through > 0 {
		n, err := s.conn.PruneCommitsThrough(ctx, p, through)
		rep.CommitsPruned += n
		if err != nil {
			return err
		}
	}
	for through < rep.Target {
		next := min(rep.Target, through+int64(pol.Limit))
		if err := s.conn.SetHorizonSeq(ctx, p, next); err != nil {
			return err
		}
		rep.HorizonAfter = max(rep.HorizonAfter, next)
		n, err := s.conn.PruneCommitsThrough(ctx, p, next)
		rep.CommitsPruned += n
		if err != nil {
			return err
		}
		through = next
	}
	rep.HorizonAfter, err = s.conn.HorizonSeq(ctx, p)
	return err
}

// resolve checks the policy (RET-7) and fills its zero fields from
// DefaultRetentionPolicy: all of them, or with NoDefaults only Limit and
// Now (RET-11).
func (p RetentionPolicy) resolve(op string) (RetentionPolicy, error) {
	d := DefaultRetentionPolicy
	type dur struct {
		name string
		v    *time.Duration
		def  time.Duration
		neg  bool // a negative value is allowed (disables the rule)
	}
	for _, f := range []dur{
		{"ActiveWindow", &p.ActiveWindow, d.ActiveWindow, false},
		{"ForceAge", &p.ForceAge, d.ForceAge, true},
		{"PushResultRetention", &p.PushResultRetention, d.PushResultRetention, true},
		{"ClientRecordRetention", &p.ClientRecordRetention, d.ClientRecordRetention, true},
	} {
		switch v := *f.v; {
		case v == 0 && !p.NoDefaults:
			*f.v = f.def
		case v < 0 && !f.neg:
			return p, argErr(op, "RET-7", "RetentionPolicy.%s is negative", f.name)
		case v > 0 && v < time.Millisecond:
			return p, argErr(op, "RET-7", "RetentionPolicy.%s is under 1 ms", f.name)
		}
	}
	if p.MinRetainedCommits == 0 && !p.NoDefaults {
		p.MinRetainedCommits = d.MinRetainedCommits
	}
	if p.Limit == 0 {
		p.Limit = d.Limit
	}
	if err := checkLimit(op, "RetentionPolicy.Limit", p.Limit, MaxLimit); err != nil {
		return p, err
	}
	if p.ClientRecordRetention >= 0 && p.ClientRecordRetention < p.ActiveWindow {
		return p, argErr(op, "RET-7", "RetentionPolicy.ClientRecordRetention is shorter than ActiveWindow: active clients' records would be deleted")
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p, nil
}

// msOf returns d in whole milliseconds and whether the rule it sets is on
// (d ≥ 0).
func (RetentionPolicy) msOf(d time.Duration) (int64, bool) {
	return d.Milliseconds(), d >= 0
}

// subSat returns a − b (b ≥ 0), saturating at math.MinInt64.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
