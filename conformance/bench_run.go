package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// benchRun accumulates the samples of RunWorkloads' runs.
type benchRun struct {
	ctx      context.Context
	h        Harness
	opts     BenchOptions
	declared map[driver.Capability]bool
	samples  map[string]map[string][]float64 // workload → unit → one rate per run
	peak     map[string]int64
	errs     map[string]string
	w1       []w1Result
	sizes    []float64
}

func newBenchRun(ctx context.Context, h Harness, opts BenchOptions) *benchRun {
	return &benchRun{ctx: ctx, h: h, opts: opts, samples: map[string]map[string][]float64{},
		peak: map[string]int64{}, errs: map[string]string{}}
}

func (b *benchRun) progress(line string) {
	if b.opts.Progress != nil {
		b.opts.Progress(line)
	}
}

func (b *benchRun) selected(id string) bool {
	return b.opts.Match == nil || b.opts.Match.MatchString(id)
}

// probe opens one store to learn the declared capabilities and the engine version.
func (b *benchRun) probe(rep *BenchReport) error {
	return withStore(b.ctx, b.h, "bench/probe", func(conn driver.Conn) error {
		b.declared = map[driver.Capability]bool{}
		for _, c := range driver.ConnCapabilities(conn) {
			b.declared[c] = true
		}
		if v, ok := conn.(driver.EngineVersioner); ok {
			if s, err := v.EngineVersion(b.ctx); err == nil {
				rep.EngineVersion = s
			}
		}
		return nil
	})
}

func (b *benchRun) add(id, unit string, n int, d time.Duration) {
	if d <= 0 {
		d = time.Nanosecond
	}
	if b.samples[id] == nil {
		b.samples[id] = map[string][]float64{}
	}
	b.samples[id][unit] = append(b.samples[id][unit], float64(n)/d.Seconds())
}

func (b *benchRun) fail(id string, err error) {
	if _, seen := b.errs[id]; !seen {
		b.errs[id] = err.Error()
	}
}

// measure runs one workload step with peak-memory measurement, unless it
// is deselected, failed before, or needs a capability the driver lacks.
func (b *benchRun) measure(id string, fn func() error) {
	if _, failed := b.errs[id]; failed || !b.selected(id) || !b.declared[specOf(id).cap] && specOf(id).cap != "" {
		return
	}
	mem := startMem()
	err := fn()
	b.peak[id] = max(b.peak[id], mem.stop())
	if err != nil {
		b.fail(id, err)
	}
}

func specOf(id string) workloadSpec {
	for _, s := range workloadSpecs {
		if s.id == id {
			return s
		}
	}
	return workloadSpec{id: id}
}

// runOnce runs every selected workload once, each group on a fresh store.
// It returns an error only when the run must stop (harness, context).
func (b *benchRun) runOnce(run int) error {
	ctx, commits := b.ctx, b.opts.Commits
	needW1 := b.selected("W1") || b.selected("W2") || b.selected("W3") || b.selected("W5")
	if needW1 {
		b.progress(fmt.Sprintf("run %d/%d: W1 push (%d commits), then W2, W3, W5 on its store", run, b.opts.Runs, commits))
		err := withStore(ctx, b.h, "bench/W1", func(conn driver.Conn) error {
			var w1Err error
			b.measureAlways("W1", func() error {
				r, err := runW1(ctx, conn, commits)
				if err != nil {
					w1Err = err
					return err
				}
				b.w1 = append(b.w1, r)
				b.add("W1", "commits/s", commits, r.total)
				b.add("W1", "changes/s", commits*BenchRowsPerCommit, r.total)
				return nil
			})
			if w1Err != nil { // W2, W3 and W5 need W1's store
				for _, id := range []string{"W2", "W3", "W5"} {
					b.fail(id, fmt.Errorf("runs on W1's store, and W1 failed"))
				}
				return nil
			}
			if sr, ok := conn.(SizeReporter); ok {
				if n, err := sr.StoreSizeBytes(ctx); err == nil {
					b.sizes = append(b.sizes, float64(n))
				}
			}
			b.measure("W2", func() error {
				n, d, err := runW2(ctx, conn, commits)
				b.add("W2", "changes/s", n, d)
				return err
			})
			b.measure("W3", func() error {
				n, d, err := runW3(ctx, conn, commits)
				b.add("W3", "rows/s", n, d)
				return err
			})
			b.measure("W5", func() error {
				n, d, err := runW5(ctx, conn, commits)
				b.add("W5", "lookups/s", n, d)
				return err
			})
			return nil
		})
		if stop := b.stopRun(err); stop != nil {
			return stop
		}
	}
	for _, w := range []struct {
		id string
		fn func(conn driver.Conn) error
	}{
		{"W4", func(conn driver.Conn) error {
			r, err := runW4(ctx, conn)
			if err == nil {
				b.add("W4", "completions/s", r.completed, r.drain)
				b.add("W4", "enqueued/s", r.enqueued, r.enqueue)
			}
			return err
		}},
		{"W6a", func(conn driver.Conn) error {
			n, d, err := runW6(ctx, conn, false)
			b.add("W6a", "commits/s", n, d)
			return err
		}},
		{"W6b", func(conn driver.Conn) error {
			n, d, err := runW6(ctx, conn, true)
			b.add("W6b", "commits/s", n, d)
			return err
		}},
		{"W7", func(conn driver.Conn) error {
			r, err := runW7(ctx, conn, commits)
			if err == nil {
				b.add("W7", "commits/s", commits, r.total)
				b.add("W7", "changes/s", commits*BenchRowsPerCommit, r.total)
			}
			return err
		}},
	} {
		if !b.selected(w.id) || specOf(w.id).cap != "" && !b.declared[specOf(w.id).cap] {
			continue
		}
		if _, failed := b.errs[w.id]; failed {
			continue
		}
		b.progress(fmt.Sprintf("run %d/%d: %s %s", run, b.opts.Runs, w.id, specOf(w.id).name))
		err := withStore(ctx, b.h, "bench/"+w.id, func(conn driver.Conn) error {
			b.measure(w.id, func() error { return w.fn(conn) })
			return nil
		})
		if stop := b.stopRun(err); stop != nil {
			return stop
		}
	}
	return nil
}

