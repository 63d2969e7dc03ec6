package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// The workloads of docs/performance.md (W1–W6), written against driver.Conn only, so
// every driver — bundled or third-party — is measured on the same work.
// Each returns what it did (counts) and how long its timed part took;
// setup is never timed. Each also checks that the work really happened
// (counts read back, sequences dense) and fails otherwise: a fast wrong
// answer is not a rate.

// The shape of the standard workload (docs/performance.md).
const (
	// BenchPartition is the partition W1–W5 write and read.
	BenchPartition = "bench"
	// BenchRowsPerCommit is the number of upserts in one W1/W6 commit.
	BenchRowsPerCommit = 10
	// BenchProjects and BenchOwners are how many distinct project and
	// owner values the rows cycle through (round robin on the row number).
	BenchProjects = 20
	BenchOwners   = 50

	benchTable         = tTodos
	benchClient        = "bench-client"
	benchBaseMs        = int64(1_700_000_000_000)
	w2Project          = "p7"
	w2PageChanges      = 500
	w3PageRows         = 1000
	w4Reactions        = 10_000
	w4PerTx            = 100
	w4Workers          = 4
	w4ClaimLimit       = 50
	w4LeaseMs          = 30_000
	w5Lookups          = 2000
	w5Limit            = 100
	w6Goroutines       = 8
	w6CommitsEach      = 500
	maxConflictRetries = 1000
)

var (
	projectNames = names("p", BenchProjects)
	ownerNames   = names("o", BenchOwners)
)

// rowID returns "t" and n zero-padded to 8 digits.
func rowID(n int) string {
	var b [9]byte
	b[0] = 't'
	for i := 8; i >= 1; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[:])
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// BenchTodo returns row number n of the workload's todos table: id "t"
// and n zero-padded to 8 digits (ids grow with time, as ULIDs do), project
// p<n mod 20>, owner o<n mod 50>. W1's commit i writes rows 10·i … 10·i+9.
// Exported so a driver's raw-loop reference can write exactly the same
// rows.
func BenchTodo(n int) driver.Row {
	id := rowID(n)
	project, owner := projectNames[n%BenchProjects], ownerNames[n%BenchOwners]
	return driver.Row{
		ID:            id,
		ServerVersion: 1,
		Scopes:        driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{
			"id": id, "title": "todo " + id, "done": n%3 == 0,
			"project_id": project, "owner_id": owner, "updated_at": benchBaseMs + int64(n),
		},
	}
}

// pushCommit writes one W1-shaped commit in its own Tx: rows first …
// first+9, AppendCommit, PutPushResult, Commit. An optimistic engine's
// CodeWriteConflict is retried (TX-9, SEQ-4). It returns the commit's seq.
func pushCommit(ctx context.Context, conn driver.Conn, partition string, first int, clientCommitID string) (int64, error) {
	for attempt := 0; ; attempt++ {
		seq, err := tryPushCommit(ctx, conn, partition, first, clientCommitID)
		if err == nil || !errors.Is(err, driver.ErrWriteConflict) || attempt >= maxConflictRetries {
			return seq, err
		}
	}
}

func tryPushCommit(ctx context.Context, conn driver.Conn, partition string, first int, clientCommitID string) (int64, error) {
	tx, err := conn.Begin(ctx, partition)
	if err != nil {
		return 0, fmt.Errorf("Begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	changes := make([]driver.Change, BenchRowsPerCommit)
	ops := make([]driver.OpResult, BenchRowsPerCommit)
	for k := range changes {
		r := BenchTodo(first + k)
		if err := tx.UpsertRow(ctx, benchTable, r); err != nil {
			return 0, fmt.Errorf("UpsertRow: %w", err)
		}
		changes[k] = upsertChange(benchTable, r)
		ops[k] = driver.OpResult{Status: driver.OpApplied}
	}
	at := benchBaseMs + int64(first)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: benchClient, ClientCommitID: clientCommitID,
		ActorID: "bench-actor", CreatedAtMs: at, Changes: changes})
	if err != nil {
		return 0, fmt.Errorf("AppendCommit: %w", err)
	}
	res := driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: at, Ops: ops}
	if err := tx.PutPushResult(ctx, benchClient, clientCommitID, res); err != nil {
		return 0, fmt.Errorf("PutPushResult: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("Commit: %w", err)
	}
	return seq, nil
}

// w1Result is one W1 run: its duration and the duration of each tenth.
type w1Result struct {
	commits int
	total   time.Duration
	tenths  []time.Duration // empty when commits < 10
	// cpuTenths is the process CPU time (user + system) of each tenth;
	// empty when commits < 10 or processCPU is unavailable.
	cpuTenths []time.Duration
	// ops is each commit's duration, in order.
	ops []time.Duration
}

// timed is what a read or concurrent workload did: how many items (changes,
// rows, lookups, commits) in how long (its timed part), and the duration
// of each of its operations (pages, lookups, commits).
type timed struct {
	n   int
	d   time.Duration
	ops []time.Duration
}

