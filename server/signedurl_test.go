package server

import (
	"bytes"
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

var (
	urlKey1 = bytes.Repeat([]byte{1}, 32)
	urlKey2 = bytes.Repeat([]byte{2}, 32)
)

const cdnBase = "https://cdn.example.test/seg"

func withSignedURLs(keys ...[]byte) envOption {
	return func(c *Config) {
		c.Limits.SegmentTTL = time.Hour
		c.SignedURLs = &SignedURLConfig{BaseURL: cdnBase + "/", Keys: keys}
	}
}

// fetchURL serves u through the server's SignedSegmentHandler as the CDN
// would forward it: no credential, the path and query as issued.
func (e *env) fetchURL(u string, hdrs ...string) (int, []byte, http.Header, map[string]any) {
	e.t.Helper()
	return fetchWith(e.srv, http.MethodGet, u, hdrs...)
}

func fetchWith(s *Server, method, u string, hdrs ...string) (int, []byte, http.Header, map[string]any) {
	r := httptest.NewRequest(method, u, nil)
	for i := 0; i+1 < len(hdrs); i += 2 {
		r.Header.Set(hdrs[i], hdrs[i+1])
	}
	w := httptest.NewRecorder()
	s.SignedSegmentHandler().ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	var eb map[string]any
	if w.Code >= 400 {
		_ = json.Unmarshal(b, &eb)
	}
	return w.Code, b, w.Result().Header, eb
}

// pullRefs bootstraps p1's tasks in pages of 100 stored segments with
// accept bits, and returns every SEGMENT_REF.
func (e *env) pullRefs(client, ep string, accept uint8) []*ssp2.SegmentRef {
	e.t.Helper()
	var refs []*ssp2.SegmentRef
	cursor, state := int64(-1), ""
	for {
		s := &ssp2.Subscription{ID: "s1", Table: "tasks", Scopes: p1, Cursor: cursor, BootstrapState: driver.JSON(state)}
		m := e.sync("alice", 2, hdr(client, ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 100, MaxSnapshotPages: 1}, s)
		sec := sections(m)[0]
		refs = append(refs, sec.refs...)
		cursor, state = sec.end.NextCursor, string(sec.end.BootstrapState)
		if state == "" {
			return refs
		}
	}
}

// TestSignedURLs: with Config.SignedURLs, a pull advertising accept bit 3
// gets a signed url on every descriptor, expiring after the TTL in whole
// seconds of the server clock; the URL host serves the exact bytes with no
// credential until exp + 60 s skew, then answers sync.segment_expired; a
// pull without bit 3, and a server without signed URLs, issue none (§5.4).
func TestSignedURLs(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l, withSignedURLs(urlKey1))
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		e.seed("alice", "c1", ep, "p1", 250)
		if caps := e.srv.Capabilities(); caps[len(caps)-1] != "signed-urls" {
			t.Fatalf("capabilities %v", caps)
		}

		now := e.clock.Now().UnixMilli()
		refs := e.pullRefs("c1", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
		if len(refs) != 3 {
			t.Fatalf("%d refs", len(refs))
		}
		for _, ref := range refs {
			if !ref.URL.Present || !strings.HasPrefix(ref.URL.Value, cdnBase+"/"+ref.SegmentID+"?st=") {
				t.Fatalf("url %+v", ref.URL)
			}
			if want := (now/1000 + 900) * 1000; ref.URLExpiresAtMs != want {
				t.Fatalf("urlExpiresAtMs %d, want %d", ref.URLExpiresAtMs, want)
			}
			st, body, h, eb := e.fetchURL(ref.URL.Value)
			if st != 200 || ssp2.SegmentID(body) != ref.SegmentID || int64(len(body)) != ref.ByteLength {
				t.Fatalf("fetch: %d %v", st, eb)
			}
			if h.Get("ETag") != `"`+ref.SegmentID+`"` || h.Get("Content-Type") != "application/octet-stream" ||
				!strings.HasPrefix(h.Get("Cache-Control"), "public, max-age=") || h.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("headers %v", h)
			}
		}
		// The same descriptors without bit 3: no url, the direct endpoint.
		for _, ref := range e.pullRefs("c2", ep, ssp2.AcceptExternalRows) {
			if ref.URL.Present {
				t.Fatalf("a url without accept bit 3: %+v", ref)
			}
		}
		u := refs[0].URL.Value
		if st, body, _, _ := e.fetchURL(u, "If-None-Match", `"`+refs[0].SegmentID+`"`); st != 304 || len(body) != 0 {
			t.Fatalf("etag: %d", st)
		}
		if st, body, h, _ := fetchWith(e.srv, http.MethodHead, u); st != 200 || len(body) != 0 || h.Get("Content-Length") == "" {
			t.Fatalf("HEAD: %d %d", st, len(body))
		}
		if st, _, _, _ := fetchWith(e.srv, http.MethodPost, u); st != 405 {
			t.Fatalf("POST: %d", st)
		}
		// Expiry on the server clock: valid through exp + 60 s skew.
		e.clock.Advance(time.Duration(refs[0].URLExpiresAtMs-now)*time.Millisecond + SignedURLSkew)
		if st, _, _, eb := e.fetchURL(u); st != 200 {
			t.Fatalf("at exp+skew: %d %v", st, eb)
		}
		e.clock.Advance(time.Millisecond)
		if st, _, _, eb := e.fetchURL(u); st != 404 || eb["code"] != "sync.segment_expired" || eb["retryable"] != true {
			t.Fatalf("past exp+skew: %d %v", st, eb)
		}
		// A rotated log epoch forgets every issued URL (§2.1).
		e.clock.Advance(-15 * time.Minute)
		if st, _, _, eb := e.fetchURL(u); st != 200 {
			t.Fatalf("back in time: %d %v", st, eb)
		}
		if _, err := e.srv.RotateLogEpoch(t.Context(), "p1"); err != nil {
			t.Fatal(err)
		}
		if st, _, _, eb := e.fetchURL(u); st != 404 || eb["code"] != "sync.not_found" {
			t.Fatalf("after a new epoch: %d %v", st, eb)
		}
	})
}

