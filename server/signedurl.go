package server

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/ssp2"
)

// SignedURLConfig turns on signed-URL segment delivery, SPEC §5.4's native
// HMAC scheme: a pull whose PULL_HEADER advertises accept bit 3 gets, on
// every SEGMENT_REF, a url the client fetches with no credential (a CDN or
// object host in front of SignedSegmentHandler) and urlExpiresAtMs. A
// pull without bit 3 gets descriptors without url, downloaded through
// GET /segments/{id} (§5.5) as before.
//
// The URL is BaseURL + "/" + segmentId + "?st=" + token, where token is
// base64url(payload) "." base64url(HMAC-SHA256(key, payload)) and payload
// is the JSON {"v":1,"seg":…,"sd":…,"aud":…,"exp":…} of §5.4: the segment
// id, the scope digest it was built for, an audience naming the partition
// and the expiry in unix seconds. The audience is the partition id
// encrypted deterministically under a key derived from the signing key
// (stable per partition, opaque to clients, §2.1), so the handler learns
// the partition from the URL alone.
type SignedURLConfig struct {
	// BaseURL is where SignedSegmentHandler is reachable from clients,
	// directly or through a CDN that forwards the path and the query: an
	// absolute http or https URL without query or fragment; a trailing
	// "/" is dropped.
	BaseURL string

	// Keys are the HMAC keys, each at least MinSignedURLKeyBytes bytes,
	// at most MaxSignedURLKeys of them. Keys[0] signs; every key
	// verifies. To rotate, put the new key first and keep the old one
	// second until the URLs it signed have expired (TTL plus the 60 s
	// skew), then drop it. The slices are copied by New.
	Keys [][]byte

	// TTL is how long an issued URL may be fetched: whole seconds, at
	// least 1 s and at most MaxSignedURLTTL (the SPEC's SHOULD: the
	// revocation window of an issued URL is its TTL). 0 means
	// DefaultSignedURLTTL. A URL never outlives its segment: its expiry
	// is also capped by the segment's (Limits.SegmentTTL).
	// Server.SetSignedURLTTL changes it at run time.
	TTL time.Duration
}

// Bounds and defaults of SignedURLConfig.
const (
	DefaultSignedURLTTL  = 15 * time.Minute
	MaxSignedURLTTL      = 15 * time.Minute
	MinSignedURLKeyBytes = 32
	MaxSignedURLKeys     = 8
	// SignedURLSkew is the verifier's allowance for the clocks of the
	// issuing and the verifying server (§5.4: at most 60 s); clients
	// never fetch at or past urlExpiresAtMs.
	SignedURLSkew = 60 * time.Second
)

// maxSegmentTokenBytes bounds the st parameter a request may carry: a
// token of a 255-byte partition is under 1 KiB.
const maxSegmentTokenBytes = 2048

// ErrSignedURLsOff is returned by Server.SetSignedURLTTL on a server
// without Config.SignedURLs.
var ErrSignedURLsOff = errors.New("server: signed URLs are not configured (Config.SignedURLs)")

// urlSigner issues and verifies the §5.4 tokens of one Server.
type urlSigner struct {
	base string
	keys []urlKey
	ttl  atomic.Int64 // seconds, 0…MaxSignedURLTTL
}

// urlKey is one configured key and the audience keys derived from it.
type urlKey struct {
	mac   []byte       // the configured key: HMAC-SHA256 of the payload
	siv   []byte       // derived: the synthetic IV of an audience
	block cipher.Block // derived: AES-256 enciphering the partition
}

func newURLSigner(c *SignedURLConfig) (*urlSigner, error) {
	if c == nil {
		return nil, nil
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return nil, errors.New("server: SignedURLConfig.BaseURL must be an absolute http(s) URL without query, fragment or user info")
	}
	if len(c.Keys) == 0 || len(c.Keys) > MaxSignedURLKeys {
		return nil, fmt.Errorf("server: SignedURLConfig.Keys must hold 1…%d keys", MaxSignedURLKeys)
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = DefaultSignedURLTTL
	}
	if err := checkSignedURLTTL(ttl); err != nil || ttl == 0 {
		return nil, errors.New("server: SignedURLConfig.TTL must be whole seconds, 1 s…15 min (0: the default)")
	}
	s := &urlSigner{base: strings.TrimSuffix(c.BaseURL, "/")}
	s.ttl.Store(int64(ttl / time.Second))
	for _, k := range c.Keys {
		if len(k) < MinSignedURLKeyBytes {
			return nil, fmt.Errorf("server: every SignedURLConfig.Keys key must be at least %d bytes", MinSignedURLKeyBytes)
		}
		siv, err1 := hkdf.Key(sha256.New, k, nil, "syncstore signed-url audience siv v1", 32)
		enc, err2 := hkdf.Key(sha256.New, k, nil, "syncstore signed-url audience enc v1", 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("server: deriving the audience keys: %w", err)
		}
		block, err := aes.NewCipher(enc)
		if err != nil {
			return nil, fmt.Errorf("server: deriving the audience keys: %w", err)
		}
		s.keys = append(s.keys, urlKey{mac: bytes.Clone(k), siv: siv, block: block})
	}
	return s, nil
}

