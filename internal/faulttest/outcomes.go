package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
)

// TB is the part of testing.TB the outcome storm uses; *testing.T and
// conformance.T satisfy it.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// OutcomeStorm pushes under random short deadlines through a bare
// driver.Conn and checks that every Commit told the truth (TX-10): a push
// whose Commit returned nil landed, a push that failed with any other
// code than commit_outcome_unknown left nothing, and a push whose outcome
// was unknown resolves by reading its push result. It is bounded by
// counts: the deadlines only choose where each push is cut.
type OutcomeStorm struct {
	// Pushes is how many pushes are made (push i is Rows(i), Commit(i)
	// and Result(i) in partition Partitions[i % len]).
	Pushes int
	// Workers push at once (at least 1).
	Workers int
	// Partitions receive the pushes in turn (default "P").
	Partitions []string
	// MaxDeadline: each push's context ends after a random time in
	// [0, MaxDeadline). Zero: twice the median time of calibratePushes
	// pushes made first without a deadline, in a partition of their own
	// (CalibrationPartition), so the deadlines cut pushes at every step on
	// an engine of any speed.
	MaxDeadline time.Duration
	// NoDeadlineEvery: one push in NoDeadlineEvery has no deadline (0:
	// every push has one).
	NoDeadlineEvery int
	// Seed seeds the random deadlines.
	Seed uint64
}

// OutcomeCounts is what an OutcomeStorm saw.
type OutcomeCounts struct {
	Landed           int // Commit returned nil …
	LandedLate       int // … of which after its context had ended
	NotWritten       int // any other error than commit_outcome_unknown …
	NotWrittenCommit int // … of which Commit's (or CommitRejected's) own
	Unknown          int // commit_outcome_unknown …
	UnknownLanded    int // … of which the push result read showed landed
}

func (c OutcomeCounts) String() string {
	return fmt.Sprintf("%d landed (nil; %d of them returned after the context ended), %d not written (%d of them at Commit), %d unknown (%d of them landed)",
		c.Landed, c.LandedLate, c.NotWritten, c.NotWrittenCommit, c.Unknown, c.UnknownLanded)
}

// CalibrationPartition receives the pushes that measure MaxDeadline when
// it is zero.
const CalibrationPartition = "calibrate"

const calibratePushes = 7

// calibrate returns twice the median time of a push on c.
func calibrate(t TB, c driver.Conn, first int) time.Duration {
	t.Helper()
	took := make([]time.Duration, calibratePushes)
	for k := range took {
		start := time.Now()
		if _, err := push(context.Background(), c, CalibrationPartition, first+k); err != nil {
			t.Fatalf("a push without a deadline failed: %v", err)
		}
		took[k] = time.Since(start)
	}
	slices.Sort(took)
	return 2 * took[len(took)/2]
}

// outcome is what a push's calls said about it.
type outcome int

const (
	saidLanded outcome = iota + 1
	saidNotWritten
	saidUnknown
)

// Run makes the storm's pushes on c, checks every outcome and returns
// the counts.
func (s OutcomeStorm) Run(t TB, c driver.Conn) OutcomeCounts {
	t.Helper()
	parts := s.Partitions
	if len(parts) == 0 {
		parts = []string{"P"}
	}
	if s.MaxDeadline == 0 {
		s.MaxDeadline = calibrate(t, c, s.Pushes)
		t.Logf("deadlines drawn from [0, %s)", s.MaxDeadline)
	}
	said := make([]outcome, s.Pushes)
	atCommit := make([]bool, s.Pushes)
	late := make([]bool, s.Pushes)
	var next atomic.Int64
	var wg gosync.WaitGroup
	for w := range max(s.Workers, 1) {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(s.Seed, uint64(w)))
			for i := int(next.Add(1) - 1); i < s.Pushes; i = int(next.Add(1) - 1) {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if s.NoDeadlineEvery == 0 || rng.IntN(s.NoDeadlineEvery) != 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.Int64N(int64(max(s.MaxDeadline, 1)))))
				}
				commitErr, err := push(ctx, c, parts[i%len(parts)], i)
				late[i] = ctx.Err() != nil
				cancel()
				switch {
				case err == nil:
					said[i] = saidLanded
				case driver.CodeOf(err) == driver.CodeCommitOutcomeUnknown:
					said[i] = saidUnknown
				default:
					said[i] = saidNotWritten
					atCommit[i] = commitErr
				}
			}
		})
	}
	wg.Wait()
	var n OutcomeCounts
	for i, o := range said {
		switch o {
		case saidLanded:
			n.Landed++
			if late[i] {
				n.LandedLate++
			}
		case saidNotWritten:
			n.NotWritten++
			if atCommit[i] {
				n.NotWrittenCommit++
			}
		case saidUnknown:
			n.Unknown++
		}
	}
	for k, p := range parts {
		n.UnknownLanded += checkOutcomes(t, c, p, s.Pushes, func(i int) (outcome, bool) {
			return said[i], i%len(parts) == k
		})
	}
	return n
}

