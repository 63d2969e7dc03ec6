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
	samples  map[string]map[string][]float64       // workload → unit → one rate per run
	lat      map[string]map[string][]time.Duration // workload → op → every op's duration, all runs
	peak     map[string]int64
	errs     map[string]string
	w1       []w1Result
	listed   int // partitions W8's last run listed
	sizes    []float64
}

func newBenchRun(ctx context.Context, h Harness, opts BenchOptions) *benchRun {
	return &benchRun{ctx: ctx, h: h, opts: opts, samples: map[string]map[string][]float64{},
		lat: map[string]map[string][]time.Duration{}, peak: map[string]int64{}, errs: map[string]string{}}
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

// addOps pools the durations of one run's ops of kind op of workload id.
func (b *benchRun) addOps(id, op string, ds []time.Duration) {
	if b.lat[id] == nil {
		b.lat[id] = map[string][]time.Duration{}
	}
	b.lat[id][op] = append(b.lat[id][op], ds...)
}

// addTimed records one run of a workload measured as timed: its rate in
// unit and its ops' durations as op.
func (b *benchRun) addTimed(id, unit, op string, t timed) {
	b.add(id, unit, t.n, t.d)
	b.addOps(id, op, t.ops)
}

// tenants is W8's number of partitions.
func (b *benchRun) tenants() int { return cmp0(b.opts.Tenants, 2*b.opts.Commits) }

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
				b.addOps("W1", "push commit", r.ops)
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
			for _, rd := range readWorkloads {
				b.measure(rd.id, func() error {
					t, err := rd.run(ctx, conn, commits)
					if err == nil {
						b.addTimed(rd.id, rd.unit, rd.op, t)
					}
					return err
				})
			}
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
				b.addOps("W4", "enqueue tx", r.enqueueTx)
				b.addOps("W4", "claim", r.claims)
				b.addOps("W4", "complete", r.completes)
			}
			return err
		}},
		{"W6a", func(conn driver.Conn) error {
			t, err := runW6(ctx, conn, false)
			if err == nil {
				b.addTimed("W6a", "commits/s", "push commit", t)
			}
			return err
		}},
		{"W6b", func(conn driver.Conn) error {
			t, err := runW6(ctx, conn, true)
			if err == nil {
				b.addTimed("W6b", "commits/s", "push commit", t)
			}
			return err
		}},
		{"W7", func(conn driver.Conn) error {
			r, err := runW7(ctx, conn, commits)
			if err == nil {
				b.add("W7", "commits/s", commits, r.total)
				b.add("W7", "changes/s", commits*BenchRowsPerCommit, r.total)
				b.addOps("W7", "push", r.ops)
			}
			return err
		}},
		{"W8", func(conn driver.Conn) error {
			r, err := runW8(ctx, conn, b.tenants())
			if err == nil {
				b.add("W8", "commits/s", r.push.commits, r.push.total)
				b.addOps("W8", "push commit", r.push.ops)
				b.addTimed("W8", "changes/s", "pull page", r.pull)
				b.addTimed("W8", "rows/s", "scan page", r.scan)
				b.addTimed("W8", "partitions/s", "list page", r.list)
				b.addTimed("W8", w8PullAloneUnit, w8PullAloneUnit, r.pullAlone)
				b.addTimed("W8", w8ScanAloneUnit, w8ScanAloneUnit, r.scanAlone)
				b.listed = r.list.n
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

// readWorkloads are the workloads that read W1's store.
var readWorkloads = []struct {
	id, unit, op string
	run          func(ctx context.Context, conn driver.Conn, commits int) (timed, error)
}{
	{"W2", "changes/s", "pull page", runW2},
	{"W3", "rows/s", "scan page", runW3},
	{"W5", "lookups/s", "lookup", runW5},
}

// W8's reference reads (on a store of one partition), kept with its
// samples but not reported as rates of their own.
const (
	w8PullAloneUnit = "changes/s, one partition alone"
	w8ScanAloneUnit = "rows/s, one partition alone"
)

// scaled is the run at opts.Scale × Commits (RunWorkloads): W1 once on a
// fresh store, then the selected reads on it, each against its ×1 median.
// A failure is W1's (or the read's, in its row); the error is non-nil
// only when the run must stop.
func (b *benchRun) scaled(rep *BenchReport) error {
	ctx, n := b.ctx, b.opts.Scale*b.opts.Commits
	sr := &ScaledRun{Factor: b.opts.Scale, Commits: n}
	b.progress(fmt.Sprintf("W1×%d: %d commits, then W2, W3, W5 on its store", b.opts.Scale, n))
	err := withStore(ctx, b.h, fmt.Sprintf("bench/W1x%d", b.opts.Scale), func(conn driver.Conn) error {
		var w1Err error
		b.measureAlways("W1", func() error {
			r, err := runW1(ctx, conn, n)
			if err != nil {
				w1Err = err
				return fmt.Errorf("×%d run: %w", b.opts.Scale, err)
			}
			sr.W1 = scaling([]w1Result{r})
			sr.Workloads = append(sr.Workloads, b.scaledFigure("W1", "commits/s", "push commit", timed{n, r.total, r.ops}))
			return nil
		})
		if w1Err != nil {
			return nil
		}
		for _, rd := range readWorkloads {
			if !b.selected(rd.id) || specOf(rd.id).cap != "" && !b.declared[specOf(rd.id).cap] {
				continue
			}
			b.progress(fmt.Sprintf("%s on the ×%d store", rd.id, b.opts.Scale))
			t, err := rd.run(ctx, conn, n)
			if err != nil {
				sr.Workloads = append(sr.Workloads, ScaledWorkload{ID: rd.id, Unit: rd.unit, Error: err.Error()})
				continue
			}
			sr.Workloads = append(sr.Workloads, b.scaledFigure(rd.id, rd.unit, rd.op, t))
		}
		return nil
	})
	if sr.W1 != nil {
		rep.Scaled = sr
	}
	return b.stopRun(err)
}

// scaledFigure is workload id's figure at ×Scale against its ×1 median.
func (b *benchRun) scaledFigure(id, unit, op string, t timed) ScaledWorkload {
	w := ScaledWorkload{ID: id, Unit: unit, Rate: t.rate(), RateX1: median(b.samples[id][unit]),
		Latency: []Latency{latencyOf(op, t.ops)}}
	if w.RateX1 > 0 {
		w.Ratio = w.Rate / w.RateX1
	}
	return w
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
			for _, op := range workloadOps[s.id] {
				if ds := b.lat[s.id][op]; len(ds) > 0 {
					w.Latency = append(w.Latency, latencyOf(op, ds))
				}
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
	if w8 := b.samples["W8"]; len(w8["commits/s"]) > 0 {
		t := &Tenants{Partitions: b.tenants(), CommitsEach: W8CommitsEach, Listed: b.listed,
			PullAlone: median(w8[w8PullAloneUnit]), ScanAlone: median(w8[w8ScanAloneUnit]),
			PullOverAlone:  pairedRatio(w8["changes/s"], w8[w8PullAloneUnit]),
			ScanOverAlone:  pairedRatio(w8["rows/s"], w8[w8ScanAloneUnit]),
			PullAloneP50Ms: latencyOf("", b.lat["W8"][w8PullAloneUnit]).P50Ms,
			ScanAloneP50Ms: latencyOf("", b.lat["W8"][w8ScanAloneUnit]).P50Ms}
		if b.selected("W1") {
			t.PushOverW1 = pairedRatio(w8["commits/s"], b.samples["W1"]["commits/s"])
		}
		rep.Tenants = t
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

// pairedRatio is the median over the runs of a's rate over b's in the
// same run (W1's over W7's: W7's time over W1's; the two run in the same
// round, so a load that drifts over minutes cancels out), or the ratio of
// the medians when the runs do not pair up; 0 when either has no sample.
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
