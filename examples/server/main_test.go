package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/syncstore/syncstore/sync"
)

// client is a Go sync client of the example server: a replica of the
// todos of one project, its cursor, and its own commit counter.
type client struct {
	t        *testing.T
	base, id string
	rows     map[string]map[string]any // id → values
	versions map[string]int64
	cursor   int64
	token    string
	commits  int
}

func newClient(t *testing.T, base, id string) *client {
	return &client{t: t, base: base, id: id, rows: map[string]map[string]any{}, versions: map[string]int64{},
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

type wireOp struct {
	Table       string         `json:"table"`
	RowID       string         `json:"rowId"`
	Op          string         `json:"op"`
	Values      map[string]any `json:"values,omitempty"`
	BaseVersion *int64         `json:"baseVersion"`
}

type pushAnswer struct {
	Status    string
	CommitSeq int64
	Replayed  bool
	Ops       []struct {
		Status        string
		Code          string
		ServerVersion int64
		ServerRow     map[string]any
	}
}

// push sends one commit of ops under the client's next commit id (or
// commitID when given, to replay one) and returns the answer.
func (c *client) push(commitID string, ops ...wireOp) pushAnswer {
	c.t.Helper()
	if commitID == "" {
		c.commits++
		commitID = fmt.Sprintf("%s-%d", c.id, c.commits)
	}
	var out pushAnswer
	if st := c.post("push", map[string]any{"clientId": c.id, "clientCommitId": commitID, "ops": ops}, &out); st != http.StatusOK {
		c.t.Fatalf("push %s: HTTP %d", commitID, st)
	}
	return out
}

// edit pushes an upsert of row id based on the version the replica holds.
func (c *client) edit(id, title string) pushAnswer {
	base := c.versions[id]
	return c.push("", wireOp{Table: "todos", RowID: id, Op: "upsert", BaseVersion: &base,
		Values: map[string]any{"id": id, "title": title, "done": false, "project_id": "p7"}})
}

// sync pulls until the client is at the head: bootstrap pages first,
// then incremental windows, applied to the replica.
func (c *client) sync() {
	c.t.Helper()
	for range 100 {
		var out struct {
			MaxCommitSeq  int64
			Subscriptions []struct {
				Status    string
				Bootstrap bool
				Rows      []struct {
					ID            string
					ServerVersion int64
					Values        map[string]any
				}
				Commits []struct {
					Changes []struct {
						RowID, Op  string
						Values     map[string]any
						RowVersion int64
					}
				}
				BootstrapToken string
				NextCursor     int64
			}
		}
		sub := map[string]any{"id": "s", "table": "todos", "scopes": map[string][]string{"project": {"p7"}},
			"cursor": c.cursor, "bootstrapToken": c.token, "limitChanges": 2, "limitRows": 2}
		if st := c.post("pull", map[string]any{"clientId": c.id, "subscriptions": []any{sub}}, &out); st != http.StatusOK {
			c.t.Fatalf("pull: HTTP %d", st)
		}
		s := out.Subscriptions[0]
		if s.Status != string(sync.PullActive) {
			c.t.Fatalf("pull: status %s", s.Status)
		}
		if s.Bootstrap && c.cursor == sync.PullBootstrap && c.token == "" {
			c.rows, c.versions = map[string]map[string]any{}, map[string]int64{}
		}
		for _, r := range s.Rows {
			c.rows[r.ID], c.versions[r.ID] = r.Values, r.ServerVersion
		}
		for _, cm := range s.Commits {
			for _, ch := range cm.Changes {
				if ch.Op == "delete" {
					delete(c.rows, ch.RowID)
					delete(c.versions, ch.RowID)
					continue
				}
				c.rows[ch.RowID], c.versions[ch.RowID] = ch.Values, ch.RowVersion
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
func TestTwoClientsSync(t *testing.T) {
	ctx := context.Background()
	store, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "server.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(store))
	defer srv.Close()
	a, b := newClient(t, srv.URL, "a"), newClient(t, srv.URL, "b")

	for i := range 5 {
		if r := a.edit(fmt.Sprintf("t%d", i), fmt.Sprintf("task %d", i)); r.Status != "applied" || r.Replayed {
			t.Fatalf("create t%d: %+v", i, r)
		}
	}
	// A retry of a's last push (its answer was "lost"): the stored result.
	if r := a.push("a-5", wireOp{Table: "todos", RowID: "t4", Op: "upsert", BaseVersion: new(int64),
		Values: map[string]any{"id": "t4", "title": "task 4", "done": false, "project_id": "p7"}}); !r.Replayed || r.CommitSeq != 5 {
		t.Fatalf("retried push: %+v, want a replay of commit 5", r)
	}
	b.sync() // a bootstrap of 5 rows in pages of 2
	a.sync()
	if r := b.edit("t1", "task 1, by b"); r.Status != "applied" {
		t.Fatalf("b's edit: %+v", r)
	}
	// a edits t1 from its stale version: a conflict carrying the server row.
	r := a.edit("t1", "task 1, by a")
	if r.Status != "rejected" || len(r.Ops) != 1 || r.Ops[0].Status != "conflict" || r.Ops[0].ServerVersion != 2 ||
		r.Ops[0].ServerRow["title"] != "task 1, by b" {
		t.Fatalf("stale edit: %+v, want a conflict with b's row at version 2", r)
	}
	a.sync()
	if r := a.edit("t1", "task 1, by a after b"); r.Status != "applied" { // rebased on version 2
		t.Fatalf("a's rebased edit: %+v", r)
	}
	if r := b.push("", wireOp{Table: "todos", RowID: "t3", Op: "delete"}); r.Status != "applied" {
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
	store, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "server.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.EnsureSchema(context.Background(), schema); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newHandler(store))
	defer srv.Close()
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
