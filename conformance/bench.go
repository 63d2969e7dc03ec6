package conformance

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// The standard benchmark (docs/performance.md), outside go test: RunWorkloads runs
// W1–W8 against a Harness, each several times on fresh stores, and returns
// median rates, per-operation latencies, peak memory and the W1 scaling
// figures. cmd/conformance
// -bench prints it; RunBenchmarks (bench_testing.go) is the go test -bench
// front end over the same workload code.

// SizeReporter is implemented by a Conn that can report how many bytes
// its store occupies (for SQLite: the database file). Optional; the
// benchmark reports the size after W1 when the Conn has it.
type SizeReporter interface {
	// StoreSizeBytes returns the store's size in bytes.
	StoreSizeBytes(ctx context.Context) (int64, error)
}

// BenchOptions configure RunWorkloads. The zero value runs docs/performance.md as
// written: 3 runs, W1 of 5,000 commits, W8 of 10,000 partitions, no scaled
// run.
type BenchOptions struct {
	// Runs is how many times each workload runs on a fresh store; rates
	// are the median. 0 means 3; docs/performance.md asks for at least 3.
	Runs int
	// Commits is W1's size (and so the store size W2, W3 and W5 read).
	// 0 means 5,000, docs/performance.md's figure. Values below 10 give no tenths.
	Commits int
	// Tenants is W8's number of partitions (W8CommitsEach commits each).
	// 0 means 2 × Commits: 10,000 for the standard 5,000, and a small W8
	// for a small run.
	Tenants int
	// Scale, when ≥ 2, adds a run at Scale × Commits (docs/performance.md:
	// 100 → 500,000 commits): W1 once on a fresh store, then W2, W3 and
	// W5 on that store, each compared with its rate at ×1
	// (BenchReport.Scaled). 0 (or 1) means no scaled run.
	Scale int
	// Match, if set, selects the workloads whose ID ("W1"…"W6") it
	// matches. W2, W3 and W5 run on the store W1 filled; W1 runs for them
	// even when not selected (its figures are then not reported).
	Match *regexp.Regexp
	// Progress, if set, is called with a short line before each step.
	Progress func(line string)
}

// Rate is one figure of a workload: the median of its runs.
type Rate struct {
	Unit   string    `json:"unit"` // e.g. "commits/s"
	Median float64   `json:"median"`
	Runs   []float64 `json:"runs"`
}

// Workload status values.
const (
	BenchOK             = "ok"
	BenchNotImplemented = "not implemented"
	BenchFailed         = "failed"
)

