package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/ssp2"
)

// maxScopesHeaderBytes bounds X-Syncular-Scopes.
const maxScopesHeaderBytes = 64 << 10

// serveSegment is GET /segments/{id} (SPEC §5.5): every download is
// re-authorized — the requested scopes of X-Syncular-Scopes intersected
// with the actor's current grant must digest to the segment's scope
// digest.
func (s *Server) serveSegment(w http.ResponseWriter, r *http.Request, id Identity, segID string) {
	ctx := r.Context()
	entry, err := s.touch(ctx, id.Partition)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	var recs []SegmentRecord
	if validSegmentID(segID) {
		all, err := s.segments.Records(ctx, id.Partition, segID)
		if err != nil {
			s.failRequest(w, r, err)
			return
		}
		for _, rec := range all {
			if rec.LogEpoch == entry.Epoch { // §2.1: never across epochs
				recs = append(recs, rec)
			}
		}
	}
	if len(recs) == 0 {
		writeError(w, 0, perr(ssp2.CodeNotFound, "unknown segment (§5.5)"))
		return
	}
	now := s.nowMs()
	live := recs[:0:0]
	for _, rec := range recs {
		if rec.ExpiresAtMs > now {
			live = append(live, rec)
		}
	}
	if len(live) == 0 {
		writeError(w, 0, perr(ssp2.CodeSegmentExpired, "the segment expired; pull again for fresh descriptors (§5.1)"))
		return
	}
	t, ok := s.tables[live[0].Table]
	if !ok {
		writeError(w, 0, perr(ssp2.CodeNotFound, "the segment's table is no longer served"))
		return
	}
	requested, pe := parseScopesHeader(r.Header.Values("X-Syncular-Scopes"))
	if pe != nil {
		writeError(w, 0, pe)
		return
	}
	if pe := checkRequested(t, requested); pe != nil {
		writeError(w, 0, pe)
		return
	}
	g, err := s.resolve(ctx, id, "")
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	eff, active := effective(requested, g)
	var rec SegmentRecord
	found := false
	if active {
		digest := ssp2.ScopeDigest(eff)
		for _, x := range live {
			if x.ScopeDigest == digest {
				rec, found = x, true
				break
			}
		}
	}
	if !found {
		writeError(w, 0, perr(ssp2.CodeForbidden, "the segment is not within the scopes the actor holds (§5.5)"))
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "private, max-age=0")
	h.Set("Vary", "Authorization, X-Syncular-Scopes, Accept-Encoding")
	s.sendSegment(w, r, rec)
}

// sendSegment answers the bytes of segment rec once the caller has
// authorized the request and set Cache-Control and Vary: Content-Type and
// ETag (the segment id), 304 for a matching If-None-Match, no body for
// HEAD, Content-Encoding negotiated (SPEC §5.5, §5.8), 404 sync.not_found
// when the store has forgotten the bytes.
func (s *Server) sendSegment(w http.ResponseWriter, r *http.Request, rec SegmentRecord) {
	ctx := r.Context()
	h := w.Header()
	etag := `"` + rec.ID + `"`
	h.Set("Content-Type", "application/octet-stream")
	h.Set("ETag", etag)
	if etagMatches(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, err := s.segments.Open(ctx, rec.Partition, rec.ID)
	if errors.Is(err, ErrSegmentNotFound) {
		h.Del("ETag")
		writeError(w, 0, perr(ssp2.CodeNotFound, "unknown segment (§5.5)"))
		return
	}
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	defer body.Close()
	enc := negotiateEncoding(r.Header.Values("Accept-Encoding"), rec.ByteLength)
	if enc == "" {
		h.Set("Content-Length", strconv.FormatInt(rec.ByteLength, 10))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		if _, err := io.Copy(w, body); err != nil {
			s.log.LogAttrs(ctx, levelDebug, "ssp2 server: segment download cut", errAttr(err))
		}
		return
	}
	h.Set("Content-Encoding", enc)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	cw := newCompressor(w, enc)
	_, err = io.Copy(cw, body)
	if cerr := cw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.log.LogAttrs(ctx, levelDebug, "ssp2 server: segment download cut", errAttr(err))
	}
}

// parseScopesHeader parses X-Syncular-Scopes: a JSON object of scope
// variable → list of strings (§5.5). Absent: no scopes (which revoke).
func parseScopesHeader(vals []string) (scopeMap, *ssp2.Error) {
	if len(vals) == 0 {
		return scopeMap{}, nil
	}
	bad := perr(ssp2.CodeInvalidRequest, "X-Syncular-Scopes must be one JSON object of scope variable → list of strings (§5.5)")
	if len(vals) > 1 || len(vals[0]) > maxScopesHeaderBytes || !utf8.ValidString(vals[0]) {
		return nil, bad
	}
	var raw map[string][]*string
	if err := json.Unmarshal([]byte(vals[0]), &raw); err != nil || raw == nil {
		return nil, bad
	}
	out := make(scopeMap, len(raw))
	for k, vs := range raw {
		if vs == nil {
			return nil, bad
		}
		list := make([]string, len(vs))
		for i, v := range vs {
			if v == nil {
				return nil, bad
			}
			list[i] = *v
		}
		out[k] = list
	}
	return out, nil
}

// etagMatches reports whether If-None-Match matches etag (a list, weak
// tags compared weakly, or *).
func etagMatches(vals []string, etag string) bool {
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "*" || strings.TrimPrefix(part, "W/") == etag {
				return true
			}
		}
	}
	return false
}
