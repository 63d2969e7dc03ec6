package conformance

import (
	"context"
	"fmt"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// HarnessFor builds a Harness for a driver that implements
// driver.Provisioner: every case gets a store of its own, created beside
// baseDSN and dropped after the case. It is what cmd/conformance and the
// bundled drivers' tests use. caps and parallel fill Harness.Capabilities
// and Harness.ParallelPartitions.
func HarnessFor(name string, d driver.Driver, baseDSN string, caps []driver.Capability, parallel bool) (Harness, error) {
	p, ok := d.(driver.Provisioner)
	if !ok {
		return Harness{}, fmt.Errorf("conformance: driver %q does not implement driver.Provisioner; write a Harness by hand", name)
	}
	var dsns gosync.Map // driver.Conn → dsn
	open := func(t T, dsn string) driver.Conn {
		t.Helper()
		conn, err := d.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("harness: open %s store: %v", name, err)
		}
		dsns.Store(conn, dsn)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	return Harness{
		Name: name,
		Open: func(t T) driver.Conn {
			t.Helper()
			dsn, drop, err := p.Provision(t.Context(), baseDSN)
			if err != nil {
				t.Fatalf("harness: provision %s store: %v", name, err)
			}
			// Registered first, so it runs after the Conns' Close.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := drop(ctx); err != nil {
					t.Logf("harness: drop %s store: %v", name, err)
				}
			})
			return open(t, dsn)
		},
		Reopen: func(t T, conn driver.Conn) driver.Conn {
			t.Helper()
			dsn, ok := dsns.Load(conn)
			if !ok {
				t.Fatalf("harness: Reopen of a Conn this harness did not open")
			}
			return open(t, dsn.(string))
		},
		Capabilities:       caps,
		ParallelPartitions: parallel,
	}, nil
}
