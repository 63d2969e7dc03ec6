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
	// Every workload carries the latency of its operation: W1 one sample
	// per commit; W2 (20 commits: 10 changes of p7, one page of 500), W3
	// (one page) and W5 (2,000 lookups).
	for id, want := range map[string]conformance.Latency{
		"W1": {Op: "push commit", Samples: 20}, "W2": {Op: "pull page", Samples: 1},
		"W3": {Op: "scan page", Samples: 1}, "W5": {Op: "lookup", Samples: 2000},
	} {
		checkLatency(t, id, got[id].Latency, want)
	}
	if !strings.Contains(out, `"p99Ms"`) || !strings.Contains(out, `"latency"`) {
		t.Errorf("the JSON report lacks the latency fields:\n%s", out)
	}
}

// checkLatency fails unless ls is exactly one entry for want.Op with
// want.Samples samples and 0 < p50 ≤ p99 ≤ max.
func checkLatency(t *testing.T, id string, ls []conformance.Latency, want conformance.Latency) {
	t.Helper()
	if len(ls) != 1 {
		t.Errorf("%s latency %+v, want one entry for %q", id, ls, want.Op)
		return
	}
	l := ls[0]
	if l.Op != want.Op || l.Samples != want.Samples || !(0 < l.P50Ms && l.P50Ms <= l.P99Ms && l.P99Ms <= l.MaxMs) {
		t.Errorf("%s latency %+v, want op %q, %d samples, 0 < p50 ≤ p99 ≤ max", id, l, want.Op, want.Samples)
	}
}

// W8 on a small store: 30 partitions × 20 commits, round robin, then the
// reads of one partition and the registry walk.
func TestBenchW8Tenants(t *testing.T) {
	code, out, errOut := run(t, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-bench-tenants", "30", "-run", "^W[18]$", "-format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var reps []conformance.BenchReport
	if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 1 || len(reps[0].Workloads) != 2 {
		t.Fatalf("want one report of W1 and W8: %v\n%s", err, out)
	}
	w := reps[0].Workloads[1]
	if w.ID != "W8" || w.Status != conformance.BenchOK {
		t.Fatalf("W8: %+v", w)
	}
	wantUnits := []string{"commits/s", "changes/s", "rows/s", "partitions/s"}
	if len(w.Rates) != len(wantUnits) {
		t.Fatalf("W8 rates %+v, want %v", w.Rates, wantUnits)
	}
	for i, u := range wantUnits {
		if w.Rates[i].Unit != u || w.Rates[i].Median <= 0 {
			t.Errorf("W8 rate %d: %+v, want a positive %s", i, w.Rates[i], u)
		}
	}
	// 600 commits; 1,000 pulls and 1,000 bootstraps of one page each; the
	// 30 partitions listed in one page.
	wantOps := []conformance.Latency{{Op: "push commit", Samples: 600}, {Op: "pull page", Samples: 1000},
		{Op: "scan page", Samples: 1000}, {Op: "list page", Samples: 1}}
	if len(w.Latency) != len(wantOps) {
		t.Fatalf("W8 latency %+v, want %v", w.Latency, wantOps)
	}
	for i, want := range wantOps {
		checkLatency(t, "W8", w.Latency[i:i+1], want)
	}
	tn := reps[0].Tenants
	if tn == nil || tn.Partitions != 30 || tn.CommitsEach != 20 || tn.Listed != 30 || tn.PushOverW1 <= 0 ||
		tn.PullAlone <= 0 || tn.ScanAlone <= 0 || tn.PullOverAlone <= 0 || tn.ScanOverAlone <= 0 || tn.PullAloneP50Ms <= 0 || tn.ScanAloneP50Ms <= 0 {
		t.Errorf("tenants %+v, want 30 partitions × 20 commits, 30 listed and every ratio", tn)
	}
}

// -bench-scale=N runs W1 at N× and the reads on that store, each against
// ×1; a bare -bench-scale (the former boolean) means 10.
func TestBenchScaleFactor(t *testing.T) {
	for _, tc := range []struct {
		flag   string
		factor int
	}{{"-bench-scale=3", 3}, {"-bench-scale", 10}} {
		code, out, errOut := run(t, "-bench", "-bench-runs", "1", "-bench-commits", "20", tc.flag, "-run", "^W[123]$", "-format", "json")
		if code != ExitOK {
			t.Fatalf("%s: exit %d, stderr:\n%s", tc.flag, code, errOut)
		}
		var reps []conformance.BenchReport
		if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 1 {
			t.Fatalf("%s: %v\n%s", tc.flag, err, out)
		}
		s := reps[0].Scaled
		if s == nil || s.Factor != tc.factor || s.Commits != 20*tc.factor || s.W1 == nil || len(s.W1.Tenths) != 10 {
			t.Fatalf("%s: scaled run %+v, want ×%d of 20 commits with W1's tenths", tc.flag, s, tc.factor)
		}
		var ids []string
		for _, w := range s.Workloads {
			ids = append(ids, w.ID)
			if w.Error != "" || w.Rate <= 0 || w.RateX1 <= 0 || w.Ratio <= 0 || len(w.Latency) != 1 || w.Latency[0].Samples == 0 {
				t.Errorf("%s: %s at ×N: %+v, want a rate, its ×1 rate, the ratio and latency", tc.flag, w.ID, w)
			}
		}
		if strings.Join(ids, ",") != "W1,W2,W3" {
			t.Errorf("%s: scaled workloads %v, want W1, W2, W3 (-run selected them; W5 not)", tc.flag, ids)
		}
	}
}

func TestBenchTextTable(t *testing.T) {
	code, out, errOut := run(t, "-bench", "-bench-runs", "1", "-bench-commits", "20", "-run", "^W3$")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"driver", "sqlite", "W3 bootstrap", "rows/s", "peak RSS", "scan page p50/p99/max ms"} {
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
		{"-bench", "-bench-tenants", "-1"},
		{"-bench", "-bench-scale=1"},
		{"-bench", "-bench-scale=x"},
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
