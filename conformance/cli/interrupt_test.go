package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// stallName is a driver registered only in this test binary: the real
// SQLite driver whose EnsureSchema announces itself on stalled and then
// waits until its ctx ends, so a test can interrupt a run while a case
// is certainly running. Unless a test arms it, it cannot provision a
// store, so -driver all leaves it out as unreachable.
const stallName = "test-only-sqlite-stalls-in-ensure-schema"

var (
	stalled    = make(chan struct{}, 100)
	stallArmed atomic.Bool
)

// coreName is a driver registered only in this test binary: the real
// SQLite driver with every capability hidden (its Conns are the core
// only), so capability cases report NOT IMPLEMENTED — every bundled
// driver declares every capability.
const coreName = "test-only-sqlite-core"

func init() {
	base, _ := sync.Lookup("sqlite")
	sync.Register(stallName, stallDriver{base})
	sync.Register(coreName, coreDriver{base})
}

type coreDriver struct{ base driver.Driver }

func (d coreDriver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	c, err := d.base.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return coreConn{c}, nil
}

// coreArmed lets coreDriver provision stores; unarmed, -driver all
// leaves it out as unreachable.
var coreArmed atomic.Bool

func (d coreDriver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if !coreArmed.Load() {
		return "", nil, driver.Errorf(driver.CodeUnavailable, "test driver not armed: connection refused")
	}
	return d.base.(driver.Provisioner).Provision(ctx, baseDSN)
}

// coreConn hides the capabilities of the Conn it embeds.
type coreConn struct{ driver.Conn }

type stallDriver struct{ base driver.Driver }

func (d stallDriver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	c, err := d.base.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return stallConn{c}, nil
}

func (d stallDriver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if !stallArmed.Load() {
		return "", nil, driver.Errorf(driver.CodeUnavailable, "test driver not armed: connection refused")
	}
	return d.base.(driver.Provisioner).Provision(ctx, baseDSN)
}

type stallConn struct{ driver.Conn }

func (c stallConn) EnsureSchema(ctx context.Context, _ driver.Schema) error {
	stalled <- struct{}{}
	<-ctx.Done()
	return driver.Wrap(driver.CodeUnavailable, ctx.Err(), "stalled until the context ended")
}

// runInterrupted runs the CLI on the stalling driver, cancels its ctx
// (as SIGINT/SIGTERM do in Main) while the first case runs, and returns
// exit code, stdout, stderr and the base directory of the run's stores.
func runInterrupted(t *testing.T, args ...string) (int, string, string, string) {
	t.Helper()
	for len(stalled) > 0 {
		<-stalled
	}
	stallArmed.Store(true)
	defer stallArmed.Store(false)
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"-driver", stallName, "-dsn", dir, "-run", subset}, args...), &stdout, &stderr)
	}()
	<-stalled // a case is inside EnsureSchema
	cancel(errors.New("signal terminated"))
	code := <-done
	return code, stdout.String(), stderr.String(), dir
}

// An interrupt stops the run: the running case and every case not started
// are INTERRUPTED (not FAIL, not "did not finish within"), the summary
// counts them, every provisioned store is dropped, and the exit code is
// ExitInterrupted.
func TestInterruptedRunText(t *testing.T) {
	want := selected(t, subset)
	code, out, errOut, dir := runInterrupted(t)
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, ExitInterrupted, out, errOut)
	}
	if strings.Contains(out, "FAIL") || strings.Contains(out, "did not finish") {
		t.Errorf("an interrupted run reports failures:\n%s", out)
	}
	lines := regexp.MustCompile(`(?m)^INTERRUPTED  (SEQ-1|ROW-4)  \S+.*— interrupted: .*signal terminated.*$`).FindAllString(out, -1)
	if len(lines) != want {
		t.Errorf("%d INTERRUPTED lines naming the signal, want %d:\n%s", len(lines), want, out)
	}
	if n := strings.Count(out, "interrupted: not started"); n != want-1 {
		t.Errorf("%d cases reported not started, want %d (all but the running one):\n%s", n, want-1, out)
	}
	if got := summaryCounts(t, out); got != [5]int{0, 0, 0, 0, want} {
		t.Errorf("summary counts %v, want [0 0 0 0 %d]", got, want)
	}
	if !strings.Contains(errOut, "interrupted (signal terminated)") {
		t.Errorf("stderr does not say the run was interrupted: %q", errOut)
	}
	expectEmptyDir(t, dir)
}

