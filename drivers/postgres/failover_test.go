package postgres

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// The failover lane (docs/scaling.md): a primary and a standby under
// pg_auto_failover, started by .ci/pgfailover.sh, whose multi-host DSN
// (target_session_attrs=read-write) SYNCSTORE_TEST_PG_FAILOVER holds.
// Without it the tests skip, loudly; SYNCSTORE_TEST_REQUIRE_PG_FAILOVER=1
// (set by .ci/run) makes that a failure. The tests kill the lane's
// primary, and heal the lane (the killed node rejoins as the standby)
// before they start.

// failoverScript is the lane's script, relative to this package.
const failoverScript = "../../.ci/pgfailover.sh"

func failoverLane(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("SYNCSTORE_TEST_PG_FAILOVER")
	if dsn == "" {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_PG_FAILOVER") == "1" {
			t.Fatal("SYNCSTORE_TEST_PG_FAILOVER is unset but SYNCSTORE_TEST_REQUIRE_PG_FAILOVER=1: start the lane with .ci/pgfailover.sh start")
		}
		t.Skip("SKIPPED: no failover lane (set SYNCSTORE_TEST_PG_FAILOVER from `.ci/pgfailover.sh start`)")
	}
	return dsn
}

// pgfailover runs the lane's script with args and returns its stdout.
func pgfailover(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{failoverScript}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pgfailover.sh %v: %v\n%s%s", args, err, out, stderr.String())
	}
	t.Logf("pgfailover.sh %v: %s", args, strings.TrimSpace(stderr.String()))
	return strings.TrimSpace(string(out))
}

// TestPGFailoverSync: the standby is synchronous (in pg_auto_failover's
// write quorum: synchronous_standby_names = 'ANY 1 (standby)',
// synchronous_commit = on, so a commit is acknowledged once the standby
// flushed it). A push storm through sync.Open on the multi-host DSN; the
// primary is SIGKILLed after a third of the pushes; the monitor promotes
// the standby. Every acknowledged push must be on the new primary exactly
// once, with its push result and its acknowledged seq; every partition's
// seqs are dense; the store reconnects by itself; a subscriber gets wakes
// again after the failover, up to every partition's last commit.
func TestPGFailoverSync(t *testing.T) {
	r := failoverRun(t, "sync")
	if r.lost != 0 || r.duplicates != 0 || r.present != r.acknowledged || r.acknowledged != r.total {
		t.Errorf("synchronous standby: %s; want every push acknowledged and present once", r)
	}
}

// TestPGFailoverAsync is the same storm with the standby asynchronous
// (replication-quorum false: synchronous_standby_names = ”): a commit is
// acknowledged before the standby has it, so the failover may lose
// acknowledged pushes. It is a measurement: it logs what was lost and
// fails only on what no mode may do — a push applied twice, a hole in a
// partition's seqs, a store that does not reconnect.
func TestPGFailoverAsync(t *testing.T) {
	r := failoverRun(t, "async")
	if r.lost > 0 {
		t.Logf("asynchronous standby: %d acknowledged pushes lost by the failover (expected in this mode)", r.lost)
	}
}

// Storm shape: failoverParts partitions, failoverWriters writers per
// partition, failoverPer pushes per writer and more until
// failoverAfterKill of the writer's pushes began after the kill;
// replication is stalled after a third of failoverPer × writers were
// acknowledged, the primary killed after failoverStalled more (or 500
// polls: a synchronous standby lets none through).
const (
	failoverWriters   = 3
	failoverPer       = 40
	failoverStalled   = 40
	failoverAfterKill = 5
)

var failoverParts = []string{"F0", "F1", "F2", "F3"}

