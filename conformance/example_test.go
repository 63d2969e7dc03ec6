package conformance_test

import (
	"fmt"
	"os"

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
