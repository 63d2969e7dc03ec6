package conformance

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Raw-loop references (docs/performance.md: "a raw loop issuing the minimum SQL a
// commit needs on the same engine — the physical ceiling for that
// engine"). A driver's raw loop writes W1's commits into the very tables
// its driver created, with the fewest statements and round trips the
// engine allows, through the same client library, and no validation or
// abstraction; W1's figure divided by the raw loop's is then the cost of
// the driver itself.
//
// This file holds everything such a loop shares with every other one, so
// that each driver's loop is only its SQL: the commit W1 writes
// (W1Commit, and the exact bytes the driver codecs store for it), the
// timing (per tenth, as W1), the benchmark wrapper reporting W1's metric
// names (so benchstat lines the two up), and the final check that the
// loop wrote what W1 writes, read back through the driver. It is exported
// so a third-party driver can measure itself against its engine the same
// way:
//
//	func BenchmarkRawLoop(b *testing.B) {
//		conformance.RunRawLoop(b, func(b *testing.B) conformance.RawLoop { … })
//	}

// BenchCommit is W1's commit number Index (0-based) as a raw loop writes
// it: exactly what the workload's pushCommit passes to the driver.
type BenchCommit struct {
	Index int
	// Seq is the commit seq W1 expects: Index + 1 (SEQ-1). A raw loop
	// allocates its seq in SQL like a driver does; RunRawLoop checks the
	// two agree.
	Seq            int64
	ClientID       string // "bench-client"
	ClientCommitID string // "c" + Index in decimal
	ActorID        string // "bench-actor"
	// CreatedAtMs is the commit's time and its push result's
	// recordedAtMs: 1,700,000,000,000 + 10·Index (epoch ms).
	CreatedAtMs int64
	// Rows are BenchTodo(10·Index) … BenchTodo(10·Index + 9), in order:
	// BenchRowsPerCommit fresh rows of table "todos", version 1, each
	// also a change (upsert, row version 1) of the commit at its position.
	Rows []driver.Row
}

// W1Commit returns W1's commit i (0 ≤ i).
func W1Commit(i int) BenchCommit {
	first := i * BenchRowsPerCommit
	rows := make([]driver.Row, BenchRowsPerCommit)
	for k := range rows {
		rows[k] = BenchTodo(first + k)
	}
	return BenchCommit{Index: i, Seq: int64(i + 1), ClientID: benchClient, ClientCommitID: "c" + strconv.Itoa(i),
		ActorID: "bench-actor", CreatedAtMs: benchBaseMs + int64(first), Rows: rows}
}

// BenchTable is the table W1 writes ("todos" of TestSchema).
const BenchTable = benchTable

// AppendValuesJSON appends driver.EncodeValues(row.Values) to buf, byte
// for byte: the change-log form of a row's values every bundled driver
// stores. For a BenchTodo row it writes the bytes directly (no
// reflection, no map sort: a raw loop pays no codec); any other values go
// through driver.EncodeValues (and a value it rejects panics: a raw loop
// only writes valid rows).
func AppendValuesJSON(buf []byte, row driver.Row) []byte {
	v := row.Values
	id, ok1 := v["id"].(string)
	title, ok2 := v["title"].(string)
	done, ok3 := v["done"].(bool)
	project, ok4 := v["project_id"].(string)
	owner, ok5 := v["owner_id"].(string)
	at, ok6 := v["updated_at"].(int64)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || len(v) != 6 {
		b, err := driver.EncodeValues(v)
		if err != nil {
			panic(fmt.Sprintf("conformance: AppendValuesJSON: %v", err))
		}
		return append(buf, b...)
	}
	// Keys in encoding/json's order (sorted), values tagged as
	// driver.EncodeValues tags them. BenchTodo strings are plain ASCII, so
	// strconv's quoting is JSON's.
	buf = append(buf, `{"done":["b",`...)
	buf = strconv.AppendBool(buf, done)
	buf = append(buf, `],"id":["s",`...)
	buf = strconv.AppendQuote(buf, id)
	buf = append(buf, `],"owner_id":["s",`...)
	buf = strconv.AppendQuote(buf, owner)
	buf = append(buf, `],"project_id":["s",`...)
	buf = strconv.AppendQuote(buf, project)
	buf = append(buf, `],"title":["s",`...)
	buf = strconv.AppendQuote(buf, title)
	buf = append(buf, `],"updated_at":["i","`...)
	buf = strconv.AppendInt(buf, at, 10)
	return append(buf, `"]}`...)
}

// AppendScopesJSON appends the JSON object of a BenchTodo row's scopes as
// encoding/json writes driver.Scopes (keys sorted): the change-log form
// of a change's scopes, {"owner":"o…","project":"p…"}.
func AppendScopesJSON(buf []byte, row driver.Row) []byte {
	buf = append(buf, `{"owner":`...)
	buf = strconv.AppendQuote(buf, row.Scopes["owner"])
	buf = append(buf, `,"project":`...)
	buf = strconv.AppendQuote(buf, row.Scopes["project"])
	return append(buf, '}')
}

// Result returns the push result W1 stores for the commit once it got
// seq: applied, recordedAtMs = CreatedAtMs, one applied op per row.
func (c BenchCommit) Result(seq int64) driver.PushResult {
	ops := make([]driver.OpResult, len(c.Rows))
	for k := range ops {
		ops[k] = driver.OpResult{Status: driver.OpApplied}
	}
	return driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: c.CreatedAtMs, Ops: ops}
}