// -format jsonl streams one line per finished case between a run line and
// a summary line; an interrupted run's lines say INTERRUPTED.
func TestInterruptedRunJSONL(t *testing.T) {
	want := selected(t, subset)
	code, out, errOut, dir := runInterrupted(t, "-format", "jsonl")
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, ExitInterrupted, errOut)
	}
	lines := jsonlLines(t, out)
	if len(lines) != want+2 || lines[0]["type"] != "run" || lines[len(lines)-1]["type"] != "summary" {
		t.Fatalf("want a run line, %d case lines and a summary line:\n%s", want, out)
	}
	for _, l := range lines[1 : want+1] {
		if l["type"] != "case" || l["status"] != string(conformance.StatusInterrupted) {
			t.Errorf("case line %v, want status %s", l, conformance.StatusInterrupted)
		}
	}
	if s := lines[len(lines)-1]; s["interrupted"] != float64(want) || s["failed"] != float64(0) {
		t.Errorf("summary %v, want %d interrupted and none failed", s, want)
	}
	expectEmptyDir(t, dir)
}

// A run that is not interrupted streams the same shape, one case line per
// case as it finishes; "skipped" and "not implemented" are counted apart.
func TestJSONLReport(t *testing.T) {
	const pattern = `^(ROW-4/|ERR-1/unreachable-is-retryable|FAN-1/)`
	n := selected(t, pattern)
	coreArmed.Store(true)
	defer coreArmed.Store(false)
	code, out, errOut := run(t, "-driver", coreName, "-run", pattern, "-format", "jsonl")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	lines := jsonlLines(t, out)
	if len(lines) != n+2 {
		t.Fatalf("%d lines, want %d (run, cases, summary):\n%s", len(lines), n+2, out)
	}
	run := lines[0]
	if run["type"] != "run" || run["driver"] != coreName || run["cases"] != float64(n) {
		t.Errorf("run line %v", run)
	}
	status := map[string]int{}
	for _, l := range lines[1 : n+1] {
		if l["type"] != "case" || l["name"] == "" {
			t.Errorf("case line %v", l)
		}
		status[l["status"].(string)]++
	}
	sum := lines[n+1]
	for key, st := range map[string]conformance.Status{"passed": conformance.StatusPass, "skipped": conformance.StatusSkip,
		"notImplemented": conformance.StatusNotImplemented} {
		if sum[key] != float64(status[string(st)]) || status[string(st)] == 0 {
			t.Errorf("summary %s = %v; the case lines have %d %s (want > 0)", key, sum[key], status[string(st)], st)
		}
	}
}

// "skipped" (a case the harness cannot run) and "not implemented" (a
// capability the driver does not declare) are separate counts in every
// report format.
func TestSkippedAndNotImplementedCountedApart(t *testing.T) {
	// The core-only driver declares no commit-fanout; the CLI's harness
	// has no Unreachable, so that case skips.
	const pattern = `^(ERR-1/unreachable-is-retryable|FAN-1/)`
	fan := selected(t, `^FAN-1/`)
	coreArmed.Store(true)
	defer coreArmed.Store(false)

	code, out, _ := run(t, "-driver", coreName, "-run", pattern)
	if got := summaryCounts(t, out); code != ExitOK || got != [5]int{0, 0, 1, fan, 0} {
		t.Errorf("text: exit %d, counts %v; want 0 and [0 0 1 %d 0]", code, got, fan)
	}

	_, out, _ = run(t, "-driver", coreName, "-run", pattern, "-format", "json")
	var rep conformance.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != 1 || rep.NotImplemented != fan || rep.Interrupted != 0 {
		t.Errorf("json: skipped %d, notImplemented %d, interrupted %d; want 1, %d, 0", rep.Skipped, rep.NotImplemented, rep.Interrupted, fan)
	}

	_, out, _ = run(t, "-driver", coreName, "-run", pattern, "-format", "junit")
	s := parseJUnit(t, out).Suites[0]
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["count.skipped"] != "1" || props["count.notImplemented"] != strconv.Itoa(fan) || props["count.interrupted"] != "0" {
		t.Errorf("junit: count properties %v; want skipped 1, notImplemented %d, interrupted 0", props, fan)
	}
	types := map[string]int{}
	for _, c := range s.Cases {
		if c.Skipped != nil {
			types[c.Skipped.Type]++
		}
	}
	if types["SKIP"] != 1 || types["NOT IMPLEMENTED"] != fan || s.Skipped != 1+fan {
		t.Errorf("junit: <skipped> types %v, skipped attribute %d; want SKIP 1, NOT IMPLEMENTED %d, attribute %d", types, s.Skipped, fan, 1+fan)
	}
}

func jsonlLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v\n%s", l, err, out)
		}
		lines = append(lines, m)
	}
	return lines
}

// expectEmptyDir fails when the run left a store in dir.
func expectEmptyDir(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the run left %s behind in its -dsn directory", e.Name())
	}
}