// failoverResult is what one failover run saw.
type failoverResult struct {
	total        int // pushes sent (keys), each re-pushed until answered
	acknowledged int // pushes answered with their result
	present      int // acknowledged pushes on the new primary, at their acknowledged seq
	lost         int // acknowledged pushes absent from the new primary
	duplicates   int // keys committed more than once
	repushed     int // pushes that failed at least once and were sent again with the same key
	unknown      int // of those, pushes answered commit_outcome_unknown at least once
	replayed     int // of those, pushes whose final answer was a replay: an earlier attempt had landed
	afterStall   int // pushes acknowledged while replication stalled, before the kill was sent
	outage       time.Duration
	wakesAfter   int // wakes received after the kill
}

func (r failoverResult) String() string {
	return fmt.Sprintf("%d pushes: %d acknowledged (%d while replication stalled), %d present, %d lost, %d duplicates; %d re-pushed (%d answered commit_outcome_unknown, %d settled as replays of an attempt that had landed); write outage %d ms; %d wakes after the kill",
		r.total, r.acknowledged, r.afterStall, r.present, r.lost, r.duplicates, r.repushed, r.unknown, r.replayed, r.outage.Milliseconds(), r.wakesAfter)
}

// ack is one acknowledged push.
type ack struct {
	seq              int64
	at               time.Time
	failed, unknown  bool // an attempt failed; one answered commit_outcome_unknown
	replayed         bool
	firstFailAttempt time.Time
}

func failoverPushRequest(key string) sync.PushRequest {
	r := todoRow("r-"+key, "p1", "o1")
	return sync.PushRequest{ClientID: "fw", ClientCommitID: key, ActorID: "a",
		Ops: []sync.PushOp{{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Values: r.Values}}}
}