func checkSignedURLTTL(ttl time.Duration) error {
	if ttl < 0 || ttl > MaxSignedURLTTL || ttl%time.Second != 0 {
		return errors.New("server: a signed-URL TTL is whole seconds, 0…15 min")
	}
	return nil
}

// SetSignedURLTTL sets the TTL of the URLs issued from now on (URLs issued
// before keep theirs): whole seconds, 0…MaxSignedURLTTL. 0 issues URLs
// that expire as they are issued — clients fail such descriptors with
// sync.segment_expired semantics and pull again, so 0 stops signed-URL
// delivery from being usable without stopping pulls (upstream's catalog
// probes the no-fetch-past-expiry rule with it). It returns
// ErrSignedURLsOff without Config.SignedURLs.
func (s *Server) SetSignedURLTTL(ttl time.Duration) error {
	if s.urls == nil {
		return ErrSignedURLsOff
	}
	if err := checkSignedURLTTL(ttl); err != nil {
		return err
	}
	s.urls.ttl.Store(int64(ttl / time.Second))
	return nil
}

// segmentClaims is the §5.4 token payload, fields in the SPEC's order.
type segmentClaims struct {
	V   int    `json:"v"`
	Seg string `json:"seg"`
	SD  string `json:"sd"`
	Aud string `json:"aud"`
	Exp int64  `json:"exp"` // unix seconds
}

// ref is the SEGMENT_REF of rec for this pull: with a signed url when the
// server issues them and the client advertised accept bit 3 (§5.4: never
// otherwise — a url a client did not ask for is a broken server to it).
func (ps *pullStream) ref(rec SegmentRecord) *ssp2.SegmentRef {
	f := segmentRef(rec)
	if u := ps.r.s.urls; u != nil && ps.r.limits.accept&ssp2.AcceptSignedURLs != 0 {
		url, expMs := u.issue(rec, ps.r.s.nowMs())
		f.URL, f.URLExpiresAtMs = ssp2.Some(url), expMs
	}
	return f
}

// issue returns the signed URL of rec and its expiry in epoch ms: the
// TTL from now, in whole seconds, capped by the segment's own expiry.
func (u *urlSigner) issue(rec SegmentRecord, nowMs int64) (string, int64) {
	exp := floorDiv(nowMs, 1000) + u.ttl.Load()
	exp = min(exp, floorDiv(rec.ExpiresAtMs, 1000))
	k := &u.keys[0]
	payload, err := json.Marshal(segmentClaims{V: 1, Seg: rec.ID, SD: rec.ScopeDigest, Aud: k.audience(rec.Partition), Exp: exp})
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	token := b64.EncodeToString(payload) + "." + b64.EncodeToString(k.sign(payload))
	return u.base + "/" + rec.ID + "?st=" + token, exp * 1000
}

var b64 = base64.RawURLEncoding

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (k *urlKey) sign(payload []byte) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write(payload)
	return m.Sum(nil)
}

// audience enciphers partition deterministically (a synthetic IV: the
// HMAC of the partition, which also authenticates it, then AES-CTR), so
// the same partition always has the same audience and no client can read
// or forge one.
func (k *urlKey) audience(partition string) string {
	iv := k.sivOf([]byte(partition))
	out := make([]byte, len(iv)+len(partition))
	copy(out, iv)
	cipher.NewCTR(k.block, iv).XORKeyStream(out[len(iv):], []byte(partition))
	return b64.EncodeToString(out)
}

// partitionOf deciphers an audience of this key; false when it is not one.
func (k *urlKey) partitionOf(aud string) (string, bool) {
	b, err := b64.DecodeString(aud)
	if err != nil || len(b) <= aes.BlockSize || len(b) > aes.BlockSize+255 {
		return "", false
	}
	iv, ct := b[:aes.BlockSize], b[aes.BlockSize:]
	pt := make([]byte, len(ct))
	cipher.NewCTR(k.block, iv).XORKeyStream(pt, ct)
	if !hmac.Equal(iv, k.sivOf(pt)) {
		return "", false
	}
	return string(pt), true
}

func (k *urlKey) sivOf(p []byte) []byte {
	m := hmac.New(sha256.New, k.siv)
	m.Write(p)
	return m.Sum(nil)[:aes.BlockSize]
}

