package d1http

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/fanbench"
)

// BenchmarkWakeLatency: the time from Commit returning on one instance to
// the wake arriving on another instance of the same store (FAN-1;
// docs/scaling.md), reported as p50-ms and p99-ms.
func BenchmarkWakeLatency(b *testing.B) {
	_, base := newDouble(b)
	dsn, _, err := Driver{}.Provision(context.Background(), base)
	if err != nil {
		b.Fatal(err)
	}
	var conns [2]driver.Conn
	for i := range conns {
		c, err := Driver{}.Open(context.Background(), dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.EnsureSchema(context.Background(), conformance.TestSchema()); err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	fanbench.WakeLatency(b, conns[0], conns[1], defaultFanoutPoll)
}
