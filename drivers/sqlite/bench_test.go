package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// BenchmarkPush is docs/performance.md's W1 shape on one partition: per commit, its
// own transaction with 10 upserts of fresh rows (projects p0…p19 round
// robin, owners o0…o49), AppendCommit, PutPushResult, Commit. One
// benchmark iteration is one commit. With -benchtime=5000x (or 50000x) it
// also reports the rate of every tenth of the commits (docs/performance.md: cost
// must not grow with the store):
//
//	go test ./drivers/sqlite -run '^$' -bench BenchmarkPush -benchtime=5000x
//
// What to expect: the first tenth is faster because the B-trees are still
// smaller than one page per insertion point (each commit touches ~50
// scattered index leaves once warm: 20 change-scope, 20 row-scope, 10
// declared-index entries); from the second tenth on, bytes written per
// commit are flat, and CPU per commit grows only with B-tree depth.
func BenchmarkPush(b *testing.B) {
	ctx := context.Background()
	c := openDSN(b, filepath.Join(b.TempDir(), "bench.db"))
	if err := c.EnsureSchema(ctx, testSchema()); err != nil {
		b.Fatal(err)
	}
	tenth := b.N / 10
	var tenths []time.Duration
	b.ResetTimer()
	start := time.Now()
	mark := start
	for i := 0; i < b.N; i++ {
		pushW1(b, c, i)
		if tenth > 0 && (i+1)%tenth == 0 && len(tenths) < 10 {
			now := time.Now()
			tenths = append(tenths, now.Sub(mark))
			mark = now
		}
	}
	if tenth > 0 {
		b.ReportMetric(float64(tenth)/tenths[0].Seconds(), "first-tenth-commits/s")
		b.ReportMetric(float64(tenth)/tenths[9].Seconds(), "last-tenth-commits/s")
		rates := make([]string, len(tenths))
		for i, d := range tenths {
			rates[i] = fmt.Sprintf("%.0f", float64(tenth)/d.Seconds())
		}
		b.Logf("commits/s per tenth of %d commits: %v", b.N, rates)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}

func pushW1(b testing.TB, c *Conn, i int) {
	ctx := context.Background()
	tx, err := c.Begin(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	changes := make([]driver.Change, 0, 10)
	for k := 0; k < 10; k++ {
		n := i*10 + k
		r := todoRow(fmt.Sprintf("r%07d", n), fmt.Sprintf("p%d", n%20), fmt.Sprintf("o%d", n%50))
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			b.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
	}
	cid := fmt.Sprintf("cc%d", i)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "client", ClientCommitID: cid, ActorID: "actor", CreatedAtMs: int64(i), Changes: changes})
	if err != nil {
		b.Fatal(err)
	}
	res := driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: int64(i),
		Ops: []driver.OpResult{{Status: driver.OpApplied}}}
	if err := tx.PutPushResult(ctx, "client", cid, res); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}
