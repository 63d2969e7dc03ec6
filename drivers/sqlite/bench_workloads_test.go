package sqlite

import (
	"testing"

	"github.com/syncstore/syncstore/conformance"
)

// BenchmarkWorkloads runs docs/performance.md's standard workload (W1–W6) through
// the shared conformance code, one fresh store (a file in its own
// directory) per workload run, exactly as any other driver is measured:
//
//	go test ./drivers/sqlite -run '^$' -bench Workloads -benchtime 1x -count 6
//
// BenchmarkRawLoop (bench_raw_test.go) is W1's physical ceiling on this
// engine; docs/performance.md shows how to compare the two with benchstat.
func BenchmarkWorkloads(b *testing.B) {
	h, err := conformance.HarnessFor("sqlite", Driver{}, b.TempDir(), nil, false)
	if err != nil {
		b.Fatal(err)
	}
	conformance.RunBenchmarks(b, h)
}
