package d1http

import (
	"context"
	"testing"

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
	fanbench.WakeLatency(b, func() (driver.Conn, error) { return Driver{}.Open(context.Background(), dsn) }, defaultFanoutPoll)
}