// ResultAround returns the driver.EncodePushResult text of Result(seq)
// split around the decimal seq: prefix + seq + suffix. A raw loop that
// allocates the seq inside the engine concatenates it there, so one round
// trip stores a push result that names its seq (PR-1).
func (c BenchCommit) ResultAround() (prefix, suffix string) {
	suf := make([]byte, 0, 48+20*len(c.Rows))
	suf = append(suf, `,"recordedAtMs":`...)
	suf = strconv.AppendInt(suf, c.CreatedAtMs, 10)
	suf = append(suf, `,"ops":[`...)
	for k := range c.Rows {
		if k > 0 {
			suf = append(suf, ',')
		}
		suf = append(suf, `{"status":"applied"}`...)
	}
	suf = append(suf, "]}"...)
	return `{"status":"applied","commitSeq":`, string(suf)
}

// ResultJSON returns the driver.EncodePushResult text of Result(seq).
func (c BenchCommit) ResultJSON(seq int64) string {
	prefix, suffix := c.ResultAround()
	return prefix + strconv.FormatInt(seq, 10) + suffix
}

// RawCounts are what a raw loop finds in BenchPartition after it ran,
// counted with the engine's own SQL (Counts); RunRawLoop checks them
// against W1: Rows = Changes = 10·N, ChangeScopes = 20·N (two scopes per
// change), Commits = PushResults = N, MinSeq = 1, MaxSeq = N (with the
// commits' primary key, a dense 1…N).
type RawCounts struct {
	Rows, Commits, Changes, ChangeScopes, PushResults int64
	MinSeq, MaxSeq                                    int64
}

// RawLoop is one fresh store prepared (untimed) for a raw loop: the
// driver has created its layout on it (EnsureSchema of TestSchema), and
// the loop holds its engine connection with its statements prepared.
type RawLoop struct {
	// Commit writes commit c in one engine transaction with the minimum
	// SQL, allocating the seq in the engine, and returns that seq. It is
	// the timed part.
	Commit func(ctx context.Context, c BenchCommit) (seq int64, err error)
	// Counts counts what the loop wrote (RawCounts), in SQL. Untimed.
	Counts func(ctx context.Context) (RawCounts, error)
	// Reader returns a driver.Conn on the same store, through which the
	// check reads back what the loop wrote (untimed, after the loop; the
	// check ensures TestSchema on it first, which must find the layout
	// unchanged, SCH-3). The caller of RunRawLoop closes it (b.Cleanup).
	Reader func(ctx context.Context) (driver.Conn, error)
}

