package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// -driver all, end to end. In this test binary the registered drivers are
// sqlite, the broken offByOneName (broken_test.go: fails SEQ-1 and W1's
// MaxCommitSeq check), and the two below: one never reachable, one that
// answers exactly once (the probe) and is gone when the run needs it.
const (
	unreachableName = "test-only-unreachable"
	vanishingName   = "test-only-vanishing"
)

// vanishingBudget is how many more stores vanishingDriver provisions;
// tests that need it set it (the tests of this package do not run in
// parallel).
var vanishingBudget atomic.Int64

func init() {
	sync.Register(unreachableName, unreachableDriver{})
	base, _ := sync.Lookup("sqlite")
	sync.Register(vanishingName, vanishingDriver{base})
}

// unreachableDriver behaves like a server driver whose server is down.
type unreachableDriver struct{}

func (unreachableDriver) Open(context.Context, string) (driver.Conn, error) {
	return nil, driver.Errorf(driver.CodeUnavailable, "test: connection refused")
}

func (unreachableDriver) Provision(context.Context, string) (string, func(context.Context) error, error) {
	return "", nil, driver.Errorf(driver.CodeUnavailable, "test: connection refused")
}

// vanishingDriver is sqlite while vanishingBudget lasts, then unreachable.
type vanishingDriver struct{ base driver.Driver }

func (d vanishingDriver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	return d.base.Open(ctx, dsn)
}

func (d vanishingDriver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if vanishingBudget.Add(-1) < 0 {
		return "", nil, driver.Errorf(driver.CodeUnavailable, "test: connection refused")
	}
	return d.base.(driver.Provisioner).Provision(ctx, baseDSN)
}

// runAll runs the CLI with -driver all (which refuses -dsn, so every
// driver uses its default place: sqlite a directory under os.TempDir).
func runAll(t *testing.T, budget int64, args ...string) (int, string, string) {
	t.Helper()
	vanishingBudget.Store(budget)
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), append([]string{"-driver", AllDrivers}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// reportsIn splits a -driver all text run into its per-driver reports.
func reportsIn(out string) map[string]string {
	got := map[string]string{}
	for _, part := range regexp.MustCompile(`(?m)^driver: `).Split(out, -1)[1:] {
		name, _, _ := strings.Cut(part, "\n")
		got[name] = part
	}
	return got
}

func TestDriverAllSuiteSkipsUnreachable(t *testing.T) {
	const rows = `^ROW-4/` // passes on sqlite and on the off-by-one driver alike
	want := selected(t, rows)
	code, out, errOut := runAll(t, 0, "-run", rows)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d (an unreachable driver is skipped, not failed); stdout:\n%s\nstderr:\n%s", code, ExitOK, out, errOut)
	}
	reps := reportsIn(out)
	if len(reps) != 2 || reps["sqlite"] == "" || reps[offByOneName] == "" {
		t.Fatalf("reports for %v, want sqlite and %s:\n%s", slices.Sorted(maps.Keys(reps)), offByOneName, out)
	}
	for name, rep := range reps {
		if p, f, s := summary(t, rep); p != want || f != 0 || s != 0 {
			t.Errorf("%s: summary %d/%d/%d, want %d/0/0", name, p, f, s, want)
		}
	}
	for _, name := range []string{unreachableName, vanishingName} {
		if !strings.Contains(errOut, "driver "+name+" skipped: cannot reach it") || !strings.Contains(errOut, "connection refused") {
			t.Errorf("stderr does not report %s as skipped with its reason:\n%s", name, errOut)
		}
	}
}

func TestDriverAllSuiteExitIsTheWorst(t *testing.T) {
	// SEQ-1 fails on the off-by-one driver: exit 1, and sqlite's report is
	// still complete and green.
	code, out, errOut := runAll(t, 0, "-run", brokenRules)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, ExitFailed, out, errOut)
	}
	reps := reportsIn(out)
	if _, f, _ := summary(t, reps["sqlite"]); f != 0 {
		t.Errorf("sqlite: %d failed, want 0:\n%s", f, reps["sqlite"])
	}
	if _, f, _ := summary(t, reps[offByOneName]); f == 0 {
		t.Errorf("%s: no failure reported:\n%s", offByOneName, reps[offByOneName])
	}

	// The vanishing driver passes the probe and is gone when its suite
	// starts: reported on stderr, exit 2, the others still reported.
	code, out, errOut = runAll(t, 1, "-run", `^ROW-4/`)
	if code != ExitUsage || !strings.Contains(errOut, vanishingName) {
		t.Fatalf("exit %d, stderr %q; want %d naming %s", code, errOut, ExitUsage, vanishingName)
	}
	if reps := reportsIn(out); reps["sqlite"] == "" || reps[offByOneName] == "" {
		t.Errorf("the reachable drivers' reports are missing:\n%s", out)
	}
}

