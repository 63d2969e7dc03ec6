package server

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/syncstore/syncstore/ssp2"
)

// ContentType is the media type of SSP2 request and response bodies
// (SPEC §1.1).
const ContentType = "application/vnd.syncular.sync.v2"

// ServeHTTP serves the SSP2 routes, relative to where the Server is
// mounted (compose with http.StripPrefix):
//
//	POST /sync            a sync round (SPEC §1, §4, §6): an SSP2 request
//	                      body of ContentType in, an SSP2 response out
//	GET  /realtime        the realtime channel (§8): a WebSocket upgrade,
//	                      ?clientId=…
//	GET  /segments/{id}   a stored bootstrap segment (§5.5), re-authorized
//	                      with X-Syncular-Scopes
//	PUT  /blobs/{id}      blob upload, GET /blobs/{id} download, POST
//	                      /blobs/{id}/upload-grant (§5.9; Config.Blobs,
//	                      blobs_http.go)
//
// Every request is authenticated first (Config.Authenticate: HTTP 401
// sync.auth_required). Errors before a response starts are JSON bodies of
// the §10.1 shape with an HTTP status; a failure after a sync response
// started is an in-band ERROR frame, or — a storage failure — a cut
// response. Other paths answer 404 sync.not_found (operations are not
// served yet: see Capabilities).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/sync":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		s.serveSync(w, r)
	case p == "/realtime":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, http.MethodGet)
			return
		}
		s.serveRealtime(w, r)
	case strings.HasPrefix(p, "/blobs/"):
		s.serveBlobs(w, r, p[len("/blobs/"):])
	case strings.HasPrefix(p, "/segments/") && !strings.Contains(p[len("/segments/"):], "/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, http.MethodGet)
			return
		}
		id, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		s.serveSegment(w, r, id, p[len("/segments/"):])
	default:
		writeError(w, http.StatusNotFound, perr(ssp2.CodeNotFound, "no such route"))
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, perr(ssp2.CodeInvalidRequest, "method not allowed"))
}

// authenticate runs Config.Authenticate; on failure it answers 401
// sync.auth_required (or the *ssp2.Error it returned) and reports false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	id, err := s.cfg.Authenticate(r)
	if err == nil && (id.Partition == "" || id.ActorID == "") {
		err = errors.New("empty partition or actor")
	}
	if err != nil {
		var pe *ssp2.Error
		if !errors.As(err, &pe) {
			pe = perr(ssp2.CodeAuthRequired, "authentication required")
		}
		writeError(w, 0, pe)
		return Identity{}, false
	}
	return id, true
}

// failRequest answers a failure before a response started: a protocol
// error as itself, anything else (a storage failure) logged and answered
// as retryable.
func (s *Server) failRequest(w http.ResponseWriter, r *http.Request, err error) {
	var pe *ssp2.Error
	if errors.As(err, &pe) {
		writeError(w, 0, pe)
		return
	}
	if pe = engineErr(err); pe != nil {
		writeError(w, 0, pe)
		return
	}
	s.log.LogAttrs(r.Context(), levelError, "ssp2 server: request failed", slogPath(r), errAttr(err))
	writeError(w, http.StatusServiceUnavailable, errUnavailable())
}

// serveSync is POST /sync.
func (s *Server) serveSync(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != ContentType {
		writeError(w, http.StatusUnsupportedMediaType, perr(ssp2.CodeInvalidRequest, "the body must be %s (§1.1)", ContentType))
		return
	}
	id, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	body, status, pe := s.readBody(r)
	if pe != nil {
		writeError(w, status, pe)
		return
	}
	ctx := r.Context()
	rd, err := s.prepare(ctx, id, body, "")
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	out := &httpBody{w: w, enc: negotiateEncoding(r.Header.Values("Accept-Encoding"), -1)}
	err = rd.stream(ctx, out)
	if err == nil {
		err = out.finish()
		if err != nil {
			s.log.LogAttrs(ctx, levelDebug, "ssp2 server: response cut", errAttr(err))
		}
		return
	}
	if !out.started {
		s.failRequest(w, r, err)
		return
	}
	// The response started: cut it (§1.4 rule 5 — the client aborts the
	// open subscription and pulls again).
	s.log.LogAttrs(ctx, levelError, "ssp2 server: sync response cut by a failure", errAttr(err))
	out.abort()
	panic(http.ErrAbortHandler)
}

