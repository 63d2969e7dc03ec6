package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/syncstore/syncstore/ssp2"
)

// BlobURLSigner is a BlobPresigner for blobs the host serves itself — an
// origin of its own behind a CDN, or a handler beside the server — when
// the BlobStore has no presign of its own (an S3 store has; see package
// server/s3blob). Its URLs are baseURL + "/" + token, the token sealed
// with AES-256-GCM under the signer's key: the blob id, the partition
// (hidden: it never appears on the wire, SPEC §2.1), the operation (get or
// put, with the put's byte length and media type) and the expiry — so a
// URL can be neither forged, altered, nor used past its expiry nor for
// another blob. ServeHTTP serves the URLs from the store: GET the bytes,
// PUT exactly the granted bytes (their content address checked by the
// store, 400 blob.hash_mismatch). A URL that does not open, is of the
// other method or expired answers 403 sync.forbidden; an unknown blob 404
// blob.not_found. Mount ServeHTTP where baseURL points (compose with
// http.StripPrefix: only the last path segment is read).
type BlobURLSigner struct {
	aead  cipher.AEAD
	base  string
	store BlobStore
	now   func() time.Time
}

var _ BlobPresigner = (*BlobURLSigner)(nil)

// blobToken is the sealed content of a BlobURLSigner URL.
type blobToken struct {
	V         int    `json:"v"`
	Op        string `json:"op"` // "get" or "put"
	Partition string `json:"p"`
	Blob      string `json:"b"`
	ExpMs     int64  `json:"e"`
	Len       int64  `json:"n,omitempty"`
	MediaType string `json:"t,omitempty"`
}

// maxBlobTokenBytes bounds a token read from a URL.
const maxBlobTokenBytes = 2048

// NewBlobURLSigner returns a signer minting URLs under baseURL (no
// trailing slash needed) that serves them from store, reading expiry
// against now (nil: time.Now). key is 32 bytes (AES-256), secret, and
// the same on every instance serving the URLs.
func NewBlobURLSigner(key []byte, baseURL string, store BlobStore, now func() time.Time) (*BlobURLSigner, error) {
	if len(key) != 32 {
		return nil, errors.New("server: NewBlobURLSigner: the key must be 32 bytes")
	}
	if store == nil {
		return nil, errors.New("server: NewBlobURLSigner: nil store")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &BlobURLSigner{aead: aead, base: strings.TrimRight(baseURL, "/"), store: store, now: now}, nil
}

func (u *BlobURLSigner) seal(t blobToken) (string, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, u.aead.NonceSize(), u.aead.NonceSize()+len(plain)+u.aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return "", err
	}
	return u.base + "/" + base64.RawURLEncoding.EncodeToString(u.aead.Seal(nonce, nonce, plain, nil)), nil
}

func (u *BlobURLSigner) open(token string) (blobToken, bool) {
	if len(token) > maxBlobTokenBytes {
		return blobToken{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < u.aead.NonceSize() {
		return blobToken{}, false
	}
	plain, err := u.aead.Open(nil, raw[:u.aead.NonceSize()], raw[u.aead.NonceSize():], nil)
	if err != nil {
		return blobToken{}, false
	}
	var t blobToken
	if json.Unmarshal(plain, &t) != nil || t.V != 1 {
		return blobToken{}, false
	}
	return t, true
}

// PresignGet implements BlobPresigner.
func (u *BlobURLSigner) PresignGet(_ context.Context, partition string, info BlobInfo, now time.Time, ttl time.Duration) (string, error) {
	return u.seal(blobToken{V: 1, Op: "get", Partition: partition, Blob: info.ID, ExpMs: now.Add(ttl).UnixMilli()})
}

// PresignPut implements BlobPresigner.
func (u *BlobURLSigner) PresignPut(_ context.Context, partition, blobID string, byteLength int64, mediaType string, now time.Time, ttl time.Duration) (string, error) {
	return u.seal(blobToken{V: 1, Op: "put", Partition: partition, Blob: blobID, ExpMs: now.Add(ttl).UnixMilli(), Len: byteLength, MediaType: mediaType})
}

// ServeHTTP serves a URL the signer minted (see BlobURLSigner).
func (u *BlobURLSigner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, ok := u.open(path.Base(r.URL.Path))
	want := map[string]string{http.MethodGet: "get", http.MethodHead: "get", http.MethodPut: "put"}[r.Method]
	if !ok || t.Op != want {
		writeError(w, http.StatusForbidden, perr(ssp2.CodeForbidden, "not a valid blob URL for this method (§5.9.5)"))
		return
	}
	now := u.now()
	if now.UnixMilli() >= t.ExpMs {
		writeError(w, http.StatusForbidden, perr(ssp2.CodeForbidden, "the blob URL expired; request a fresh one (§5.9.5)"))
		return
	}
	ctx := r.Context()
	if t.Op == "put" {
		if r.ContentLength >= 0 && r.ContentLength != t.Len {
			writeError(w, 0, errHashMismatch())
			return
		}
		info := BlobInfo{ID: t.Blob, ByteLength: t.Len, MediaType: t.MediaType, CreatedAtMs: now.UnixMilli()}
		err := u.store.Put(ctx, t.Partition, info, http.MaxBytesReader(w, r.Body, t.Len+1))
		switch {
		case err == nil:
			w.WriteHeader(http.StatusOK)
		case errors.Is(err, ErrBlobHashMismatch):
			writeError(w, 0, errHashMismatch())
		default:
			writeError(w, http.StatusServiceUnavailable, errUnavailable())
		}
		return
	}
	body, info, err := u.store.Open(ctx, t.Partition, t.Blob)
	if errors.Is(err, ErrBlobNotFound) {
		writeError(w, 0, perr(ssp2.CodeBlobNotFound, "unknown blob (§5.9.5)"))
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, errUnavailable())
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(info.ByteLength, 10))
	h.Set("ETag", `"`+t.Blob+`"`)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(max((t.ExpMs-now.UnixMilli())/1000, 0), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.Copy(w, body)
	}
}
