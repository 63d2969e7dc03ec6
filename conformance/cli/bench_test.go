package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
)

// The benchmark front end on a tiny workload (W1 of 20 commits, one run),
// so it stays fast: the figures are meaningless, the plumbing is not.

func TestBenchJSONReport(t *testing.T) {
	code, out, errOut := run(t, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-run", "^W[1235]$", "-format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var reps []conformance.BenchReport
	if err := json.Unmarshal([]byte(out), &reps); err != nil {
		t.Fatalf("stdout is not a JSON array of reports: %v\n%s", err, out)
	}
	if len(reps) != 1 || reps[0].Driver != "sqlite" || reps[0].Commits != 20 || reps[0].Runs != 1 {
		t.Fatalf("report header %+v, want one sqlite report of 1 run × 20 commits", reps)
	}
	got := map[string]conformance.WorkloadResult{}
	for _, w := range reps[0].Workloads {
		got[w.ID] = w
	}
	for _, id := range []string{"W1", "W2", "W3", "W5"} {
		w, ok := got[id]
		if !ok || w.Status != conformance.BenchOK || len(w.Rates) == 0 || w.Rates[0].Median <= 0 {
			t.Errorf("%s: %+v, want status ok with a positive rate", id, w)
		}
	}
	if _, ok := got["W6a"]; ok {
		t.Errorf("W6a ran although -run selected W1, W2, W3, W5")
	}
	if s := reps[0].Scaling; s == nil || len(s.Tenths) != 10 || s.Ratio <= 0 {
		t.Errorf("scaling %+v, want 10 tenths and a ratio", s)
	}
}

func TestBenchTextTable(t *testing.T) {
	code, out, errOut := run(t, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-run", "^W3$")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"driver", "sqlite", "W3 bootstrap", "rows/s", "peak RSS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-bench", "-format", "junit"},
		{"-bench", "-list"},
		{"-bench", "-bench-runs", "0"},
		{"-bench", "-bench-commits", "5"},
		{"-bench", "-driver", "nosuchdriver"},
		{"-bench", "-bench-runs", "1", "-run", "^NO-SUCH-WORKLOAD$"},
	} {
		if code, _, errOut := run(t, args...); code != ExitUsage || errOut == "" {
			t.Errorf("%v: exit %d (stderr %q), want %d with a message", args, code, errOut, ExitUsage)
		}
	}
}

func TestDriverAllRejectsDSN(t *testing.T) {
	// run passes -dsn; -driver all uses each driver's default place.
	if code, _, errOut := run(t, "-driver", "all", "-run", subset); code != ExitUsage || !strings.Contains(errOut, "-dsn") {
		t.Fatalf("exit %d, stderr %q; want a usage error naming -dsn", code, errOut)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -4500: "-4,500"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}
