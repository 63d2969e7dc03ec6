// Package pullbench measures Store.Pull's latency under load (PULL-13):
// clients of one quiet partition pull, caught up, while another
// partition takes pushes, on SQLite and PostgreSQL side by side.
//
//	go test ./internal/pullbench -run '^$' -bench PullUnderLoad -benchtime 2000x
package pullbench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/syncstore/syncstore/drivers/postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// pullers is how many clients pull at once; each pulls in a loop from
// the cursors it was given.
const pullers = 4

func schema() sync.Schema {
	return sync.Schema{Version: 1, Tables: []sync.Table{{Name: "todos", PrimaryKey: "id",
		Columns: []sync.Column{{Name: "id", Type: sync.TypeString}, {Name: "project_id", Type: sync.TypeString}},
		Scopes:  []sync.Scope{{Variable: "project", Column: "project_id"}}}}}
}

// BenchmarkPullUnderLoad runs b.N pulls of caught-up clients of partition
// "quiet" (pullers at once, 2 subscriptions each) while one goroutine
// pushes one-row commits to partition "busy", and reports the pulls'
// p50 and p99 and the pushes' p50 in ms.
func BenchmarkPullUnderLoad(b *testing.B) {
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "bench.db") }},
		{"postgres", func(b *testing.B) string { return testdb.NewDatabase(b, testdb.Postgres) }},
	} {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := sync.Open(d.name, d.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.EnsureSchema(ctx, schema()); err != nil {
				b.Fatal(err)
			}
			push := func(p string, i int) error {
				id := fmt.Sprintf("t%08d", i)
				_, err := s.Push(ctx, p, sync.PushRequest{ClientID: "writer", ClientCommitID: id, ActorID: "w",
					Ops: []sync.PushOp{{Table: "todos", RowID: id, Op: sync.OpUpsert,
						Values: sync.Values{"id": id, "project_id": fmt.Sprintf("p%d", i%4)}}}})
				return err
			}
			for i := range 100 {
				if err := push("quiet", i); err != nil {
					b.Fatal(err)
				}
			}
			// Each client bootstraps, then follows from its cursors.
			reqs := make([]sync.PullRequest, pullers)
			for c := range reqs {
				reqs[c] = sync.PullRequest{ClientID: fmt.Sprintf("c%d", c), ActorID: "a", WireVersion: 2}
				for k := range 2 {
					reqs[c].Subscriptions = append(reqs[c].Subscriptions, sync.PullSubscription{ID: fmt.Sprint(k), Table: "todos",
						Scopes: sync.ScopeFilter{"project": {fmt.Sprintf("p%d", (c+k)%4)}}, Cursor: sync.PullBootstrap})
				}
			}
			pull := func(c int) error {
				resp, err := s.Pull(ctx, "quiet", reqs[c])
				if err != nil {
					return err
				}
				for k, r := range resp.Subscriptions {
					reqs[c].Subscriptions[k].Cursor, reqs[c].Subscriptions[k].BootstrapToken = r.NextCursor, r.BootstrapToken
				}
				return nil
			}
			for c := range reqs {
				for range 3 {
					if err := pull(c); err != nil {
						b.Fatal(err)
					}
				}
			}
			// The load: pushes to another partition until the pulls end.
			stop := make(chan struct{})
			var pushLat []time.Duration
			var pushErr error
			var pwg gosync.WaitGroup
			pwg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					t0 := time.Now()
					if pushErr = push("busy", i); pushErr != nil {
						return
					}
					pushLat = append(pushLat, time.Since(t0))
				}
			})
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg gosync.WaitGroup
			errs := make([]error, pullers)
			b.ResetTimer()
			for c := range pullers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						t0 := time.Now()
						if err := pull(c); err != nil {
							errs[c] = err
							return
						}
						lat[i] = time.Since(t0)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(stop)
			pwg.Wait()
			for _, err := range append(errs, pushErr) {
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			slices.Sort(pushLat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "pull-p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "pull-p99-ms")
			if len(pushLat) > 0 {
				b.ReportMetric(ms(pushLat[len(pushLat)/2]), "push-p50-ms")
			}
		})
	}
}