// measureAlways is measure for W1, which runs whenever a workload needs its store.
func (b *benchRun) measureAlways(id string, fn func() error) {
	mem := startMem()
	err := fn()
	b.peak[id] = max(b.peak[id], mem.stop())
	if err != nil {
		b.fail(id, err)
	}
}

// stopRun turns a withStore error into a reason to stop: a harness that
// cannot open a store, or an ended context.
func (b *benchRun) stopRun(err error) error {
	var he *harnessError
	if errors.As(err, &he) || b.ctx.Err() != nil {
		if err == nil {
			err = b.ctx.Err()
		}
		return err
	}
	return nil
}

// finish turns the samples into the report.
func (b *benchRun) finish(rep *BenchReport) {
	for _, s := range workloadSpecs {
		if !b.selected(s.id) {
			continue
		}
		w := WorkloadResult{ID: s.id, Name: s.name, Capability: s.cap, Status: BenchOK, PeakRSSBytes: b.peak[s.id]}
		switch msg, failed := b.errs[s.id]; {
		case s.cap != "" && !b.declared[s.cap]:
			w.Status, w.Error = BenchNotImplemented, "capability "+string(s.cap)+" not declared"
		case failed:
			w.Status, w.Error = BenchFailed, msg
		}
		if w.Status == BenchOK && len(b.samples[s.id]) == 0 {
			w.Status, w.Error = BenchFailed, "no run completed"
		}
		if w.Status == BenchOK {
			for _, u := range s.units {
				runs := b.samples[s.id][u]
				w.Rates = append(w.Rates, Rate{Unit: u, Median: median(runs), Runs: runs})
			}
		}
		rep.PeakRSSBytes = max(rep.PeakRSSBytes, w.PeakRSSBytes)
		rep.Workloads = append(rep.Workloads, w)
	}
	if len(b.w1) > 0 && b.selected("W1") {
		rep.Scaling = scaling(b.w1)
	}
	if len(b.sizes) > 0 {
		rep.StoreBytesAfterW1 = int64(median(b.sizes))
	}
	rep.W7OverW1 = pairedRatio(b.samples["W1"]["commits/s"], b.samples["W7"]["commits/s"])
	if !b.selected("W1") || !b.selected("W7") {
		rep.W7OverW1 = 0
	}
}

// scaling computes the per-tenth figures of W1 runs (medians tenth by tenth).
func scaling(runs []w1Result) *Scaling {
	s := &Scaling{Commits: runs[0].commits}
	var totals []float64
	for _, r := range runs {
		totals = append(totals, float64(r.commits)/r.total.Seconds())
	}
	s.Rate = median(totals)
	if len(runs[0].tenths) != 10 {
		return s
	}
	tenth := float64(runs[0].commits / 10)
	for i := 0; i < 10; i++ {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, tenth/r.tenths[i].Seconds())
		}
		s.Tenths = append(s.Tenths, median(xs))
	}
	s.Ratio = s.Tenths[9] / s.Tenths[0]
	s.Holds = s.Ratio >= 0.9
	return s
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pairedRatio is W7's time over W1's: the median over the runs of W1's
// rate over W7's in the same run (the two run back to back, so a load
// that drifts over minutes cancels out), or of the medians when the runs
// do not pair up; 0 when either has no sample.
func pairedRatio(w1, w7 []float64) float64 {
	if len(w1) == 0 || len(w7) == 0 {
		return 0
	}
	if len(w1) != len(w7) {
		return median(w1) / median(w7)
	}
	r := make([]float64, len(w1))
	for i := range w1 {
		r[i] = w1[i] / w7[i]
	}
	return median(r)
}