// RawLoopCommits is the number of commits of a raw loop: W1's 5,000.
const RawLoopCommits = 5000

// RunRawLoop runs the sub-benchmark W1-push of b: per iteration, a fresh
// store from prepare (untimed), then RawLoopCommits commits through
// RawLoop.Commit (timed), then the check (untimed; any difference fails
// b). It reports W1's metrics under W1's names — commits/s, changes/s,
// first-tenth-commits/s, last-tenth-commits/s, last/first — so
//
//	go test ./drivers/x -run '^$' -bench 'RawLoop|Workloads/W1-push$' -benchtime 1x -count 3
//
// puts the driver's W1 (RunBenchmarks) next to its ceiling for benchstat
// (docs/performance.md, "Raw-loop ratios per engine").
//
// The check: every Commit returned seq Index+1 (SEQ-1, dense); Counts
// match W1 (RawCounts); and through RawLoop.Reader, MaxCommitSeq is N,
// W2's window read and W3's scan of project p7 find every matching change
// and row, the first and last rows and the last commit (metadata, changes,
// values) read back equal to what W1 writes, and so does its push result.
func RunRawLoop(b *testing.B, prepare func(b *testing.B) RawLoop) {
	b.Run("W1-push", func(b *testing.B) { runRawLoop(b, prepare, RawLoopCommits) })
}

// RunRawLoopScaled is RunRawLoop at factor × RawLoopCommits commits on
// one fresh store, as sub-benchmark "W1x<factor>-push", so that W1's
// tenths at size (RunBenchmarks' W1x10-push, the CLI's -bench-scale) can
// be told from the engine's own. A driver calls it from a benchmark
// whose name does not contain "RawLoop" (the standard command's
// -bench 'RawLoop|Workloads/W1-push$' would select it), for example
//
//	func BenchmarkRawScaled(b *testing.B) { conformance.RunRawLoopScaled(b, newRawLoop, 10) }
//
// run with -bench 'RawScaled|Workloads/W1x10-push$'. factor < 1 means 1;
// factor > 1 is skipped with -short, as W1x10-push is.
func RunRawLoopScaled(b *testing.B, prepare func(b *testing.B) RawLoop, factor int) {
	factor = max(factor, 1)
	if testing.Short() && factor > 1 {
		b.Skipf("the raw loop at %d × %d commits; skipped with -short", factor, RawLoopCommits)
	}
	b.Run("W1x"+strconv.Itoa(factor)+"-push", func(b *testing.B) { runRawLoop(b, prepare, factor*RawLoopCommits) })
}

// runRawLoop is the body of RunRawLoop and RunRawLoopScaled: commits
// commits per run, each run on a fresh store.
func runRawLoop(b *testing.B, prepare func(b *testing.B) RawLoop, commits int) {
	ctx := b.Context()
	var sum w1Sum
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := prepare(b)
		b.StartTimer()
		res, err := timeCommits("raw loop", commits, func(c int) (int64, error) { return r.Commit(ctx, W1Commit(c)) })
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		sum.add(res)
		if err := checkRawLoop(ctx, r, commits); err != nil {
			b.Fatal(err)
		}
	}
	sum.report(b, b.N*commits)
}

// w1Sum adds up the W1 results of a benchmark's b.N runs.
type w1Sum struct {
	runs, cpuRuns     int
	total             time.Duration
	tenths, cpuTenths [10]time.Duration
	ops               []time.Duration // every commit's duration, all runs
}

func (s *w1Sum) add(r w1Result) {
	s.runs++
	s.total += r.total
	s.ops = append(s.ops, r.ops...)
	for k, d := range r.tenths {
		s.tenths[k] += d
	}
	if len(r.cpuTenths) == 10 {
		s.cpuRuns++
		for k, d := range r.cpuTenths {
			s.cpuTenths[k] += d
		}
	}
}

