package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/syncstore/syncstore/ssp2"
)

// The blob routes (SPEC §5.9), served by ServeHTTP when Config.Blobs is
// set:
//
//	PUT  /blobs/{blobId}               upload, content address verified (§5.9.3)
//	POST /blobs/{blobId}/upload-grant  presigned upload grant (§5.9.3)
//	GET  /blobs/{blobId}               download, re-authorized (§5.9.5)
//
// All three authenticate (Config.Authenticate) and work in the identity's
// partition.

// maxGrantBodyBytes bounds an upload-grant request body.
const maxGrantBodyBytes = 4096

// serveBlobs dispatches rest, the path after "/blobs/".
func (s *Server) serveBlobs(w http.ResponseWriter, r *http.Request, rest string) {
	if s.blobs == nil {
		writeError(w, http.StatusNotFound, perr(ssp2.CodeNotFound, "this server serves no blobs"))
		return
	}
	blobID, grant := strings.CutSuffix(rest, "/upload-grant")
	if strings.Contains(blobID, "/") {
		writeError(w, http.StatusNotFound, perr(ssp2.CodeNotFound, "no such route"))
		return
	}
	switch {
	case grant && r.Method != http.MethodPost:
		methodNotAllowed(w, http.MethodPost)
		return
	case !grant && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPut:
		methodNotAllowed(w, "GET, PUT")
		return
	}
	id, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if _, err := s.touch(r.Context(), id.Partition); err != nil {
		s.failRequest(w, r, err)
		return
	}
	switch {
	case grant:
		s.serveBlobGrant(w, r, id, blobID)
	case r.Method == http.MethodPut:
		s.serveBlobUpload(w, r, id, blobID)
	default:
		s.serveBlobDownload(w, r, id, blobID)
	}
}

func errHashMismatch() *ssp2.Error {
	return perr(ssp2.CodeBlobHashMismatch, "the bytes do not hash to the blobId of the path, or the blobId is not \"sha256:\" and 64 lowercase hex digits (§5.9.3)")
}

func (s *Server) errTooLarge() *ssp2.Error {
	return perr(ssp2.CodeBlobTooLarge, "the blob exceeds this server's bound of %d bytes (§5.9.3)", s.blobs.maxBytes)
}

// serveBlobUpload is PUT /blobs/{blobId} (§5.9.3): the body's SHA-256 must
// be the blobId (400 blob.hash_mismatch), its size at most the bound (413
// blob.too_large, refused on Content-Length before reading and again on
// the bytes read). A blob already stored answers 200 without reading.
func (s *Server) serveBlobUpload(w http.ResponseWriter, r *http.Request, id Identity, blobID string) {
	ctx := r.Context()
	if !validSegmentID(blobID) {
		writeError(w, 0, errHashMismatch())
		return
	}
	max := s.blobs.maxBytes
	if r.ContentLength > max {
		writeError(w, 0, s.errTooLarge())
		return
	}
	if _, err := s.blobs.store.Stat(ctx, id.Partition, blobID); err == nil {
		w.WriteHeader(http.StatusOK)
		return
	} else if !errors.Is(err, ErrBlobNotFound) {
		s.failRequest(w, r, err)
		return
	}
	info := BlobInfo{ID: blobID, ByteLength: r.ContentLength, MediaType: uploadMediaType(r.Header.Get("Content-Type")), CreatedAtMs: s.nowMs()}
	var body io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(http.MaxBytesReader(nil, r.Body, max))
		if err != nil {
			writeError(w, http.StatusBadRequest, perr(ssp2.CodeInvalidRequest, "the gzip request body is malformed"))
			return
		}
		defer zr.Close()
		body, info.ByteLength = zr, -1
	default:
		writeError(w, http.StatusUnsupportedMediaType, perr(ssp2.CodeInvalidRequest, "request Content-Encoding must be gzip or identity (§1.3)"))
		return
	}
	if info.ByteLength < 0 {
		// No length known up front: spool to a temporary file, hashing,
		// within the bound.
		f, n, sum, pe := s.spoolBlob(body, max)
		if pe != nil {
			writeError(w, 0, pe)
			return
		}
		defer func() { f.Close(); os.Remove(f.Name()) }()
		if sum != blobID {
			writeError(w, 0, errHashMismatch())
			return
		}
		info.ByteLength, body = n, f
	}
	err := s.blobs.store.Put(ctx, id.Partition, info, body)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, ErrBlobHashMismatch):
		writeError(w, 0, errHashMismatch())
	case errors.Is(err, ErrBlobTooLarge):
		writeError(w, 0, s.errTooLarge())
	default:
		s.failRequest(w, r, err)
	}
}

