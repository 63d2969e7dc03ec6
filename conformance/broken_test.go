package conformance_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/testlane"
)

// TestSuiteCatchesBrokenDrivers runs the whole suite against deliberately
// broken wrappers of the SQLite driver and checks that exactly the rules
// each one breaks fail — no fewer (the suite can fail) and no more (the
// failure points at the right rule). Every test that calls runBroken is a
// full lane: it runs under SYNCSTORE_TEST_FULL=1 (docs/testing.md).
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	broken := []brokenDriver{
		{name: "leaky-scan", want: []string{"P-1", "P-2", "V-1"}, also: []string{"PULL-3", "PULL-10", "PULL-11", "PULL-12"}, wrap: func(c driver.Conn) driver.Conn {
			return &leakyScan{connWrap: connWrap{c}, parts: map[string]bool{}}
		}},
		// Every case that counts commits after a rollback notices; Push
		// rolls back every replay and ends every rejection through
		// CommitRejected, so its cases that count commits notice too, and
		// so do CR-7's, which count them after a push refused for its
		// client id.
		{name: "burn-seq-on-rollback", want: []string{"SEQ-2", "TX-2", "TX-8", "V-9"},
			also: []string{"CR-7", "PUSH-1", "PUSH-2", "PUSH-5", "PUSH-7", "PUSH-9", "PUSH-10", "PUSH-11", "PUSH-12", "PUSH-13", "PUSH-15", "OUT-1", "OUT-2"},
			wrap: func(c driver.Conn) driver.Conn { return &burnOnRollback{connWrap{c}} }},
		// Pull returns the windows it reads (PULL-6).
		{name: "split-commit-at-limit", want: []string{"WIN-4"}, also: []string{"PULL-6"},
			wrap: func(c driver.Conn) driver.Conn { return &splitAtLimit{connWrap{c}} }},
		// Its results live in memory, beyond the reach of the retention
		// deletions too.
		{name: "last-push-result-wins", want: []string{"PR-3"}, also: []string{"PR-7", "RET-5", "RET-8", "RET-11"},
			wrap: func(c driver.Conn) driver.Conn {
				return &lastWriterWins{connWrap: connWrap{c}, latest: map[string]driver.PushResult{}}
			}},
		// Declaring the Conn half also runs the capability's cases.
		{name: "conn-half-of-index-lookup", caps: []driver.Capability{driver.CapIndexLookup},
			want: []string{"ERR-3", "ERR-4", "IXL-1", "IXL-2", "IXL-3", "IXL-4", "V-5"},
			wrap: func(c driver.Conn) driver.Conn { return &halfCapability{connWrap{c}} }},
		{name: "capability-lost-by-wrapper", caps: []driver.Capability{driver.CapAdmin}, want: []string{"ERR-3"},
			wrap: func(c driver.Conn) driver.Conn { return &connWrap{c} }},
		// Push's deletes keep the row too; a bootstrap page then holds a
		// deleted row (PULL-5).
		{name: "delete-keeps-row", want: []string{"ROW-3", "TX-2", "TX-3"}, also: []string{"PUSH-3", "PUSH-4", "PUSH-12", "PUSH-18", "PULL-5", "SCH-1"},
			wrap: func(c driver.Conn) driver.Conn { return &deleteIsNoop{connWrap{c}} }},
		// Bootstrap pages are scans (PULL-2…PULL-5, PULL-8).
		{name: "descending-scan", want: []string{"SCAN-1"}, also: []string{"PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-8", "PULL-10", "PULL-11", "PULL-12", "SCH-1"},
			wrap: func(c driver.Conn) driver.Conn { return &descendingScan{connWrap{c}} }},
		{name: "integers-through-float64", want: []string{"V-3", "VAL-1"},
			wrap: func(c driver.Conn) driver.Conn { return &lossyIntegers{connWrap{c}} }},
		{name: "prune-through-horizon", want: []string{"HZ-2"},
			wrap: func(c driver.Conn) driver.Conn { return &pruneToHorizon{connWrap{c}} }},
		{name: "untyped-errors", want: []string{"ERR-1", "ERR-4"},
			wrap: func(c driver.Conn) driver.Conn { return &untypedErrors{connWrap: connWrap{c}} }},
		{name: "closed-is-unavailable", want: []string{"ERR-1", "ERR-4"}, match: regexp.MustCompile(`^ERR-`),
			wrap: func(c driver.Conn) driver.Conn { return closedIsUnavailable{connWrap{c}} }},
		{name: "max-seq-drops-after-prune", want: []string{"HZ-2", "SEQ-5"},
			wrap: func(c driver.Conn) driver.Conn { return &maxFromRetained{connWrap{c}} }},
		// Commit outcomes that lie, one way and the other (TX-10).
		{name: "commit-lands-but-says-not-written", want: []string{"TX-10"}, match: regexp.MustCompile(`^TX-10/`),
			wrap: func(c driver.Conn) driver.Conn { return &lyingCommit{connWrap: connWrap{c}, landed: true} }},
		{name: "commit-says-landed-but-rolls-back", want: []string{"TX-10"}, match: regexp.MustCompile(`^TX-10/`),
			wrap: func(c driver.Conn) driver.Conn { return &lyingCommit{connWrap: connWrap{c}} }},
		// The escape hatch (TX-11): a handle still given out after the Tx
		// ended, and host rows that survive a rollback.
		{name: "stale-host-handle", caps: []driver.Capability{}, host: true, want: []string{"TX-11"}, match: regexp.MustCompile(`^TX-11/`),
			wrap: func(c driver.Conn) driver.Conn { return hatchConn{connWrap{c}, false} }},
		{name: "rollback-commits-host-rows", caps: []driver.Capability{}, host: true, want: []string{"TX-11"}, match: regexp.MustCompile(`^TX-11/`),
			wrap: func(c driver.Conn) driver.Conn { return hatchConn{connWrap{c}, true} }},
	}
	runBroken(t, broken)
}

