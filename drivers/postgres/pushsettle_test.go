package postgres

import (
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// TestPushSettleFaults: a push whose COMMIT reaches the server, its reply
// dropped with the connection and the server unreachable from then on
// (for every connection, or the next few), never answers an error that
// says nothing was written (OUT-1, faulttest.PushSettle).
func TestPushSettleFaults(t *testing.T) {
	s := openProxied(t)
	faulttest.PushSettle(t, faulttest.ProxyTarget(s.Conn, conformance.TestSchema(), s.Proxy), faulttest.SettleSeeds(), time.Second)
}
