package conformance

import (
	"context"
	"fmt"
	"runtime"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// RunCases runs the suite against h outside go test and returns the report.
// It returns an error only when the harness itself cannot open a store.
//
// ctx bounds the whole run (each case is also bounded by
// opts.CaseTimeout). When ctx ends — an interrupt — the running case is
// cancelled and reported StatusInterrupted unless it had already passed
// or skipped, every case not yet started is reported StatusInterrupted
// without running, and RunCases returns the report (Interrupted > 0).
// Every case's cleanups (closing its Conns, dropping its stores) run
// before RunCases returns, after the case has stopped or, if it ignores
// its context, after caseStopGrace.
func RunCases(ctx context.Context, h Harness, opts RunOptions) (Report, error) {
	if h.Open == nil {
		return Report{}, fmt.Errorf("conformance: Harness.Open is required")
	}
	start := time.Now()
	rep := Report{Driver: h.Name}
	var selected []Case
	for _, c := range Cases() {
		if opts.Match == nil || opts.Match.MatchString(c.Name) {
			selected = append(selected, c)
		}
	}
	add := func(res CaseResult) {
		rep.count(res.Status)
		rep.Cases = append(rep.Cases, res)
		if opts.OnResult != nil {
			opts.OnResult(res)
		}
	}
	// notStarted reports the cases from selected[i] on as interrupted.
	notStarted := func(i int) {
		for _, c := range selected[i:] {
			add(CaseResult{Name: c.Name, Rule: c.Rule(), Capability: c.Capability, Status: StatusInterrupted,
				Output: []string{"interrupted: not started (" + context.Cause(ctx).Error() + ")"}})
		}
	}

	probe := newRunT(ctx, "probe")
	var declared map[driver.Capability]bool
	probe.run(func() {
		declared = declaredCapabilities(probe, h)
		conn := h.Open(probe)
		if v, ok := conn.(driver.EngineVersioner); ok {
			if s, err := v.EngineVersion(probe.Context()); err == nil {
				rep.EngineVersion = s
			}
		}
	})
	if (probe.Failed() || declared == nil) && ctx.Err() != nil {
		notStarted(0)
		rep.Duration = time.Since(start)
		return rep, nil
	}
	if probe.Failed() || declared == nil {
		return rep, fmt.Errorf("conformance: harness cannot open a store: %v", probe.output)
	}
	expected := map[driver.Capability]bool{}
	for _, c := range h.Capabilities {
		expected[c] = true
	}
	for _, c := range driver.AllCapabilities {
		rep.Capabilities = append(rep.Capabilities, CapabilityStatus{Capability: c, Declared: declared[c], Expected: expected[c]})
	}

	timeout := opts.CaseTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	for i, c := range selected {
		if ctx.Err() != nil {
			notStarted(i)
			break
		}
		if opts.OnStart != nil {
			opts.OnStart(c)
		}
		res := CaseResult{Name: c.Name, Rule: c.Rule(), Capability: c.Capability}
		if c.Capability != "" && !declared[c.Capability] {
			res.Status = StatusNotImplemented
			res.Output = []string{"not implemented: capability " + string(c.Capability)}
			add(res)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		rt := newRunT(cctx, c.Name)
		t0 := time.Now()
		finished := rt.run(func() { c.Run(rt, h) })
		cancel()
		res.Duration = time.Since(t0)
		switch {
		case ctx.Err() != nil && (!finished || rt.Failed()):
			// Stopped by the interrupt: what it reported since says
			// nothing about the rule.
			rt.log("interrupted: the run was cancelled while the case ran (" + context.Cause(ctx).Error() + ")")
			res.Status = StatusInterrupted
		case !finished:
			rt.Errorf("case did not finish within %s", timeout)
			res.Status = StatusFail
		case rt.Failed():
			res.Status = StatusFail
		case rt.skipped:
			res.Status = StatusSkip
		default:
			res.Status = StatusPass
		}
		res.Output = rt.lines()
		add(res)
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// caseStopGrace is how long a case whose context ended (its timeout, an
// interrupt) is given to return before its cleanups run anyway: closing
// its Conns and dropping its stores under a case still using them would
// turn one failure into many.
const caseStopGrace = 10 * time.Second

// runT is the T that RunCases hands to cases. FailNow and SkipNow end the
// case's goroutine with runtime.Goexit, as *testing.T does.
type runT struct {
	ctx      context.Context
	name     string
	mu       gosync.Mutex
	failed   bool
	skipped  bool
	ended    bool // cleanups have run; a later Cleanup runs at once
	output   []string
	cleanups []func()
}

func newRunT(ctx context.Context, name string) *runT { return &runT{ctx: ctx, name: name} }

// run runs f in its own goroutine, then the cleanups (last first). It
// reports false when the context ended before f returned; f is then given
// caseStopGrace to return before the cleanups run, and abandoned after
// it, as a hung case cannot be stopped from outside.
func (t *runT) run(f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("panic: %v", r)
			}
		}()
		f()
	}()
	finished := true
	select {
	case <-done:
	case <-t.ctx.Done():
		select {
		case <-done: // it returned as its context ended
		default:
			finished = false
			grace := time.NewTimer(caseStopGrace)
			select {
			case <-done:
			case <-grace.C:
			}
			grace.Stop()
		}
	}
	t.mu.Lock()
	cleanups := t.cleanups
	t.cleanups = nil
	t.ended = true
	t.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("panic in cleanup: %v", r)
				}
			}()
			cleanups[i]()
		}()
	}
	return finished
}

func (t *runT) log(s string) {
	t.mu.Lock()
	t.output = append(t.output, s)
	t.mu.Unlock()
}

func (t *runT) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.output...)
}

func (t *runT) Helper()                           {}
func (t *runT) Name() string                      { return t.name }
func (t *runT) Context() context.Context          { return t.ctx }
func (t *runT) Logf(format string, args ...any)   { t.log(fmt.Sprintf(format, args...)) }
func (t *runT) Errorf(format string, args ...any) { t.log(fmt.Sprintf(format, args...)); t.fail() }
func (t *runT) Fatalf(format string, args ...any) { t.Errorf(format, args...); t.FailNow() }
func (t *runT) FailNow()                          { t.fail(); runtime.Goexit() }
func (t *runT) Skipf(format string, args ...any) {
	t.log(fmt.Sprintf(format, args...))
	t.mu.Lock()
	t.skipped = true
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *runT) fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *runT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Cleanup registers f to run when the case ends. A case abandoned at its
// timeout may still register one afterwards (say, the drop of a store it was
// provisioning): nobody else will run it, so it runs at once.
func (t *runT) Cleanup(f func()) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		f()
		return
	}
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}