// readBody reads a sync request body within Limits.MaxRequestBytes,
// refusing a declared Content-Length over the bound before reading, and
// decompressing Content-Encoding gzip (§1.3) within the same bound.
func (s *Server) readBody(r *http.Request) ([]byte, int, *ssp2.Error) {
	max := s.lim.MaxRequestBytes
	tooLarge := perr(ssp2.CodeInvalidRequest, "the request body exceeds this server's bound of %d bytes", max)
	if r.ContentLength > max {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	var src io.Reader = http.MaxBytesReader(nil, r.Body, max)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, http.StatusBadRequest, perr(ssp2.CodeInvalidRequest, "the gzip request body is malformed")
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, perr(ssp2.CodeInvalidRequest, "request Content-Encoding must be gzip or identity (§1.3)")
	}
	buf, err := io.ReadAll(io.LimitReader(src, max+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, tooLarge
		}
		return nil, http.StatusBadRequest, perr(ssp2.CodeInvalidRequest, "the request body could not be read")
	}
	if int64(len(buf)) > max {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	return buf, 0, nil
}

// httpBody is a sync response body: nothing is sent until the first
// frame (so a failure before it is still a JSON error), then 200 and the
// frames, compressed per Accept-Encoding, flushed at the end and whenever
// the buffer fills.
type httpBody struct {
	w       http.ResponseWriter
	enc     string
	started bool
	bw      *bufio.Writer
	cw      io.WriteCloser
}

func (b *httpBody) Write(p []byte) (int, error) {
	if !b.started {
		b.started = true
		h := b.w.Header()
		h.Set("Content-Type", ContentType)
		h.Set("Cache-Control", "no-store")
		h.Set("Vary", "Accept-Encoding")
		if b.enc != "" {
			h.Set("Content-Encoding", b.enc)
		}
		b.w.WriteHeader(http.StatusOK)
		var dst io.Writer = b.w
		if b.enc != "" {
			b.cw = newCompressor(b.w, b.enc)
			dst = b.cw
		}
		b.bw = bufio.NewWriterSize(dst, 32<<10)
	}
	return b.bw.Write(p)
}

// finish flushes and ends the body.
func (b *httpBody) finish() error {
	if !b.started {
		return nil
	}
	err := b.bw.Flush()
	if b.cw != nil {
		if cerr := b.cw.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// abort releases the compressor without finishing the stream.
func (b *httpBody) abort() {
	if b.cw != nil {
		if z, ok := b.cw.(*pooledZstd); ok {
			z.release()
		}
	}
}

// negotiateEncoding picks a response Content-Encoding from Accept-Encoding
// (§1.3, §5.8): zstd, then gzip, "" for identity. A body known to be
// under 1 KiB (size ≥ 0) is not worth compressing.
func negotiateEncoding(vals []string, size int64) string {
	if size >= 0 && size < 1024 {
		return ""
	}
	zstdQ, gzipQ := -1.0, -1.0
	star := -1.0
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			q := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "zstd":
				zstdQ = q
			case "gzip", "x-gzip":
				gzipQ = q
			case "*":
				star = q
			}
		}
	}
	if zstdQ < 0 {
		zstdQ = star
	}
	if gzipQ < 0 {
		gzipQ = star
	}
	switch {
	case zstdQ > 0 && zstdQ >= gzipQ:
		return "zstd"
	case gzipQ > 0:
		return "gzip"
	}
	return ""
}

var zstdEncoders = gosync.Pool{New: func() any {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
	if err != nil {
		panic(err)
	}
	return e
}}

var gzipWriters = gosync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// pooledZstd returns its encoder to the pool on Close.
type pooledZstd struct{ *zstd.Encoder }

func (z *pooledZstd) Close() error {
	err := z.Encoder.Close()
	z.release()
	return err
}

func (z *pooledZstd) release() {
	if z.Encoder != nil {
		z.Encoder.Reset(nil)
		zstdEncoders.Put(z.Encoder)
		z.Encoder = nil
	}
}

type pooledGzip struct{ *gzip.Writer }

func (g *pooledGzip) Close() error {
	err := g.Writer.Close()
	g.Writer.Reset(nil)
	gzipWriters.Put(g.Writer)
	return err
}

// newCompressor returns a writer compressing into w with enc ("zstd" or
// "gzip"); Close finishes the stream (it does not close w).
func newCompressor(w io.Writer, enc string) io.WriteCloser {
	if enc == "zstd" {
		e := zstdEncoders.Get().(*zstd.Encoder)
		e.Reset(w)
		return &pooledZstd{e}
	}
	g := gzipWriters.Get().(*gzip.Writer)
	g.Reset(w)
	return &pooledGzip{g}
}
