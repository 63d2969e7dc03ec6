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

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// WakeLatency makes b.N pushes on writer, one at a time, each waiting for
// its wake on a subscription of reader (another instance of the same
// store), and reports the latency's p50 and p99 in ms. Before each push
// it sleeps a random time below jitter (the poll interval of a polling
// driver), so pushes fall anywhere between two polls rather than right
// after one; the sleep is not timed.
func WakeLatency(b *testing.B, writer, reader driver.Conn, jitter time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