// rate is n per second of d.
func (t timed) rate() float64 { return float64(t.n) / max(t.d, time.Nanosecond).Seconds() }

// add pools u into t (counts, durations and every operation's duration).
func (t *timed) add(u timed) { t.n, t.d, t.ops = t.n+u.n, t.d+u.d, append(t.ops, u.ops...) }

// runW1 pushes commits commits to BenchPartition, one Tx each (W1), and
// checks that MaxCommitSeq is then commits (SEQ-1).
func runW1(ctx context.Context, conn driver.Conn, commits int) (w1Result, error) {
	res, err := timeCommits("W1", commits, func(i int) (int64, error) {
		return pushCommit(ctx, conn, BenchPartition, i*BenchRowsPerCommit, "c"+strconv.Itoa(i))
	})
	if err != nil {
		return res, err
	}
	max, err := conn.MaxCommitSeq(ctx, BenchPartition)
	if err != nil {
		return res, fmt.Errorf("W1 MaxCommitSeq: %w", err)
	}
	if max != int64(commits) {
		return res, fmt.Errorf("W1: MaxCommitSeq %d after %d commits (SEQ-1)", max, commits)
	}
	return res, nil
}

// expectedP7 is how many of the first rows rows are in project p7.
func expectedP7(rows int) int {
	n := 0
	for i := 0; i < rows; i++ {
		if projectNames[i%BenchProjects] == w2Project {
			n++
		}
	}
	return n
}

// runW2 pulls every change of project p7 from seq 0 to the max in pages
// of 500 changes (W2) and returns how many it matched, with each page's
// duration; it checks the count against what W1 wrote (commits·10 rows).
// The timed part includes the MaxCommitSeq read before the first page;
// the pages' durations do not.
func runW2(ctx context.Context, conn driver.Conn, commits int) (timed, error) {
	start := time.Now()
	through, err := conn.MaxCommitSeq(ctx, BenchPartition)
	if err != nil {
		return timed{}, fmt.Errorf("W2 MaxCommitSeq: %w", err)
	}
	want := expectedP7(commits * BenchRowsPerCommit)
	pages := make([]time.Duration, 0, want/w2PageChanges+2)
	matched, err := pullP7(ctx, conn, BenchPartition, through, &pages)
	d := time.Since(start)
	if err != nil {
		return timed{}, fmt.Errorf("W2 %w", err)
	}
	if matched != want {
		return timed{}, fmt.Errorf("W2 matched %d changes, want %d (WIN-1…WIN-5)", matched, want)
	}
	return timed{matched, d, pages}, nil
}

// pullP7 reads every change of project p7 in partition with seq ≤ through
// in pages of 500 changes (W2's read) and returns how many matched,
// appending each page's duration to *pages.
func pullP7(ctx context.Context, conn driver.Conn, partition string, through int64, pages *[]time.Duration) (int, error) {
	matched, after := 0, int64(0)
	clk := startClock()
	for {
		page, err := conn.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: benchTable,
			Filter: driver.ScopeFilter{"project": {w2Project}}, AfterSeq: after, ThroughSeq: through, LimitChanges: w2PageChanges})
		clk.lap(pages)
		if err != nil {
			return 0, fmt.Errorf("ReadCommitWindow: %w", err)
		}
		n := 0
		for _, c := range page {
			n += len(c.Changes)
			after = c.Seq
		}
		matched += n
		if n < w2PageChanges { // WIN-5: a short page means nothing else matches
			return matched, nil
		}
	}
}

// runW3 scans every current row of project p7 in pages of 1,000 (W3),
// with each page's duration, and checks the count against what W1 wrote.
func runW3(ctx context.Context, conn driver.Conn, commits int) (timed, error) {
	want := expectedP7(commits * BenchRowsPerCommit)
	pages := make([]time.Duration, 0, want/w3PageRows+2)
	start := time.Now()
	total, err := scanP7(ctx, conn, BenchPartition, &pages)
	d := time.Since(start)
	if err != nil {
		return timed{}, fmt.Errorf("W3 %w", err)
	}
	if total != want {
		return timed{}, fmt.Errorf("W3 scanned %d rows, want %d (SCAN-1…SCAN-3)", total, want)
	}
	return timed{total, d, pages}, nil
}

