package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// hostileSeeds are valid requests to mutate.
func hostileSeeds(e *env, ep string) [][]byte {
	return [][]byte{
		req(2, hdr("h1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"), 0), del("tasks", "t2")),
			&ssp2.PullHeader{Accept: 7, LimitSnapshotRows: 10}, sub("s1", "tasks", p1, -1)),
		req(2, hdr("h1", ep), &ssp2.PullHeader{Accept: 3},
			&ssp2.Subscription{ID: "s1", Table: "tasks", Scopes: p1, Cursor: 2, BootstrapState: `{"asOfCommitSeq":2,"tables":["tasks"],"tableIndex":0,"rowCursor":"x"}`}),
		req(1, &ssp2.ReqHeader{ClientID: "h1", SchemaVersion: 3}, commit("k2", upsert("tasks", "t3", e.task("t3", "p1", "three"), 4))),
		req(2, hdr("h1", ep), commit("k3", upsert("notes", "n1", []byte{0, 2, 'n', '1', 0, 0, 0})), commit("k4", del("tasks", "t1"))),
	}
}

// mutate returns a random mutation of b: flipped, inserted, deleted or
// duplicated bytes, a truncation, or a splice of another seed.
func mutate(r *rand.Rand, b []byte, seeds [][]byte) []byte {
	out := append([]byte(nil), b...)
	for n := 1 + r.IntN(4); n > 0; n-- {
		if len(out) == 0 {
			out = append(out, byte(r.IntN(256)))
			continue
		}
		i := r.IntN(len(out))
		switch r.IntN(7) {
		case 0:
			out[i] ^= byte(1 << r.IntN(8))
		case 1:
			out[i] = byte(r.IntN(256))
		case 2:
			out = append(out[:i], append([]byte{byte(r.IntN(256))}, out[i:]...)...)
		case 3:
			out = append(out[:i], out[i+1:]...)
		case 4:
			out = out[:i]
		case 5:
			j := min(len(out), i+1+r.IntN(16))
			out = append(out[:j], append(append([]byte(nil), out[i:j]...), out[j:]...)...)
		case 6:
			s := seeds[r.IntN(len(seeds))]
			k := r.IntN(len(s))
			out = append(out[:i], s[k:]...)
		}
	}
	return out
}

