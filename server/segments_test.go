package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// seed pushes n tasks of project p through the server, 100 per commit.
func (e *env) seed(actor, client, epoch, p string, n int) {
	e.t.Helper()
	for i := 0; i < n; i += 100 {
		var ops []ssp2.PushOperation
		for j := i; j < min(n, i+100); j++ {
			id := fmt.Sprintf("%s-%06d", p, j)
			ops = append(ops, upsert("tasks", id, e.task(id, p, "title "+id)))
		}
		m := e.sync(actor, 2, hdr(client, epoch), commit(fmt.Sprintf("seed-%s-%d", p, i), ops...))
		if r := framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushApplied {
			e.t.Fatalf("seed: %+v", r)
		}
	}
}

// download fetches a segment as actor with requested scopes.
func (e *env) download(actor, id string, scopes map[string][]string, hdrs ...string) (int, []byte, http.Header, map[string]any) {
	e.t.Helper()
	r, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/segments/"+id, nil)
	r.Header.Set("Authorization", "Bearer "+actor)
	if scopes != nil {
		r.Header.Set("X-Syncular-Scopes", string(ssp2.AppendCanonicalScopes(nil, scopes)))
	}
	for i := 0; i+1 < len(hdrs); i += 2 {
		r.Header.Set(hdrs[i], hdrs[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var errBody map[string]any
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &errBody)
	}
	return resp.StatusCode, b, resp.Header, errBody
}

// TestSegmentsExternalAndDownload: rows pages as stored segments when the
// client accepts no inline ones, paged with a resume token; each download
// re-authorized against the scope digest, expired by the TTL, cached by
// ETag (§4.7, §5.2, §5.4, §5.5).
func TestSegmentsExternalAndDownload(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l, func(c *Config) { c.Limits.SegmentTTL = time.Hour })
		e.grant("alice", p1)
		e.grant("bob", map[string][]string{"project_id": {"p2"}})
		ep := e.epoch("alice", "c1")
		e.seed("alice", "c1", ep, "p1", 250)

		var rows []string
		var ids []string
		var state string
		cursor := int64(-1)
		for round := 0; ; round++ {
			s := &ssp2.Subscription{ID: "s1", Table: "tasks", Scopes: p1, Cursor: cursor, BootstrapState: driver.JSON(state)}
			m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: ssp2.AcceptExternalRows, LimitSnapshotRows: 100, MaxSnapshotPages: 1}, s)
			sec := sections(m)[0]
			if !sec.start.Bootstrap || len(sec.refs) != 1 || len(sec.inline) != 0 {
				t.Fatalf("round %d: %+v", round, sec)
			}
			ref := sec.refs[0]
			if ref.MediaType != ssp2.MediaRows || ref.AsOfCommitSeq != 3 || ref.ScopeDigest != ssp2.ScopeDigest(p1) || ref.URL.Present {
				t.Fatalf("ref %+v", ref)
			}
			if (round == 0) == ref.RowCursor.Present {
				t.Fatalf("round %d: rowCursor present %v", round, ref.RowCursor.Present)
			}
			status, body, h, eb := e.download("alice", ref.SegmentID, p1)
			if status != 200 || ssp2.SegmentID(body) != ref.SegmentID || int64(len(body)) != ref.ByteLength {
				t.Fatalf("download %d %v", status, eb)
			}
			if h.Get("ETag") != `"`+ref.SegmentID+`"` || h.Get("Cache-Control") != "private, max-age=0" ||
				h.Get("Vary") != "Authorization, X-Syncular-Scopes, Accept-Encoding" || h.Get("Content-Type") != "application/octet-stream" {
				t.Fatalf("headers %v", h)
			}
			seg, err := ssp2.DecodeSegment(body)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range seg.Blocks {
				for _, r := range b {
					rows = append(rows, r.Values[0].(string))
				}
			}
			ids = append(ids, ref.SegmentID)
			cursor = sec.end.NextCursor
			state = string(sec.end.BootstrapState)
			if state == "" {
				if ref.NextRowCursor.Present {
					t.Fatal("the last page has a nextRowCursor")
				}
				break
			}
			if !ref.NextRowCursor.Present || cursor != 3 {
				t.Fatalf("an inner page: next %v cursor %d", ref.NextRowCursor, cursor)
			}
		}
		if len(rows) != 250 || len(ids) != 3 {
			t.Fatalf("%d rows in %d segments", len(rows), len(ids))
		}
		for i, r := range rows {
			if r != fmt.Sprintf("p1-%06d", i) {
				t.Fatalf("row %d is %s", i, r)
			}
		}
		id := ids[0]
		// Re-authorization: other scopes, a revoked grant, another actor,
		// another partition, an unknown id.
		// Wider requested scopes narrowed by the grant to the same
		// effective scopes are the same digest; held wider ones are not.
		if st, _, _, eb := e.download("alice", id, map[string][]string{"project_id": {"p1", "p2"}}); st != 200 {
			t.Fatalf("narrowed to the same effective scopes: %d %v", st, eb)
		}
		e.grant("alice", map[string][]string{"project_id": {"p1", "p2"}})
		if st, _, _, eb := e.download("alice", id, map[string][]string{"project_id": {"p1", "p2"}}); st != 403 || eb["code"] != "sync.forbidden" {
			t.Fatalf("another digest: %d %v", st, eb)
		}
		e.grant("alice", p1)
		if st, _, _, eb := e.download("bob", id, p1); st != 403 || eb["code"] != "sync.forbidden" {
			t.Fatalf("bob: %d %v", st, eb)
		}
		if st, _, _, eb := e.download("alice", id, nil); st != 403 || eb["code"] != "sync.forbidden" {
			t.Fatalf("no scopes header: %d %v", st, eb)
		}
		if st, _, _, eb := e.download("alice", id, map[string][]string{"owner": {"x"}}); st != 400 || eb["code"] != "sync.invalid_subscription" {
			t.Fatalf("undeclared key: %d %v", st, eb)
		}
		if st, _, _, eb := e.download("alice", id, p1, "X-Partition", "p9"); st != 404 || eb["code"] != "sync.not_found" {
			t.Fatalf("other partition: %d %v", st, eb)
		}
		if st, _, _, eb := e.download("alice", "sha256:"+strings.Repeat("0", 64), p1); st != 404 || eb["code"] != "sync.not_found" {
			t.Fatalf("unknown: %d %v", st, eb)
		}
		if st, _, _, eb := e.download("alice", "../../etc/passwd", p1); st != 404 || eb["code"] != "sync.not_found" {
			t.Fatalf("path: %d %v", st, eb)
		}
		// 304 on a matching ETag.
		if st, body, _, _ := e.download("alice", id, p1, "If-None-Match", `"`+id+`"`); st != 304 || len(body) != 0 {
			t.Fatalf("etag: %d", st)
		}
		// zstd and gzip per Accept-Encoding, the content address over the
		// decoded bytes (§5.8).
		st, body, h, _ := e.download("alice", id, p1, "Accept-Encoding", "gzip, zstd")
		if st != 200 || h.Get("Content-Encoding") != "zstd" {
			t.Fatalf("zstd: %d %v", st, h)
		}
		zr, _ := zstd.NewReader(bytes.NewReader(body))
		plain, err := io.ReadAll(zr)
		zr.Close()
		if err != nil || ssp2.SegmentID(plain) != id {
			t.Fatalf("zstd body: %v", err)
		}
		if st, _, h, _ = e.download("alice", id, p1, "Accept-Encoding", "gzip"); st != 200 || h.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzip: %d %v", st, h)
		}
		// Revoked: the grant gone.
		e.grant("alice", map[string][]string{"project_id": {"p3"}})
		if st, _, _, eb := e.download("alice", id, p1); st != 403 || eb["code"] != "sync.forbidden" {
			t.Fatalf("revoked: %d %v", st, eb)
		}
		e.grant("alice", p1)
		// Expiry by the server clock (§5.1).
		e.clock.Advance(time.Hour)
		if st, _, _, eb := e.download("alice", id, p1); st != 404 || eb["code"] != "sync.segment_expired" || eb["retryable"] != true {
			t.Fatalf("expired: %d %v", st, eb)
		}
	})
}