// Push makes push i (Rows(i), Commit(i), Result(i)) in partition and
// commits it.
func Push(ctx context.Context, c driver.Conn, partition string, i int) error {
	_, err := push(ctx, c, partition, i)
	return err
}

// push makes push i in partition under ctx: its two rows, its commit,
// its push result, Commit. commitErr reports that the error (if any) came
// from Commit itself.
func push(ctx context.Context, c driver.Conn, partition string, i int) (commitErr bool, err error) {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := StagePush(ctx, tx, i); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// StagePush writes push i into tx: Rows(i), Commit(i) and Result(i).
func StagePush(ctx context.Context, tx driver.Tx, i int) error {
	for _, r := range Rows(i) {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return err
		}
	}
	want := Commit(i, 0)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: want.ClientID, ClientCommitID: want.ClientCommitID,
		CreatedAtMs: want.CreatedAtMs, Changes: want.Changes})
	if err != nil {
		return err
	}
	return tx.PutPushResult(ctx, "f", Key(i), Result(i, seq))
}

// checkOutcomes checks partition after pushes 0…n-1: every push whose
// calls said it landed is there whole (its commit in the log, its rows,
// its push result naming that commit), every push said not written left
// nothing, and every unknown one resolves by a push result read that
// agrees with the log. mine(i) tells what push i's calls said and whether
// it was made in this partition. It returns how many unknown pushes
// landed.
func checkOutcomes(t TB, c driver.Conn, partition string, n int, mine func(i int) (outcome, bool)) int {
	t.Helper()
	ctx := context.Background()
	win, err := c.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatalf("read the log: %v", err)
	}
	inLog := map[string]driver.Commit{}
	for _, cm := range win {
		if _, dup := inLog[cm.ClientCommitID]; dup {
			t.Fatalf("TX-10: %s landed twice", cm.ClientCommitID)
		}
		inLog[cm.ClientCommitID] = cm
	}
	unknownLanded := 0
	var lies []string
	for i := range n {
		said, here := mine(i)
		cm, logged := inLog[Key(i)]
		r, stored, err := c.GetPushResult(ctx, partition, "f", Key(i))
		if err != nil {
			t.Fatalf("read push %d's result: %v", i, err)
		}
		if !here {
			continue
		}
		switch {
		case said == saidLanded && !logged:
			lies = append(lies, fmt.Sprintf("push %d: Commit returned nil, but its commit is not in the log", i))
		case said == saidNotWritten && (logged || stored):
			lies = append(lies, fmt.Sprintf("push %d: the error said nothing was written, but its commit (%v) or push result (%v) is there", i, logged, stored))
		case said == saidUnknown && logged:
			unknownLanded++
		}
		if logged != stored {
			t.Fatalf("push %d: its commit is in the log: %v, its push result is stored: %v: not whole (TX-2)", i, logged, stored)
		}
		for _, want := range Rows(i) {
			got, found, err := c.GetRow(ctx, partition, "todos", want.ID)
			if err != nil {
				t.Fatalf("read push %d's row: %v", i, err)
			}
			if found != logged {
				t.Fatalf("push %d: its commit is in the log: %v, its row %s exists: %v: not whole (TX-2)", i, logged, want.ID, found)
			}
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); found && d != "" {
				t.Fatalf("push %d: row %s (-want +got):\n%s", i, want.ID, d)
			}
		}
		if !logged {
			continue
		}
		if d := cmp.Diff(Commit(i, cm.Seq), cm, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("commit %d is not push %d whole (-want +got):\n%s", cm.Seq, i, d)
		}
		if d := cmp.Diff(Result(i, cm.Seq), r, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("push %d (commit %d): push result (-want +got):\n%s", i, cm.Seq, d)
		}
	}
	slices.Sort(lies)
	for _, l := range lies {
		t.Errorf("TX-10: %s", l)
	}
	return unknownLanded
}