// storeState is what a refused request must leave unchanged.
func storeState(t testing.TB, st *sync.Store) string {
	ctx := context.Background()
	head, err := st.MaxCommitSeq(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.ListClientRecords(ctx, "p1", sync.ClientRecordQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.ScanRows(ctx, "p1", sync.ScanQuery{Table: "tasks", Filter: sync.ScopeFilter{"project_id": {"p1"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{head, recs, rows})
	return string(b)
}

// checkAnswer asserts a response is a well-formed SSP2 response or a
// catalog JSON error, never anything else.
func checkAnswer(t testing.TB, code int, body []byte) (ok bool) {
	t.Helper()
	if code == http.StatusOK {
		if _, err := ssp2.DecodeResponse(body); err != nil {
			t.Fatalf("a 200 whose body is not an SSP2 response: %v", err)
		}
		return true
	}
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("status %d with a non-JSON body %q", code, body)
	}
	c, _ := e["code"].(string)
	entry, known := ssp2.Lookup(ssp2.Code(c))
	if !known || e["category"] != entry.Category || e["retryable"] != entry.Retryable || e["recommendedAction"] != entry.RecommendedAction {
		t.Fatalf("status %d with a body outside the catalog: %s", code, body)
	}
	return false
}

// TestHostileRequests mutates valid requests thousands of times: the
// handler never panics, answers every one with an SSP2 response or a
// catalog error, and a refused request writes nothing (§1.7, V-9).
func TestHostileRequests(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", map[string][]string{"project_id": {"p1"}, "owner": {"n1", "\x00"}})
	ep := e.epoch("alice", "h1")
	seeds := hostileSeeds(e, ep)
	for _, s := range seeds {
		e.post("alice", s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	refused := 0
	for i := range n {
		body := mutate(r, seeds[r.IntN(len(seeds))], seeds)
		before := storeState(t, e.store)
		rec := httptest.NewRecorder()
		hr := httptest.NewRequest(http.MethodPost, "/sync", bytes.NewReader(body))
		hr.Header.Set("Content-Type", ContentType)
		hr.Header.Set("Authorization", "Bearer alice")
		e.srv.ServeHTTP(rec, hr)
		if !checkAnswer(t, rec.Code, rec.Body.Bytes()) {
			refused++
			if after := storeState(t, e.store); after != before {
				t.Fatalf("mutation %d was refused (%s) and wrote: %x", i, rec.Body.Bytes(), body)
			}
		}
	}
	t.Logf("%d mutations, %d refused", n, refused)
}

// FuzzHandler is the same property under the fuzzer: go test -fuzz
// FuzzHandler ./server.
func FuzzHandler(f *testing.F) {
	e := newEnv(f, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "h1")
	for _, s := range hostileSeeds(e, ep) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := storeState(t, e.store)
		rec := httptest.NewRecorder()
		hr := httptest.NewRequest(http.MethodPost, "/sync", bytes.NewReader(body))
		hr.Header.Set("Content-Type", ContentType)
		hr.Header.Set("Authorization", "Bearer alice")
		e.srv.ServeHTTP(rec, hr)
		if !checkAnswer(t, rec.Code, rec.Body.Bytes()) && storeState(t, e.store) != before {
			t.Fatal("a refused request wrote")
		}
	})
}

// TestHTTPBodies: the size bound is enforced before the body is read
// whole (a declared Content-Length, a chunked body, a gzip bomb), gzip
// request bodies are accepted, responses are compressed per
// Accept-Encoding (§1.3).
func TestHTTPBodies(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Limits.MaxRequestBytes = 4096 })
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	good := req(2, hdr("c1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, -1))

	post := func(body io.Reader, length int64, hdrs ...string) (*http.Response, []byte) {
		r, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/sync", body)
		r.ContentLength = length
		r.Header.Set("Content-Type", ContentType+"; charset=binary")
		r.Header.Set("Authorization", "Bearer alice")
		for i := 0; i+1 < len(hdrs); i += 2 {
			r.Header.Set(hdrs[i], hdrs[i+1])
		}
		tr := &http.Transport{DisableCompression: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	// A declared length over the bound: refused before reading.
	resp, b := post(strings.NewReader(strings.Repeat("x", 5000)), 5000)
	if resp.StatusCode != 413 || !strings.Contains(string(b), "sync.invalid_request") {
		t.Fatalf("declared length: %d %s", resp.StatusCode, b)
	}
	// A chunked body over the bound.
	resp, _ = post(io.MultiReader(bytes.NewReader(good), strings.NewReader(strings.Repeat("x", 5000))), -1)
	if resp.StatusCode != 413 {
		t.Fatalf("chunked: %d", resp.StatusCode)
	}
	// A gzip bomb: small on the wire, over the bound decompressed.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	resp, _ = post(bytes.NewReader(bomb.Bytes()), int64(bomb.Len()), "Content-Encoding", "gzip")
	if resp.StatusCode != 413 {
		t.Fatalf("gzip bomb: %d", resp.StatusCode)
	}
	resp, _ = post(bytes.NewReader(good), int64(len(good)), "Content-Encoding", "br")
	if resp.StatusCode != 415 {
		t.Fatalf("brotli request: %d", resp.StatusCode)
	}
	if head, _ := e.store.MaxCommitSeq(context.Background(), "p1"); head != 0 {
		t.Fatal("a refused body wrote")
	}
	// A gzip body is taken; a gzip response is given.
	var gz bytes.Buffer
	zw = gzip.NewWriter(&gz)
	_, _ = zw.Write(good)
	_ = zw.Close()
	resp, b = post(bytes.NewReader(gz.Bytes()), int64(gz.Len()), "Content-Encoding", "gzip", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("gzip round: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	m, err := ssp2.DecodeResponse(plain)
	if err != nil || framesOf[*ssp2.PushResult](m)[0].Status != ssp2.PushApplied {
		t.Fatalf("gzip response: %v", err)
	}
	// Unknown routes and methods: JSON errors.
	r, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/sync", nil)
	if resp, err := e.ts.Client().Do(r); err != nil || resp.StatusCode != 405 {
		t.Fatalf("GET /sync: %v %v", resp, err)
	}
	r, _ = http.NewRequest(http.MethodGet, e.ts.URL+"/blobs/x", nil)
	if resp, err := e.ts.Client().Do(r); err != nil || resp.StatusCode != 404 {
		t.Fatalf("GET /blobs: %v %v", resp, err)
	}
}