// report reports the rates of n commits in all (reportW1) and, when
// every run had them, the same tenths in process CPU time (getrusage),
// which a loaded machine disturbs far less than wall time; for an
// in-process engine it includes the engine's own work (reportW1CPU);
// then the commits' latency (p50-ms, p99-ms, max-ms).
func (s *w1Sum) report(b *testing.B, n int) {
	reportW1(b, n, s.total, s.tenths[:])
	if s.cpuRuns == s.runs {
		reportW1CPU(b, n, s.cpuTenths[:])
	}
	reportLatency(b, latencyOf("push commit", s.ops))
}

// reportLatency reports l as p50-ms, p99-ms and max-ms (the runs' samples
// pooled), nothing when it has no sample.
func reportLatency(b *testing.B, l Latency) {
	if l.Samples == 0 {
		return
	}
	b.ReportMetric(l.P50Ms, "p50-ms")
	b.ReportMetric(l.P99Ms, "p99-ms")
	b.ReportMetric(l.MaxMs, "max-ms")
}

// timeCommits runs commit(0 … commits-1), checks each returned seq is
// its index + 1 (SEQ-1) and times the whole, each tenth and each commit
// (as runW1).
func timeCommits(what string, commits int, commit func(i int) (int64, error)) (w1Result, error) {
	return timeCommitsSeq(what, commits, commit, func(i int) int64 { return int64(i + 1) })
}

// timeCommitsSeq is timeCommits with commit i expected at seq wantSeq(i).
// Each commit's duration (one clock read per commit, chained: see
// opClock) goes to w1Result.ops.
func timeCommitsSeq(what string, commits int, commit func(i int) (int64, error), wantSeq func(i int) int64) (w1Result, error) {
	res := w1Result{commits: commits, ops: make([]time.Duration, 0, commits)}
	tenth := commits / 10
	cpuMark, cpuOK := processCPU()
	start := time.Now()
	mark, clk := start, clockAt(start)
	for i := 0; i < commits; i++ {
		seq, err := commit(i)
		now := clk.lap(&res.ops)
		if err != nil {
			return res, fmt.Errorf("%s commit %d: %w", what, i, err)
		}
		if want := wantSeq(i); seq != want {
			return res, fmt.Errorf("%s commit %d got seq %d, want %d (SEQ-1)", what, i, seq, want)
		}
		if tenth > 0 && (i+1)%tenth == 0 && len(res.tenths) < 10 {
			res.tenths = append(res.tenths, now.Sub(mark))
			mark = now
			if cpu, ok := processCPU(); cpuOK && ok {
				res.cpuTenths = append(res.cpuTenths, cpu-cpuMark)
				cpuMark = cpu
			}
		}
	}
	res.total = time.Since(start)
	if len(res.cpuTenths) != len(res.tenths) {
		res.cpuTenths = nil
	}
	return res, nil
}

// reportW1 reports W1's rate metrics for n commits that took total, with
// the summed durations of each tenth.
func reportW1(b *testing.B, n int, total time.Duration, tenths []time.Duration) {
	b.ReportMetric(float64(n)/total.Seconds(), "commits/s")
	b.ReportMetric(float64(n*BenchRowsPerCommit)/total.Seconds(), "changes/s")
	if len(tenths) == 10 && tenths[0] > 0 && tenths[9] > 0 {
		first, last := float64(n/10)/tenths[0].Seconds(), float64(n/10)/tenths[9].Seconds()
		b.ReportMetric(first, "first-tenth-commits/s")
		b.ReportMetric(last, "last-tenth-commits/s")
		b.ReportMetric(last/first, "last/first")
	}
}

