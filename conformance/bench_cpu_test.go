package conformance

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/syncstore/syncstore/drivers/sqlite"
)

// W1 measures every tenth in process CPU time as well (docs/performance.md's scaling
// rule, measured so that a loaded machine does not distort it).
func TestW1CPUTenths(t *testing.T) {
	if _, ok := processCPU(); !ok {
		if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
			t.Fatalf("processCPU unavailable on %s", runtime.GOOS)
		}
		t.Skipf("no getrusage on %s", runtime.GOOS)
	}
	ctx := t.Context()
	conn, err := sqlite.Driver{}.Open(ctx, filepath.Join(t.TempDir(), "w1.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureSchema(ctx, TestSchema()); err != nil {
		t.Fatal(err)
	}
	r, err := runW1(ctx, conn, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.tenths) != 10 || len(r.cpuTenths) != 10 {
		t.Fatalf("%d wall tenths, %d CPU tenths; want 10 and 10", len(r.tenths), len(r.cpuTenths))
	}
	var sum time.Duration
	for k, d := range r.cpuTenths {
		if d < 0 {
			t.Errorf("tenth %d: CPU time %v < 0", k+1, d)
		}
		sum += d
	}
	if sum <= 0 {
		t.Errorf("50 commits used %v of CPU, want > 0", sum)
	}
}
