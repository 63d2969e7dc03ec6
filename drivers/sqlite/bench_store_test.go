package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// BenchmarkStorePush is sync.Store.Push on one partition, W1's shape (10
// upserts of fresh rows per commit), one commit per iteration: what a
// host's push costs end to end (validation, the reads, the client
// binding CR-7, the writes, the result). one-client pushes every commit
// under one client id (its binding is read, never written again);
// client-per-push under a new client id each (each push writes a
// binding record):
//
//	go test ./drivers/sqlite -run '^$' -bench BenchmarkStorePush -benchtime=3000x -count=5
func BenchmarkStorePush(b *testing.B) {
	for _, mode := range []struct {
		name   string
		client func(i int) string
	}{
		{"one-client", func(int) string { return "client" }},
		{"client-per-push", func(i int) string { return fmt.Sprintf("client%07d", i) }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			s := sync.OpenConn(openDSN(b, filepath.Join(b.TempDir(), "bench.db")))
			if err := s.EnsureSchema(ctx, testSchema()); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ops := make([]sync.PushOp, 10)
				for k := range ops {
					n := i*10 + k
					r := todoRow(fmt.Sprintf("r%07d", n), fmt.Sprintf("p%d", n%20), fmt.Sprintf("o%d", n%50))
					ops[k] = sync.PushOp{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Values: r.Values}
				}
				req := sync.PushRequest{ClientID: mode.client(i), ClientCommitID: fmt.Sprintf("cc%d", i), ActorID: "actor", Ops: ops}
				if _, err := s.Push(ctx, "bench", req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
