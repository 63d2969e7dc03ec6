package d1http

import (
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
)

// testToken is the bearer token of every test double.
const testToken = "test-token"

// newDouble starts a d1test server for the test and returns it with a base
// DSN (no database) pointing at it.
func newDouble(t testing.TB) (*d1test.Server, string) {
	t.Helper()
	srv := d1test.NewServer(testToken)
	t.Cleanup(srv.Close)
	return srv, "d1://acct?token=" + testToken + "&endpoint=" + srv.URL + "&request_timeout_ms=2000"
}

// TestConformance runs the whole shared suite against the driver over the
// D1 double, one fresh database per case. Harness.Unreachable is a store
// whose double stops answering (every request reset).
func TestConformance(t *testing.T) {
	_, base := newDouble(t)
	h, err := conformance.HarnessFor("d1http", Driver{}, base, expectedCaps, false)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = unreachableStore
	conformance.Run(t, h)
}

// unreachableStore is Harness.Unreachable for every lane: a store on a
// double of its own that stops answering (every request reset). It tests
// the driver's behaviour when D1 is gone, which needs no real engine.
func unreachableStore(ct conformance.T) driver.Conn {
	ct.Helper()
	srv := d1test.NewServer(testToken)
	ct.Cleanup(srv.Close)
	base := "d1://acct?token=" + testToken + "&endpoint=" + srv.URL + "&request_timeout_ms=500"
	dsn, _, err := Driver{}.Provision(ct.Context(), base)
	if err != nil {
		ct.Fatalf("provision: %v", err)
	}
	conn, err := Driver{}.Open(ct.Context(), dsn)
	if err != nil {
		ct.Fatalf("open: %v", err)
	}
	ct.Cleanup(func() { _ = conn.Close() })
	srv.SetDown(true)
	return conn
}

// expectedCaps are the capabilities the driver declares.
var expectedCaps = []driver.Capability{driver.CapReactions, driver.CapAuthoritativeQuery, driver.CapIndexLookup, driver.CapBlobRefs, driver.CapAdmin, driver.CapCommitFanout, driver.CapReactionsAcross, driver.CapLeases}