// verify checks token for a request of segment segID at nowMs (§5.4): the
// MAC under any configured key (constant-time), the claims' shape, seg
// equal to segID, the audience one of that key, and exp plus the skew not
// past. It returns the claims and the partition, or the protocol error to
// answer: sync.forbidden for a token that is not a valid grant of segID,
// sync.segment_expired (retryable: a pull mints fresh URLs) for a valid
// one past its expiry.
func (u *urlSigner) verify(token, segID string, nowMs int64) (segmentClaims, string, *ssp2.Error) {
	var c segmentClaims
	forbidden := func(why string) (segmentClaims, string, *ssp2.Error) {
		return c, "", perr(ssp2.CodeForbidden, "segment token rejected: %s (§5.4)", why)
	}
	p64, m64, ok := strings.Cut(token, ".")
	if !ok || len(token) > maxSegmentTokenBytes {
		return forbidden("malformed token")
	}
	payload, err1 := b64.DecodeString(p64)
	mac, err2 := b64.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return forbidden("malformed token")
	}
	var key *urlKey
	for i := range u.keys {
		if hmac.Equal(mac, u.keys[i].sign(payload)) {
			key = &u.keys[i]
			break
		}
	}
	if key == nil {
		return forbidden("bad signature")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() || c.V != 1 {
		return forbidden("unsupported claims")
	}
	if c.Seg != segID {
		return forbidden("segment mismatch")
	}
	partition, ok := key.partitionOf(c.Aud)
	if !ok {
		return forbidden("audience mismatch")
	}
	if c.Exp <= floorDiv(nowMs-SignedURLSkew.Milliseconds()-1, 1000) { // exp·1000 + skew < now
		return c, "", perr(ssp2.CodeSegmentExpired, "the signed URL expired; pull again for a fresh one (§5.4)")
	}
	return c, partition, nil
}

// SignedSegmentHandler serves the signed segment URLs of Config.SignedURLs
// (SPEC §5.4): GET or HEAD of any path whose last element is a segment id,
// with the query st=<token>. It is the origin a CDN fronts, mounted
// wherever SignedURLConfig.BaseURL leads; it authenticates nobody (the URL
// is the whole grant) and checks, in order: the token's signature under
// any configured key, its claims, its segment (the path's), its audience,
// its expiry on Config.Now (with SignedURLSkew), then the segment: stored
// for that partition in its current log epoch, unexpired, and stored for
// the token's scope digest. Answers: the bytes as GET /segments/{id}
// answers them (ETag, If-None-Match, Content-Encoding), with
// Cache-Control public for the token's remaining life; 403 sync.forbidden
// for a token that does not grant this segment (signature, claims,
// segment, audience or scope digest); 404 sync.segment_expired for an
// expired token or segment; 404 sync.not_found for an unknown or
// forgotten segment, and for every request when signed URLs are off; 405
// for another method. Errors are §10.1 JSON bodies. A request whose token
// does not verify costs at most MaxSignedURLKeys HMACs and reaches no
// storage.
func (s *Server) SignedSegmentHandler() http.Handler {
	return http.HandlerFunc(s.serveSignedSegment)
}

func (s *Server) serveSignedSegment(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, http.MethodGet)
		return
	}
	if s.urls == nil {
		writeError(w, 0, perr(ssp2.CodeNotFound, "signed URLs are not served here"))
		return
	}
	p := r.URL.Path
	segID := p[strings.LastIndexByte(p, '/')+1:]
	if !validSegmentID(segID) {
		writeError(w, 0, perr(ssp2.CodeNotFound, "unknown segment (§5.5)"))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q["st"]) != 1 {
		writeError(w, 0, perr(ssp2.CodeForbidden, "a signed segment URL carries exactly one st token (§5.4)"))
		return
	}
	now := s.nowMs()
	claims, partition, pe := s.urls.verify(q["st"][0], segID, now)
	if pe != nil {
		writeError(w, 0, pe)
		return
	}
	ctx := r.Context()
	entry, err := s.touch(ctx, partition)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	all, err := s.segments.Records(ctx, partition, segID)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	known, live := false, false
	var rec SegmentRecord
	found := false
	for _, x := range all {
		if x.LogEpoch != entry.Epoch { // §2.1: never across epochs
			continue
		}
		known = true
		if x.ExpiresAtMs <= now {
			continue
		}
		live = true
		if x.ScopeDigest == claims.SD {
			rec, found = x, true
			break
		}
	}
	switch {
	case !known:
		writeError(w, 0, perr(ssp2.CodeNotFound, "unknown segment (§5.5)"))
		return
	case !live:
		writeError(w, 0, perr(ssp2.CodeSegmentExpired, "the segment expired; pull again for fresh descriptors (§5.1)"))
		return
	case !found:
		writeError(w, 0, perr(ssp2.CodeForbidden, "segment token rejected: scope-digest mismatch (§5.4)"))
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age="+strconv.FormatInt(max(claims.Exp-floorDiv(now, 1000), 0), 10))
	h.Set("Vary", "Accept-Encoding")
	s.sendSegment(w, r, rec)
}