// TestSignedURLsOff: without Config.SignedURLs a bit-3 pull gets no url,
// the handler serves nothing and SetSignedURLTTL says so.
func TestSignedURLsOff(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Limits.SegmentTTL = time.Hour })
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seed("alice", "c1", ep, "p1", 150)
	refs := e.pullRefs("c1", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
	if len(refs) != 2 || refs[0].URL.Present || refs[1].URL.Present {
		t.Fatalf("refs %+v", refs)
	}
	if st, _, _, eb := e.fetchURL(cdnBase + "/" + refs[0].SegmentID + "?st=x.y"); st != 404 || eb["code"] != "sync.not_found" {
		t.Fatalf("off: %d %v", st, eb)
	}
	if err := e.srv.SetSignedURLTTL(time.Minute); !errors.Is(err, ErrSignedURLsOff) {
		t.Fatalf("SetSignedURLTTL: %v", err)
	}
	for _, c := range e.srv.Capabilities() {
		if c == "signed-urls" {
			t.Fatal("signed-urls declared without Config.SignedURLs")
		}
	}
}

// TestSignedURLTTL: SetSignedURLTTL applies to URLs issued afterwards; 0
// issues URLs expired at issuance (urlExpiresAtMs ≤ now: a client never
// fetches them); a URL never outlives its segment; bounds are checked.
func TestSignedURLTTL(t *testing.T) {
	e := newEnv(t, sqliteLane(), withSignedURLs(urlKey1), func(c *Config) { c.Limits.SegmentTTL = 30 * time.Second })
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seed("alice", "c1", ep, "p1", 150)
	e.clock.Advance(1234 * time.Millisecond) // not on a whole second
	now := e.clock.Now().UnixMilli()

	if err := e.srv.SetSignedURLTTL(0); err != nil {
		t.Fatal(err)
	}
	refs := e.pullRefs("c1", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
	if refs[0].URLExpiresAtMs != now/1000*1000 || refs[0].URLExpiresAtMs > now {
		t.Fatalf("TTL 0: urlExpiresAtMs %d, now %d", refs[0].URLExpiresAtMs, now)
	}
	// The segment's own expiry (30 s) caps the default TTL's 900 s.
	if err := e.srv.SetSignedURLTTL(DefaultSignedURLTTL); err != nil {
		t.Fatal(err)
	}
	refs = e.pullRefs("c2", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
	if want := (now + 30_000) / 1000 * 1000; refs[0].URLExpiresAtMs != want {
		t.Fatalf("capped: urlExpiresAtMs %d, want %d", refs[0].URLExpiresAtMs, want)
	}
	// Inside the token's skew but past the segment's TTL: the segment's
	// expiry answers.
	e.clock.Advance(31 * time.Second)
	if st, _, _, eb := e.fetchURL(refs[0].URL.Value); st != 404 || eb["code"] != "sync.segment_expired" {
		t.Fatalf("segment expired: %d %v", st, eb)
	}
	for _, bad := range []time.Duration{-time.Second, MaxSignedURLTTL + time.Second, 1500 * time.Millisecond} {
		if err := e.srv.SetSignedURLTTL(bad); err == nil {
			t.Fatalf("SetSignedURLTTL(%v) accepted", bad)
		}
	}
}

// TestSignedURLConfig: New refuses a config outside its bounds.
func TestSignedURLConfig(t *testing.T) {
	nine := make([][]byte, MaxSignedURLKeys+1)
	for i := range nine {
		nine[i] = urlKey1
	}
	for name, c := range map[string]SignedURLConfig{
		"relative base":   {BaseURL: "/seg", Keys: [][]byte{urlKey1}},
		"query in base":   {BaseURL: "https://cdn/seg?x=1", Keys: [][]byte{urlKey1}},
		"ftp base":        {BaseURL: "ftp://cdn/seg", Keys: [][]byte{urlKey1}},
		"no key":          {BaseURL: cdnBase},
		"short key":       {BaseURL: cdnBase, Keys: [][]byte{urlKey1[:31]}},
		"nine keys":       {BaseURL: cdnBase, Keys: nine},
		"long TTL":        {BaseURL: cdnBase, Keys: [][]byte{urlKey1}, TTL: 16 * time.Minute},
		"fractional TTL":  {BaseURL: cdnBase, Keys: [][]byte{urlKey1}, TTL: 1500 * time.Millisecond},
		"negative TTL":    {BaseURL: cdnBase, Keys: [][]byte{urlKey1}, TTL: -time.Second},
		"sub-second TTL":  {BaseURL: cdnBase, Keys: [][]byte{urlKey1}, TTL: time.Millisecond},
		"user info":       {BaseURL: "https://u:p@cdn/seg", Keys: [][]byte{urlKey1}},
		"fragment base":   {BaseURL: "https://cdn/seg#x", Keys: [][]byte{urlKey1}},
		"empty base":      {BaseURL: "", Keys: [][]byte{urlKey1}},
		"host-less base":  {BaseURL: "https:///seg", Keys: [][]byte{urlKey1}},
		"empty query":     {BaseURL: "https://cdn/seg?", Keys: [][]byte{urlKey1}},
		"one short of 2":  {BaseURL: cdnBase, Keys: [][]byte{urlKey1, urlKey2[:8]}},
		"whitespace base": {BaseURL: " https://cdn/seg", Keys: [][]byte{urlKey1}},
	} {
		if _, err := newURLSigner(&c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	u, err := newURLSigner(&SignedURLConfig{BaseURL: cdnBase + "/", Keys: [][]byte{urlKey1}})
	if err != nil || u.base != cdnBase || u.ttl.Load() != 900 {
		t.Fatalf("defaults: %v %+v", err, u)
	}
}

// TestSignedURLTamper: every field of a token is bound — the payload
// under the MAC (each claim changed, the MAC kept), the MAC itself, the
// key, and, re-signed with the real key, each claim the verifier checks
// against the request and the stored segment: seg against the path, sd
// against the segment's stored scope digest (the scopes authorized at
// issuance), aud against the partition, v, exp. Every failure is 403
// sync.forbidden except an expired grant (404 sync.segment_expired) and
// an audience of a partition not holding the segment (404 not_found).
func TestSignedURLTamper(t *testing.T) {
	e := newEnv(t, sqliteLane(), withSignedURLs(urlKey1))
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seed("alice", "c1", ep, "p1", 150)
	refs := e.pullRefs("c1", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
	ref, other := refs[0], refs[1]
	good := ref.URL.Value
	if st, _, _, eb := e.fetchURL(good); st != 200 {
		t.Fatalf("good: %d %v", st, eb)
	}
	token := good[strings.Index(good, "?st=")+4:]
	p64, m64, _ := strings.Cut(token, ".")
	payload, _ := b64.DecodeString(p64)
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if want := []string{"v", "seg", "sd", "aud", "exp"}; !jsonKeysInOrder(payload, want) {
		t.Fatalf("payload %s: not the §5.4 claims in order", payload)
	}
	if strings.Contains(string(payload), `"p1"`) || claims["aud"] == "p1" {
		t.Fatalf("the audience discloses the partition: %s", payload)
	}
	if claims["sd"] != ref.ScopeDigest || claims["seg"] != ref.SegmentID {
		t.Fatalf("claims %v", claims)
	}
	url := func(seg, tok string) string { return cdnBase + "/" + seg + "?st=" + tok }
	withClaim := func(k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range claims {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return b
	}
	key := &e.srv.urls.keys[0]
	signed := func(p []byte) string { return b64.EncodeToString(p) + "." + b64.EncodeToString(key.sign(p)) }
	otherKey, _ := newURLSigner(&SignedURLConfig{BaseURL: cdnBase, Keys: [][]byte{urlKey2}})
	exp := int64(claims["exp"].(float64))

	type tc struct {
		name, url, code string
		status          int
	}
	cases := []tc{
		{"missing st", cdnBase + "/" + ref.SegmentID, "sync.forbidden", 403},
		{"two st", good + "&st=" + token, "sync.forbidden", 403},
		{"no dot", url(ref.SegmentID, p64+m64), "sync.forbidden", 403},
		{"bad base64", url(ref.SegmentID, p64+"!."+m64), "sync.forbidden", 403},
		{"huge token", url(ref.SegmentID, strings.Repeat("A", 4096)+"."+m64), "sync.forbidden", 403},
		{"truncated MAC", url(ref.SegmentID, p64+"."+m64[:len(m64)-2]), "sync.forbidden", 403},
		{"flipped MAC", url(ref.SegmentID, p64+"."+flip(m64)), "sync.forbidden", 403},
		{"other key", url(ref.SegmentID, b64.EncodeToString(payload)+"."+b64.EncodeToString(otherKey.keys[0].sign(payload))), "sync.forbidden", 403},
		{"other path segment", url(other.SegmentID, token), "sync.forbidden", 403},
		{"invalid path segment", url("sha256:XYZ", token), "sync.not_found", 404},
		// Each claim changed under the old MAC.
		{"v under old MAC", url(ref.SegmentID, b64.EncodeToString(withClaim("v", 2))+"."+m64), "sync.forbidden", 403},
		{"seg under old MAC", url(other.SegmentID, b64.EncodeToString(withClaim("seg", other.SegmentID))+"."+m64), "sync.forbidden", 403},
		{"sd under old MAC", url(ref.SegmentID, b64.EncodeToString(withClaim("sd", "x"))+"."+m64), "sync.forbidden", 403},
		{"aud under old MAC", url(ref.SegmentID, b64.EncodeToString(withClaim("aud", key.audience("p2")))+"."+m64), "sync.forbidden", 403},
		{"exp under old MAC", url(ref.SegmentID, b64.EncodeToString(withClaim("exp", exp+3600))+"."+m64), "sync.forbidden", 403},
		// Re-signed with the real key: the claim checks.
		{"v 2", url(ref.SegmentID, signed(withClaim("v", 2))), "sync.forbidden", 403},
		{"no v", url(ref.SegmentID, signed(withClaim("v", nil))), "sync.forbidden", 403},
		{"extra claim", url(ref.SegmentID, signed(withClaim("kid", "x"))), "sync.forbidden", 403},
		{"seg of another segment", url(ref.SegmentID, signed(withClaim("seg", other.SegmentID))), "sync.forbidden", 403},
		{"sd of other scopes", url(ref.SegmentID, signed(withClaim("sd", ssp2.ScopeDigest(map[string][]string{"project_id": {"p1", "p2"}})))), "sync.forbidden", 403},
		{"aud forged", url(ref.SegmentID, signed(withClaim("aud", b64.EncodeToString([]byte("0123456789abcdefp1"))))), "sync.forbidden", 403},
		{"aud in clear", url(ref.SegmentID, signed(withClaim("aud", "p1"))), "sync.forbidden", 403},
		{"aud of another key", url(ref.SegmentID, signed(withClaim("aud", otherKey.keys[0].audience("p1")))), "sync.forbidden", 403},
		{"aud of another partition", url(ref.SegmentID, signed(withClaim("aud", key.audience("p2")))), "sync.not_found", 404},
		{"exp as text", url(ref.SegmentID, signed(withClaim("exp", "9999999999"))), "sync.forbidden", 403},
		{"exp fractional", url(ref.SegmentID, signed(withClaim("exp", float64(exp)+0.5))), "sync.forbidden", 403},
		{"exp past", url(ref.SegmentID, signed(withClaim("exp", e.clock.Now().Unix()-61))), "sync.segment_expired", 404},
	}
	for _, c := range cases {
		st, _, _, eb := e.fetchURL(c.url)
		if st != c.status || eb["code"] != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, st, eb, c.status, c.code)
		}
	}
	// Re-signed claims that stay equal still serve: the checks above
	// failed on the field, not on re-signing.
	if st, _, _, eb := e.fetchURL(url(ref.SegmentID, signed(withClaim("exp", exp)))); st != 200 {
		t.Fatalf("re-signed unchanged: %d %v", st, eb)
	}
}

// jsonKeysInOrder reports whether the top-level keys of the JSON object
// b are want, in order.
func jsonKeysInOrder(b []byte, want []string) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	var got []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		got = append(got, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
	}
	return strings.Join(got, ",") == strings.Join(want, ",")
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

// TestSignedURLScopeBinding: a URL is bound to the scope digest it was
// issued for. The same rows served to two effective scopes are one stored
// segment with two records; each URL serves through its own record, and a
// token whose digest no live record of the segment holds is refused —
// even when the bytes exist (§5.4: sd equals the stored scopeDigest).
func TestSignedURLScopeBinding(t *testing.T) {
	e := newEnv(t, sqliteLane(), withSignedURLs(urlKey1))
	wide := map[string][]string{"project_id": {"p1", "p9"}}
	e.grant("alice", wide)
	ep := e.epoch("alice", "c1")
	e.seed("alice", "c1", ep, "p1", 150)
	narrow := e.pullRefs("c1", ep, ssp2.AcceptExternalRows|ssp2.AcceptSignedURLs)
	m := e.sync("alice", 2, hdr("c2", ep), &ssp2.PullHeader{Accept: ssp2.AcceptExternalRows | ssp2.AcceptSignedURLs, LimitSnapshotRows: 100, MaxSnapshotPages: 1},
		&ssp2.Subscription{ID: "s1", Table: "tasks", Scopes: wide, Cursor: -1})
	wideRef := sections(m)[0].refs[0]
	if wideRef.SegmentID != narrow[0].SegmentID || wideRef.ScopeDigest == narrow[0].ScopeDigest {
		t.Fatalf("want one segment under two digests: %+v %+v", wideRef, narrow[0])
	}
	for _, u := range []string{narrow[0].URL.Value, wideRef.URL.Value} {
		if st, _, _, eb := e.fetchURL(u); st != 200 {
			t.Fatalf("fetch: %d %v", st, eb)
		}
	}
	// A digest the actor never held for this segment: issue through the
	// signer directly (as a stolen key would, or a bug).
	rec := SegmentRecord{ID: wideRef.SegmentID, Partition: "p1", ScopeDigest: ssp2.ScopeDigest(map[string][]string{"project_id": {"p9"}}),
		ExpiresAtMs: e.clock.Now().Add(time.Hour).UnixMilli()}
	u, _ := e.srv.urls.issue(rec, e.clock.Now().UnixMilli())
	if st, _, _, eb := e.fetchURL(u); st != 403 || eb["code"] != "sync.forbidden" {
		t.Fatalf("foreign digest: %d %v", st, eb)
	}
}

// TestSignedURLRotation: Keys[0] signs and every key verifies, so a key
// rotation keeps URLs issued under the previous key valid; a key dropped
// stops them. The audience deciphers only under its own key.
func TestSignedURLRotation(t *testing.T) {
	old, err := newURLSigner(&SignedURLConfig{BaseURL: cdnBase, Keys: [][]byte{urlKey1}})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := newURLSigner(&SignedURLConfig{BaseURL: cdnBase, Keys: [][]byte{urlKey2, urlKey1}})
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_750_000_000_000)
	rec := SegmentRecord{ID: "sha256:" + strings.Repeat("ab", 32), Partition: "tenant-7", ScopeDigest: "sd", ExpiresAtMs: now + 3_600_000}
	tok := func(u string) string { return u[strings.Index(u, "?st=")+4:] }
	u1, _ := old.issue(rec, now)
	u2, _ := rotated.issue(rec, now)
	if _, p, pe := rotated.verify(tok(u1), rec.ID, now); pe != nil || p != "tenant-7" {
		t.Fatalf("old URL after rotation: %q %v", p, pe)
	}
	if _, p, pe := rotated.verify(tok(u2), rec.ID, now); pe != nil || p != "tenant-7" {
		t.Fatalf("new URL: %q %v", p, pe)
	}
	if _, _, pe := old.verify(tok(u2), rec.ID, now); pe == nil || pe.Code != ssp2.CodeForbidden {
		t.Fatalf("new URL on the old key alone: %v", pe)
	}
	k1, k2 := &old.keys[0], &rotated.keys[0]
	if a, b := k1.audience("tenant-7"), k1.audience("tenant-7"); a != b || a == k1.audience("tenant-8") || a == k2.audience("tenant-7") {
		t.Fatal("an audience is stable per partition and key, distinct otherwise")
	}
	if _, ok := k2.partitionOf(k1.audience("tenant-7")); ok {
		t.Fatal("an audience deciphered under another key")
	}
	if p, ok := k1.partitionOf(k1.audience(strings.Repeat("é", 127))); !ok || p != strings.Repeat("é", 127) {
		t.Fatalf("round trip: %q %v", p, ok)
	}
}