// scanP7 scans every current row of project p7 in partition in pages of
// 1,000 (W3's read) and returns how many it read, appending each page's
// duration to *pages.
func scanP7(ctx context.Context, conn driver.Conn, partition string, pages *[]time.Duration) (int, error) {
	total, after := 0, ""
	clk := startClock()
	for {
		rows, err := conn.ScanRows(ctx, partition, driver.ScanQuery{Table: benchTable,
			Filter: driver.ScopeFilter{"project": {w2Project}}, AfterRowID: after, Limit: w3PageRows})
		clk.lap(pages)
		if err != nil {
			return 0, fmt.Errorf("ScanRows: %w", err)
		}
		total += len(rows)
		if len(rows) < w3PageRows { // SCAN-3
			return total, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// runW5 makes 2,000 lookups through the declared index by_owner with
// owners drawn from a fixed-seed generator, limit 100 (W5), with each
// lookup's duration. Each must return min(100, rows of that owner) rows.
func runW5(ctx context.Context, conn driver.Conn, commits int) (timed, error) {
	ix, ok := conn.(driver.IndexLookupConn)
	if !ok {
		return timed{}, errNotImplemented(driver.CapIndexLookup)
	}
	perOwner := commits * BenchRowsPerCommit / BenchOwners
	rng := rand.New(rand.NewPCG(5, 5))
	owners := make([]int, w5Lookups)
	for i := range owners {
		owners[i] = rng.IntN(BenchOwners)
	}
	lookups := make([]time.Duration, 0, w5Lookups)
	start := time.Now()
	clk := clockAt(start)
	for _, o := range owners {
		rows, err := ix.ScanRowsByIndex(ctx, BenchPartition, driver.IndexQuery{Table: benchTable, Index: "by_owner",
			Values: []any{ownerNames[o]}, Limit: w5Limit})
		clk.lap(&lookups)
		if err != nil {
			return timed{}, fmt.Errorf("W5 ScanRowsByIndex: %w", err)
		}
		if want := min(w5Limit, perOwner); len(rows) != want {
			return timed{}, fmt.Errorf("W5: a lookup returned %d rows, want %d (IXL-1)", len(rows), want)
		}
	}
	return timed{w5Lookups, time.Since(start), lookups}, nil
}

// runW6 runs 8 goroutines × 500 W1-shaped commits, each goroutine on its
// own partition (shared=false, W6a) or all on one (shared=true, W6b), and
// checks that every partition's sequence is dense 1…N with no duplicate
// (SEQ-1, SEQ-4), both from the seqs AppendCommit returned and from
// MaxCommitSeq. Each commit's duration is returned (all goroutines'): in
// W6b it includes the wait for the partition's write lock, so its tail is
// what one hot partition does to the writers queued on it.
func runW6(ctx context.Context, conn driver.Conn, shared bool) (timed, error) {
	return runW6Across(ctx, []driver.Conn{conn}, shared)
}

// runW6Across is runW6 with goroutine g pushing through conns[g mod
// len(conns)]: instances of one store on different nodes of a cluster.
func runW6Across(ctx context.Context, conns []driver.Conn, shared bool) (timed, error) {
	conn := conns[0]
	partition := func(g int) string {
		if shared {
			return BenchPartition
		}
		return BenchPartition + "-" + strconv.Itoa(g)
	}
	seqs := make([][]int64, w6Goroutines)
	errs := make([]error, w6Goroutines)
	ops := make([][]time.Duration, w6Goroutines)
	var wg gosync.WaitGroup
	start := time.Now()
	for g := 0; g < w6Goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops[g] = make([]time.Duration, 0, w6CommitsEach)
			clk := startClock()
			for j := 0; j < w6CommitsEach; j++ {
				first := (g*w6CommitsEach + j) * BenchRowsPerCommit
				seq, err := pushCommit(ctx, conns[g%len(conns)], partition(g), first, "g"+strconv.Itoa(g)+"-c"+strconv.Itoa(j))
				clk.lap(&ops[g])
				if err != nil {
					errs[g] = fmt.Errorf("W6 goroutine %d commit %d: %w", g, j, err)
					return
				}
				seqs[g] = append(seqs[g], seq)
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return timed{}, err
	}
	if shared {
		var all []int64
		for _, s := range seqs {
			all = append(all, s...)
		}
		if err := checkDense(ctx, conn, BenchPartition, all); err != nil {
			return timed{}, err
		}
	} else {
		for g, s := range seqs {
			if err := checkDense(ctx, conn, partition(g), s); err != nil {
				return timed{}, err
			}
		}
	}
	return timed{w6Goroutines * w6CommitsEach, d, slices.Concat(ops...)}, nil
}

// checkDense checks that seqs holds exactly 1…len(seqs) and that the
// partition's MaxCommitSeq is len(seqs) (SEQ-4).
func checkDense(ctx context.Context, conn driver.Conn, partition string, seqs []int64) error {
	n := int64(len(seqs))
	seen := make([]bool, n+1)
	for _, s := range seqs {
		if s < 1 || s > n || seen[s] {
			return fmt.Errorf("W6: commit seqs are not dense 1…%d: got %d twice or out of range (SEQ-4)", n, s)
		}
		seen[s] = true
	}
	max, err := conn.MaxCommitSeq(ctx, partition)
	if err != nil {
		return fmt.Errorf("W6 MaxCommitSeq: %w", err)
	}
	if max != n {
		return fmt.Errorf("W6: MaxCommitSeq %d after %d commits (SEQ-4)", max, n)
	}
	return nil
}

// errNotImplemented reports a workload whose capability the driver lacks.
type notImplementedError struct{ capability driver.Capability }

func (e notImplementedError) Error() string {
	return "not implemented: capability " + string(e.capability)
}

func errNotImplemented(c driver.Capability) error { return notImplementedError{c} }
