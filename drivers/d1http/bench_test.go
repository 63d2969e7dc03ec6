package d1http

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// BenchmarkQuickW1W3 runs docs/performance.md's W1–W3 against the D1 double (one
// benchmark iteration = the whole run; commits set by -benchtime=Nx,
// default 1 → 1,000 commits):
//
//	go test ./drivers/d1http -run '^$' -bench QuickW1W3 -benchtime=1x
//
// It reports W1 commits/s, requests per push commit, W2 changes/s and
// W3 rows/s. The double runs in-process over loopback HTTP, so the rates
// measure the driver's work and request count, not D1's latency.
func BenchmarkQuickW1W3(b *testing.B) {
	for range b.N {
		runWorkloads(b, 1000)
	}
}

func runWorkloads(b *testing.B, commits int) {
	ctx := context.Background()
	srv, _ := newDouble(b)
	c := openOn(b, srv, "")
	before := srv.Stats().Requests
	start := time.Now()
	for i := range commits {
		tx, err := c.Begin(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		changes := make([]driver.Change, 0, 10)
		for j := range 10 {
			n := i*10 + j
			id := fmt.Sprintf("t%07d", n)
			row := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": fmt.Sprintf("p%d", n%20), "owner": fmt.Sprintf("o%d", n%50)},
				Values: driver.Values{"id": id, "title": "title", "done": false, "project_id": fmt.Sprintf("p%d", n%20),
					"owner_id": fmt.Sprintf("o%d", n%50), "updated_at": int64(1700000000000 + n)}}
			if err := tx.UpsertRow(ctx, "todos", row); err != nil {
				b.Fatal(err)
			}
			changes = append(changes, driver.Change{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1})
		}
		seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: fmt.Sprint(i), ActorID: "a", CreatedAtMs: 1, Changes: changes})
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.PutPushResult(ctx, "c", fmt.Sprint(i), driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1}); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	w1 := time.Since(start)
	b.ReportMetric(float64(commits)/w1.Seconds(), "W1-commits/s")
	b.ReportMetric(float64(srv.Stats().Requests-before)/float64(commits), "requests/push")

	start = time.Now()
	max, _ := c.MaxCommitSeq(ctx, "bench")
	var changes int
	for after := int64(0); after < max; {
		page, err := c.ReadCommitWindow(ctx, "bench", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p7"}},
			AfterSeq: after, ThroughSeq: max, LimitChanges: 500})
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, cm := range page {
			changes += len(cm.Changes)
		}
		after = page[len(page)-1].Seq
	}
	b.ReportMetric(float64(changes)/time.Since(start).Seconds(), "W2-changes/s")
	if changes != commits*10/20 {
		b.Fatalf("W2 read %d changes, want %d", changes, commits*10/20)
	}

	start = time.Now()
	var rows int
	for after := ""; ; {
		page, err := c.ScanRows(ctx, "bench", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p7"}}, AfterRowID: after, Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		rows += len(page)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "W3-rows/s")
	if rows != commits*10/20 {
		b.Fatalf("W3 read %d rows, want %d", rows, commits*10/20)
	}
}
