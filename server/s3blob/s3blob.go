// Package s3blob is a server.BlobStore on an S3-compatible object store
// (AWS S3, Cloudflare R2, versitygw, Ceph, …) through minio-go, and the
// server.BlobPresigner of its objects: presigned GET and PUT URLs the
// object store serves itself (SPEC §5.9.3, §5.9.5), so blob bytes leave
// the sync server's bandwidth path.
//
// Layout: one object per blob, key Prefix + hash(partition) + "/" + the
// blob id's hex digits, so a partition name never appears in a key or a
// URL (SPEC §2.1). The object's Content-Type is the blob's media type,
// its Last-Modified time the blob's CreatedAtMs (the object store's
// clock: the orphan sweep's grace period is counted on it).
//
// Put hashes the bytes on their way to the store and fails the upload
// before its last byte when they do not hash to the blob id, so no
// object is created (ErrBlobHashMismatch). A presigned PUT cannot be
// checked that way — the object store does not know SHA-256 addresses —
// so, as SPEC §5.9.3 says, its integrity is checked where a blob is
// used: the push's existence check, and every download's content-address
// check in the client.
package s3blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/syncstore/syncstore/server"
)

// Config configures a Store.
type Config struct {
	// Endpoint is the object store's host[:port] (no scheme), e.g.
	// "s3.amazonaws.com" or "127.0.0.1:7410".
	Endpoint string
	// Secure selects https.
	Secure bool
	// Region, if set, skips the bucket-location lookup.
	Region string
	// AccessKeyID and SecretAccessKey are the static credentials.
	AccessKeyID, SecretAccessKey string
	// Bucket holds the blobs; it must exist.
	Bucket string
	// Prefix is prepended to every key ("" none; end it with "/").
	Prefix string
	// PathStyle forces path-style URLs (http://host/bucket/key), which
	// most S3-compatible servers other than AWS expect.
	PathStyle bool
	// Transport, if set, is the HTTP transport (nil: minio-go's default).
	Transport http.RoundTripper
}

// Store is a server.BlobStore and server.BlobPresigner on S3.
type Store struct {
	c      *minio.Client
	bucket string
	prefix string
}

var (
	_ server.BlobStore     = (*Store)(nil)
	_ server.BlobPresigner = (*Store)(nil)
)

