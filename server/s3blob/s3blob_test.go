package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/server/blobstoretest"
)

func TestVerifierFailsBeforeTheLastByte(t *testing.T) {
	body := []byte("0123456789")
	for _, c := range []struct {
		name string
		data string
		want error
	}{
		{"match", "0123456789", nil},
		{"other bytes", "0123456780", server.ErrBlobHashMismatch},
		{"short", "01234", server.ErrBlobHashMismatch},
		{"long", "0123456789!", server.ErrBlobHashMismatch},
	} {
		v := &verifier{r: iotest(c.data), h: sha256New(), left: int64(len(body)), want: blobstoretest.ID(body)}
		got, err := io.ReadAll(v)
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != nil && len(got) >= len(body) {
			t.Errorf("%s: all %d bytes passed before the failure", c.name, len(got))
		}
	}
}

// iotest yields s two bytes per Read.
func iotest(s string) io.Reader { return &slow{s: s} }

type slow struct{ s string }

func (r *slow) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 2)], r.s)
	r.s = r.s[n:]
	return n, nil
}

func TestKeysHideThePartition(t *testing.T) {
	s, err := New(Config{Endpoint: "127.0.0.1:1", Bucket: "blobs-bucket", Prefix: "blobs/", AccessKeyID: "k", SecretAccessKey: "s", Region: "us-east-1", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	id := blobstoretest.ID([]byte("x"))
	k := s.key("tenant-secret", id)
	if strings.Contains(k, "tenant") || !strings.HasPrefix(k, "blobs/") || !strings.HasSuffix(k, strings.TrimPrefix(id, "sha256:")) {
		t.Fatalf("key %q", k)
	}
	if s.key("a", id) == s.key("b", id) {
		t.Fatal("partitions share a key")
	}
	// Presigning is local: the URL names the key, never the partition.
	u, err := s.PresignGet(context.Background(), "tenant-secret", server.BlobInfo{ID: id}, time.Now(), time.Minute)
	if err != nil || strings.Contains(u, "tenant") || !strings.Contains(u, strings.TrimPrefix(id, "sha256:")) || !strings.Contains(u, "X-Amz-Expires=60") {
		t.Fatalf("presigned GET %q %v", u, err)
	}
	if _, err := s.PresignPut(context.Background(), "p", "sha256:nope", 1, "", time.Now(), time.Minute); err == nil {
		t.Fatal("presigned PUT of a malformed id")
	}
}

// TestS3Store runs the BlobStore checks and the presigned URLs against a
// real S3-compatible server: SYNCSTORE_TEST_S3=endpoint,bucket,key,secret
// (path-style, plain http), e.g. versitygw with its posix backend. Without
// it the test is skipped.
func TestS3Store(t *testing.T) {
	env := os.Getenv("SYNCSTORE_TEST_S3")
	if env == "" {
		t.Skip("SYNCSTORE_TEST_S3=endpoint,bucket,accessKey,secret not set: no S3-compatible server to test against")
	}
	f := strings.Split(env, ",")
	if len(f) != 4 {
		t.Fatal("SYNCSTORE_TEST_S3 must be endpoint,bucket,accessKey,secret")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	s, err := New(Config{Endpoint: f[0], Bucket: f[1], AccessKeyID: f[2], SecretAccessKey: f[3], Region: "us-east-1", PathStyle: true,
		Prefix: "t-" + hex.EncodeToString(rnd[:]) + "/"})
	if err != nil {
		t.Fatal(err)
	}
	blobstoretest.Run(t, s, "")

	ctx := context.Background()
	body := []byte("presigned through S3")
	id := blobstoretest.ID(body)
	put, err := s.PresignPut(ctx, "pp", id, int64(len(body)), "", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, put, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := s.Stat(ctx, "pp", id); err != nil {
		t.Fatalf("after the presigned PUT: %v", err)
	}
	get, err := s.PresignGet(ctx, "pp", server.BlobInfo{ID: id}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(get)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned GET: %v %v", resp, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, body) {
		t.Fatalf("presigned GET: %q", got)
	}
	// A tampered URL is refused by the object store.
	resp, err = http.Get(strings.Replace(get, "X-Amz-Expires=60", "X-Amz-Expires=61", 1))
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("tampered URL: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := s.Delete(ctx, "pp", id); err != nil {
		t.Fatal(err)
	}
}

func sha256New() hash.Hash { return sha256.New() }
