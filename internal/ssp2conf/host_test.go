package ssp2conf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/sync"
)

// fixtureSchema is a table of every column type, in upstream's
// DriverSchema JSON.
const fixtureSchema = `{"version":1,"tables":[{"name":"tasks","primaryKey":"id",
 "columns":[{"name":"id","type":"string","nullable":false},
  {"name":"project_id","type":"string","nullable":false},
  {"name":"title","type":"string","nullable":false},
  {"name":"done","type":"boolean","nullable":false},
  {"name":"n","type":"integer","nullable":true},
  {"name":"w","type":"float","nullable":true},
  {"name":"meta","type":"json","nullable":true},
  {"name":"data","type":"bytes","nullable":true}],
 "scopes":[{"pattern":"project:{project_id}"}]}]}`

type hostT struct {
	t    *testing.T
	host *Host
	srv  *httptest.Server
}

func newHost(t *testing.T, max, spares int) *hostT {
	t.Helper()
	base := t.TempDir()
	h, err := New(Config{Driver: "sqlite", BaseDSN: base, MaxInstances: max, Spares: spares})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &hostT{t: t, host: h, srv: srv}
}

// post sends body as JSON and decodes the answer into out (when not nil);
// it returns the status.
func (h *hostT) post(path string, body any, out any) int {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	resp, err := http.Post(h.srv.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s: %s: %v", path, raw, err)
		}
	}
	return resp.StatusCode
}

func (h *hostT) create(extra string) string {
	h.t.Helper()
	var out struct{ ID, Code, Message string }
	if st := h.post("/instances", `{"schema":`+fixtureSchema+`,"partition":"part-1","nowMs":1750000000000`+extra+`}`, &out); st != 200 {
		h.t.Fatalf("create: %d %s: %s", st, out.Code, out.Message)
	}
	return out.ID
}

// storeDirs lists the provisioned sqlite stores under the host's base.
func storeDirs(t *testing.T, h *Host) []string {
	m, _ := filepath.Glob(filepath.Join(h.cfg.BaseDSN, "syncstore-sqlite-*"))
	return m
}

