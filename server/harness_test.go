package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/mysql"
	"github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// A lane is one engine the server is tested on: open provisions a fresh,
// empty store of its own, dropped when the test ends.
type lane struct {
	name string
	open func(t testing.TB) *sync.Store
}

func provisioned(name string, d driver.Provisioner, base func(t testing.TB) string) func(t testing.TB) *sync.Store {
	return func(t testing.TB) *sync.Store {
		t.Helper()
		ctx := context.Background()
		dsn, drop, err := d.Provision(ctx, base(t))
		if err != nil {
			t.Fatalf("provision %s: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = drop(ctx)
		})
		st, err := sync.Open(name, dsn)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
}

var (
	d1Once gosync.Once
	d1Base string
)

// lanes are sqlite always; postgres and mysql on the servers internal/testdb
// finds (skipped, or failed under SYNCSTORE_TEST_REQUIRE_DB=1, without
// one); d1http on its double. SSP2SERVER_LANES=sqlite,… narrows them.
func lanes() []lane {
	all := []lane{
		{"sqlite", provisioned("sqlite", sqlite.Driver{}, func(t testing.TB) string { return t.TempDir() })},
		{"postgres", provisioned("postgres", postgres.Driver{}, testdb.PostgresServer)},
		{"mysql", provisioned("mysql", mysql.Driver{}, testdb.MySQLServer)},
		{"d1http", provisioned("d1http", d1http.Driver{}, func(testing.TB) string {
			d1Once.Do(func() {
				srv := d1test.NewServer("test-token")
				d1Base = "d1://acct?token=test-token&endpoint=" + srv.URL + "&request_timeout_ms=5000"
			})
			return d1Base
		})},
	}
	want := os.Getenv("SSP2SERVER_LANES")
	if want == "" {
		return all
	}
	var out []lane
	for _, l := range all {
		if strings.Contains(","+want+",", ","+l.name+",") {
			out = append(out, l)
		}
	}
	return out
}

// forEachLane runs f as a subtest per lane.
func forEachLane(t *testing.T, f func(t *testing.T, l lane)) {
	for _, l := range lanes() {
		t.Run(l.name, func(t *testing.T) { f(t, l) })
	}
}

// sqliteLane is the sqlite lane alone, for tests of the protocol layer
// that no engine difference reaches.
func sqliteLane() lane {
	return lane{"sqlite", provisioned("sqlite", sqlite.Driver{}, func(t testing.TB) string { return t.TempDir() })}
}

// testSchema: tasks scoped by project, notes scoped by owner.
func testSchema() ssp2.Schema {
	s, err := ssp2.ParseSchema([]byte(`{"version": 3, "tables": [
	 {"name": "tasks", "primaryKey": "id",
	  "columns": [
	   {"name": "id", "type": "string", "nullable": false},
	   {"name": "project_id", "type": "string", "nullable": false},
	   {"name": "title", "type": "string", "nullable": false},
	   {"name": "done", "type": "boolean", "nullable": true},
	   {"name": "n", "type": "integer", "nullable": true},
	   {"name": "data", "type": "json", "nullable": true},
	   {"name": "raw", "type": "bytes", "nullable": true}],
	  "scopes": [{"pattern": "project:{project_id}"}]},
	 {"name": "notes", "primaryKey": "id",
	  "columns": [
	   {"name": "id", "type": "string", "nullable": false},
	   {"name": "owner", "type": "string", "nullable": false},
	   {"name": "body", "type": "string", "nullable": false}],
	  "scopes": [{"pattern": "user:{owner}"}]}
	]}`))
	if err != nil {
		panic(err)
	}
	return *s
}

// clock is a settable virtual clock.
type clock struct {
	mu gosync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is one server on one store, behind an httptest server: actor =
// "Authorization: Bearer <actor>", partition "p1" unless X-Partition says.
type env struct {
	t      testing.TB
	store  *sync.Store
	srv    *Server
	ts     *httptest.Server
	clock  *clock
	schema ssp2.Schema

	mu      gosync.Mutex
	grants  map[string]map[string][]string
	failing bool
	// hook, when set, runs before each resolution (a test blocks rounds
	// with it).
	hook func(ctx context.Context, id Identity, clientID string)
}

type envOption func(*Config)

func newEnv(t testing.TB, l lane, opts ...envOption) *env {
	t.Helper()
	st := l.open(t)
	sch := testSchema()
	ds, err := sch.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureSchema(context.Background(), ds); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return newEnvOn(t, st, sch, opts...)
}

func newEnvOn(t testing.TB, st *sync.Store, sch ssp2.Schema, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, store: st, schema: sch, clock: &clock{t: time.UnixMilli(1_750_000_000_000)}, grants: map[string]map[string][]string{}}
	cfg := Config{
		Schema: sch,
		Authenticate: func(r *http.Request) (Identity, error) {
			actor, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || actor == "" {
				return Identity{}, errors.New("no bearer")
			}
			p := r.Header.Get("X-Partition")
			if p == "" {
				p = "p1"
			}
			return Identity{Partition: p, ActorID: actor}, nil
		},
		ResolveScopes: func(ctx context.Context, id Identity, clientID string) (map[string][]string, error) {
			e.mu.Lock()
			hook := e.hook
			e.mu.Unlock()
			if hook != nil {
				hook(ctx, id, clientID)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.failing {
				return nil, errors.New("resolver down")
			}
			return e.grants[id.ActorID], nil
		},
		Now:    e.clock.Now,
		Limits: Limits{PartitionTouchInterval: -1},
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(st, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	e.ts = httptest.NewServer(srv)
	t.Cleanup(func() {
		e.ts.CloseClientConnections()
		e.ts.Close()
		_ = srv.Close()
	})
	return e
}

func (e *env) grant(actor string, allowed map[string][]string) {
	e.mu.Lock()
	e.grants[actor] = allowed
	e.mu.Unlock()
}

func (e *env) setHook(h func(ctx context.Context, id Identity, clientID string)) {
	e.mu.Lock()
	e.hook = h
	e.mu.Unlock()
}

// blockClient makes resolutions for clientID signal blocked and wait for
// release.
func (e *env) blockClient(clientID string) (blocked <-chan struct{}, release func()) {
	b, r := make(chan struct{}, 1), make(chan struct{})
	e.setHook(func(ctx context.Context, _ Identity, c string) {
		if c != clientID {
			return
		}
		select {
		case b <- struct{}{}:
		default:
		}
		select {
		case <-r:
		case <-ctx.Done():
		}
	})
	var once gosync.Once
	return b, func() { once.Do(func() { close(r); e.setHook(nil) }) }
}

func (e *env) setFailing(f bool) {
	e.mu.Lock()
	e.failing = f
	e.mu.Unlock()
}

// req builds a request message.
func req(wv uint16, frames ...ssp2.Frame) []byte {
	m := &ssp2.Message{WireVersion: wv, Kind: ssp2.KindRequest, Frames: frames}
	b, err := m.Encode()
	if err != nil {
		panic(err)
	}
	return b
}

// httpResult is a POST /sync answer: the decoded response, or the JSON
// error with its status.
type httpResult struct {
	status int
	msg    *ssp2.Message
	err    map[string]any
	header http.Header
}

func (e *env) post(actor string, body []byte, hdr ...string) httpResult {
	e.t.Helper()
	r, err := http.NewRequest(http.MethodPost, e.ts.URL+"/sync", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	r.Header.Set("Content-Type", ContentType)
	if actor != "" {
		r.Header.Set("Authorization", "Bearer "+actor)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.ts.Client().Do(r)
	if err != nil {
		e.t.Fatalf("POST /sync: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("read body: %v", err)
	}
	out := httpResult{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &out.err); err != nil {
			e.t.Fatalf("status %d with a non-JSON body %q", resp.StatusCode, b)
		}
		return out
	}
	m, err := ssp2.DecodeResponse(b)
	if err != nil {
		e.t.Fatalf("response does not decode: %v", err)
	}
	out.msg = m
	return out
}

// sync posts frames as actor and requires a 200.
func (e *env) sync(actor string, wv uint16, frames ...ssp2.Frame) *ssp2.Message {
	e.t.Helper()
	res := e.post(actor, req(wv, frames...))
	if res.status != http.StatusOK {
		e.t.Fatalf("sync: status %d %v", res.status, res.err)
	}
	return res.msg
}

// epoch acquires the partition's log epoch (a v2 acquisition round).
func (e *env) epoch(actor, client string) string {
	e.t.Helper()
	m := e.sync(actor, 2, &ssp2.ReqHeader{ClientID: client, SchemaVersion: 3}, &ssp2.PullHeader{Accept: 3})
	h := m.Frames[0].(*ssp2.RespHeader)
	if !h.ResetRequired || h.LogEpoch == "" {
		e.t.Fatalf("acquisition: %+v", h)
	}
	return h.LogEpoch
}

// task encodes a tasks row.
func (e *env) task(id, project, title string) []byte {
	e.t.Helper()
	c, _ := ssp2.Compile(&e.schema)
	t, _ := c.Table("tasks")
	b, err := t.Codec.Append(nil, driver.Values{"id": id, "project_id": project, "title": title, "done": nil, "n": int64(len(title)),
		"data": nil, "raw": nil})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) decodeTask(b []byte) driver.Values {
	e.t.Helper()
	c, _ := ssp2.Compile(&e.schema)
	t, _ := c.Table("tasks")
	v, err := t.Codec.Decode(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

func upsert(table, id string, payload []byte, base ...int64) ssp2.PushOperation {
	op := ssp2.PushOperation{Table: table, RowID: id, Op: ssp2.OpUpsert, Payload: payload}
	if len(base) > 0 {
		op.BaseVersion = ssp2.Some(base[0])
	}
	return op
}

func del(table, id string) ssp2.PushOperation {
	return ssp2.PushOperation{Table: table, RowID: id, Op: ssp2.OpDelete}
}

func commit(id string, ops ...ssp2.PushOperation) *ssp2.PushCommit {
	return &ssp2.PushCommit{ClientCommitID: id, Operations: ops}
}

func hdr(client, epoch string) *ssp2.ReqHeader {
	return &ssp2.ReqHeader{ClientID: client, SchemaVersion: 3, LogEpoch: epoch}
}

func sub(id, table string, scopes map[string][]string, cursor int64) *ssp2.Subscription {
	return &ssp2.Subscription{ID: id, Table: table, Scopes: scopes, Cursor: cursor}
}

// frames returns the frames of m of type T.
func framesOf[T ssp2.Frame](m *ssp2.Message) []T {
	var out []T
	for _, f := range m.Frames {
		if x, ok := f.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// section is one subscription's frames in a response.
type section struct {
	start    *ssp2.SubStart
	commits  []*ssp2.Commit
	refs     []*ssp2.SegmentRef
	inline   []*ssp2.SegmentInline
	end      *ssp2.SubEnd
	segments []ssp2.Frame // refs and inlines in order
}

func sections(m *ssp2.Message) []*section {
	var out []*section
	var cur *section
	for _, f := range m.Frames {
		switch f := f.(type) {
		case *ssp2.SubStart:
			cur = &section{start: f}
			out = append(out, cur)
		case *ssp2.Commit:
			cur.commits = append(cur.commits, f)
		case *ssp2.SegmentRef:
			cur.refs = append(cur.refs, f)
			cur.segments = append(cur.segments, f)
		case *ssp2.SegmentInline:
			cur.inline = append(cur.inline, f)
			cur.segments = append(cur.segments, f)
		case *ssp2.SubEnd:
			cur.end = f
		}
	}
	return out
}

func errorCode(res httpResult) string {
	c, _ := res.err["code"].(string)
	return c
}

// discardLogger drops every log line (benchmarks).
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
