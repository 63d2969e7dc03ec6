package ssp2load

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
)

// BenchmarkLoadRound measures the sync rounds of upstream's load suite
// through the load server's handler (ServeHTTP on a recorder: decode,
// Pull or Push, encode; no network), on each engine:
//
//   - bootstrap: a fresh client's whole image-lane bootstrap of the
//     2,000 storm rows in pages of 1,000 (bootstrap-storm's smoke VU:
//     accept 0b0111, one snapshot page a round), its rounds per op
//     reported as rounds/op;
//   - pull: an incremental pull of a caught-up client (nothing new);
//   - push: one upsert, answered.
//
// pull-p50-µs and push-p50-µs come from pull-vs-push, which alternates
// the two on one store (the same load). LOADBENCH_DRIVERS=sqlite,…
// narrows the engines (default sqlite,postgres,mysql; a server that is
// not reachable fails the sub-benchmark).
//
//	go test ./internal/ssp2load -run '^$' -bench BenchmarkLoadRound -benchmem
func BenchmarkLoadRound(b *testing.B) {
	drivers := []string{"sqlite", "postgres", "mysql"}
	if v := os.Getenv("LOADBENCH_DRIVERS"); v != "" {
		drivers = strings.Split(v, ",")
	}
	for _, d := range drivers {
		b.Run(d, func(b *testing.B) {
			ctx := context.Background()
			l, err := Open(ctx, Config{Driver: d, SeedRows: 2000})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close(ctx) })
			c := &benchClient{b: b, h: l, id: "bench-epoch"}
			c.epoch = c.acquire()
			b.Run("bootstrap", func(b *testing.B) {
				rounds, run := 0, benchRuns.Add(1)
				for i := range b.N {
					cl := newBenchClient(b, l, fmt.Sprintf("boot-%d-%d", run, i), c.epoch)
					rounds += cl.bootstrap()
				}
				b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
			})
			b.Run("pull", func(b *testing.B) {
				cl := newBenchClient(b, l, fmt.Sprintf("pull-%d", benchRuns.Add(1)), c.epoch)
				cl.bootstrap()
				b.ResetTimer()
				for range b.N {
					cl.pull()
				}
			})
			b.Run("push", func(b *testing.B) {
				cl := newBenchClient(b, l, fmt.Sprintf("push-%d", benchRuns.Add(1)), c.epoch)
				for i := range b.N {
					cl.push(i)
				}
			})
			b.Run("pull-vs-push", func(b *testing.B) {
				run := benchRuns.Add(1)
				puller := newBenchClient(b, l, fmt.Sprintf("pvp-pull-%d", run), c.epoch)
				puller.bootstrap()
				pusher := newBenchClient(b, l, fmt.Sprintf("pvp-push-%d", run), c.epoch)
				var pulls, pushes []time.Duration
				b.ResetTimer()
				for i := range b.N {
					t0 := time.Now()
					pusher.push(i)
					t1 := time.Now()
					puller.pull()
					pushes, pulls = append(pushes, t1.Sub(t0)), append(pulls, time.Since(t1))
				}
				b.StopTimer()
				slices.Sort(pulls)
				slices.Sort(pushes)
				b.ReportMetric(float64(pulls[len(pulls)/2].Nanoseconds())/1e3, "pull-p50-µs")
				b.ReportMetric(float64(pushes[len(pushes)/2].Nanoseconds())/1e3, "push-p50-µs")
			})
			b.Run("pull-vs-push-20", func(b *testing.B) { benchPullVsPush20(b, l, c.epoch) })
		})
	}
}

