package conformance

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite"
)

// Percentiles by nearest rank over the pooled samples.
func TestLatencyPercentiles(t *testing.T) {
	ds := make([]time.Duration, 0, 200)
	for i := 200; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := latencyOf("op", ds)
	if l.Op != "op" || l.Samples != 200 || l.P50Ms != 100 || l.P99Ms != 198 || l.MaxMs != 200 {
		t.Fatalf("latencyOf(1…200 ms) = %+v, want p50 100, p99 198, max 200", l)
	}
	if l := latencyOf("one", []time.Duration{1500 * time.Microsecond}); l.P50Ms != 1.5 || l.P99Ms != 1.5 || l.MaxMs != 1.5 {
		t.Fatalf("one sample: %+v", l)
	}
	if l := latencyOf("none", nil); l.Samples != 0 || l.MaxMs != 0 {
		t.Fatalf("no sample: %+v", l)
	}
}

// timeCommits times every commit, and the commits' durations add up to
// no more than the loop's total (one clock, chained).
func TestTimeCommitsRecordsEachCommit(t *testing.T) {
	r, err := timeCommits("t", 50, func(i int) (int64, error) {
		time.Sleep(100 * time.Microsecond)
		return int64(i + 1), nil
	})
	if err != nil || len(r.ops) != 50 {
		t.Fatalf("%d op durations (%v), want 50", len(r.ops), err)
	}
	var sum time.Duration
	for _, d := range r.ops {
		if d <= 0 {
			t.Fatalf("an op lasted %v", d)
		}
		sum += d
	}
	if sum > r.total {
		t.Fatalf("ops add up to %v, more than the loop's %v", sum, r.total)
	}
}

// dropPartition is a Conn whose ListPartitions leaves one partition out.
type dropPartition struct {
	driver.Conn
	drop string
}

func (c dropPartition) ListPartitions(ctx context.Context, after string, limit int) ([]string, error) {
	ps, err := c.Conn.ListPartitions(ctx, after, limit)
	out := ps[:0:0]
	for _, p := range ps {
		if p != c.drop {
			out = append(out, p)
		}
	}
	return out, err
}

// W8 on SQLite with 12 tenants: every figure is there, and a registry
// walk that misses a tenant fails it (REG-3).
func TestW8Small(t *testing.T) {
	ctx := t.Context()
	conn, err := sqlite.Driver{}.Open(ctx, filepath.Join(t.TempDir(), "w8.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureSchema(ctx, TestSchema()); err != nil {
		t.Fatal(err)
	}
	r, err := runW8(ctx, conn, 12)
	if err != nil {
		t.Fatal(err)
	}
	want := expectedP7(W8CommitsEach*BenchRowsPerCommit) * w8Reads
	if r.push.commits != 12*W8CommitsEach || len(r.push.ops) != 12*W8CommitsEach || r.pull.n != want || r.scan.n != want ||
		r.pullAlone.n != want || r.scanAlone.n != want || len(r.pull.ops) != w8Reads || len(r.scan.ops) != w8Reads ||
		r.list.n != 12 || len(r.list.ops) != 1 {
		t.Fatalf("W8 of 12 tenants: push %d commits (%d timed), pull %d, scan %d, alone %d/%d, list %d; want 240, %d changes and rows each, 12 listed",
			r.push.commits, len(r.push.ops), r.pull.n, r.scan.n, r.pullAlone.n, r.scanAlone.n, r.list.n, want)
	}
	names := make([]string, 12)
	for k := range names {
		names[k] = W8Partition(k)
	}
	if _, err := w8List(ctx, dropPartition{conn, W8Partition(5)}, names); err == nil || !strings.Contains(err.Error(), "REG-3") {
		t.Fatalf("a walk missing a tenant passed: %v", err)
	}
	if _, err := w8List(ctx, conn, names[:11]); err == nil || !strings.Contains(err.Error(), "REG-3") {
		t.Fatalf("a walk listing an extra partition passed: %v", err)
	}
}
