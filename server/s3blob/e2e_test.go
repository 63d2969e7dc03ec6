package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/server/blobstoretest"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// TestServerOnS3 runs the server's blob flow on the S3 store as blob store
// and presigner (SYNCSTORE_TEST_S3, as TestS3Store): a presigned upload
// grant PUT straight to the object store, a push referencing it, a
// download answered with the object store's presigned GET.
func TestServerOnS3(t *testing.T) {
	env := os.Getenv("SYNCSTORE_TEST_S3")
	if env == "" {
		t.Skip("SYNCSTORE_TEST_S3=endpoint,bucket,accessKey,secret not set: no S3-compatible server to test against")
	}
	f := strings.Split(env, ",")
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	s3, err := New(Config{Endpoint: f[0], Bucket: f[1], AccessKeyID: f[2], SecretAccessKey: f[3], Region: "us-east-1", PathStyle: true,
		Prefix: "e-" + hex.EncodeToString(rnd[:]) + "/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	schema, err := ssp2.ParseSchema([]byte(`{"version": 1, "tables": [{"name": "attachments", "primaryKey": "id",
	  "columns": [{"name": "id", "type": "string", "nullable": false}, {"name": "project_id", "type": "string", "nullable": false},
	   {"name": "file", "type": "blob_ref", "nullable": true}], "scopes": [{"pattern": "project:{project_id}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := schema.DriverSchema()
	if err := store.EnsureSchema(ctx, ds); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(store, server.Config{
		Schema: *schema,
		Authenticate: func(r *http.Request) (server.Identity, error) {
			return server.Identity{Partition: "p1", ActorID: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}, nil
		},
		ResolveScopes: func(_ context.Context, id server.Identity, _ string) (map[string][]string, error) {
			return map[string][]string{"project_id": {id.ActorID}}, nil
		},
		Blobs: &server.BlobConfig{Store: s3, Presigner: s3},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	do := func(method, url, actor string, body []byte, ct string) (int, []byte) {
		t.Helper()
		if !strings.HasPrefix(url, "http") {
			url = ts.URL + url
		}
		r, _ := http.NewRequest(method, url, bytes.NewReader(body))
		if actor != "" {
			r.Header.Set("Authorization", "Bearer "+actor)
		}
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	body := []byte("bytes that never cross the sync server")
	id := blobstoretest.ID(body)
	var u struct {
		URL string `json:"url"`
	}
	st, b := do("POST", "/blobs/"+id+"/upload-grant", "proj", []byte(`{"byteLength":38}`), "application/json")
	if st != 200 || json.Unmarshal(b, &u) != nil || u.URL == "" {
		t.Fatalf("grant: %d %s", st, b)
	}
	if st, b := do("PUT", u.URL, "", body, ""); st != 200 {
		t.Fatalf("PUT to S3: %d %s", st, b)
	}

	// Push a row referencing it (§5.9.6 finds it in S3).
	sync2 := func(frames ...ssp2.Frame) *ssp2.Message {
		t.Helper()
		m := &ssp2.Message{WireVersion: 2, Kind: ssp2.KindRequest, Frames: frames}
		req, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest("POST", ts.URL+"/sync", bytes.NewReader(req))
		r.Header.Set("Content-Type", server.ContentType)
		r.Header.Set("Authorization", "Bearer proj")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out, err := ssp2.DecodeResponse(raw)
		if err != nil {
			t.Fatalf("sync: %d %s", resp.StatusCode, raw)
		}
		return out
	}
	h := sync2(&ssp2.ReqHeader{ClientID: "c1", SchemaVersion: 1}, &ssp2.PullHeader{Accept: 3}).Frames[0].(*ssp2.RespHeader)
	c, _ := ssp2.Compile(schema)
	tab, _ := c.Table("attachments")
	ref, _ := ssp2.BlobRef{BlobID: id, ByteLength: int64(len(body))}.JSON()
	payload, err := tab.Codec.Append(nil, driver.Values{"id": "a1", "project_id": "proj", "file": ref})
	if err != nil {
		t.Fatal(err)
	}
	m := sync2(&ssp2.ReqHeader{ClientID: "c1", SchemaVersion: 1, LogEpoch: h.LogEpoch},
		&ssp2.PushCommit{ClientCommitID: "k1", Operations: []ssp2.PushOperation{{Table: "attachments", RowID: "a1", Op: ssp2.OpUpsert, Payload: payload}}})
	var pushed *ssp2.PushResult
	for _, fr := range m.Frames {
		if p, ok := fr.(*ssp2.PushResult); ok {
			pushed = p
		}
	}
	if pushed == nil || pushed.Status != ssp2.PushApplied {
		t.Fatalf("push: %+v", pushed)
	}

	// The download is the object store's presigned GET.
	if st, _ := do("GET", "/blobs/"+id, "other", nil, ""); st != 403 {
		t.Fatalf("another scope: %d", st)
	}
	st, b = do("GET", "/blobs/"+id, "proj", nil, "")
	if st != 200 || json.Unmarshal(b, &u) != nil || !strings.HasPrefix(u.URL, "http://"+f[0]+"/") {
		t.Fatalf("download: %d %s", st, b)
	}
	if st, got := do("GET", u.URL, "", nil, ""); st != 200 || !bytes.Equal(got, body) {
		t.Fatalf("GET from S3: %d %q", st, got)
	}
	res, err := srv.SweepOrphanBlobs(ctx, "p1", 0, 10)
	if err != nil || res.Deleted != 0 || res.Scanned != 1 {
		t.Fatalf("sweep of a referenced blob: %+v %v", res, err)
	}
	_ = s3.Delete(ctx, "p1", id)
}