func TestHostControls(t *testing.T) {
	h := newHost(t, 0, 0)
	id := h.create(`,"limits":{"maxOperationsPerRequest":2,"maxDeltaBytes":1}`)
	ctl := func(op string, body any, out any) int { return h.post("/i/"+id+"/ctl/"+op, body, out) }

	var now struct{ NowMs int64 }
	ctl("nowMs", nil, &now)
	if now.NowMs != 1750000000000 {
		t.Fatalf("nowMs = %d", now.NowMs)
	}
	ctl("advanceClock", map[string]int64{"ms": 3600_000}, &now)
	if now.NowMs != 1750003600000 {
		t.Fatalf("advanceClock → %d", now.NowMs)
	}
	if st := ctl("advanceClock", map[string]int64{"ms": -1}, nil); st != 400 {
		t.Fatalf("a clock going back: %d, want 400", st)
	}
	if st := ctl("setAllowedScopes", map[string]any{"actorId": "a", "allowed": map[string][]string{"project_id": {"p1"}}}, nil); st != 200 {
		t.Fatalf("setAllowedScopes: %d", st)
	}
	h.host.mu.Lock()
	in := h.host.instances[id]
	h.host.mu.Unlock()
	got, err := in.resolveScopes(t.Context(), identity("a"), "c")
	if err != nil || !reflect.DeepEqual(got, map[string][]string{"project_id": {"p1"}}) {
		t.Fatalf("resolveScopes(a) = %v, %v", got, err)
	}
	if got, err := in.resolveScopes(t.Context(), identity("b"), "c"); err != nil || len(got) != 0 {
		t.Fatalf("an actor never granted holds %v, %v; want nothing", got, err)
	}
	ctl("setResolverFailing", map[string]bool{"failing": true}, nil)
	if _, err := in.resolveScopes(t.Context(), identity("a"), "c"); err == nil {
		t.Fatal("a failing resolver answered")
	}
	if !in.now().Equal(time.UnixMilli(1750003600000)) {
		t.Fatalf("the server's clock reads %v", in.now())
	}

	// Rows pushed through the engine (on the instance's clock) come back
	// whole, in the seam's form.
	in.store.SetPushOptions(sync.PushOptions{Now: in.now})
	_, err = in.store.Push(t.Context(), "part-1", sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a", Ops: []sync.PushOp{
		{Table: "tasks", RowID: "t2", Op: sync.OpUpsert, Values: sync.Values{"id": "t2", "project_id": "p1", "title": "two", "done": true,
			"n": int64(7), "w": 1.5, "meta": sync.JSON(`{"a": [1]}`), "data": []byte{0, 255}}},
		{Table: "tasks", RowID: "t1", Op: sync.OpUpsert, Values: sync.Values{"id": "t1", "project_id": "p2", "title": "one", "done": false,
			"n": nil, "w": nil, "meta": nil, "data": nil}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var rows struct{ Rows []RowState }
	if st := ctl("readRows", map[string]string{"table": "tasks"}, &rows); st != 200 {
		t.Fatalf("readRows: %d", st)
	}
	want := []RowState{
		{RowID: "t1", Version: 1, Scopes: map[string]string{"project_id": "p2"}, Values: map[string]any{
			"id": "t1", "project_id": "p2", "title": "one", "done": false, "n": nil, "w": nil, "meta": nil, "data": nil}},
		{RowID: "t2", Version: 1, Scopes: map[string]string{"project_id": "p1"}, Values: map[string]any{
			"id": "t2", "project_id": "p1", "title": "two", "done": true, "n": 7.0, "w": 1.5, "meta": `{"a": [1]}`,
			"data": map[string]any{"$bytes": "00ff"}}},
	}
	if !reflect.DeepEqual(rows.Rows, want) {
		t.Fatalf("readRows =\n%#v\nwant\n%#v", rows.Rows, want)
	}
	if st := ctl("readRows", map[string]string{"table": "nope"}, nil); st != 400 {
		t.Fatalf("readRows of an unknown table: %d, want 400", st)
	}
	var seq struct{ Seq int64 }
	ctl("getMaxCommitSeq", nil, &seq)
	if seq.Seq != 1 {
		t.Fatalf("getMaxCommitSeq = %d", seq.Seq)
	}
	ctl("getHorizonSeq", nil, &seq)
	if seq.Seq != 0 {
		t.Fatalf("getHorizonSeq = %d", seq.Seq)
	}
	// Upstream's "prune everything" policy: no window, no age, keep none.
	ctl("advanceClock", map[string]int64{"ms": 3600_000}, nil)
	var pruned struct{ HorizonSeq int64 }
	if st := ctl("prune", map[string]any{"retention": map[string]int{"activeWindowMs": 0, "ageForceMs": 0, "minRetainedCommits": 0}}, &pruned); st != 200 || pruned.HorizonSeq != 1 {
		t.Fatalf("prune → %d, horizon %d; want 200, 1", st, pruned.HorizonSeq)
	}
	// failNextIdempotencyLookup: the next push's first read fails with
	// the cache miss, nothing written; the identical retry applies.
	ctl("failNextIdempotencyLookup", nil, nil)
	k2 := sync.PushRequest{ClientID: "c1", ClientCommitID: "k2", ActorID: "a", Ops: []sync.PushOp{
		{Table: "tasks", RowID: "t3", Op: sync.OpUpsert, Values: sync.Values{"id": "t3", "project_id": "p1", "title": "three", "done": false,
			"n": nil, "w": nil, "meta": nil, "data": nil}}}}
	if _, err := in.store.Push(t.Context(), "part-1", k2); sync.CodeOf(err) != sync.CodeIdempotencyCacheMiss {
		t.Fatalf("the armed push: %v, want %s", err, sync.CodeIdempotencyCacheMiss)
	}
	if seq, _ := in.store.MaxCommitSeq(t.Context(), "part-1"); seq != 1 {
		t.Fatalf("the failed lookup wrote commit %d", seq)
	}
	if r, err := in.store.Push(t.Context(), "part-1", k2); err != nil || r.Status != sync.PushApplied || r.CommitSeq != 2 {
		t.Fatalf("the retry: %+v, %v; want applied at seq 2", r, err)
	}

	// Validators compile into the server's callbacks; a bad spec is 400.
	if st := ctl("installValidators", map[string]any{"specs": []any{map[string]any{"table": "tasks",
		"rule": map[string]any{"kind": "maxLength", "column": "title", "max": 3, "code": "app.long"}}}}, nil); st != 200 {
		t.Fatalf("installValidators: %d", st)
	}
	var rj *server.Rejection
	if err := in.validate(t.Context(), identity("a"), server.OpValidation{Table: "tasks", Row: sync.Values{"title": "four"}}); !errors.As(err, &rj) || rj.Code != "app.long" {
		t.Fatalf("the maxLength rule: %v", err)
	}
	for _, spec := range []any{
		map[string]any{"table": "nope", "rule": map[string]any{"kind": "maxLength", "column": "title", "max": 3, "code": "app.x"}},
		map[string]any{"table": "tasks", "rule": map[string]any{"kind": "regex", "column": "title", "code": "app.x"}},
	} {
		if st := ctl("installValidators", map[string]any{"specs": []any{spec}}, nil); st != 400 {
			t.Fatalf("installValidators %v: %d, want 400", spec, st)
		}
	}
	ctl("installValidators", map[string]any{"specs": []any{}}, nil)
	if err := in.validate(t.Context(), identity("a"), server.OpValidation{Table: "tasks", Row: sync.Values{"title": "four"}}); err != nil {
		t.Fatalf("no validator installed: %v", err)
	}
	if st := ctl("installCommitValidator", map[string]any{"spec": map[string]any{"kind": "requireSiblingWhen", "table": "tasks",
		"column": "done", "equals": true, "siblingRowIdSuffix": "-audit", "code": "app.audit"}}, nil); st != 200 {
		t.Fatalf("installCommitValidator: %d", st)
	}
	c := server.CommitValidation{Ops: []server.OpValidation{{OpIndex: 0, Table: "tasks", RowID: "t1", Row: sync.Values{"done": false}},
		{OpIndex: 1, Table: "tasks", RowID: "t2", Row: sync.Values{"done": true}}}}
	if err := in.validateCommit(t.Context(), nil, c); !errors.As(err, &rj) || rj.Code != "app.audit" || rj.OpIndex != 1 {
		t.Fatalf("the sibling rule: %v", err)
	}
	c.Ops = append(c.Ops, server.OpValidation{OpIndex: 2, Table: "tasks", RowID: "t2-audit"})
	if err := in.validateCommit(t.Context(), nil, c); err != nil {
		t.Fatalf("the sibling rule with its sibling: %v", err)
	}

	if st := ctl("nope", nil, nil); st != 404 {
		t.Fatalf("an unknown control: %d, want 404", st)
	}

	// close drops the store; the instance is gone.
	if n := len(storeDirs(t, h.host)); n != 1 {
		t.Fatalf("%d stores before close, want 1", n)
	}
	if st := ctl("close", nil, nil); st != 200 {
		t.Fatalf("close: %d", st)
	}
	h.host.bg.Wait() // the drop runs in the background
	if n := len(storeDirs(t, h.host)); n != 0 {
		t.Fatalf("%d stores after close, want 0", n)
	}
	if st := ctl("nowMs", nil, nil); st != 404 {
		t.Fatalf("a closed instance answered %d, want 404", st)
	}
}

func identity(actor string) server.Identity {
	return server.Identity{Partition: "part-1", ActorID: actor}
}

func TestHostRefusals(t *testing.T) {
	h := newHost(t, 2, 0)
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"not JSON", `{`, 400},
		{"an unknown field", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"extra":1}`, 400},
		{"a bad schema", `{"schema":{"version":0,"tables":[]},"partition":"p","nowMs":1}`, 400},
		{"no partition", `{"schema":` + fixtureSchema + `,"nowMs":1}`, 400},
		{"a signed-URL TTL past 15 min", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"signedUrls":{"ttlSeconds":901}}`, 400},
		{"a negative signed-URL TTL", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"signedUrls":{"ttlSeconds":-1}}`, 400},
		{"an unknown signedUrls field", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"signedUrls":{"key":"k"}}`, 400},
		{"a zero lease TTL", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"leases":{"ttlMs":0}}`, 400},
		{"a zero op cap", `{"schema":` + fixtureSchema + `,"partition":"p","nowMs":1,"limits":{"maxOperationsPerRequest":0}}`, 400},
	} {
		var out struct{ Code string }
		if st := h.post("/instances", tc.body, &out); st != tc.status || out.Code == "" {
			t.Errorf("%s: %d %q, want %d and a code", tc.name, st, out.Code, tc.status)
		}
	}
	if n := len(storeDirs(t, h.host)); n != 0 {
		t.Fatalf("refused creates left %d stores", n)
	}
	h.create("")
	h.create("")
	var out struct{ Code string }
	if st := h.post("/instances", `{"schema":`+fixtureSchema+`,"partition":"p","nowMs":1}`, &out); st != 503 || out.Code != "host.too_many_instances" {
		t.Fatalf("a create beyond the bound: %d %q", st, out.Code)
	}
	if st := h.post("/i/i999/ctl/nowMs", nil, nil); st != 404 {
		t.Fatalf("an unknown instance: %d", st)
	}
	// Close drops every store and refuses later creates.
	if err := h.host.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(storeDirs(t, h.host)); n != 0 {
		t.Fatalf("Close left %d stores", n)
	}
	if st := h.post("/instances", `{"schema":`+fixtureSchema+`,"partition":"p","nowMs":1}`, &out); st != 503 || out.Code != "host.closed" {
		t.Fatalf("a create after Close: %d %q", st, out.Code)
	}
}

// Spare stores are provisioned ahead, each handed to one instance, and
// dropped by Close with every instance's.
func TestHostSpares(t *testing.T) {
	h := newHost(t, 0, 2)
	a, b, c := h.create(""), h.create(""), h.create("")
	stores := map[*sync.Store]bool{}
	h.host.mu.Lock()
	for _, id := range []string{a, b, c} {
		stores[h.host.instances[id].store] = true
	}
	h.host.mu.Unlock()
	if len(stores) != 3 {
		t.Fatalf("3 instances share %d stores", len(stores))
	}
	if st := h.post("/i/"+a+"/ctl/close", nil, nil); st != 200 {
		t.Fatalf("close: %d", st)
	}
	if err := h.host.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(storeDirs(t, h.host)); n != 0 {
		t.Fatalf("Close left %d stores (spares included)", n)
	}
}

func TestRetentionPolicy(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(5) }
	i := func(v int64) *int64 { return &v }
	// with: DefaultRetentionPolicy, zero meaning zero, then set.
	with := func(set func(*sync.RetentionPolicy)) sync.RetentionPolicy {
		p := sync.DefaultRetentionPolicy
		p.NoDefaults = true
		set(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		in   *RetentionOptions
		want sync.RetentionPolicy
	}{
		{"absent: the defaults", nil, sync.RetentionPolicy{}},
		{"absent fields: the defaults", &RetentionOptions{}, with(func(p *sync.RetentionPolicy) {})},
		{"zeros are zeros", &RetentionOptions{i(0), i(0), i(0)}, with(func(p *sync.RetentionPolicy) {
			p.ActiveWindow, p.ForceAge, p.MinRetainedCommits = 0, 0, 0
		})},
		{"negatives are zeros", &RetentionOptions{i(-1), i(-1), i(-1)}, with(func(p *sync.RetentionPolicy) {
			p.ActiveWindow, p.ForceAge, p.MinRetainedCommits = 0, 0, 0
		})},
		{"values", &RetentionOptions{i(1000), i(2000), i(3)}, with(func(p *sync.RetentionPolicy) {
			p.ActiveWindow, p.ForceAge, p.MinRetainedCommits = time.Second, 2*time.Second, 3
		})},
		{"one field: the others keep the defaults", &RetentionOptions{MinRetainedCommits: i(0)}, with(func(p *sync.RetentionPolicy) {
			p.MinRetainedCommits = 0
		})},
	} {
		got := tc.in.Policy(now)
		if got.Now == nil || !got.Now().Equal(now()) {
			t.Errorf("%s: the clock is not the instance's", tc.name)
		}
		got.Now = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Signed URLs: an instance created with signedUrls serves them at
// /i/{id}/signed/{seg} without a credential (the URL host's role: a bad
// token is 403 sync.forbidden, not 401) and takes its TTL at run time; an
// instance without them refuses the TTL control and serves no URL.
func TestHostSignedURLs(t *testing.T) {
	h := newHost(t, 0, 0)
	id := h.create(`,"signedUrls":{"ttlSeconds":0}`)
	h.host.mu.Lock()
	in := h.host.instances[id]
	h.host.mu.Unlock()
	if caps := in.srv.Capabilities(); !slices.Contains(caps, "signed-urls") {
		t.Fatalf("capabilities %v", caps)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(h.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Code
	}
	seg := "sha256:" + string(bytes.Repeat([]byte("0"), 64))
	if st, code := get("/i/" + id + "/signed/" + seg + "?st=e30.AAAA"); st != 403 || code != "sync.forbidden" {
		t.Fatalf("a forged token: %d %s", st, code)
	}
	ctl := func(id string, ttl int64) int {
		return h.post("/i/"+id+"/ctl/setSignedUrlTtlSeconds", map[string]int64{"ttlSeconds": ttl}, nil)
	}
	for ttl, want := range map[int64]int{0: 200, 900: 200, 901: 400, -1: 400} {
		if st := ctl(id, ttl); st != want {
			t.Errorf("setSignedUrlTtlSeconds(%d): %d, want %d", ttl, st, want)
		}
	}
	plain := h.create("")
	if st := ctl(plain, 60); st != 400 {
		t.Fatalf("setSignedUrlTtlSeconds without signed URLs: %d", st)
	}
	if st, code := get("/i/" + plain + "/signed/" + seg + "?st=e30.AAAA"); st != 404 || code != "sync.not_found" {
		t.Fatalf("no signed URLs: %d %s", st, code)
	}
}