// New returns a Store for cfg. It does not reach the object store.
func New(cfg Config) (*Store, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("s3blob: Endpoint and Bucket are required")
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       cfg.Secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("s3blob: %w", err)
	}
	return &Store{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// validID reports whether id is "sha256:" + 64 lowercase hex digits.
func validID(id string) bool {
	h, ok := strings.CutPrefix(id, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

func (s *Store) partPrefix(partition string) string {
	h := sha256.Sum256([]byte(partition))
	return s.prefix + hex.EncodeToString(h[:16]) + "/"
}

func (s *Store) key(partition, id string) string {
	return s.partPrefix(partition) + strings.TrimPrefix(id, "sha256:")
}

// notFound reports whether err is the store's "no such object".
func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound" || minio.ToErrorResponse(err).StatusCode == http.StatusNotFound
}

func info(id string, o minio.ObjectInfo) server.BlobInfo {
	mt := o.ContentType
	if mt == "application/octet-stream" || len(mt) > server.MaxBlobMediaTypeBytes {
		mt = ""
	}
	return server.BlobInfo{ID: id, ByteLength: o.Size, MediaType: mt, CreatedAtMs: o.LastModified.UnixMilli()}
}

// verifier passes exactly size bytes through, hashing them, and fails the
// read that would complete them when they do not hash to want or the body
// goes on — before the uploader sees the last bytes, so the upload never
// completes.
type verifier struct {
	r        io.Reader
	h        hash.Hash
	left     int64
	want     string
	mismatch bool
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > v.left {
		p = p[:v.left]
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.left -= int64(n)
	if v.left == 0 {
		// The last bytes: they must complete the hash, and the body
		// must end here.
		var extra [1]byte
		m, _ := io.ReadFull(v.r, extra[:])
		if m > 0 || "sha256:"+hex.EncodeToString(v.h.Sum(nil)) != v.want {
			v.mismatch = true
			return 0, server.ErrBlobHashMismatch
		}
	}
	if err == io.EOF && v.left > 0 {
		v.mismatch = true
		return n, server.ErrBlobHashMismatch
	}
	return n, err
}

// Put implements server.BlobStore.
func (s *Store) Put(ctx context.Context, partition string, bi server.BlobInfo, body io.Reader) error {
	if !validID(bi.ID) || bi.ByteLength < 0 {
		return fmt.Errorf("%w: malformed id or length", server.ErrBlobHashMismatch)
	}
	if _, err := s.Stat(ctx, partition, bi.ID); err == nil {
		return nil
	} else if !errors.Is(err, server.ErrBlobNotFound) {
		return err
	}
	v := &verifier{r: body, h: sha256.New(), left: bi.ByteLength, want: bi.ID}
	ct := bi.MediaType
	if ct == "" || len(ct) > server.MaxBlobMediaTypeBytes {
		ct = "application/octet-stream"
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.key(partition, bi.ID), v, bi.ByteLength, minio.PutObjectOptions{ContentType: ct})
	if v.mismatch {
		return server.ErrBlobHashMismatch
	}
	if err != nil {
		return fmt.Errorf("s3blob: put: %w", err)
	}
	return nil
}

// Open implements server.BlobStore.
func (s *Store) Open(ctx context.Context, partition, id string) (io.ReadCloser, server.BlobInfo, error) {
	if !validID(id) {
		return nil, server.BlobInfo{}, server.ErrBlobNotFound
	}
	o, err := s.c.GetObject(ctx, s.bucket, s.key(partition, id), minio.GetObjectOptions{})
	if err != nil {
		return nil, server.BlobInfo{}, fmt.Errorf("s3blob: get: %w", err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		if notFound(err) {
			return nil, server.BlobInfo{}, server.ErrBlobNotFound
		}
		return nil, server.BlobInfo{}, fmt.Errorf("s3blob: get: %w", err)
	}
	return o, info(id, st), nil
}

// Stat implements server.BlobStore.
func (s *Store) Stat(ctx context.Context, partition, id string) (server.BlobInfo, error) {
	if !validID(id) {
		return server.BlobInfo{}, server.ErrBlobNotFound
	}
	st, err := s.c.StatObject(ctx, s.bucket, s.key(partition, id), minio.StatObjectOptions{})
	if err != nil {
		if notFound(err) {
			return server.BlobInfo{}, server.ErrBlobNotFound
		}
		return server.BlobInfo{}, fmt.Errorf("s3blob: stat: %w", err)
	}
	return info(id, st), nil
}

// Delete implements server.BlobStore.
func (s *Store) Delete(ctx context.Context, partition, id string) error {
	if !validID(id) {
		return nil
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.key(partition, id), minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("s3blob: delete: %w", err)
	}
	return nil
}

// List implements server.BlobStore: one ListObjectsV2 walk from afterID
// (keys are listed in ascending order, and a key's order is its id's).
func (s *Store) List(ctx context.Context, partition, afterID string, limit int) ([]server.BlobInfo, error) {
	if limit < 1 || limit > 10000 {
		return nil, errors.New("s3blob: List: limit must be 1…10,000")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := s.partPrefix(partition)
	opts := minio.ListObjectsOptions{Prefix: prefix, Recursive: true, MaxKeys: min(limit, 1000)}
	if afterID != "" {
		opts.StartAfter = prefix + strings.TrimPrefix(afterID, "sha256:")
	}
	var out []server.BlobInfo
	for o := range s.c.ListObjects(ctx, s.bucket, opts) {
		if o.Err != nil {
			return nil, fmt.Errorf("s3blob: list: %w", o.Err)
		}
		id := "sha256:" + strings.TrimPrefix(o.Key, prefix)
		if !validID(id) || id <= afterID {
			continue
		}
		out = append(out, info(id, o))
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// PresignGet implements server.BlobPresigner: a presigned GET of the
// object, valid for ttl (by the object store's clock).
func (s *Store) PresignGet(ctx context.Context, partition string, bi server.BlobInfo, _ time.Time, ttl time.Duration) (string, error) {
	u, err := s.c.PresignedGetObject(ctx, s.bucket, s.key(partition, bi.ID), ttl, url.Values{})
	if err != nil {
		return "", fmt.Errorf("s3blob: presign get: %w", err)
	}
	return u.String(), nil
}

// PresignPut implements server.BlobPresigner: a presigned PUT of the
// object, valid for ttl. It cannot bind the byte length or the hash (the
// client sends no signed headers), see the package doc.
func (s *Store) PresignPut(ctx context.Context, partition, blobID string, _ int64, _ string, _ time.Time, ttl time.Duration) (string, error) {
	if !validID(blobID) {
		return "", server.ErrBlobHashMismatch
	}
	u, err := s.c.PresignedPutObject(ctx, s.bucket, s.key(partition, blobID), ttl)
	if err != nil {
		return "", fmt.Errorf("s3blob: presign put: %w", err)
	}
	return u.String(), nil
}
