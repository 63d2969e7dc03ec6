package sync_test

import (
	"context"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// scanCounter is a Conn that counts ScanRows calls.
type scanCounter struct {
	driver.Conn
	scans atomic.Int64
}

func (c *scanCounter) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	c.scans.Add(1)
	return c.Conn.ScanRows(ctx, p, q)
}

// memorySink takes every page of a bootstrap and checks, by counts, what
// PullTo holds: after every page it runs a full GC and counts the pages
// it was given that are still reachable (weak pointers to their rows),
// and it checks that no page was read ahead of the one it is given.
type memorySink struct {
	t        *testing.T
	conn     *scanCounter
	pages    []weak.Pointer[driver.Row]
	rows     int
	last     string
	maxAlive int
	heap     []uint64 // live heap after GC, every 10 pages
	ends     []sync.PullResult
}

func (m *memorySink) Start(context.Context, sync.PullResult) error { return nil }

func (m *memorySink) Commits(context.Context, []driver.Commit) error { return nil }

func (m *memorySink) End(_ context.Context, r sync.PullResult) error {
	m.ends = append(m.ends, r)
	return nil
}

func (m *memorySink) Page(_ context.Context, p sync.PullPage) (bool, error) {
	if len(p.Rows) == 0 {
		m.t.Fatalf("page %d is empty", len(m.pages)+1)
	}
	if p.AfterRowID != m.last || p.Rows[0].ID <= m.last {
		m.t.Fatalf("page %d starts after %q, its first row %q; the page before ended at %q", len(m.pages)+1, p.AfterRowID, p.Rows[0].ID, m.last)
	}
	m.pages = append(m.pages, weak.Make(&p.Rows[0]))
	m.rows += len(p.Rows)
	m.last = p.Rows[len(p.Rows)-1].ID
	if got := m.conn.scans.Load(); got != int64(len(m.pages)) {
		m.t.Fatalf("page %d given after %d scans: a page was read ahead", len(m.pages), got)
	}
	p = sync.PullPage{} // this sink keeps nothing of the page
	runtime.GC()
	alive := 0
	for _, w := range m.pages {
		if w.Value() != nil {
			alive++
		}
	}
	m.maxAlive = max(m.maxAlive, alive)
	if len(m.pages)%10 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.heap = append(m.heap, ms.HeapAlloc)
	}
	return true, nil
}

// TestPullToBoundedMemory streams a bootstrap of 100,000 rows through
// PullTo in one call and checks by counts that it holds a bounded number
// of pages (PULL-10): after each page and a full GC, of the pages handed
// over only the one being delivered is still reachable, no page is read
// ahead of the sink, and every row comes once, in order. Pages of 1,000 rows, then pages
// of MaxLimit (10,000: the last full page says More, the empty page read
// after it is not delivered).
func TestPullToBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 rows")
	}
	const n = 100_000
	base := openSQLite(t)
	conn := &scanCounter{Conn: base.Conn()}
	s := sync.OpenConn(conn)
	ctx := t.Context()
	if err := s.EnsureSchema(ctx, notesSchema()); err != nil {
		t.Fatal(err)
	}
	table, _ := notesSchema().Table("notes")
	err := s.RunInTx(ctx, "p", func(ctx context.Context, tx *sync.Tx) error {
		for i := range n {
			v := driver.Values{"id": fmt.Sprintf("n%06d", i), "proj": "p7", "body": fmt.Sprintf("body of note %d, long enough to weigh something", i)}
			if err := tx.UpsertRow(ctx, "notes", driver.Row{ID: v["id"].(string), ServerVersion: 1, Values: v,
				Scopes: sync.ScopesOf(table, v)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit, pages, scans int
	}{{1000, 100, 100}, {sync.MaxLimit, 10, 11}} {
		conn.scans.Store(0)
		sub := notesSub("s", sync.PullBootstrap)
		sub.LimitRows = c.limit
		sink := &memorySink{t: t, conn: conn}
		if _, err := s.PullTo(ctx, "p", sync.PullRequest{ClientID: "c", ActorID: "a", AtMs: 1,
			Subscriptions: []sync.PullSubscription{sub}}, sink); err != nil {
			t.Fatal(err)
		}
		if sink.rows != n || len(sink.pages) != c.pages || conn.scans.Load() != int64(c.scans) {
			t.Errorf("limit %d: %d rows in %d pages from %d scans, want %d in %d from %d", c.limit, sink.rows, len(sink.pages),
				conn.scans.Load(), n, c.pages, c.scans)
		}
		if len(sink.ends) != 1 || sink.ends[0].BootstrapToken != "" {
			t.Errorf("limit %d: ends %+v, want one without a token", c.limit, sink.ends)
		}
		if sink.maxAlive > 1 {
			t.Errorf("limit %d: %d pages reachable at once after a GC, want at most 1", c.limit, sink.maxAlive)
		}
		t.Logf("limit %d: at most %d pages reachable; live heap every 10 pages: %v", c.limit, sink.maxAlive, sink.heap)
	}
}

// readGate is a Conn whose scan of project "pa" waits until the scan of
// project "pb" has returned, and that counts the scans started.
type readGate struct {
	driver.Conn
	bDone   chan struct{}
	once    gosync.Once
	started atomic.Int64
}

func (c *readGate) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	c.started.Add(1)
	switch q.Filter["project"][0] {
	case "pa":
		select {
		case <-c.bDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "pb":
		defer c.once.Do(func() { close(c.bDone) })
	}
	return c.Conn.ScanRows(ctx, p, q)
}

// orderSink records the subscription ids it is given at Start, and
// checks that no more than pullParallelReads (4) subscriptions past the
// ones it ended have been read.
type orderSink struct {
	t     *testing.T
	gate  *readGate
	ids   []string
	ended int64
}

func (o *orderSink) Start(_ context.Context, r sync.PullResult) error {
	o.ids = append(o.ids, r.ID)
	if got := o.gate.started.Load(); got > o.ended+4 {
		o.t.Errorf("at the start of %s, %d subscriptions read with %d ended", r.ID, got, o.ended)
	}
	return nil
}

func (o *orderSink) Page(context.Context, sync.PullPage) (bool, error) { return false, nil }
func (o *orderSink) Commits(context.Context, []driver.Commit) error    { return nil }
func (o *orderSink) End(context.Context, sync.PullResult) error        { o.ended++; return nil }

// TestPullToReadsAheadDeliversInRequestOrder: the first subscription's
// read finishes only after the second's (the engine reads subscriptions
// concurrently), yet the sink gets them in request order; and no more
// than four subscriptions are read ahead of what the sink ended.
func TestPullToReadsAheadDeliversInRequestOrder(t *testing.T) {
	base := openSQLite(t)
	gate := &readGate{Conn: base.Conn(), bDone: make(chan struct{})}
	s := sync.OpenConn(gate)
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	var subs []sync.PullSubscription
	var want []string
	for i, project := range []string{"pa", "pb", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"} {
		sub := notesSub(fmt.Sprintf("s%d", i), sync.PullBootstrap)
		sub.Scopes = driver.ScopeFilter{"project": {project}}
		subs = append(subs, sub)
		want = append(want, sub.ID)
	}
	sink := &orderSink{t: t, gate: gate}
	if _, err := s.PullTo(t.Context(), "p", sync.PullRequest{ClientID: "c", ActorID: "a", Subscriptions: subs}, sink); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sink.ids) != fmt.Sprint(want) {
		t.Errorf("subscriptions delivered as %v, want %v", sink.ids, want)
	}
}