func TestDriverAllSuiteFormats(t *testing.T) {
	for _, f := range []string{"json", "junit"} {
		if code, out, errOut := runAll(t, 0, "-run", `^ROW-4/`, "-format", f); code != ExitUsage || out != "" || !strings.Contains(errOut, "-format text") {
			t.Errorf("-format %s: exit %d, stdout %q, stderr %q; want a usage error and nothing on stdout", f, code, out, errOut)
		}
	}
}

// benchAll runs the benchmark of every driver on a tiny W1 (one run of 20
// commits) and decodes the JSON report.
func benchAll(t *testing.T, budget int64, workloads string) (int, []conformance.BenchReport, string) {
	t.Helper()
	code, out, errOut := runAll(t, budget, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-run", workloads, "-format", "json")
	var reps []conformance.BenchReport
	if out != "" {
		if err := json.Unmarshal([]byte(out), &reps); err != nil {
			t.Fatalf("stdout is not a JSON array of reports: %v\n%s", err, out)
		}
	}
	return code, reps, errOut
}

func TestDriverAllBench(t *testing.T) {
	// W1 fails its MaxCommitSeq check on the off-by-one driver: exit 1,
	// one report per reachable driver, in name order.
	code, reps, errOut := benchAll(t, 0, `^W1$`)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, errOut)
	}
	var names []string
	for _, r := range reps {
		names = append(names, r.Driver)
	}
	if !slices.Equal(names, []string{"sqlite", offByOneName}) {
		t.Fatalf("reports for %v, want [sqlite %s]", names, offByOneName)
	}
	w1 := func(r conformance.BenchReport) conformance.WorkloadResult {
		for _, w := range r.Workloads {
			if w.ID == "W1" {
				return w
			}
		}
		return conformance.WorkloadResult{}
	}
	if w := w1(reps[0]); w.Status != conformance.BenchOK || len(w.Rates) == 0 || w.Rates[0].Median <= 0 || reps[0].Scaling == nil {
		t.Errorf("sqlite W1 %+v scaling %+v, want ok with a rate and scaling figures", w, reps[0].Scaling)
	}
	if w := w1(reps[1]); w.Status != conformance.BenchFailed || !strings.Contains(w.Error, "MaxCommitSeq") {
		t.Errorf("%s W1 %+v, want failed on MaxCommitSeq", offByOneName, w)
	}
	for _, name := range []string{unreachableName, vanishingName} {
		if !strings.Contains(errOut, "driver "+name+" skipped: cannot reach it") {
			t.Errorf("stderr does not report %s as skipped:\n%s", name, errOut)
		}
	}

	// W4 passes on both reachable drivers: exit 0 although two are skipped.
	code, reps, errOut = benchAll(t, 0, `^W4$`)
	if code != ExitOK || len(reps) != 2 {
		t.Fatalf("W4: exit %d, %d reports; want 0 and 2; stderr:\n%s", code, len(reps), errOut)
	}

	// The vanishing driver passes the probe, then its harness fails: it is
	// left out, named on stderr, and the exit status is 2.
	code, reps, errOut = benchAll(t, 1, `^W1$`)
	if code != ExitUsage || len(reps) != 2 || !strings.Contains(errOut, "driver "+vanishingName+": ") {
		t.Fatalf("vanishing: exit %d, %d reports, stderr %q; want %d, 2 reports, the driver named", code, len(reps), errOut, ExitUsage)
	}
}

func TestDriverAllBenchText(t *testing.T) {
	code, out, errOut := runAll(t, 0, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-run", `^W1$`)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, errOut)
	}
	if !regexp.MustCompile(`(?m)^driver +sqlite +` + regexp.QuoteMeta(offByOneName) + ` *$`).MatchString(out) {
		t.Errorf("the table has no column per reachable driver:\n%s", out)
	}
	for _, want := range []string{"sqlite W1 commits/s per tenth of 20 commits:", offByOneName + " W1 FAILED: ",
		"W1 scaling is the last tenth's rate over the first's"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"fewer than 3 runs", "name it alone: -driver " + unreachableName} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out, unreachableName) {
		t.Errorf("the unreachable driver has a column:\n%s", out)
	}
}