// WorkloadResult is one workload's outcome.
type WorkloadResult struct {
	ID         string            `json:"id"` // "W1", "W6a", …
	Name       string            `json:"name"`
	Capability driver.Capability `json:"capability,omitempty"`
	Status     string            `json:"status"` // BenchOK, BenchNotImplemented, BenchFailed
	Rates      []Rate            `json:"rates,omitempty"`
	// Latency is the duration of each of the workload's operations (one
	// entry per kind: W1's "push commit", W2's "pull page", …), the
	// samples of every run pooled; see Latency.
	Latency []Latency `json:"latency,omitempty"`
	// PeakRSSBytes is the process's peak memory during the workload (the
	// largest over its runs); see BenchReport.MemorySource.
	PeakRSSBytes int64  `json:"peakRssBytes,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Scaling holds W1's per-tenth push rates (docs/performance.md's scaling rule: the
// last tenth's rate must be ≥ 90% of the first's).
type Scaling struct {
	Commits int `json:"commits"`
	// Tenths are commits/s of commits 1…N/10, N/10+1…2N/10, …: the median
	// over the runs, tenth by tenth.
	Tenths []float64 `json:"tenthsCommitsPerSec"`
	// Ratio is last tenth / first tenth; Holds reports Ratio ≥ 0.9.
	Ratio float64 `json:"ratio"`
	Holds bool    `json:"holds"`
	// Rate is commits/s over the whole run (the median over runs).
	Rate float64 `json:"commitsPerSec"`
}

// ScaledRun is the run at Factor × the standard size: W1 of Commits
// commits on a fresh store, then W2, W3 and W5 on it.
type ScaledRun struct {
	Factor  int `json:"factor"`
	Commits int `json:"commits"`
	// W1 is the scaled W1's per-tenth figures (goal: Ratio ≥ 0.9).
	W1 *Scaling `json:"w1"`
	// Workloads are W1, W2, W3 and W5 at ×Factor, each with its rate at ×1.
	Workloads []ScaledWorkload `json:"workloads"`
}

// ScaledWorkload is one workload's figure at ×Factor against ×1.
type ScaledWorkload struct {
	ID   string `json:"id"`
	Unit string `json:"unit"`
	// Rate is the rate at ×Factor (one run); RateX1 the median at ×1, 0
	// when the ×1 runs did not measure it; Ratio is Rate / RateX1 (goal
	// for W2, W3, W5: ≥ 0.8, reads stay index-bound), 0 without RateX1.
	Rate   float64 `json:"rate"`
	RateX1 float64 `json:"rateX1,omitempty"`
	Ratio  float64 `json:"ratio,omitempty"`
	// Latency at ×Factor, as WorkloadResult.Latency.
	Latency []Latency `json:"latency,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// Tenants is W8's summary: the shape it ran and its goals' ratios.
type Tenants struct {
	Partitions  int `json:"partitions"`
	CommitsEach int `json:"commitsEach"`
	// PushOverW1 is W8's commits/s over W1's: the median over the runs of
	// the ratio within each run (goal ≥ 0.9); 0 unless W1 ran too.
	PushOverW1 float64 `json:"pushOverW1,omitempty"`
	// PullAlone and ScanAlone are the same reads as W8's pull (changes/s)
	// and bootstrap (rows/s) on a store holding only that partition's
	// data (medians); PullOverAlone and ScanOverAlone W8's rate over them
	// (the median of the per-run ratios): ≈ 1 when the other partitions
	// cost a read nothing.
	PullAlone     float64 `json:"pullAloneChangesPerSec"`
	ScanAlone     float64 `json:"scanAloneRowsPerSec"`
	PullOverAlone float64 `json:"pullOverAlone"`
	ScanOverAlone float64 `json:"scanOverAlone"`
	// PullAloneP50Ms and ScanAloneP50Ms are the reference reads' median
	// page latency (ms; compare W8's "pull page" and "scan page" p50),
	// less disturbed by a loaded machine than the rates.
	PullAloneP50Ms float64 `json:"pullAloneP50Ms"`
	ScanAloneP50Ms float64 `json:"scanAloneP50Ms"`
	// Listed is how many partitions ListPartitions paged through (it must
	// be Partitions).
	Listed int `json:"listed"`
}

// BenchReport is the outcome of RunWorkloads.
type BenchReport struct {
	Driver        string           `json:"driver"`
	EngineVersion string           `json:"engineVersion,omitempty"`
	Runs          int              `json:"runs"`
	Commits       int              `json:"commits"`
	Workloads     []WorkloadResult `json:"workloads"`
	// Scaling is W1's per-tenth figures at Commits.
	Scaling *Scaling `json:"scaling,omitempty"`
	// Scaled is the run at BenchOptions.Scale × Commits (nil without it).
	Scaled *ScaledRun `json:"scaled,omitempty"`
	// Tenants is W8's summary (nil unless W8 ran).
	Tenants *Tenants `json:"tenants,omitempty"`
	// StoreBytesAfterW1 is the store's size after W1 (median over runs),
	// 0 when the Conn is not a SizeReporter.
	StoreBytesAfterW1 int64 `json:"storeBytesAfterW1,omitempty"`
	// W7OverW1 is W7's time over W1's — the median over the runs of W1's
	// commits/s over W7's in the same run (they run back to back) — the
	// engine's own cost (docs/performance.md: goal ≤ 1.25); 0 unless both ran.
	W7OverW1 float64 `json:"w7OverW1,omitempty"`
	// PeakRSSBytes is the largest of the workloads' peaks.
	PeakRSSBytes int64 `json:"peakRssBytes"`
	// MemorySource says how peak memory was measured: "VmHWM" (the
	// kernel's peak RSS, reset per workload) or "go-runtime" (sampled Go
	// runtime memory, which misses memory allocated outside Go).
	MemorySource string        `json:"memorySource"`
	Duration     time.Duration `json:"durationNs"`
}

// Failed reports whether a workload failed.
func (r BenchReport) Failed() bool {
	return slices.ContainsFunc(r.Workloads, func(w WorkloadResult) bool { return w.Status == BenchFailed })
}

// workloadSpec describes one workload row of the report.
type workloadSpec struct {
	id, name string
	cap      driver.Capability
	units    []string
}

var workloadSpecs = []workloadSpec{
	{"W1", "push", "", []string{"commits/s", "changes/s"}},
	{"W2", "pull", "", []string{"changes/s"}},
	{"W3", "bootstrap", "", []string{"rows/s"}},
	{"W4", "reactions", driver.CapReactions, []string{"completions/s", "enqueued/s"}},
	{"W5", "index lookup", driver.CapIndexLookup, []string{"lookups/s"}},
	{"W6a", "concurrent push, own partitions", "", []string{"commits/s"}},
	{"W6b", "concurrent push, one partition", "", []string{"commits/s"}},
	{"W7", "push through the engine", "", []string{"commits/s", "changes/s"}},
	{"W8", "tenants", "", []string{"commits/s", "changes/s", "rows/s", "partitions/s"}},
}

// The operation each workload times (WorkloadResult.Latency), in order.
var workloadOps = map[string][]string{
	"W1": {"push commit"}, "W2": {"pull page"}, "W3": {"scan page"},
	"W4": {"enqueue tx", "claim", "complete"}, "W5": {"lookup"},
	"W6a": {"push commit"}, "W6b": {"push commit"}, "W7": {"push"},
	"W8": {"push commit", "pull page", "scan page", "list page"},
}

// RunWorkloads runs docs/performance.md's W1–W8 against h, opts.Runs times each on
// fresh stores (W1, then W2, W3, W5 on W1's store; W4, W6a, W6b, W7, W8
// each on its own), and returns median rates per workload, the latency of
// each workload's operations, peak memory per workload, W1's scaling
// figures, W8's summary and, with opts.Scale, the scaled run. A workload whose capability the
// driver lacks is reported as not implemented; one that fails (an error,
// or a check such as W6's dense sequence) is reported as failed with its
// error and the others still run. The error is non-nil only when ctx ends
// or the harness cannot open a store.
func RunWorkloads(ctx context.Context, h Harness, opts BenchOptions) (BenchReport, error) {
	if h.Open == nil {
		return BenchReport{}, fmt.Errorf("conformance: Harness.Open is required")
	}
	opts.Runs = cmp0(opts.Runs, 3)
	opts.Commits = cmp0(opts.Commits, 5000)
	start := time.Now()
	rep := BenchReport{Driver: h.Name, Runs: opts.Runs, Commits: opts.Commits, MemorySource: memSource()}
	b := newBenchRun(ctx, h, opts)
	if err := b.probe(&rep); err != nil {
		return rep, err
	}
	for run := 1; run <= opts.Runs; run++ {
		if err := b.runOnce(run); err != nil {
			return rep, err
		}
	}
	if opts.Scale >= 2 && b.selected("W1") {
		if err := b.scaled(&rep); err != nil {
			return rep, err
		}
	}
	b.finish(&rep)
	rep.Duration = time.Since(start)
	return rep, ctx.Err()
}

func cmp0(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// withStore opens a fresh store through h, ensures TestSchema, runs fn
// and tears the store down (h's cleanups) before it returns.
func withStore(ctx context.Context, h Harness, name string, fn func(conn driver.Conn) error) error {
	rt := newRunT(ctx, name)
	var err error
	finished := rt.run(func() {
		conn := h.Open(rt)
		if e := conn.EnsureSchema(ctx, TestSchema()); e != nil {
			err = fmt.Errorf("EnsureSchema: %w", e)
			return
		}
		err = fn(conn)
	})
	switch {
	case !finished:
		return fmt.Errorf("%s: %w", name, context.Cause(ctx))
	case rt.Failed():
		return &harnessError{strings.Join(rt.lines(), "; ")}
	}
	return err
}

// harnessError is a store the harness could not open: it ends the run.
type harnessError struct{ msg string }

func (e *harnessError) Error() string { return "conformance: harness: " + e.msg }