// spoolBlob copies body (at most max bytes) to a temporary file, returning
// it rewound, its size and content address.
func (s *Server) spoolBlob(body io.Reader, max int64) (*os.File, int64, string, *ssp2.Error) {
	f, err := os.CreateTemp(s.cfg.TempDir, "ssp2-blob-*")
	if err != nil {
		s.log.Error("ssp2 server: spool a blob upload", errAttr(err))
		return nil, 0, "", errUnavailable()
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, max+1))
	fail := func(pe *ssp2.Error) (*os.File, int64, string, *ssp2.Error) {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, "", pe
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || n > max:
		return fail(s.errTooLarge())
	case err != nil:
		return fail(perr(ssp2.CodeInvalidRequest, "the request body could not be read"))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(errUnavailable())
	}
	return f, n, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// uploadMediaType is the advisory media type of an upload's Content-Type:
// "" for none, application/octet-stream or one too long.
func uploadMediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt == "application/octet-stream" || len(mt) > MaxBlobMediaTypeBytes {
		return ""
	}
	return mt
}

// blobURL is the JSON envelope of a presigned URL (§5.9.3, §5.9.5).
type blobURL struct {
	URL            string `json:"url"`
	URLExpiresAtMs int64  `json:"urlExpiresAtMs"`
}

// urlExpiry is a URL's expiry for the server's clock: whole seconds, as
// upstream mints them.
func (s *Server) urlExpiry() (now time.Time, ttl time.Duration, expiresAtMs int64) {
	now = s.cfg.Now()
	ttl = s.blobs.ttl
	expiresAtMs = (now.Unix() + int64(ttl/time.Second)) * 1000
	return now, time.Duration(expiresAtMs-now.UnixMilli()) * time.Millisecond, expiresAtMs
}