// TestSegmentsImage: a client accepting SQLite images bootstraps a table
// larger than one page as one image — whole-table, no cursors, reused for
// a second client with the same scopes at the same pin; a client without
// bit 2 gets rows pages; a page resumed mid-table stays on the rows lane
// (§5.3).
func TestSegmentsImage(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		e.grant("bob", p1)
		ep := e.epoch("alice", "c1")
		e.seed("alice", "c1", ep, "p1", 120)
		e.sync("alice", 2, hdr("c1", ep), commit("del", del("tasks", "p1-000007")))
		accept := ssp2.AcceptInlineRows | ssp2.AcceptExternalRows | ssp2.AcceptSQLite
		pull := func(actor, client string) *section {
			m := e.sync(actor, 2, hdr(client, ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 50}, sub("s1", "tasks", p1, -1))
			return sections(m)[0]
		}
		sec := pull("alice", "c1")
		if len(sec.refs) != 1 || len(sec.inline) != 0 || sec.end.BootstrapState != "" || sec.end.NextCursor != 3 {
			t.Fatalf("image section %+v %+v", sec.refs, sec.end)
		}
		ref := sec.refs[0]
		if ref.MediaType != ssp2.MediaSQLite || ref.RowCursor.Present || ref.NextRowCursor.Present || ref.RowCount != 119 || ref.AsOfCommitSeq != 3 {
			t.Fatalf("image ref %+v", ref)
		}
		st, body, _, eb := e.download("alice", ref.SegmentID, p1)
		if st != 200 || ssp2.SegmentID(body) != ref.SegmentID {
			t.Fatalf("download %d %v", st, eb)
		}
		checkImage(t, body, ref, 119)
		// bob, same scopes, same pin: the same image (§5.3 reuse).
		if sec2 := pull("bob", "c2"); len(sec2.refs) != 1 || sec2.refs[0].SegmentID != ref.SegmentID {
			t.Fatalf("no reuse: %+v", sec2.refs)
		}
		// Without bit 2: rows pages.
		m := e.sync("bob", 2, hdr("c3", ep), &ssp2.PullHeader{Accept: 3, LimitSnapshotRows: 50, MaxSnapshotPages: 1}, sub("s1", "tasks", p1, -1))
		sec = sections(m)[0]
		if len(sec.inline) != 1 || len(sec.refs) != 0 || sec.end.BootstrapState == "" {
			t.Fatalf("rows lane %+v", sec)
		}
		// Resumed mid-table with bit 2: still rows (§5.3 lane pinning).
		s := &ssp2.Subscription{ID: "s1", Table: "tasks", Scopes: p1, Cursor: sec.end.NextCursor, BootstrapState: sec.end.BootstrapState}
		m = e.sync("bob", 2, hdr("c3", ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 50, MaxSnapshotPages: 1}, s)
		sec = sections(m)[0]
		if len(sec.inline) != 1 || len(sec.refs) != 0 {
			t.Fatalf("resumed lane %+v", sec)
		}
		// A table no larger than one page stays on the rows lane.
		m = e.sync("bob", 2, hdr("c3", ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 500}, sub("s1", "tasks", p1, -1))
		if sec = sections(m)[0]; len(sec.inline) != 1 || len(sec.refs) != 0 {
			t.Fatalf("small table %+v", sec)
		}
	})
}

