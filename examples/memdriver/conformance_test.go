package memdriver_test

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/examples/memdriver"
)

// TestConformance runs the whole suite against the driver: every case gets
// a fresh store from Driver.Provision. The driver declares index-lookup
// (the suite checks the declaration, ERR-3), and transactions of different
// partitions run in parallel (TX-1).
//
// An in-memory engine is never unreachable, so Harness.Unreachable (TX-7,
// ERR-1) gives the nearest honest analogue: a store whose partition "p1"
// is held by another writer until the case ends, so Begin on it can only
// give up at its context's deadline, with a retryable CodeUnavailable.
func TestConformance(t *testing.T) {
	h, err := conformance.HarnessFor(memdriver.Name, memdriver.Driver{}, "",
		[]driver.Capability{driver.CapIndexLookup}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		conn := h.Open(ct)
		holder, err := h.Reopen(ct, conn).Begin(context.Background(), "p1")
		if err != nil {
			ct.Fatalf("hold p1: %v", err)
		}
		ct.Cleanup(func() { _ = holder.Rollback(context.Background()) })
		return conn
	}
	conformance.Run(t, h)
}
