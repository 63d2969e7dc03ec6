package conformance_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite"
)

// A driver's test holds it to the whole contract in three lines: build a
// Harness (HarnessFor gives every case a fresh store of its own through
// the driver's Provisioner) and run the suite:
//
//	func TestConformance(t *testing.T) {
//		h, err := conformance.HarnessFor("mydriver", mydriver.Driver{}, baseDSN, declared, true)
//		if err != nil {
//			t.Fatal(err)
//		}
//		conformance.Run(t, h)
//	}
//
// Capabilities lists what the driver declares; the suite checks the
// declaration against the Conn (ERR-3) and runs each capability's cases.
func ExampleHarnessFor() {
	dir, err := os.MkdirTemp("", "syncstore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	h, err := conformance.HarnessFor("sqlite", sqlite.Driver{}, dir,
		[]driver.Capability{driver.CapReactions, driver.CapCommitFanout}, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Name, h.Capabilities)
	// Output: sqlite [reactions commit-fanout]
}

// Run holds a driver to the whole contract from its own test: every case
// is a subtest named by rule ID (go test -run 'TestConformance/TX-' runs
// one group), and a capability the Harness does not declare is reported
// not implemented. This is the test function a driver's package carries
// (shown, not run: Run needs the test's *testing.T).
func ExampleRun() {
	testConformance := func(t *testing.T) {
		h, err := conformance.HarnessFor("sqlite", sqlite.Driver{}, t.TempDir(),
			[]driver.Capability{driver.CapReactions, driver.CapIndexLookup}, true)
		if err != nil {
			t.Fatal(err)
		}
		conformance.Run(t, h)
	}
	_ = testConformance // func TestConformance(t *testing.T) in the driver's package
}
