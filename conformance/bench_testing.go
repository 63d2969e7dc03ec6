package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// RunBenchmarks runs docs/performance.md's workloads as sub-benchmarks of b, one per
// workload, so a driver's test file measures itself with
//
//	func BenchmarkWorkloads(b *testing.B) { conformance.RunBenchmarks(b, h) }
//
// and `go test -run '^$' -bench BenchmarkWorkloads -benchtime 1x -count 6`
// feeds benchstat. One iteration is the whole workload as docs/performance.md
// defines it; ns/op is its timed part (setup, such as W1 before W2, is not
// timed). Each sub-benchmark also reports its docs/performance.md rates as custom
// metrics (commits/s, changes/s, rows/s, …), the latency of its
// operation (p50-ms, p99-ms, max-ms over every iteration's operations:
// W1's and W6's commits, W2's and W3's pages, W5's lookups) and the
// process's peak memory (peak-RSS-bytes). Sub-benchmarks:
//
//	W1-push             5,000 commits of 10 upserts, one Tx each; also
//	                    first-tenth and last-tenth commits/s, their ratio
//	                    (≥ 0.9 required), the same two tenths as process
//	                    CPU µs per commit (getrusage; Unix only) and
//	                    cpu-rate-last/first (first/last CPU per commit:
//	                    last/first as CPU-time rates),
//	                    and store-bytes when the Conn is a SizeReporter
//	W7-engine-push      W1's commits through sync.Store.Push, base version 0
//	                    on every op; the same figures as W1-push
//	W1x10-push          the same at 50,000 commits (skipped with -short)
//	W2-pull             ReadCommitWindow of project p7 over W1's store
//	W3-bootstrap        ScanRows of project p7 over W1's store
//	W4-reactions        enqueue 10,000, 4 workers claim and complete
//	W5-index-lookup     2,000 ScanRowsByIndex on by_owner
//	W6a-push-own-partitions, W6b-push-one-partition
//	W8-tenants          2 × 5,000 partitions of W8CommitsEach commits,
//	                    round robin (skipped with -short): commits/s, its
//	                    tenths and push latency as W1-push; pull-changes/s
//	                    and scan-rows/s of one tenant, the same reads of a
//	                    partition alone (alone-pull-changes/s,
//	                    alone-scan-rows/s) and list-partitions/s. Its ns/op
//	                    also counts the untimed setup (the reference
//	                    partition, registering the tenants)
//
// A workload whose capability the driver does not declare is skipped with
// "not implemented: capability …". A workload that fails its own check
// (counts read back, dense sequences) fails the benchmark.
func RunBenchmarks(b *testing.B, h Harness) {
	if h.Open == nil {
		b.Fatal("conformance: Harness.Open is required")
	}
	const commits = 5000
	ctx := b.Context()
	var declared map[driver.Capability]bool
	if err := withStore(ctx, h, "bench/probe", func(conn driver.Conn) error {
		declared = map[driver.Capability]bool{}
		for _, c := range driver.ConnCapabilities(conn) {
			declared[c] = true
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	benchW1 := func(n int, run func(context.Context, driver.Conn, int) (w1Result, error)) func(b *testing.B) {
		return func(b *testing.B) {
			var sum w1Sum
			var peak, size int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				err := withStore(ctx, h, "bench/W1", func(conn driver.Conn) error {
					mem := startMem()
					b.StartTimer()
					r, err := run(ctx, conn, n)
					b.StopTimer()
					peak = max(peak, mem.stop())
					if err != nil {
						return err
					}
					sum.add(r)
					if sr, ok := conn.(SizeReporter); ok {
						size, err = sr.StoreSizeBytes(ctx)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			sum.report(b, b.N*n)
			b.ReportMetric(float64(peak), "peak-RSS-bytes")
			if size > 0 {
				b.ReportMetric(float64(size), "store-bytes")
			}
		}
	}
	b.Run("W1-push", benchW1(commits, runW1))
	b.Run("W7-engine-push", benchW1(commits, runW7))
	b.Run("W1x10-push", func(b *testing.B) {
		if testing.Short() {
			b.Skip("the 10× W1 run is skipped with -short")
		}
		benchW1(10*commits, runW1)(b)
	})

	// W2, W3 and W5 read one W1 store, filled once (untimed) and kept
	// until RunBenchmarks returns.
	var shared driver.Conn
	var sharedErr error
	var cleanups []func()
	readStore := func(b *testing.B) driver.Conn {
		if shared == nil && sharedErr == nil {
			var release func()
			shared, release, sharedErr = keptStore(ctx, h, "bench/W1-store")
			if sharedErr == nil {
				_, sharedErr = runW1(ctx, shared, commits)
			}
			if release != nil {
				cleanups = append(cleanups, release)
			}
		}
		if sharedErr != nil {
			b.Fatalf("fill the W1 store for the read workloads: %v", sharedErr)
		}
		return shared
	}
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		cleanups = nil
	}()
	read := func(id, unit, op string, fn func(ctx context.Context, conn driver.Conn, commits int) (timed, error)) func(b *testing.B) {
		return func(b *testing.B) {
			if c := specOf(id).cap; c != "" && !declared[c] {
				b.Skipf("not implemented: capability %s", c)
			}
			conn := readStore(b)
			var all timed
			mem := startMem()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t, err := fn(ctx, conn, commits)
				if err != nil {
					b.Fatal(err)
				}
				all.add(t)
			}
			b.StopTimer()
			b.ReportMetric(all.rate(), unit)
			reportLatency(b, latencyOf(op, all.ops))
			b.ReportMetric(float64(mem.stop()), "peak-RSS-bytes")
		}
	}
	b.Run("W2-pull", read("W2", "changes/s", "pull page", runW2))
	b.Run("W3-bootstrap", read("W3", "rows/s", "scan page", runW3))

	b.Run("W4-reactions", func(b *testing.B) {
		if !declared[driver.CapReactions] {
			b.Skipf("not implemented: capability %s", driver.CapReactions)
		}
		var done, enq int
		var drain, enqueue time.Duration
		var peak int64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			err := withStore(ctx, h, "bench/W4", func(conn driver.Conn) error {
				mem := startMem()
				b.StartTimer()
				r, err := runW4(ctx, conn)
				b.StopTimer()
				peak = max(peak, mem.stop())
				done, enq, drain, enqueue = done+r.completed, enq+r.enqueued, drain+r.drain, enqueue+r.enqueue
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(done)/drain.Seconds(), "completions/s")
		b.ReportMetric(float64(enq)/enqueue.Seconds(), "enqueued/s")
		b.ReportMetric(float64(peak), "peak-RSS-bytes")
	})
	b.Run("W5-index-lookup", read("W5", "lookups/s", "lookup", runW5))

	b.Run("W8-tenants", func(b *testing.B) {
		if testing.Short() {
			b.Skip("W8's 10,000 partitions are skipped with -short")
		}
		tenants := 2 * commits
		var push w1Sum
		var pull, scan, pullAlone, scanAlone, list timed
		var peak int64
		for i := 0; i < b.N; i++ {
			err := withStore(ctx, h, "bench/W8", func(conn driver.Conn) error {
				mem := startMem()
				r, err := runW8(ctx, conn, tenants)
				peak = max(peak, mem.stop())
				if err != nil {
					return err
				}
				push.add(r.push)
				pull.add(r.pull)
				scan.add(r.scan)
				pullAlone.add(r.pullAlone)
				scanAlone.add(r.scanAlone)
				list.add(r.list)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		push.report(b, b.N*tenants*W8CommitsEach)
		b.ReportMetric(pull.rate(), "pull-changes/s")
		b.ReportMetric(scan.rate(), "scan-rows/s")
		b.ReportMetric(pullAlone.rate(), "alone-pull-changes/s")
		b.ReportMetric(scanAlone.rate(), "alone-scan-rows/s")
		b.ReportMetric(list.rate(), "list-partitions/s")
		b.ReportMetric(float64(peak), "peak-RSS-bytes")
	})

	for _, shared := range []bool{false, true} {
		name := "W6a-push-own-partitions"
		if shared {
			name = "W6b-push-one-partition"
		}
		b.Run(name, func(b *testing.B) {
			var all timed
			var peak int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				err := withStore(ctx, h, "bench/"+name, func(conn driver.Conn) error {
					mem := startMem()
					b.StartTimer()
					t, err := runW6(ctx, conn, shared)
					b.StopTimer()
					peak = max(peak, mem.stop())
					all.add(t)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(all.rate(), "commits/s")
			reportLatency(b, latencyOf("push commit", all.ops))
			b.ReportMetric(float64(peak), "peak-RSS-bytes")
		})
	}
}

// keptStore opens a fresh store through h with TestSchema ensured and
// returns it with release, which runs h's teardown. Unlike withStore the
// store outlives the call.
func keptStore(ctx context.Context, h Harness, name string) (driver.Conn, func(), error) {
	rt := newRunT(ctx, name)
	var conn driver.Conn
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn = h.Open(rt)
		err = conn.EnsureSchema(ctx, TestSchema())
	}()
	<-done
	release := func() {
		rt.mu.Lock()
		cs := rt.cleanups
		rt.cleanups = nil
		rt.mu.Unlock()
		for i := len(cs) - 1; i >= 0; i-- {
			cs[i]()
		}
	}
	if rt.Failed() {
		release()
		return nil, nil, fmt.Errorf("conformance: harness: %s", strings.Join(rt.lines(), "; "))
	}
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("EnsureSchema: %w", err)
	}
	return conn, release, nil
}
