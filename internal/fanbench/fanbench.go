// Package fanbench measures commit-fanout wake latency (FAN-1): the time
// from a commit's Commit returning on one instance of a store to its wake
// arriving at a subscriber on another instance. Each bundled driver's
// BenchmarkWakeLatency calls it; docs/scaling.md has the figures.
package fanbench

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// WakeLatency opens two instances of one store with open (the schema
// ensured on both), makes b.N pushes on the first, one at a time, each
// waiting for its wake on a subscription of the second, and reports the
// latency's p50 and p99 in ms. Before each push it sleeps a random time
// below jitter (the poll interval of a polling driver), so pushes fall
// anywhere between two polls rather than right after one; the sleep is
// not timed.
func WakeLatency(b *testing.B, open func() (driver.Conn, error), jitter time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns [2]driver.Conn
	for i := range conns {
		c, err := open()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	writer, reader := conns[0], conns[1]
	wakes, err := reader.(driver.CommitFanoutConn).SubscribeCommits(ctx)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if jitter > 0 {
			b.StopTimer()
			time.Sleep(rand.N(jitter))
			b.StartTimer()
		}
		if err := faulttest.Push(ctx, writer, "p1", i); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for got := false; !got; {
			select {
			case w := <-wakes:
				got = w.Partition == "p1" && w.CommitSeq >= int64(i+1)
			case <-time.After(time.Minute):
				b.Fatalf("no wake for commit %d", i+1)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