// serveBlobDownload is GET /blobs/{blobId} (§5.9.5): an unknown blob is
// 404 blob.not_found; the actor may download it iff a row referencing it
// (the reference index, at most 10,000 rows read) passes the §3.4 stored-
// row scope check against the actor's grant, else 403 blob.forbidden
// (also when the scope resolver fails). Then, with a presigner, the
// answer is the JSON {url, urlExpiresAtMs} (always-issue); without, the
// bytes, with ETag "<blobId>" (If-None-Match → 304).
func (s *Server) serveBlobDownload(w http.ResponseWriter, r *http.Request, id Identity, blobID string) {
	ctx := r.Context()
	notFound := perr(ssp2.CodeBlobNotFound, "unknown blob (§5.9.5)")
	if !validSegmentID(blobID) {
		writeError(w, 0, notFound)
		return
	}
	info, err := s.blobs.store.Stat(ctx, id.Partition, blobID)
	if errors.Is(err, ErrBlobNotFound) {
		writeError(w, 0, notFound)
		return
	}
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	g, err := s.resolve(ctx, id, "")
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	allowed := false
	if g.ok {
		refs, err := s.store.ListRowsReferencingBlob(ctx, id.Partition, blobID, maxBlobReferrers)
		if err != nil {
			s.failRequest(w, r, err)
			return
		}
		for _, ref := range refs {
			if t, ok := s.tables[ref.Table]; ok && authorizeRow(t, ref.Scopes, g) {
				allowed = true
				break
			}
		}
	}
	if !allowed {
		writeError(w, 0, perr(ssp2.CodeBlobForbidden, "no row referencing the blob is visible to the actor (§5.9.5)"))
		return
	}
	h := w.Header()
	h.Set("ETag", `"`+blobID+`"`)
	h.Set("Cache-Control", "private, max-age=0")
	h.Set("Vary", "Authorization, Accept-Encoding")
	if p := s.blobs.presign(); p != nil {
		now, ttl, exp := s.urlExpiry()
		url, err := p.PresignGet(ctx, id.Partition, info, now, ttl)
		if err != nil {
			s.failRequest(w, r, err)
			return
		}
		writeJSONBody(w, blobURL{URL: url, URLExpiresAtMs: exp})
		return
	}
	if etagMatches(r.Header.Values("If-None-Match"), `"`+blobID+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, info, err := s.blobs.store.Open(ctx, id.Partition, blobID)
	if errors.Is(err, ErrBlobNotFound) {
		writeError(w, 0, notFound)
		return
	}
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	defer body.Close()
	// Upstream's clients read an application/json answer as the URL
	// envelope, so a JSON blob is served as octet-stream.
	ct := info.MediaType
	if ct == "" || strings.Contains(ct, "json") {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(info.ByteLength, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, body); err != nil {
		s.log.LogAttrs(ctx, levelDebug, "ssp2 server: blob download cut", errAttr(err))
	}
}

// serveBlobGrant is POST /blobs/{blobId}/upload-grant (§5.9.3): body
// {"byteLength": int ≥ 0, "mediaType"?: string} (at most 4 KiB). A
// malformed blobId is 400 blob.hash_mismatch, a byteLength over the bound
// 413 blob.too_large — before any URL is minted. Without a presigner the
// answer is {} (no grant: upload through PUT /blobs/{blobId}); a blob
// already stored answers {"present":true}; else {url, urlExpiresAtMs}, a
// presigned PUT of exactly byteLength bytes.
func (s *Server) serveBlobGrant(w http.ResponseWriter, r *http.Request, id Identity, blobID string) {
	ctx := r.Context()
	if !validSegmentID(blobID) {
		writeError(w, 0, errHashMismatch())
		return
	}
	var req struct {
		ByteLength *int64  `json:"byteLength"`
		MediaType  *string `json:"mediaType"`
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxGrantBodyBytes+1))
	if err != nil || len(b) > maxGrantBodyBytes || json.Unmarshal(b, &req) != nil || req.ByteLength == nil || *req.ByteLength < 0 {
		writeError(w, 0, perr(ssp2.CodeInvalidRequest, "the upload-grant body must be {\"byteLength\": int ≥ 0, \"mediaType\"?: string} (§5.9.3)"))
		return
	}
	if *req.ByteLength > s.blobs.maxBytes {
		writeError(w, 0, s.errTooLarge())
		return
	}
	p := s.blobs.presign()
	if p == nil {
		writeJSONBody(w, struct{}{})
		return
	}
	if _, err := s.blobs.store.Stat(ctx, id.Partition, blobID); err == nil {
		writeJSONBody(w, map[string]bool{"present": true})
		return
	} else if !errors.Is(err, ErrBlobNotFound) {
		s.failRequest(w, r, err)
		return
	}
	mt := ""
	if req.MediaType != nil {
		mt = uploadMediaType(*req.MediaType)
	}
	now, ttl, exp := s.urlExpiry()
	url, err := p.PresignPut(ctx, id.Partition, blobID, *req.ByteLength, mt, now, ttl)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	writeJSONBody(w, blobURL{URL: url, URLExpiresAtMs: exp})
}

func writeJSONBody(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
