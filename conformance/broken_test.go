package conformance_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite"
)

// TestSuiteCatchesBrokenDrivers runs the whole suite against deliberately
// broken wrappers of the SQLite driver and checks that exactly the rules
// each one breaks fail — no fewer (the suite can fail) and no more (the
// failure points at the right rule).
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per broken driver")
	}
	base, err := conformance.HarnessFor("sqlite", sqlite.Driver{}, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	broken := []struct {
		name string
		wrap func(driver.Conn) driver.Conn
		caps []driver.Capability
		want []string // rule IDs that must fail, sorted
	}{
		{"leaky-scan", func(c driver.Conn) driver.Conn {
			return &leakyScan{connWrap: connWrap{c}, parts: map[string]bool{}}
		}, nil, []string{"P-1", "P-2", "V-1"}},
		{"burn-seq-on-rollback", func(c driver.Conn) driver.Conn { return &burnOnRollback{connWrap{c}} }, nil,
			// Every case that counts commits after a rollback notices.
			[]string{"SEQ-2", "TX-2", "TX-8", "V-9"}},
		{"split-commit-at-limit", func(c driver.Conn) driver.Conn { return &splitAtLimit{connWrap{c}} }, nil,
			[]string{"WIN-4"}},
		{"last-push-result-wins", func(c driver.Conn) driver.Conn {
			return &lastWriterWins{connWrap: connWrap{c}, latest: map[string]driver.PushResult{}}
		}, nil, []string{"PR-3"}},
		{"conn-half-of-index-lookup", func(c driver.Conn) driver.Conn { return &halfCapability{connWrap{c}} },
			[]driver.Capability{driver.CapIndexLookup},
			// Declaring the Conn half also runs the capability's cases.
			[]string{"ERR-3", "IXL-1", "IXL-2", "IXL-3", "IXL-4", "V-5"}},
		{"capability-lost-by-wrapper", func(c driver.Conn) driver.Conn { return &connWrap{c} },
			[]driver.Capability{driver.CapAdmin}, []string{"ERR-3"}},
		{"delete-keeps-row", func(c driver.Conn) driver.Conn { return &deleteIsNoop{connWrap{c}} }, nil,
			[]string{"ROW-3", "TX-2", "TX-3"}},
		{"descending-scan", func(c driver.Conn) driver.Conn { return &descendingScan{connWrap{c}} }, nil,
			[]string{"SCAN-1"}},
		{"integers-through-float64", func(c driver.Conn) driver.Conn { return &lossyIntegers{connWrap{c}} }, nil,
			[]string{"V-3", "VAL-1"}},
		{"prune-through-horizon", func(c driver.Conn) driver.Conn { return &pruneToHorizon{connWrap{c}} }, nil,
			[]string{"HZ-2"}},
		{"untyped-errors", func(c driver.Conn) driver.Conn { return &untypedErrors{connWrap: connWrap{c}} }, nil,
			[]string{"ERR-1"}},
		{"max-seq-drops-after-prune", func(c driver.Conn) driver.Conn { return &maxFromRetained{connWrap{c}} }, nil,
			[]string{"HZ-2", "SEQ-5"}},
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			h := base
			h.Name = "broken:" + b.name
			h.Capabilities = b.caps
			h.Open = func(t conformance.T) driver.Conn {
				if b.caps == nil {
					// A core-only breakage declares no capability, halves included.
					return connWrap{b.wrap(base.Open(t))}
				}
				return b.wrap(base.Open(t))
			}
			h.Reopen = nil // cases needing a second instance skip
			rep, err := conformance.RunCases(t.Context(), h, conformance.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(b.want, rep.FailedRules()); d != "" {
				t.Errorf("failed rules (-want +got):\n%s", d)
				for _, c := range rep.Cases {
					if c.Status == conformance.StatusFail {
						t.Logf("FAIL %s: %v", c.Name, c.Output)
					}
				}
			}
		})
	}
}