// reportW1CPU reports the process CPU time (getrusage: the client's
// side for a server engine, everything for an in-process one) of the
// first and last tenth of n commits, per commit, under the names
// RunBenchmarks' W1 uses.
func reportW1CPU(b *testing.B, n int, cpuTenths []time.Duration) {
	perCommit := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n/10) }
	first, last := perCommit(cpuTenths[0]), perCommit(cpuTenths[9])
	var all time.Duration
	for _, d := range cpuTenths {
		all += d
	}
	b.ReportMetric(float64(all.Microseconds())/float64(n), "cpu-µs/commit")
	b.ReportMetric(first, "first-tenth-cpu-µs/commit")
	b.ReportMetric(last, "last-tenth-cpu-µs/commit")
	b.ReportMetric(first/last, "cpu-rate-last/first")
}

// checkRawLoop fails unless the loop wrote what W1 writes (see RunRawLoop).
func checkRawLoop(ctx context.Context, r RawLoop, commits int) error {
	n := int64(commits)
	got, err := r.Counts(ctx)
	if err != nil {
		return fmt.Errorf("raw loop counts: %w", err)
	}
	want := RawCounts{Rows: n * BenchRowsPerCommit, Commits: n, Changes: n * BenchRowsPerCommit,
		ChangeScopes: 2 * n * BenchRowsPerCommit, PushResults: n, MinSeq: 1, MaxSeq: n}
	if got != want {
		return fmt.Errorf("raw loop wrote %+v, want %+v", got, want)
	}
	conn, err := r.Reader(ctx)
	if err != nil {
		return fmt.Errorf("raw loop: open the driver on its store: %w", err)
	}
	if err := conn.EnsureSchema(ctx, TestSchema()); err != nil { // SCH-3: the layout the driver created, unchanged
		return fmt.Errorf("raw loop: EnsureSchema on its store: %w", err)
	}
	if max, err := conn.MaxCommitSeq(ctx, BenchPartition); err != nil || max != n {
		return fmt.Errorf("raw loop: the driver reads MaxCommitSeq %d (%v), want %d (SEQ-5)", max, err, n)
	}
	if _, err := runW2(ctx, conn, commits); err != nil {
		return fmt.Errorf("raw loop, read back through the driver: %w", err)
	}
	if _, err := runW3(ctx, conn, commits); err != nil {
		return fmt.Errorf("raw loop, read back through the driver: %w", err)
	}
	for _, k := range []int{0, commits*BenchRowsPerCommit - 1} {
		want := BenchTodo(k)
		row, found, err := conn.GetRow(ctx, BenchPartition, benchTable, want.ID)
		if err != nil || !found || !reflect.DeepEqual(row, want) {
			return fmt.Errorf("raw loop: the driver reads row %s as %+v (found %v, %v), want %+v (ROW-1)", want.ID, row, found, err, want)
		}
	}
	last := W1Commit(commits - 1)
	all := make([]string, BenchProjects)
	copy(all, projectNames)
	page, err := conn.ReadCommitWindow(ctx, BenchPartition, driver.WindowQuery{Table: benchTable,
		Filter: driver.ScopeFilter{"project": all}, AfterSeq: n - 1, ThroughSeq: n, LimitChanges: 100})
	if err != nil {
		return fmt.Errorf("raw loop: ReadCommitWindow of the last commit: %w", err)
	}
	wantCommit := driver.Commit{Seq: n, ClientID: last.ClientID, ClientCommitID: last.ClientCommitID, ActorID: last.ActorID,
		CreatedAtMs: last.CreatedAtMs}
	for _, row := range last.Rows {
		wantCommit.Changes = append(wantCommit.Changes, upsertChange(benchTable, row))
	}
	if len(page) != 1 || !reflect.DeepEqual(page[0], wantCommit) {
		return fmt.Errorf("raw loop: the driver reads the last commit as %+v, want %+v (WIN-1, WIN-6)", page, wantCommit)
	}
	res, found, err := conn.GetPushResult(ctx, BenchPartition, last.ClientID, last.ClientCommitID)
	if err != nil || !found || !reflect.DeepEqual(res, last.Result(n)) {
		return fmt.Errorf("raw loop: the driver reads the last push result as %+v (found %v, %v), want %+v (PR-1)", res, found, err, last.Result(n))
	}
	return nil
}