// benchPullVsPush20 runs 20 clients at once, each alternating a push
// round and a pull round of its own (b.N rounds of each in all; the
// pushes land in the storm project, so each pull carries the commits of
// the others since its last), and reports the p50 and p95 of each kind: pull against push at one load.
func benchPullVsPush20(b *testing.B, h http.Handler, epoch string) {
	const clients = 20
	type client struct {
		pusher, puller *benchClient
		pulls, pushes  []time.Duration
	}
	cs := make([]*client, clients)
	run := benchRuns.Add(1)
	for i := range cs {
		cs[i] = &client{pusher: newBenchClient(b, h, fmt.Sprintf("c20-push-%d-%d", run, i), epoch),
			puller: newBenchClient(b, h, fmt.Sprintf("c20-pull-%d-%d", run, i), epoch)}
		cs[i].puller.bootstrap()
	}
	b.ResetTimer()
	var wg gosync.WaitGroup
	for i, c := range cs {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Go(func() {
			for j := range n {
				t0 := time.Now()
				c.pusher.pushTo(j, StormProject)
				t1 := time.Now()
				c.puller.pull()
				c.pushes, c.pulls = append(c.pushes, t1.Sub(t0)), append(c.pulls, time.Since(t1))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var pulls, pushes []time.Duration
	for _, c := range cs {
		pulls, pushes = append(pulls, c.pulls...), append(pushes, c.pushes...)
	}
	slices.Sort(pulls)
	slices.Sort(pushes)
	b.ReportMetric(float64(pulls[len(pulls)/2].Nanoseconds())/1e3, "pull-p50-µs")
	b.ReportMetric(float64(pushes[len(pushes)/2].Nanoseconds())/1e3, "push-p50-µs")
	b.ReportMetric(float64(pulls[len(pulls)*95/100].Nanoseconds())/1e3, "pull-p95-µs")
	b.ReportMetric(float64(pushes[len(pushes)*95/100].Nanoseconds())/1e3, "push-p95-µs")
}

// benchRuns numbers the runs of a sub-benchmark within the process, so
// that each (-count N, and the testing package's own first run of b.N=1)
// has client ids and commit ids of its own: a push of an id pushed before
// is a replay (PUSH-1), which writes nothing and leaves the pulls nothing
// to carry.
var benchRuns atomic.Int64

// benchClient is a minimal SSP2 client of one storm subscription.
type benchClient struct {
	b      *testing.B
	h      http.Handler
	id     string
	epoch  string
	cursor int64
	state  driver.JSON
}

func newBenchClient(b *testing.B, h http.Handler, id, epoch string) *benchClient {
	return &benchClient{b: b, h: h, id: id, epoch: epoch, cursor: -1}
}

func (c *benchClient) round(frames ...ssp2.Frame) *ssp2.Message {
	m := &ssp2.Message{WireVersion: 2, Kind: ssp2.KindRequest, Frames: frames}
	body, err := m.Encode()
	if err != nil {
		c.b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/sync", bytes.NewReader(body))
	r.Header.Set("Content-Type", server.ContentType)
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		c.b.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
	}
	resp, err := ssp2.DecodeResponse(w.Body.Bytes())
	if err != nil {
		c.b.Fatal(err)
	}
	for _, f := range resp.Frames {
		if e, ok := f.(*ssp2.ErrorFrame); ok {
			c.b.Fatalf("%s: %s", e.Code, e.Message)
		}
	}
	return resp
}

func (c *benchClient) acquire() string {
	m := c.round(&ssp2.ReqHeader{ClientID: c.id, SchemaVersion: int32(Schema.Version)}, &ssp2.PullHeader{Accept: 7})
	return m.Frames[0].(*ssp2.RespHeader).LogEpoch
}

func (c *benchClient) hdr() *ssp2.ReqHeader {
	return &ssp2.ReqHeader{ClientID: c.id, SchemaVersion: int32(Schema.Version), LogEpoch: c.epoch}
}

// pull runs one pull round of the storm subscription and returns whether
// its bootstrap is still going on.
func (c *benchClient) pull() bool {
	m := c.round(c.hdr(), &ssp2.PullHeader{Accept: 7, LimitSnapshotRows: 1000, MaxSnapshotPages: 1},
		&ssp2.Subscription{ID: "storm", Table: Table, Scopes: map[string][]string{"project_id": {StormProject}},
			Cursor: c.cursor, BootstrapState: c.state})
	for _, f := range m.Frames {
		if e, ok := f.(*ssp2.SubEnd); ok {
			c.cursor, c.state = e.NextCursor, e.BootstrapState
		}
	}
	return len(c.state) > 0
}

func (c *benchClient) bootstrap() int {
	n := 1
	for c.pull() {
		n++
		if n > 100 {
			c.b.Fatal("no end to the bootstrap")
		}
	}
	return n
}

func (c *benchClient) push(i int) { c.pushTo(i, "bench") }

// pushTo pushes one upsert of a row of project.
func (c *benchClient) pushTo(i int, project string) {
	id := fmt.Sprintf("bench-%s-%d", c.id, i)
	comp, err := ssp2.Compile(&Schema)
	if err != nil {
		c.b.Fatal(err)
	}
	t, _ := comp.Table(Table)
	v, err := t.Codec.Append(nil, driver.Values{"id": id, "project_id": project, "title": "t", "done": false, "priority": int64(1), "updated_at_ms": int64(1)})
	if err != nil {
		c.b.Fatal(err)
	}
	c.round(c.hdr(), &ssp2.PushCommit{ClientCommitID: id, Operations: []ssp2.PushOperation{{Table: Table, RowID: id, Op: ssp2.OpUpsert, Payload: v}}})
}