// checkImage opens a SQLite image and checks §5.3's contents.
func checkImage(t *testing.T, b []byte, ref *ssp2.SegmentRef, rows int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img.sqlite")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var format, schemaVersion, asOf, rowCount int64
	var table, digest string
	if err := db.QueryRow(`SELECT format, "table", schemaVersion, asOfCommitSeq, scopeDigest, rowCount FROM _syncular_segment`).
		Scan(&format, &table, &schemaVersion, &asOf, &digest, &rowCount); err != nil {
		t.Fatal(err)
	}
	if format != 1 || table != ref.Table || schemaVersion != 3 || asOf != ref.AsOfCommitSeq || digest != ref.ScopeDigest || rowCount != int64(rows) {
		t.Fatalf("metadata %d %s %d %d %s %d", format, table, schemaVersion, asOf, digest, rowCount)
	}
	cols, err := db.Query(`SELECT name, type, "notnull", pk FROM pragma_table_info('tasks') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for cols.Next() {
		var name, typ string
		var nn, pk int
		_ = cols.Scan(&name, &typ, &nn, &pk)
		got = append(got, fmt.Sprintf("%s %s %d %d", name, typ, nn, pk))
	}
	cols.Close()
	want := []string{"id TEXT 1 1", "project_id TEXT 1 0", "title TEXT 1 0", "done INTEGER 0 0", "n INTEGER 0 0", "data TEXT 0 0", "raw BLOB 0 0", "_syncular_version INTEGER 1 0"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("columns %v", got)
	}
	var n, minV int64
	if err := db.QueryRow(`SELECT count(*), min(_syncular_version) FROM tasks`).Scan(&n, &minV); err != nil || n != int64(rows) || minV != 1 {
		t.Fatalf("rows %d min version %d err %v", n, minV, err)
	}
}

func TestSegmentStores(t *testing.T) {
	fs, err := NewFileSegmentStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]SegmentStore{"memory": NewMemorySegmentStore(1 << 20), "file": fs} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			body := []byte("segment bytes")
			id := ssp2.SegmentID(body)
			rec := SegmentRecord{ID: id, MediaType: ssp2.MediaSQLite, Partition: "p", LogEpoch: "e", Table: "t", SchemaVersion: 1,
				ScopeDigest: "d1", AsOfCommitSeq: 7, RowCount: 1, ByteLength: int64(len(body)), CreatedAtMs: 10, ExpiresAtMs: 20}
			if err := st.Put(ctx, rec, bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			rec2 := rec
			rec2.ScopeDigest, rec2.ExpiresAtMs = "d2", 30
			if err := st.Put(ctx, rec2, bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			recs, err := st.Records(ctx, "p", id)
			if err != nil || len(recs) != 2 {
				t.Fatalf("records %v %v", recs, err)
			}
			if recs, _ := st.Records(ctx, "q", id); len(recs) != 0 {
				t.Fatal("records across partitions")
			}
			if _, found, _ := st.Find(ctx, rec.key(), 15); !found {
				t.Fatal("find")
			}
			if _, found, _ := st.Find(ctx, rec.key(), 20); found {
				t.Fatal("found expired")
			}
			rc, err := st.Open(ctx, "p", id)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, body) {
				t.Fatal("bytes")
			}
			if _, err := st.Open(ctx, "p", "sha256:"+strings.Repeat("a", 64)); err == nil {
				t.Fatal("opened an unknown segment")
			}
		})
	}
	// Sweep forgets what expired.
	ctx := context.Background()
	if n, err := fs.Sweep(ctx, 25); err != nil || n != 0 {
		t.Fatalf("sweep at 25: %d %v", n, err)
	}
	if n, err := fs.Sweep(ctx, 31); err != nil || n != 1 {
		t.Fatalf("sweep at 31: %d %v", n, err)
	}
	// The memory store is bounded: storing past it forgets the oldest.
	m := NewMemorySegmentStore(100)
	for i := range 5 {
		b := bytes.Repeat([]byte{byte(i)}, 40)
		rec := SegmentRecord{ID: ssp2.SegmentID(b), Partition: "p", ByteLength: 40, ExpiresAtMs: 1 << 40}
		if err := m.Put(ctx, rec, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if n, used := m.Stats(); n != 2 || used != 80 {
		t.Fatalf("memory store holds %d segments, %d bytes", n, used)
	}
	if err := m.Put(ctx, SegmentRecord{ID: "sha256:x", Partition: "p", ByteLength: 101}, bytes.NewReader(nil)); err == nil {
		t.Fatal("stored a segment over the bound")
	}
}

// TestInlineBound: a negative InlineSegmentMaxBytes stores every rows
// segment for a client accepting both kinds; a client accepting inline
// segments only still gets them inline (§4.2, §5.7).
func TestInlineBound(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Limits.InlineSegmentMaxBytes = -1 })
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seed("alice", "c1", ep, "p1", 3)
	m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, -1))
	if sec := sections(m)[0]; len(sec.refs) != 1 || len(sec.inline) != 0 {
		t.Fatalf("both kinds: %+v", sec)
	}
	m = e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 1}, sub("s", "tasks", p1, -1))
	if sec := sections(m)[0]; len(sec.refs) != 0 || len(sec.inline) != 1 {
		t.Fatalf("inline only: %+v", sec)
	}
}

// TestImageAfterFullLastPage: a snapshot whose last page is full (rows a
// multiple of sync.MaxLimit, the page size a client asking for more
// rows gets) ends without a page saying no more; the image lane still
// stores the image and answers its SEGMENT_REF with every row (§5.3).
// Before, the bootstrap ended with neither rows nor a reference: a
// client asking limitSnapshotRows of 10,000 or more was told it had bootstrapped
// an empty table.
func TestImageAfterFullLastPage(t *testing.T) {
	const rows = 2 * sync.MaxLimit
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seedDirect("p1", rows)
	accept := ssp2.AcceptInlineRows | ssp2.AcceptExternalRows | ssp2.AcceptSQLite
	m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 50_000, MaxSnapshotPages: 1}, sub("s1", "tasks", p1, -1))
	sec := sections(m)[0]
	if len(sec.refs) != 1 || sec.refs[0].MediaType != ssp2.MediaSQLite || sec.refs[0].RowCount != rows || sec.end.BootstrapState != "" {
		t.Fatalf("a %d-row image-lane bootstrap answered refs %+v, %d inline segments, end %+v; want one image of every row", rows, sec.refs, len(sec.inline), sec.end)
	}
	st, body, _, eb := e.download("alice", sec.refs[0].SegmentID, p1)
	if st != 200 {
		t.Fatalf("download %d %v", st, eb)
	}
	checkImage(t, body, sec.refs[0], rows)
}