// brokenDriver is one deliberately broken driver: a wrapper of a real
// SQLite Conn that breaks one promise, and the rules that must then fail.
type brokenDriver struct {
	name string
	wrap func(driver.Conn) driver.Conn
	// caps are the capabilities the broken driver declares (the harness
	// expects them). With none, both halves of every capability of the
	// wrapped driver are stripped, so only core cases run.
	caps []driver.Capability
	want []string // rule IDs that must fail, sorted
	// also are rules that may fail as well: the breakage violates them too.
	also []string
	// match selects the cases to run; nil runs the whole suite.
	match *regexp.Regexp
	// reopen offers Harness.Reopen: the wrappers reach the SQLite Conn
	// under them through unwrap() driver.Conn.
	reopen bool
	// host offers Harness.HostTable (the SQLite driver's, TX-11).
	host bool
}

// unwrapper is implemented by wrappers that can hand back what they wrap.
type unwrapper interface{ unwrap() driver.Conn }

func (c connWrap) unwrap() driver.Conn { return c.Conn }

// runBroken runs the suite (or b.match of it) against each broken driver in
// parallel and checks that every rule of b.want fails and nothing fails
// outside b.want and b.also — the suite can fail, and its failures point at
// the rule that was broken.
func runBroken(t *testing.T, broken []brokenDriver) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the suite once per broken driver")
	}
	testlane.RequireFull(t, "the suite once per deliberately broken driver")
	base, err := conformance.HarnessFor("sqlite", sqlite.Driver{}, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			open := func(t conformance.T, c driver.Conn) driver.Conn {
				if b.caps == nil {
					return connWrap{b.wrap(c)}
				}
				return b.wrap(c)
			}
			h := base
			h.Name = "broken:" + b.name
			h.Capabilities = b.caps
			h.Open = func(t conformance.T) driver.Conn { return open(t, base.Open(t)) }
			h.Reopen = nil
			if b.host {
				h.HostTable = func(t conformance.T, c driver.Conn) conformance.HostTable {
					return conformance.SQLHostTable(t, c, "CREATE TABLE host_notes (k TEXT PRIMARY KEY)")
				}
			}
			if b.reopen {
				h.Reopen = func(t conformance.T, c driver.Conn) driver.Conn {
					for u, ok := c.(unwrapper); ok; u, ok = c.(unwrapper) {
						c = u.unwrap()
					}
					return open(t, base.Reopen(t, c))
				}
			}
			rep, err := conformance.RunCases(t.Context(), h, conformance.RunOptions{Match: b.match})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Passed+rep.Failed == 0 {
				t.Fatalf("no case ran: %s", rep.Summary())
			}
			failed := rep.FailedRules()
			bad := false
			for _, rule := range b.want {
				if !slices.Contains(failed, rule) {
					t.Errorf("rule %s did not fail", rule)
					bad = true
				}
			}
			for _, rule := range failed {
				if !slices.Contains(b.want, rule) && !slices.Contains(b.also, rule) {
					t.Errorf("rule %s failed but the breakage is not about it", rule)
					bad = true
				}
			}
			if bad {
				t.Logf("failed rules: %v", failed)
				for _, c := range rep.Cases {
					if c.Status == conformance.StatusFail {
						t.Logf("FAIL %s: %v", c.Name, c.Output)
					}
				}
			}
		})
	}
}
