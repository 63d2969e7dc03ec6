package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// blobSchema: attachments scoped by project, with a blob_ref column.
func blobSchema(t testing.TB) ssp2.Schema {
	s, err := ssp2.ParseSchema([]byte(`{"version": 3, "tables": [
	 {"name": "attachments", "primaryKey": "id",
	  "columns": [
	   {"name": "id", "type": "string", "nullable": false},
	   {"name": "project_id", "type": "string", "nullable": false},
	   {"name": "file", "type": "blob_ref", "nullable": true}],
	  "scopes": [{"pattern": "project:{project_id}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

func blobID(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func blobRef(b []byte) driver.JSON {
	j, err := ssp2.BlobRef{BlobID: blobID(b), ByteLength: int64(len(b))}.JSON()
	if err != nil {
		panic(err)
	}
	return j
}

// newBlobEnv is a server serving blobs from a FileBlobStore, 64 bytes at
// most per blob.
func newBlobEnv(t *testing.T, l lane) (*env, *FileBlobStore) {
	t.Helper()
	st := l.open(t)
	sch := blobSchema(t)
	ds, err := sch.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureSchema(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	fs, err := NewFileBlobStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, st, sch, func(c *Config) { c.Blobs = &BlobConfig{Store: fs, MaxBytes: 64} })
	e.grant("alice", map[string][]string{"project_id": {"p1"}})
	e.grant("bob", map[string][]string{"project_id": {"p2"}})
	return e, fs
}

// blobReq sends a blob request as actor ("" = none) and returns the
// status, the body and the headers.
func (e *env) blobReq(method, path, actor string, body []byte, hdr ...string) (int, []byte, http.Header) {
	e.t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.ts.URL + path
	}
	r, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body == nil {
		r.Body, r.ContentLength = http.NoBody, 0
	}
	if actor != "" {
		r.Header.Set("Authorization", "Bearer "+actor)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.ts.Client().Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

func jsonCode(b []byte) string {
	var v struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Code
}

// pushAttachment pushes one upsert (ref nil: NULL) or delete as alice and
// returns the result record.
func (e *env) pushAttachment(epoch, commitID, id string, ref any, remove bool) *ssp2.PushResult {
	e.t.Helper()
	op := del("attachments", id)
	if !remove {
		op = upsert("attachments", id, e.row("attachments", driver.Values{"id": id, "project_id": "p1", "file": ref}))
	}
	m := e.sync("alice", 2, hdr("c-alice", epoch), commit(commitID, op))
	pr := framesOf[*ssp2.PushResult](m)
	if len(pr) != 1 {
		e.t.Fatalf("push results: %d", len(pr))
	}
	return pr[0]
}

func TestBlobsUploadDownloadAndPush(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e, fs := newBlobEnv(t, l)
		ctx := context.Background()
		body := []byte("hello, attachment")
		id := blobID(body)

		// §5.9.3 upload: the content address is verified, the size bounded.
		if st, b, _ := e.blobReq("PUT", "/blobs/"+blobID([]byte("other")), "alice", body); st != 400 || jsonCode(b) != "blob.hash_mismatch" {
			t.Fatalf("wrong hash: %d %s", st, b)
		}
		if st, b, _ := e.blobReq("PUT", "/blobs/nope", "alice", body); st != 400 || jsonCode(b) != "blob.hash_mismatch" {
			t.Fatalf("malformed id: %d %s", st, b)
		}
		big := bytes.Repeat([]byte("x"), 65)
		if st, b, _ := e.blobReq("PUT", "/blobs/"+blobID(big), "alice", big); st != 413 || jsonCode(b) != "blob.too_large" {
			t.Fatalf("too large: %d %s", st, b)
		}
		if st, _, _ := e.blobReq("PUT", "/blobs/"+id, "", body); st != 401 {
			t.Fatalf("unauthenticated upload: %d", st)
		}
		if _, err := fs.Stat(ctx, "p1", blobID([]byte("other"))); !errors.Is(err, ErrBlobNotFound) {
			t.Fatalf("a refused upload stored something: %v", err)
		}
		for range 2 { // idempotent
			if st, b, _ := e.blobReq("PUT", "/blobs/"+id, "alice", body, "Content-Type", "text/plain"); st != 200 {
				t.Fatalf("upload: %d %s", st, b)
			}
		}

		// §5.9.6: a push referencing a blob never uploaded is rejected,
		// nothing written.
		epoch := e.epoch("alice", "c-alice")
		missing := blobRef([]byte("never uploaded"))
		if pr := e.pushAttachment(epoch, "k1", "att0", missing, false); pr.Status != ssp2.PushRejected || pr.Results[0].Code != "blob.not_found" {
			t.Fatalf("missing blob: %+v", pr)
		}
		if _, found, err := e.store.GetRow(ctx, "p1", "attachments", "att0"); err != nil || found {
			t.Fatalf("the rejected row landed: %v %v", found, err)
		}
		// A blob of another partition is not this one's.
		if st, _, _ := e.blobReq("PUT", "/blobs/"+blobID([]byte("p9")), "alice", []byte("p9"), "X-Partition", "p9"); st != 200 {
			t.Fatal("upload in p9")
		}
		if pr := e.pushAttachment(epoch, "k1b", "att0", blobRef([]byte("p9")), false); pr.Status != ssp2.PushRejected {
			t.Fatalf("a p9 blob referenced from p1: %+v", pr)
		}

		if pr := e.pushAttachment(epoch, "k2", "att1", blobRef(body), false); pr.Status != ssp2.PushApplied {
			t.Fatalf("push: %+v", pr)
		}
		// §5.9.4: the reference index holds the row.
		refs, err := e.store.ListRowsReferencingBlob(ctx, "p1", id, 10)
		if err != nil || len(refs) != 1 || refs[0].RowID != "att1" {
			t.Fatalf("reference index: %+v %v", refs, err)
		}

		// §5.9.5 download: the bytes for a reader of a referencing row.
		st, b, h := e.blobReq("GET", "/blobs/"+id, "alice", nil)
		if st != 200 || string(b) != string(body) || h.Get("ETag") != `"`+id+`"` || h.Get("Content-Type") != "text/plain" {
			t.Fatalf("download: %d %q %v", st, b, h)
		}
		if st, _, _ := e.blobReq("GET", "/blobs/"+id, "alice", nil, "If-None-Match", `"`+id+`"`); st != 304 {
			t.Fatalf("If-None-Match: %d", st)
		}
		// Another scope: forbidden, never "not found"; an unknown blob is.
		if st, b, _ := e.blobReq("GET", "/blobs/"+id, "bob", nil); st != 403 || jsonCode(b) != "blob.forbidden" {
			t.Fatalf("cross-scope: %d %s", st, b)
		}
		if st, b, _ := e.blobReq("GET", "/blobs/"+blobID([]byte("x")), "alice", nil); st != 404 || jsonCode(b) != "blob.not_found" {
			t.Fatalf("unknown: %d %s", st, b)
		}
		e.setFailing(true)
		if st, b, _ := e.blobReq("GET", "/blobs/"+id, "alice", nil); st != 403 || jsonCode(b) != "blob.forbidden" {
			t.Fatalf("resolver down: %d %s", st, b)
		}
		e.setFailing(false)

		// The row drops the reference: the index forgets it and the
		// download has no authorizing row left.
		if pr := e.pushAttachment(epoch, "k3", "att1", nil, false); pr.Status != ssp2.PushApplied {
			t.Fatalf("clear: %+v", pr)
		}
		if st, _, _ := e.blobReq("GET", "/blobs/"+id, "alice", nil); st != 403 {
			t.Fatalf("after the reference went: %d", st)
		}
		// Referenced again, then the row deleted: the index forgets it too.
		if pr := e.pushAttachment(epoch, "k4", "att1", blobRef(body), false); pr.Status != ssp2.PushApplied {
			t.Fatalf("re-reference: %+v", pr)
		}
		if pr := e.pushAttachment(epoch, "k5", "att1", nil, true); pr.Status != ssp2.PushApplied {
			t.Fatalf("delete: %+v", pr)
		}
		if ids, err := e.store.ListReferencedBlobIDs(ctx, "p1", "", 10); err != nil || len(ids) != 0 {
			t.Fatalf("after delete: %v %v", ids, err)
		}
	})
}

func TestBlobsOffRefusesReferences(t *testing.T) {
	l := sqliteLane()
	st := l.open(t)
	sch := blobSchema(t)
	ds, _ := sch.DriverSchema()
	if err := st.EnsureSchema(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, st, sch)
	e.grant("alice", map[string][]string{"project_id": {"p1"}})
	if st, b, _ := e.blobReq("PUT", "/blobs/"+blobID([]byte("a")), "alice", []byte("a")); st != 404 {
		t.Fatalf("blob route with blobs off: %d %s", st, b)
	}
	epoch := e.epoch("alice", "c-alice")
	if pr := e.pushAttachment(epoch, "k1", "a", blobRef([]byte("a")), false); pr.Status != ssp2.PushRejected || pr.Results[0].Code != "blob.not_found" {
		t.Fatalf("%+v", pr)
	}
	if err := e.srv.SetBlobPresigner(nil); err == nil {
		t.Fatal("SetBlobPresigner with blobs off")
	}
}

func TestBlobsPresigned(t *testing.T) {
	e, fs := newBlobEnv(t, sqliteLane())
	cdn := httptest.NewServer(nil)
	defer cdn.Close()
	key := bytes.Repeat([]byte{7}, 32)
	signer, err := NewBlobURLSigner(key, cdn.URL+"/cdn", fs, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	cdn.Config.Handler = signer
	body := []byte("presigned bytes")
	id := blobID(body)

	// Off: a grant request answers no grant.
	if st, b, _ := e.blobReq("POST", "/blobs/"+id+"/upload-grant", "alice", []byte(`{"byteLength":15}`)); st != 200 || string(b) != "{}" {
		t.Fatalf("grant off: %d %s", st, b)
	}
	if err := e.srv.SetBlobPresigner(signer); err != nil {
		t.Fatal(err)
	}
	if st, b, _ := e.blobReq("POST", "/blobs/"+id+"/upload-grant", "alice", []byte(`{"byteLength":65}`)); st != 413 || jsonCode(b) != "blob.too_large" {
		t.Fatalf("grant over the cap: %d %s", st, b)
	}
	if st, _, _ := e.blobReq("POST", "/blobs/"+id+"/upload-grant", "alice", []byte(`{}`)); st != 400 {
		t.Fatalf("grant without byteLength: %d", st)
	}
	st, b, _ := e.blobReq("POST", "/blobs/"+id+"/upload-grant", "alice", []byte(`{"byteLength":15,"mediaType":"text/plain"}`))
	var grant blobURL
	if st != 200 || json.Unmarshal(b, &grant) != nil || grant.URL == "" || grant.URLExpiresAtMs != e.clock.Now().UnixMilli()+15*60*1000 {
		t.Fatalf("grant: %d %s", st, b)
	}
	// The object-store hop: no host auth; other bytes are refused.
	if st, b, _ := e.blobReq("PUT", grant.URL, "", []byte("other bytes 15!")); st != 400 || jsonCode(b) != "blob.hash_mismatch" {
		t.Fatalf("PUT of other bytes: %d %s", st, b)
	}
	if st, _, _ := e.blobReq("GET", grant.URL, "", nil); st != 403 {
		t.Fatalf("a PUT URL used for GET: %d", st)
	}
	tampered := grant.URL[:len(grant.URL)-2] + "AA"
	if st, _, _ := e.blobReq("PUT", tampered, "", body); st != 403 {
		t.Fatalf("tampered URL: %d", st)
	}
	if st, b, _ := e.blobReq("PUT", grant.URL, "", body); st != 200 {
		t.Fatalf("PUT: %d %s", st, b)
	}
	if st, b, _ := e.blobReq("POST", "/blobs/"+id+"/upload-grant", "alice", []byte(`{"byteLength":15}`)); st != 200 || string(b) != `{"present":true}` {
		t.Fatalf("grant of a present blob: %d %s", st, b)
	}

	epoch := e.epoch("alice", "c-alice")
	if pr := e.pushAttachment(epoch, "k1", "att1", blobRef(body), false); pr.Status != ssp2.PushApplied {
		t.Fatalf("push: %+v", pr)
	}
	// §5.9.5 always-issue: the download is a URL, after authorization.
	if st, _, _ := e.blobReq("GET", "/blobs/"+id, "bob", nil); st != 403 {
		t.Fatalf("cross-scope with presign: %d", st)
	}
	st, b, h := e.blobReq("GET", "/blobs/"+id, "alice", nil)
	var dl blobURL
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || json.Unmarshal(b, &dl) != nil || dl.URL == "" {
		t.Fatalf("presigned download: %d %s", st, b)
	}
	if st, got, _ := e.blobReq("GET", dl.URL, "", nil); st != 200 || string(got) != string(body) {
		t.Fatalf("CDN hop: %d %q", st, got)
	}
	e.clock.Advance(15 * time.Minute)
	if st, b, _ := e.blobReq("GET", dl.URL, "", nil); st != 403 || jsonCode(b) != "sync.forbidden" {
		t.Fatalf("expired URL: %d %s", st, b)
	}
	// Off again: bytes.
	_ = e.srv.SetBlobPresigner(nil)
	if st, got, _ := e.blobReq("GET", "/blobs/"+id, "alice", nil); st != 200 || string(got) != string(body) {
		t.Fatalf("presign off: %d %q", st, got)
	}
}

func TestSweepOrphanBlobs(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e, fs := newBlobEnv(t, l)
		ctx := context.Background()
		kept, orphan, young := []byte("kept"), []byte("orphan"), []byte("young")
		for _, b := range [][]byte{kept, orphan} {
			if st, _, _ := e.blobReq("PUT", "/blobs/"+blobID(b), "alice", b); st != 200 {
				t.Fatal("upload")
			}
		}
		epoch := e.epoch("alice", "c-alice")
		if pr := e.pushAttachment(epoch, "k1", "att1", blobRef(kept), false); pr.Status != ssp2.PushApplied {
			t.Fatalf("push: %+v", pr)
		}
		e.clock.Advance(DefaultBlobGrace + time.Hour)
		if st, _, _ := e.blobReq("PUT", "/blobs/"+blobID(young), "alice", young); st != 200 {
			t.Fatal("upload")
		}
		res, err := e.srv.SweepOrphanBlobs(ctx, "p1", DefaultBlobGrace, 100)
		if err != nil || res.Deleted != 1 || res.Scanned != 3 || !res.Done {
			t.Fatalf("sweep: %+v %v", res, err)
		}
		for b, want := range map[string]bool{"kept": true, "orphan": false, "young": true} {
			_, err := fs.Stat(ctx, "p1", blobID([]byte(b)))
			if (err == nil) != want {
				t.Errorf("%s: present %v, want %v (%v)", b, err == nil, want, err)
			}
		}
		if _, err := e.srv.SweepOrphanBlobs(ctx, "p1", -1, 100); err == nil {
			t.Error("negative grace")
		}
		if _, err := SweepOrphanBlobs(ctx, e.store, fs, "p1", 0, 0); err == nil {
			t.Error("maxDelete 0")
		}
	})
}

// TestSweepOrphanBlobsPages walks more blobs than a page (1,000), half
// of them referenced (more than a page of referenced ids too), stopping
// at maxDelete and resuming.
func TestSweepOrphanBlobsPages(t *testing.T) {
	e, fs := newBlobEnv(t, sqliteLane())
	ctx := context.Background()
	const n = 2050
	referenced := map[string]bool{}
	var ops []ssp2.PushOperation
	for i := range n {
		b := []byte(strings.Repeat("z", i%7) + time.Duration(i).String())
		info := BlobInfo{ID: blobID(b), ByteLength: int64(len(b))}
		if err := fs.Put(ctx, "p1", info, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			referenced[info.ID] = true
			id := "a" + time.Duration(i).String()
			ops = append(ops, upsert("attachments", id, e.row("attachments", driver.Values{"id": id, "project_id": "p1", "file": blobRef(b)})))
		}
	}
	epoch := e.epoch("alice", "c-alice")
	for i := 0; i < len(ops); i += 400 {
		m := e.sync("alice", 2, hdr("c-alice", epoch), commit("seed"+time.Duration(i).String(), ops[i:min(i+400, len(ops))]...))
		if pr := framesOf[*ssp2.PushResult](m); pr[0].Status != ssp2.PushApplied {
			t.Fatalf("seed: %+v", pr[0])
		}
	}
	cutoff := e.clock.Now().UnixMilli() + 1
	res, err := SweepOrphanBlobs(ctx, e.store, fs, "p1", cutoff, 1000)
	if err != nil || res.Deleted != 1000 || res.Done {
		t.Fatalf("first sweep: %+v %v", res, err)
	}
	res, err = SweepOrphanBlobs(ctx, e.store, fs, "p1", cutoff, 1000)
	if err != nil || res.Deleted != 25 || !res.Done {
		t.Fatalf("second sweep: %+v %v", res, err)
	}
	left, after := 0, ""
	for {
		page, err := fs.List(ctx, "p1", after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page {
			if !referenced[b.ID] {
				t.Fatalf("orphan %s survived", b.ID)
			}
			left++
			after = b.ID
		}
		if len(page) < 1000 {
			break
		}
	}
	if left != len(referenced) {
		t.Fatalf("%d blobs left, want %d", left, len(referenced))
	}
}