// failoverRun heals the lane, sets the standby's mode, runs the storm
// with the kill and checks what no mode may break; it returns the figures.
func failoverRun(t *testing.T, mode string) failoverResult {
	base := failoverLane(t)
	pgfailover(t, "heal")
	pgfailover(t, "mode", mode)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dsn, drop, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	awaitDatabaseOnEveryNode(t, ctx, dsn)
	st, err := sync.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}

	// The subscriber: every wake, with when it came.
	subCtx, subCancel := context.WithCancel(ctx)
	defer subCancel()
	wakes, err := st.SubscribeCommits(subCtx)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wmu       gosync.Mutex
		woke      = map[string]int64{} // partition → highest seq woken for
		wakeTimes []time.Time
	)
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for w := range wakes {
			wmu.Lock()
			woke[w.Partition] = max(woke[w.Partition], w.CommitSeq)
			wakeTimes = append(wakeTimes, time.Now())
			wmu.Unlock()
		}
	}()

	total := len(failoverParts) * failoverWriters * failoverPer
	var r failoverResult
	var (
		mu       gosync.Mutex
		acks     = map[string]map[string]ack{} // partition → key → ack
		failures []time.Time
		landed   atomic.Int64
	)
	for _, p := range failoverParts {
		acks[p] = map[string]ack{}
	}
	// The controller: after a third of the pushes, stall replication (the
	// primary's walsenders stopped: the standby lags, as over a slow
	// link), let up to failoverStalled more pushes be acknowledged
	// (polls bound the wait: a synchronous standby acknowledges none),
	// then SIGKILL the primary.
	killedAt := make(chan time.Time, 1)
	var killed atomic.Bool
	var stalledAt atomic.Int64
	var ctl gosync.WaitGroup
	ctl.Go(func() {
		for landed.Load() < int64(total/3) && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		if ctx.Err() != nil {
			return
		}
		pgfailover(t, "stall-replication")
		stalledAt.Store(landed.Load())
		for range 500 {
			if landed.Load() >= stalledAt.Load()+failoverStalled || ctx.Err() != nil {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		r.afterStall = int(landed.Load() - stalledAt.Load())
		at := time.Now()
		pgfailover(t, "kill-primary")
		killed.Store(true)
		killedAt <- at
	})
	var wg gosync.WaitGroup
	errs := make(chan error, len(failoverParts)*failoverWriters)
	for _, p := range failoverParts {
		for w := range failoverWriters {
			wg.Go(func() {
				// failoverPer pushes, and on until failoverAfterKill
				// of them began after the kill.
				after := 0
				for i := 0; i < failoverPer || after < failoverAfterKill; i++ {
					if killed.Load() {
						after++
					}
					key := fmt.Sprintf("%s-w%d-%03d", p, w, i)
					a, err := pushUntilAnswered(ctx, st, p, key, func(at time.Time) {
						mu.Lock()
						failures = append(failures, at)
						mu.Unlock()
					})
					if err != nil {
						errs <- fmt.Errorf("%s: %w", key, err)
						return
					}
					mu.Lock()
					acks[p][key] = a
					mu.Unlock()
					landed.Add(1)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		cancel()
		ctl.Wait()
		t.Fatal(err)
	}
	ctl.Wait()
	for _, byKey := range acks {
		r.total += len(byKey)
	}
	var kill time.Time
	select {
	case kill = <-killedAt:
	default:
		t.Fatal("the primary was not killed")
	}

	var firstFail time.Time
	for _, f := range failures {
		if firstFail.IsZero() || f.Before(firstFail) {
			firstFail = f
		}
	}
	var firstAckAfter time.Time
	for _, byKey := range acks {
		for _, a := range byKey {
			r.acknowledged++
			if a.failed {
				r.repushed++
			}
			if a.unknown {
				r.unknown++
			}
			if a.failed && a.replayed {
				r.replayed++
			}
			if !firstFail.IsZero() && a.at.After(firstFail) && (firstAckAfter.IsZero() || a.at.Before(firstAckAfter)) {
				firstAckAfter = a.at
			}
		}
	}
	if firstFail.IsZero() {
		t.Error("no push failed: the kill did not interrupt the storm")
	} else {
		r.outage = firstAckAfter.Sub(firstFail)
	}

	// The new primary: every partition dense 1…N, each key once, every
	// acknowledged key at its acknowledged seq with its push result.
	heads := map[string]int64{}
	for _, p := range failoverParts {
		commits := readAllCommits(t, ctx, st, p)
		head, err := st.Conn().MaxCommitSeq(ctx, p)
		if err != nil {
			t.Fatalf("%s: MaxCommitSeq after the failover: %v", p, err)
		}
		heads[p] = head
		if int64(len(commits)) != head {
			t.Errorf("%s: %d commits in the log, head %d", p, len(commits), head)
		}
		at := map[string]int64{}
		for i, c := range commits {
			if c.Seq != int64(i+1) {
				t.Errorf("%s: commit %d has seq %d: seqs not dense", p, i+1, c.Seq)
			}
			if _, dup := at[c.ClientCommitID]; dup {
				r.duplicates++
				t.Errorf("%s: %s committed twice", p, c.ClientCommitID)
			}
			at[c.ClientCommitID] = c.Seq
			res, ok, err := st.Conn().GetPushResult(ctx, p, "fw", c.ClientCommitID)
			if err != nil || !ok || res.CommitSeq != c.Seq {
				t.Errorf("%s: push result of %s = %+v, %v, %v; want commit %d", p, c.ClientCommitID, res, ok, err, c.Seq)
			}
		}
		for key, a := range acks[p] {
			switch seq, ok := at[key]; {
			case !ok:
				if r.lost++; r.lost <= 5 {
					t.Logf("%s: acknowledged push %s (seq %d) is not on the new primary", p, key, a.seq)
				}
			case seq != a.seq:
				t.Errorf("%s: %s acknowledged at seq %d, found at %d", p, key, a.seq, seq)
			default:
				r.present++
			}
		}
	}

	// The subscriber reconnected by itself: it is woken up to every
	// partition's head (bounded by polls).
	var missing []string
	for range 400 {
		missing = missing[:0]
		wmu.Lock()
		for _, p := range failoverParts {
			if woke[p] < heads[p] {
				missing = append(missing, fmt.Sprintf("%s woken to %d of %d", p, woke[p], heads[p]))
			}
		}
		for _, w := range wakeTimes {
			if w.After(kill) {
				r.wakesAfter++
			}
		}
		wmu.Unlock()
		if len(missing) == 0 && r.wakesAfter > 0 {
			break
		}
		r.wakesAfter = 0
		time.Sleep(50 * time.Millisecond)
	}
	if len(missing) > 0 || r.wakesAfter == 0 {
		t.Errorf("fanout after the failover: %d wakes after the kill; %s", r.wakesAfter, strings.Join(missing, ", "))
	}
	subCancel()
	<-subDone

	// The store takes the next push, and a replay is answered, not applied.
	if _, err := st.Push(ctx, failoverParts[0], failoverPushRequest("after")); err != nil {
		t.Errorf("push after the failover: %v", err)
	}
	if resp, err := st.Push(ctx, failoverParts[0], failoverPushRequest("after")); err != nil || !resp.Replayed {
		t.Errorf("replayed push after the failover: %+v, %v; want Replayed (PUSH-1)", resp, err)
	}
	t.Logf("%s standby: %s", mode, r)
	return r
}

// pushUntilAnswered sends push key until Push answers it: after an error
// that says the engine failed (unavailable) or that the outcome is
// unknown, the same push (same client commit id) is sent again, with
// capped backoff; it is idempotent (PUSH-1), so a landed attempt is
// answered as a replay. onFail records each failed attempt's time. Any
// other error is returned.
func pushUntilAnswered(ctx context.Context, st *sync.Store, p, key string, onFail func(time.Time)) (ack, error) {
	var a ack
	wait := 5 * time.Millisecond
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		resp, err := st.Push(actx, p, failoverPushRequest(key))
		cancel()
		if err == nil {
			a.seq, a.at, a.replayed = resp.CommitSeq, time.Now(), resp.Replayed
			if resp.CommitSeq < 1 {
				return a, fmt.Errorf("answered %+v: not applied", resp.PushResult)
			}
			return a, nil
		}
		now := time.Now()
		onFail(now)
		if !a.failed {
			a.failed, a.firstFailAttempt = true, now
		}
		switch sync.CodeOf(err) {
		case sync.CodeCommitOutcomeUnknown:
			a.unknown = true
		case sync.CodeUnavailable:
		default:
			return a, err
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
	return a, ctx.Err()
}

// awaitDatabaseOnEveryNode waits (bounded by polls) until every host of
// the multi-host dsn lets a session into its database: pgx gives up on a
// DSN when one host answers 3D000 (no such database), which a standby
// that has not replayed CREATE DATABASE yet does.
func awaitDatabaseOnEveryNode(t *testing.T, ctx context.Context, dsn string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}
	hosts = append(hosts, cfg.Fallbacks...)
	for _, h := range hosts {
		one := cfg.Copy()
		one.Host, one.Port, one.TLSConfig, one.Fallbacks, one.ValidateConnect = h.Host, h.Port, h.TLSConfig, nil, nil
		for i := 0; ; i++ {
			c, err := pgx.ConnectConfig(ctx, one)
			if err == nil {
				_ = c.Close(ctx)
				break
			}
			if i == 200 {
				t.Fatalf("%s:%d: the database does not appear: %v", h.Host, h.Port, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// readAllCommits reads partition p's whole log.
func readAllCommits(t *testing.T, ctx context.Context, st *sync.Store, p string) []sync.Commit {
	t.Helper()
	var out []sync.Commit
	var after int64
	for {
		cs, err := st.ReadCommits(ctx, p, sync.CommitsQuery{AfterSeq: after, ThroughSeq: 1 << 40, LimitChanges: 1000})
		if err != nil {
			t.Fatalf("%s: ReadCommits after the failover: %v", p, err)
		}
		out = append(out, cs...)
		if len(cs) == 0 {
			return slices.Clip(out)
		}
		after = cs[len(cs)-1].Seq
	}
}
