// Package conformance is the shared behaviour suite every syncstore driver,
// bundled or third-party, is held to. Each case checks one rule of
// docs/contract.md and is named by it ("SEQ-2/rollback-consumes-nothing").
// Core cases bind every driver; a capability's cases run only when the
// driver declares the capability (by implementing its interfaces) and
// are reported as not implemented otherwise — never silently passed.
//
// A driver author's whole integration is one test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{
//			Name: "mydriver",
//			Open: func(t conformance.T) driver.Conn { … a fresh, empty, isolated store … },
//		})
//	}
//
// The same cases run outside go test through RunCases, which is what
// cmd/conformance uses.
package conformance

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// T is the part of *testing.T the cases use. *testing.T satisfies it;
// RunCases supplies its own implementation to run cases outside go test.
// FailNow, Fatalf, SkipNow and Skipf end the case's goroutine.
type T interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
	Failed() bool
	Skipf(format string, args ...any)
	Cleanup(func())
	Context() context.Context
}

// Harness is how the suite reaches a driver.
type Harness struct {
	// Name names the driver in reports (e.g. "sqlite").
	Name string
	// Open returns a fresh, empty store for one case, isolated from every
	// other case's, and registers its teardown (Close, drop the database)
	// with t.Cleanup. It calls t.Fatalf when it cannot. Required.
	Open func(t T) driver.Conn
	// Reopen, if set, returns a second Conn to the same store as conn, as
	// a second server process would open it, and registers its Close with
	// t.Cleanup. Cases that need two instances are skipped without it.
	Reopen func(t T, conn driver.Conn) driver.Conn
	// Capabilities lists the capabilities the driver is expected to
	// declare. The suite cross-checks it against what type assertion finds
	// and fails the ERR-3 case on any difference, so a capability is never
	// lost silently (for instance by a wrapper).
	Capabilities []driver.Capability
	// ParallelPartitions says the engine lets transactions on different
	// partitions run at the same time (TX-1). When true, the suite checks
	// that a Tx on one partition never waits for a Tx on another.
	ParallelPartitions bool
	// QueriesApart says the engine runs authoritative queries on
	// connections of their own, so a push or read of any partition never
	// waits for queries (AQ-7), even when transactions of different
	// partitions do not run in parallel (SQLite's one writer). The AQ-7
	// cases then hold p2's push and read to the strict order they check
	// with ParallelPartitions.
	QueriesApart bool
	// ParallelCases says the stores Open returns share nothing (a
	// database of their own on a server, a file of their own), so Run
	// may run cases in parallel: each case's subtest calls t.Parallel,
	// and go test's -parallel (default GOMAXPROCS) bounds how many run at
	// once. Leave it false when stores share anything (one pooled
	// database emptied per case, a process-wide lock). RunCases and the
	// CLI run cases one at a time either way.
	ParallelCases bool
	// Unreachable, if set, returns a Conn whose engine cannot be reached
	// (TX-7: Begin must fail within the context deadline, never hang). The
	// TX-7 case is skipped without it.
	Unreachable func(t T) driver.Conn
	// HostTable, if set, creates a table of the host's own beside the
	// store of conn (through conn's escape hatch, or however the engine
	// allows) and returns it, for the TX-11 cases: host rows written
	// through a Tx's engine handle (driver.Aser) land with its commit and
	// vanish with its rollback. The TX-11 cases that need it are skipped
	// without it (a driver with no engine transaction handle, like D1's).
	HostTable func(t T, conn driver.Conn) HostTable
}

// Case is one conformance case.
type Case struct {
	// Name is the rule ID, a slash and a short description:
	// "SEQ-2/rollback-consumes-nothing".
	Name string
	// Capability is "" for a core case, else the capability it checks.
	Capability driver.Capability
	// Run checks the rule. It opens its own stores through h.
	Run func(t T, h Harness)
}

// Rule returns the rule ID of the case (the part of Name before "/").
func (c Case) Rule() string {
	rule, _, _ := strings.Cut(c.Name, "/")
	return rule
}

var registry []Case

// register adds cases to the suite; called from init in each rule file.
func register(cs ...Case) { registry = append(registry, cs...) }

// groupOrder fixes the report order of rule groups (docs/contract.md order).
var groupOrder = []string{"V", "SCH", "ROW", "VAL", "P", "TX", "SEQ", "WIN", "LOG", "SCAN", "PR", "CR", "REG", "HZ", "PUSH", "OUT", "PULL", "RET", "ERR",
	"RX", "AQ", "IXL", "BLOB", "ADM", "FAN"}

func ruleKey(rule string) (int, int) {
	group, num, _ := strings.Cut(rule, "-")
	g := len(groupOrder)
	for i, name := range groupOrder {
		if name == group {
			g = i
		}
	}
	n, _ := strconv.Atoi(num)
	return g, n
}

