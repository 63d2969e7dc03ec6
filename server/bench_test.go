package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// BenchmarkRound measures one sync round — a push of one upsert and an
// incremental pull of one subscription — through the handler (decode,
// validation, scope resolution, the engine calls, encoding; no network:
// ServeHTTP on a recorder) and as the same Store.Push and Store.Pull calls
// made directly (PushWith with the same two hooks, and Pull), alternately, each on a store of its own (so the machine's
// drift reaches both alike). It reports the p50 and p90 of each and
// overhead-p50-µs, the median of the paired differences: the protocol
// layer's cost.
//
//	go test ./server -run '^$' -bench BenchmarkRound -benchtime 2000x
func BenchmarkRound(b *testing.B) {
	for _, l := range lanes() {
		b.Run(l.name, func(b *testing.B) { benchRound(b, l) })
	}
}

func benchRound(b *testing.B, l lane) {
	{
		{
			h := newHandlerBench(b, l)
			d := newDirectBench(b, l)
			hs := make([]time.Duration, 0, b.N)
			ds := make([]time.Duration, 0, b.N)
			diffs := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				x := h.round(b, i)
				y := d.round(b, i)
				hs, ds, diffs = append(hs, x), append(ds, y), append(diffs, x-y)
			}
			b.StopTimer()
			slices.Sort(hs)
			slices.Sort(ds)
			slices.Sort(diffs)
			b.ReportMetric(float64(hs[len(hs)/2].Microseconds()), "handler-p50-µs")
			b.ReportMetric(float64(hs[len(hs)*9/10].Microseconds()), "handler-p90-µs")
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds()), "direct-p90-µs")
			b.ReportMetric(float64(diffs[len(diffs)/2].Microseconds()), "overhead-p50-µs")
		}
	}
}

type handlerBench struct {
	e      *env
	ep     string
	cursor int64
}

func newHandlerBench(b *testing.B, l lane) *handlerBench {
	e := newEnv(b, l, func(c *Config) { c.Limits.PartitionTouchInterval = 0; c.Logger = discardLogger() })
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, -1))
	return &handlerBench{e: e, ep: ep}
}

// round runs round i through the handler and returns its duration.
func (h *handlerBench) round(b *testing.B, i int) time.Duration {
	b.StopTimer()
	id := fmt.Sprintf("t%08d", i)
	body := req(2, hdr("c1", h.ep), commit("k"+id, upsert("tasks", id, h.e.task(id, "p1", "title"))),
		&ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, h.cursor))
	rec := httptest.NewRecorder()
	hr := httptest.NewRequest(http.MethodPost, "/sync", bytes.NewReader(body))
	hr.Header.Set("Content-Type", ContentType)
	hr.Header.Set("Authorization", "Bearer alice")
	b.StartTimer()
	t0 := time.Now()
	h.e.srv.ServeHTTP(rec, hr)
	d := time.Since(t0)
	b.StopTimer()
	if rec.Code != 200 {
		b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
	}
	m, err := ssp2.DecodeResponse(rec.Body.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	h.cursor = sections(m)[0].end.NextCursor
	b.StartTimer()
	return d
}

type directBench struct {
	e      *env
	cursor int64
}

func newDirectBench(b *testing.B, l lane) *directBench {
	return &directBench{e: newEnv(b, l, func(c *Config) { c.Logger = discardLogger() })}
}

// round makes round i's Store.Push and Store.Pull calls and returns their
// duration.
func (d *directBench) round(b *testing.B, i int) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	id := fmt.Sprintf("t%08d", i)
	push := sync.PushRequest{ClientID: "c1", ClientCommitID: "k" + id, ActorID: "alice", Ops: []sync.PushOp{{Table: "tasks", RowID: id, Op: sync.OpUpsert,
		Values: driver.Values{"id": id, "project_id": "p1", "title": "title", "done": nil, "n": int64(5), "data": nil, "raw": nil}}}}
	pull := sync.PullRequest{ClientID: "c1", ActorID: "alice", WireVersion: 2, Subscriptions: []sync.PullSubscription{{ID: "s", Table: "tasks",
		Scopes: sync.ScopeFilter{"project_id": {"p1"}}, Cursor: d.cursor}}}
	// The same engine call the server makes: a push with an Authorize and
	// a ValidateOp hook (they make the engine read the rows first) and the
	// clock.
	hooks := sync.PushOptions{
		Authorize: func(_ context.Context, _ *sync.Tx, in sync.AuthorizeInput) error {
			if in.Op.Values["project_id"] != "p1" {
				return &sync.Refusal{Code: "sync.forbidden"}
			}
			return nil
		},
		ValidateOp: func(context.Context, *sync.Tx, sync.OpInput) (sync.Values, error) { return nil, nil },
		Now:        time.Now,
	}
	b.StartTimer()
	t0 := time.Now()
	if _, err := d.e.store.PushWith(ctx, "p1", push, hooks); err != nil {
		b.Fatal(err)
	}
	resp, err := d.e.store.Pull(ctx, "p1", pull)
	dur := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	d.cursor = resp.Subscriptions[0].NextCursor
	return dur
}
