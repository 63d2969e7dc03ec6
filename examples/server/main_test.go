package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/sync"
)

// client is a Go sync client of the example server: a replica of the
// todos of one project, its cursor, and its own commit counter.
type client struct {
	t        *testing.T
	base, id string
	rows     map[string]sync.Values // id → values
	versions map[string]int64
	cursor   int64
	token    string
	commits  int
}

func newClient(t *testing.T, base, id string) *client {
	return &client{t: t, base: base, id: id, rows: map[string]sync.Values{}, versions: map[string]int64{},
		cursor: sync.PullBootstrap}
}

// post sends body to the partition's endpoint and decodes the answer
// into out; it returns the HTTP status.
func (c *client) post(path string, body, out any) int {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.base+"/v1/tenant-1/"+path, bytes.NewReader(b))
	req.Header.Set("X-Actor", "user-"+c.id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		c.t.Fatalf("%s: decode: %v", path, err)
	}
	return resp.StatusCode
}

// push sends one commit of ops under the client's next commit id (or
// commitID when given, to replay one) and returns the answer, its values
// typed by the schema.
func (c *client) push(commitID string, ops ...sync.PushOp) sync.PushResponse {
	c.t.Helper()
	if commitID == "" {
		c.commits++
		commitID = fmt.Sprintf("%s-%d", c.id, c.commits)
	}
	var out sync.PushResponse
	if st := c.post("push", sync.PushRequest{ClientID: c.id, ClientCommitID: commitID, Ops: ops}, &out); st != http.StatusOK {
		c.t.Fatalf("push %s: HTTP %d", commitID, st)
	}
	for i, op := range out.Ops {
		out.Ops[i].ServerRow = c.typed(ops[i].Table, op.ServerRow)
	}
	return out
}