// Cases returns every case of the suite in contract order (rule group,
// rule number, then registration order).
func Cases() []Case {
	out := append([]Case(nil), registry...)
	sort.SliceStable(out, func(i, j int) bool {
		gi, ni := ruleKey(out[i].Rule())
		gj, nj := ruleKey(out[j].Rule())
		if gi != gj {
			return gi < gj
		}
		return ni < nj
	})
	return out
}

// Run runs every case against h as subtests of t, one subtest per case
// named by the case, in parallel when h.ParallelCases is set (Run then
// returns before the cases end; they end before t does). Cases of a
// capability the driver does not declare are skipped with "not
// implemented: capability …".
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil {
		t.Fatal("conformance: Harness.Open is required")
	}
	declared := declaredCapabilities(t, h)
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if h.ParallelCases {
				t.Parallel()
			}
			if c.Capability != "" && !declared[c.Capability] {
				t.Skipf("not implemented: capability %s", c.Capability)
			}
			c.Run(t, h)
		})
	}
}

// declaredCapabilities opens one store and reports which capabilities its
// Conn declares (by type assertion).
func declaredCapabilities(t T, h Harness) map[driver.Capability]bool {
	conn := h.Open(t)
	out := map[driver.Capability]bool{}
	for _, c := range driver.ConnCapabilities(conn) {
		out[c] = true
	}
	return out
}

// RunOptions configure RunCases.
type RunOptions struct {
	// Match, if set, selects the cases whose Name it matches.
	Match *regexp.Regexp
	// CaseTimeout bounds one case; 0 means 2 minutes.
	CaseTimeout time.Duration
	// OnStart and OnResult, if set, are called before and after each case
	// (for live progress). When the run is interrupted, OnResult is also
	// called, without OnStart, for every selected case that never started.
	OnStart  func(c Case)
	OnResult func(r CaseResult)
}

// Status is the outcome of one case.
type Status string

// The case outcomes. A case is StatusInterrupted when RunCases's ctx
// ended (an interrupt) before the case started, or while it ran and before
// it passed or skipped: what it reported then is kept in its Output but
// says nothing about the rule.
const (
	StatusPass           Status = "PASS"
	StatusFail           Status = "FAIL"
	StatusSkip           Status = "SKIP"
	StatusNotImplemented Status = "NOT IMPLEMENTED"
	StatusInterrupted    Status = "INTERRUPTED"
)

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name       string            `json:"name"`
	Rule       string            `json:"rule"`
	Capability driver.Capability `json:"capability,omitempty"`
	Status     Status            `json:"status"`
	Duration   time.Duration     `json:"durationNs"`
	// Output holds the case's log, error and skip messages in order.
	Output []string `json:"output,omitempty"`
}

// CapabilityStatus is one row of the capability matrix.
type CapabilityStatus struct {
	Capability driver.Capability `json:"capability"`
	Declared   bool              `json:"declared"`
	Expected   bool              `json:"expected"`
}

// Report is the outcome of RunCases. The counts add up to len(Cases):
// Skipped counts StatusSkip (a case the harness cannot run) alone,
// NotImplemented the cases of capabilities the driver does not declare,
// Interrupted the cases an interrupt stopped or never let start.
type Report struct {
	Driver         string             `json:"driver"`
	EngineVersion  string             `json:"engineVersion,omitempty"`
	Capabilities   []CapabilityStatus `json:"capabilities"`
	Cases          []CaseResult       `json:"cases"`
	Passed         int                `json:"passed"`
	Failed         int                `json:"failed"`
	Skipped        int                `json:"skipped"`
	NotImplemented int                `json:"notImplemented"`
	Interrupted    int                `json:"interrupted"`
	Duration       time.Duration      `json:"durationNs"`
}

// count adds one case of status s to the counts.
func (r *Report) count(s Status) {
	switch s {
	case StatusPass:
		r.Passed++
	case StatusFail:
		r.Failed++
	case StatusSkip:
		r.Skipped++
	case StatusNotImplemented:
		r.NotImplemented++
	case StatusInterrupted:
		r.Interrupted++
	}
}

// FailedRules returns the sorted, distinct rule IDs of the failed cases.
func (r Report) FailedRules() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range r.Cases {
		if c.Status == StatusFail && !seen[c.Rule] {
			seen[c.Rule] = true
			out = append(out, c.Rule)
		}
	}
	sort.Strings(out)
	return out
}

// Summary returns "N passed, N failed, N skipped, N not implemented",
// followed by ", N interrupted" when an interrupt stopped the run.
func (r Report) Summary() string {
	s := fmt.Sprintf("%d passed, %d failed, %d skipped, %d not implemented", r.Passed, r.Failed, r.Skipped, r.NotImplemented)
	if r.Interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", r.Interrupted)
	}
	return s
}
