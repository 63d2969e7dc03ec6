package mysql

import (
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/testdb"
)

// BenchmarkWorkloads runs docs/performance.md's standard workload (W1–W6) through
// the shared conformance code, one fresh database per workload run, on
// the server internal/testdb finds:
//
//	go test ./drivers/mysql -run '^$' -bench Workloads -benchtime 1x -short
func BenchmarkWorkloads(b *testing.B) {
	h, err := conformance.HarnessFor("mysql", Driver{}, testdb.MySQLServer(b), declaredCaps, true)
	if err != nil {
		b.Fatal(err)
	}
	conformance.RunBenchmarks(b, h)
}