// typed types values of table decoded from JSON (sync.TypeValues).
func (c *client) typed(table string, v sync.Values) sync.Values {
	c.t.Helper()
	v, err := sync.TypeValues(schema, table, v)
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

// edit pushes an upsert of row id based on the version the replica holds.
func (c *client) edit(id, title string) sync.PushResponse {
	return c.push("", sync.PushOp{Table: "todos", RowID: id, Op: sync.OpUpsert, BaseVersion: sync.Version(c.versions[id]),
		Values: sync.Values{"id": id, "title": title, "done": false, "project_id": "p7"}})
}

// sync pulls until the client is at the head: bootstrap pages first,
// then incremental windows, applied to the replica.
func (c *client) sync() {
	c.t.Helper()
	for range 100 {
		var out sync.PullResponse
		sub := sync.PullSubscription{ID: "s", Table: "todos", Scopes: sync.ScopeFilter{"project": {"p7"}},
			Cursor: c.cursor, BootstrapToken: c.token, LimitChanges: 2, LimitRows: 2}
		if st := c.post("pull", sync.PullRequest{ClientID: c.id, Subscriptions: []sync.PullSubscription{sub}}, &out); st != http.StatusOK {
			c.t.Fatalf("pull: HTTP %d", st)
		}
		s := out.Subscriptions[0]
		if s.Status != sync.PullActive {
			c.t.Fatalf("pull: status %s", s.Status)
		}
		if s.Fresh {
			c.rows, c.versions = map[string]sync.Values{}, map[string]int64{}
		}
		for _, r := range s.Rows {
			c.rows[r.ID], c.versions[r.ID] = c.typed("todos", r.Values), r.ServerVersion
		}
		for _, cm := range s.Commits {
			for _, ch := range cm.Changes {
				if ch.Op == sync.OpDelete {
					delete(c.rows, ch.RowID)
					delete(c.versions, ch.RowID)
					continue
				}
				c.rows[ch.RowID], c.versions[ch.RowID] = c.typed(ch.Table, ch.Values), ch.RowVersion
			}
		}
		c.cursor, c.token = s.NextCursor, s.BootstrapToken
		if c.token == "" && c.cursor >= out.MaxCommitSeq {
			return
		}
	}
	c.t.Fatal("pull did not reach the head in 100 requests")
}

// TestTwoClientsSync: two Go clients sync through the example server over
// loopback — creates, a retried push, a bootstrap in pages, incremental
// pulls, a version conflict resolved from the server row — and end with
// identical replicas equal to the server's rows.
// newServer serves newHandler over a fresh SQLite store with the schema;
// both end with the test.
func newServer(t *testing.T) (*sync.Store, *httptest.Server) {
	t.Helper()
	store, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "server.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.EnsureSchema(context.Background(), schema); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(store))
	t.Cleanup(srv.Close)
	return store, srv
}

func TestTwoClientsSync(t *testing.T) {
	_, srv := newServer(t)
	a, b := newClient(t, srv.URL, "a"), newClient(t, srv.URL, "b")

	for i := range 5 {
		if r := a.edit(fmt.Sprintf("t%d", i), fmt.Sprintf("task %d", i)); r.Status != sync.PushApplied || r.Replayed {
			t.Fatalf("create t%d: %+v", i, r)
		}
	}
	// A retry of a's last push (its answer was "lost"): the stored result.
	if r := a.push("a-5", sync.PushOp{Table: "todos", RowID: "t4", Op: sync.OpUpsert, BaseVersion: sync.Version(0),
		Values: sync.Values{"id": "t4", "title": "task 4", "done": false, "project_id": "p7"}}); !r.Replayed || r.CommitSeq != 5 {
		t.Fatalf("retried push: %+v, want a replay of commit 5", r)
	}
	b.sync() // a bootstrap of 5 rows in pages of 2
	a.sync()
	if r := b.edit("t1", "task 1, by b"); r.Status != sync.PushApplied {
		t.Fatalf("b's edit: %+v", r)
	}
	// a edits t1 from its stale version: a conflict carrying the server row.
	r := a.edit("t1", "task 1, by a")
	if r.Status != sync.PushRejected || len(r.Ops) != 1 || r.Ops[0].Status != sync.OpConflict || r.Ops[0].ServerVersion != 2 ||
		r.Ops[0].ServerRow["title"] != "task 1, by b" {
		t.Fatalf("stale edit: %+v, want a conflict with b's row at version 2", r)
	}
	a.sync()
	if r := a.edit("t1", "task 1, by a after b"); r.Status != sync.PushApplied { // rebased on version 2
		t.Fatalf("a's rebased edit: %+v", r)
	}
	if r := b.push("", sync.PushOp{Table: "todos", RowID: "t3", Op: sync.OpDelete}); r.Status != sync.PushApplied {
		t.Fatalf("b's delete: %+v", r)
	}
	a.sync()
	b.sync()
	if !reflect.DeepEqual(a.rows, b.rows) || !reflect.DeepEqual(a.versions, b.versions) {
		t.Fatalf("replicas differ:\na %v %v\nb %v %v", a.rows, a.versions, b.rows, b.versions)
	}
	fresh := newClient(t, srv.URL, "c")
	fresh.sync()
	if !reflect.DeepEqual(fresh.rows, a.rows) || len(a.rows) != 4 || a.rows["t1"]["title"] != "task 1, by a after b" {
		t.Fatalf("replicas are not the server's rows:\nserver %v\nclients %v", fresh.rows, a.rows)
	}
}

// TestBadRequests: malformed, unknown-field, trailing and oversized bodies
// are refused with a typed error and the right status, nothing written.
func TestBadRequests(t *testing.T) {
	store, srv := newServer(t)
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"malformed", `{"clientId":`, http.StatusBadRequest},
		{"unknown field", `{"clientId":"c","clientCommitId":"x","opz":[]}`, http.StatusBadRequest},
		{"trailing data", `{"clientId":"c","clientCommitId":"x","ops":[]} {"x":1}`, http.StatusBadRequest},
		{"over 8 MiB", `{"clientId":"` + string(bytes.Repeat([]byte("a"), maxBody)) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		resp, err := http.Post(srv.URL+"/v1/t1/push", "application/json", bytes.NewReader([]byte(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != c.status || out["code"] != "sync.storage.invalid_argument" {
			t.Errorf("%s: HTTP %d %v, want %d invalid_argument", c.name, resp.StatusCode, out, c.status)
		}
	}
	if seq, err := store.MaxCommitSeq(context.Background(), "t1"); err != nil || seq != 0 {
		t.Errorf("after refused requests MaxCommitSeq = %d, %v; want 0", seq, err)
	}
}

// TestErrorShape: a refused push answers the JSON form of *sync.Error —
// its code, a message for the caller, the rule apart, the op's index.
func TestErrorShape(t *testing.T) {
	_, srv := newServer(t)
	c := newClient(t, srv.URL, "a")
	var e sync.Error
	st := c.post("push", sync.PushRequest{ClientID: "a", ClientCommitID: "k1", Ops: []sync.PushOp{
		{Table: "todos", RowID: "t1", Op: sync.OpUpsert, Values: sync.Values{"id": "t1", "title": "x", "done": "no", "project_id": "p7"}}}}, &e)
	if st != http.StatusBadRequest || !errors.Is(&e, sync.ErrInvalidValue) || e.Column != "done" || e.OpIndex != 0 ||
		e.Rule == "" || strings.Contains(e.Message, e.Rule) {
		t.Errorf("HTTP %d %+v: want 400, invalid_value on column done of op 0, the rule apart from the message", st, e)
	}
}
