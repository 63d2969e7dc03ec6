package conformance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// The standard benchmark (docs/performance.md), outside go test: RunWorkloads runs
// W1–W6 against a Harness, each several times on fresh stores, and returns
// median rates, peak memory and the W1 scaling figures. cmd/conformance
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
// written: 3 runs, W1 of 5,000 commits, no 10× run.
type BenchOptions struct {
	// Runs is how many times each workload runs on a fresh store; rates
	// are the median. 0 means 3; docs/performance.md asks for at least 3.
	Runs int
	// Commits is W1's size (and so the store size W2, W3 and W5 read).
	// 0 means 5,000, docs/performance.md's figure. Values below 10 give no tenths.
	Commits int
	// Scale adds one W1 run of 10× Commits (docs/performance.md: show the push rate
	// holds at 50,000 commits).
	Scale bool
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

// BenchReport is the outcome of RunWorkloads.
type BenchReport struct {
	Driver        string           `json:"driver"`
	EngineVersion string           `json:"engineVersion,omitempty"`
	Runs          int              `json:"runs"`
	Commits       int              `json:"commits"`
	Workloads     []WorkloadResult `json:"workloads"`
	// Scaling is W1's per-tenth figures at Commits; Scale10 the 10× run
	// (nil unless BenchOptions.Scale).
	Scaling *Scaling `json:"scaling,omitempty"`
	Scale10 *Scaling `json:"scale10,omitempty"`
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
}

// RunWorkloads runs docs/performance.md's W1–W6 against h, opts.Runs times each on
// fresh stores (W1, then W2, W3, W5 on W1's store; W4, W6a, W6b each on
// its own), and returns median rates per workload, peak memory per
// workload and W1's scaling figures. A workload whose capability the
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
	if opts.Scale && b.selected("W1") {
		b.progress(fmt.Sprintf("W1×10: %d commits", 10*opts.Commits))
		err := withStore(ctx, h, "bench/W1x10", func(conn driver.Conn) error {
			r, err := runW1(ctx, conn, 10*opts.Commits)
			if err == nil {
				rep.Scale10 = scaling([]w1Result{r})
			}
			return err
		})
		if err != nil {
			b.fail("W1", fmt.Errorf("10× run: %w", err))
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

func isNotImplemented(err error) bool {
	var ni notImplementedError
	return errors.As(err, &ni)
}
