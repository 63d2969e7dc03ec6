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
	"testing"
	"time"

	_ "github.com/syncstore/syncstore/drivers/mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/server"
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
				rounds := 0
				for i := range b.N {
					cl := newBenchClient(b, l, fmt.Sprintf("boot-%d-%d", b.N, i), c.epoch)
					rounds += cl.bootstrap()
				}
				b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
			})
			b.Run("pull", func(b *testing.B) {
				cl := newBenchClient(b, l, fmt.Sprintf("pull-%d", b.N), c.epoch)
				cl.bootstrap()
				b.ResetTimer()
				for range b.N {
					cl.pull()
				}
			})
			b.Run("push", func(b *testing.B) {
				cl := newBenchClient(b, l, fmt.Sprintf("push-%d", b.N), c.epoch)
				for i := range b.N {
					cl.push(i)
				}
			})
			b.Run("pull-vs-push", func(b *testing.B) {
				puller := newBenchClient(b, l, fmt.Sprintf("pvp-pull-%d", b.N), c.epoch)
				puller.bootstrap()
				pusher := newBenchClient(b, l, fmt.Sprintf("pvp-push-%d", b.N), c.epoch)
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
		})
	}
}

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

func (c *benchClient) push(i int) {
	id := fmt.Sprintf("bench-%s-%d", c.id, i)
	comp, err := ssp2.Compile(&Schema)
	if err != nil {
		c.b.Fatal(err)
	}
	t, _ := comp.Table(Table)
	v, err := t.Codec.Append(nil, driver.Values{"id": id, "project_id": "bench", "title": "t", "done": false, "priority": int64(1), "updated_at_ms": int64(1)})
	if err != nil {
		c.b.Fatal(err)
	}
	c.round(c.hdr(), &ssp2.PushCommit{ClientCommitID: id, Operations: []ssp2.PushOperation{{Table: Table, RowID: id, Op: ssp2.OpUpsert, Payload: v}}})
}
