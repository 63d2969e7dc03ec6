package ssp2_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// recorder keeps each Write separately, as a socket binding sending one
// message per Write would.
type recorder struct{ writes [][]byte }

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, append([]byte(nil), p...))
	return len(p), nil
}

func (r *recorder) all() []byte { return bytes.Join(r.writes, nil) }

var notesCols = []ssp2.Column{
	{Name: "id", Type: ssp2.TypeString},
	{Name: "title", Type: ssp2.TypeString, Nullable: true},
	{Name: "body", Type: ssp2.TypeString},
	{Name: "count", Type: ssp2.TypeInteger, Nullable: true},
	{Name: "score", Type: ssp2.TypeFloat},
	{Name: "done", Type: ssp2.TypeBoolean},
	{Name: "meta", Type: ssp2.TypeJSON, Nullable: true},
	{Name: "blob", Type: ssp2.TypeBytes, Nullable: true},
}

func notesRow(i int) driver.Values {
	return driver.Values{
		"id": "n-" + string(rune('a'+i%26)), "title": nil, "body": "body", "count": int64(i),
		"score": 0.5, "done": i%2 == 0, "meta": driver.JSON(`{"k":true}`), "blob": []byte{1, 2, 3},
	}
}

// streamRound writes a typical round through rw and returns the frames it
// wrote, for comparison with Message.Encode.
func streamRound(t *testing.T, rw *ssp2.ResponseWriter, codec *ssp2.RowCodec) []ssp2.Frame {
	t.Helper()
	var frames []ssp2.Frame
	must := func(f ssp2.Frame, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", f.Type(), err)
		}
		frames = append(frames, f)
	}
	h := &ssp2.RespHeader{LatestSchemaVersion: ssp2.Some(int32(1))}
	must(h, rw.Header(h))
	l := &ssp2.Lease{LeaseID: "lease-1", ExpiresAtMs: 1782994500000}
	must(l, rw.Lease(l))
	pr := &ssp2.PushResult{ClientCommitID: "c-1", Status: ssp2.PushApplied, CommitSeq: 58, Results: []ssp2.OpResult{{OpIndex: 0, Status: ssp2.OpApplied}}}
	must(pr, rw.PushResult(pr))
	rej := &ssp2.PushResult{ClientCommitID: "c-2", Status: ssp2.PushRejected, Results: []ssp2.OpResult{{OpIndex: 0, Status: ssp2.OpError, Code: "app.bad", Message: "no", Retryable: false}}}
	must(rej, rw.PushResult(rej))
	det := &ssp2.PushResultDetails{ClientCommitID: "c-2", Entries: []ssp2.DetailEntry{{OpIndex: 0, Details: `{"reason":"bad_value"}`}}}
	must(det, rw.PushResultDetails(det))
	var rows []byte
	for s := range 2 {
		ss := &ssp2.SubStart{ID: "sub-" + string(rune('a'+s)), Status: ssp2.SubActive, EffectiveScopes: map[string][]string{"project": {"p1"}}}
		must(ss, rw.SubStart(ss))
		for c := range 3 {
			rows = rows[:0]
			cm := &ssp2.Commit{CommitSeq: int64(10 + c), CreatedAtMs: 1782993600000, ActorID: "actor-1", Tables: []string{"notes"}}
			for i := range 2 {
				at := len(rows)
				var err error
				if rows, err = codec.Append(rows, notesRow(i)); err != nil {
					t.Fatal(err)
				}
				cm.Changes = append(cm.Changes, ssp2.CommitChange{RowID: "n", Op: ssp2.OpUpsert, RowVersion: 1, Scopes: map[string]string{"project": "p1"}, Row: rows[at:]})
			}
			cm.Changes = append(cm.Changes, ssp2.CommitChange{RowID: "gone", Op: ssp2.OpDelete, Scopes: map[string]string{"project": "p1"}})
			must(cm, rw.Commit(cm))
		}
		se := &ssp2.SubEnd{NextCursor: 12}
		must(se, rw.SubEnd(se))
	}
	ss := &ssp2.SubStart{ID: "sub-boot", Status: ssp2.SubActive, EffectiveScopes: map[string][]string{"project": {"p1"}}, Bootstrap: true}
	must(ss, rw.SubStart(ss))
	var seg bytes.Buffer
	sw, err := ssp2.NewSegmentWriter(&seg, ssp2.SegmentHeader{Table: "notes", SchemaVersion: 1, Columns: notesCols})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := sw.WriteRow(int64(i+1), notesRow(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	must(&ssp2.SegmentInline{Payload: seg.Bytes()}, rw.SegmentInline(seg.Bytes()))
	ref := &ssp2.SegmentRef{SegmentID: ssp2.SegmentID(seg.Bytes()), MediaType: ssp2.MediaRows, Table: "notes", ByteLength: int64(seg.Len()), RowCount: 3, AsOfCommitSeq: 12, ScopeDigest: ssp2.ScopeDigest(map[string][]string{"project": {"p1"}}), RowCursor: ssp2.Some("n-0250")}
	must(ref, rw.SegmentRef(ref))
	se := &ssp2.SubEnd{NextCursor: 12, BootstrapState: `{"asOfCommitSeq":12}`}
	must(se, rw.SubEnd(se))
	if err := rw.End(); err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestResponseWriterStreamsFrameByFrame(t *testing.T) {
	codec, err := ssp2.NewRowCodec(notesCols)
	if err != nil {
		t.Fatal(err)
	}
	for _, wv := range []uint16{1, 2} {
		var rec recorder
		rw := ssp2.NewResponseWriter(&rec, wv)
		if wv == 2 {
			// Wire version 2 needs the epoch in the header.
			frames := []ssp2.Frame{&ssp2.RespHeader{LogEpoch: "e1"}}
			if err := rw.Header(frames[0].(*ssp2.RespHeader)); err != nil {
				t.Fatal(err)
			}
			if err := rw.End(); err != nil {
				t.Fatal(err)
			}
			want, err := (&ssp2.Message{WireVersion: 2, Kind: ssp2.KindResponse, Frames: frames}).Encode()
			if err != nil || !bytes.Equal(rec.all(), want) {
				t.Fatalf("v2 header-only response: %x, %v; want %x", rec.all(), err, want)
			}
			continue
		}
		frames := streamRound(t, rw, codec)
		want, err := (&ssp2.Message{WireVersion: wv, Kind: ssp2.KindResponse, Frames: frames}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); !bytes.Equal(got, want) {
			t.Fatalf("streamed bytes differ from Message.Encode")
		}
		if rw.Written() != int64(len(want)) || rw.Frames() != len(frames)+1 || len(rec.writes) != len(frames)+1 {
			t.Fatalf("Written %d Frames %d writes %d; want %d, %d", rw.Written(), rw.Frames(), len(rec.writes), len(want), len(frames)+1)
		}
		// One frame per Write: the first carries the envelope header.
		for i, w := range rec.writes {
			if i == 0 {
				w = w[ssp2.HeaderLen:]
			}
			if n := len(w) - ssp2.FrameHeaderLen; n < 0 || int(uint32(w[1])|uint32(w[2])<<8|uint32(w[3])<<16|uint32(w[4])<<24) != n {
				t.Fatalf("write %d is not exactly one frame", i)
			}
		}
		if _, err := ssp2.DecodeResponse(rec.all()); err != nil {
			t.Fatalf("the streamed response does not decode: %v", err)
		}
	}
}

func TestResponseWriterRefusesOutOfOrder(t *testing.T) {
	hdr := &ssp2.RespHeader{}
	sub := &ssp2.SubStart{ID: "s", Status: ssp2.SubActive}
	commit := &ssp2.Commit{Tables: []string{"t"}}
	ref := &ssp2.SegmentRef{MediaType: ssp2.MediaRows}
	pr := &ssp2.PushResult{ClientCommitID: "c", Status: ssp2.PushApplied, CommitSeq: 1}
	end := &ssp2.SubEnd{}
	type step func(rw *ssp2.ResponseWriter) error
	H := func(rw *ssp2.ResponseWriter) error { return rw.Header(hdr) }
	S := func(rw *ssp2.ResponseWriter) error { return rw.SubStart(sub) }
	C := func(rw *ssp2.ResponseWriter) error { return rw.Commit(commit) }
	R := func(rw *ssp2.ResponseWriter) error { return rw.SegmentRef(ref) }
	P := func(rw *ssp2.ResponseWriter) error { return rw.PushResult(pr) }
	E := func(rw *ssp2.ResponseWriter) error { return rw.SubEnd(end) }
	L := func(rw *ssp2.ResponseWriter) error { return rw.Lease(&ssp2.Lease{LeaseID: "l"}) }
	X := func(rw *ssp2.ResponseWriter) error {
		return rw.Error(ssp2.NewErrorBody(ssp2.CodeMissingScopes, "m").Frame())
	}
	D := func(rw *ssp2.ResponseWriter) error {
		return rw.PushResultDetails(&ssp2.PushResultDetails{ClientCommitID: "c", Entries: []ssp2.DetailEntry{{Details: `{"reason":"x"}`}}})
	}
	End := func(rw *ssp2.ResponseWriter) error { return rw.End() }
	for _, c := range []struct {
		name string
		ok   []step
		bad  step
	}{
		{"frame before Header", nil, S},
		{"End before Header", nil, End},
		{"second Header", []step{H}, H},
		{"Commit outside a subscription", []step{H}, C},
		{"SubEnd outside a subscription", []step{H}, E},
		{"nested SubStart", []step{H, S}, S},
		{"segment after commits", []step{H, S, C}, R},
		{"commit after segments", []step{H, S, R}, C},
		{"PushResult after SubStart", []step{H, S, E}, P},
		{"Lease after PushResult", []step{H, P}, L},
		{"second Lease", []step{H, L}, L},
		{"details of an applied result", []step{H, P}, D},
		{"details without a result", []step{H}, D},
		{"frame after Error", []step{H, X}, S},
		{"End with an open subscription", []step{H, S}, End},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec recorder
			rw := ssp2.NewResponseWriter(&rec, 1)
			for i, s := range c.ok {
				if err := s(rw); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			before := len(rec.writes)
			if err := c.bad(rw); !errors.Is(err, ssp2.ErrEncode) {
				t.Fatalf("got %v, want ErrEncode", err)
			}
			if len(rec.writes) != before {
				t.Fatalf("a refused call wrote")
			}
		})
	}
	// Error inside an open subscription, then End, is a legal response.
	var rec recorder
	rw := ssp2.NewResponseWriter(&rec, 1)
	for _, s := range []step{H, S, C, X, End} {
		if err := s(rw); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ssp2.DecodeResponse(rec.all()); err != nil {
		t.Fatal(err)
	}
	if err := rw.End(); !errors.Is(err, ssp2.ErrResponseEnded) {
		t.Fatalf("End after End: %v", err)
	}
	// A header that ends the response admits only End.
	for _, h := range []*ssp2.RespHeader{{RequiredSchemaVersion: ssp2.Some(int32(3)), LatestSchemaVersion: ssp2.Some(int32(5))}} {
		rw.Reset(&rec, 1)
		if err := rw.Header(h); err != nil {
			t.Fatal(err)
		}
		if err := rw.SubStart(sub); !errors.Is(err, ssp2.ErrEncode) {
			t.Fatalf("frame after a schema-floor header: %v", err)
		}
		if err := rw.End(); err != nil {
			t.Fatal(err)
		}
	}
	rw.Reset(&rec, 2)
	if err := rw.Header(&ssp2.RespHeader{LogEpoch: "e", ResetRequired: true}); err != nil {
		t.Fatal(err)
	}
	if err := rw.PushResult(pr); !errors.Is(err, ssp2.ErrEncode) {
		t.Fatalf("frame after a reset header: %v", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.ErrClosedPipe
	}
	f.n--
	return len(p), nil
}

func TestResponseWriterWriteErrorIsSticky(t *testing.T) {
	rw := ssp2.NewResponseWriter(&failWriter{n: 1}, 1)
	if err := rw.Header(&ssp2.RespHeader{}); err != nil {
		t.Fatal(err)
	}
	if err := rw.SubStart(&ssp2.SubStart{ID: "s", Status: ssp2.SubActive}); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("got %v", err)
	}
	if err := rw.End(); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("End after a failed write: %v", err)
	}
}

func TestMessageScannerChunks(t *testing.T) {
	msg, err := (&ssp2.Message{WireVersion: 1, Kind: ssp2.KindRequest, Frames: []ssp2.Frame{
		&ssp2.ReqHeader{ClientID: "client-a", SchemaVersion: 1},
		&ssp2.PullHeader{Accept: 3},
		&ssp2.Subscription{ID: "s", Table: "notes", Scopes: map[string][]string{"project": {"p1"}}, Cursor: -1},
	}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for size := 1; size <= len(msg); size++ {
		s := ssp2.NewMessageScanner(ssp2.KindRequest, 1<<20)
		stream := append(append([]byte(nil), msg...), 0xAA) // one byte of pipelining
		done, fed := false, 0
		for fed < len(stream) && !done {
			chunk := stream[fed:min(fed+size, len(stream))]
			if done, err = s.Feed(chunk); err != nil {
				t.Fatalf("chunk size %d: %v", size, err)
			}
			fed += len(chunk)
			if done != (fed >= len(msg)) {
				t.Fatalf("chunk size %d: done=%v after %d of %d bytes", size, done, fed, len(msg))
			}
		}
		if !bytes.Equal(s.Message(), msg) || !bytes.Equal(s.Excess(), stream[len(msg):fed]) {
			t.Fatalf("chunk size %d: message or excess differs", size)
		}
	}
	s := ssp2.NewMessageScanner(ssp2.KindRequest, 1<<20)
	if _, err := s.Feed([]byte("SSP1\x01\x00\x01\x00")); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
		t.Fatalf("bad magic: %v", err)
	}
	s = ssp2.NewMessageScanner(ssp2.KindRequest, 1<<20)
	if _, err := s.Feed([]byte("SSP2\x01\x00\x02\x00")); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
		t.Fatalf("a response where a request is expected: %v", err)
	}
	s = ssp2.NewMessageScanner(ssp2.KindRequest, 16)
	if _, err := s.Feed(msg); !errors.Is(err, ssp2.ErrMessageTooLarge) {
		t.Fatalf("over the bound: %v", err)
	}
}

// The streaming path allocates nothing per frame once the writer's buffer
// has grown, frames passed as literals included.
func TestResponseWriterAllocations(t *testing.T) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	row, _ := codec.Append(nil, notesRow(1))
	rw := ssp2.NewResponseWriter(io.Discard, 2)
	eff := map[string][]string{"project": {"p1"}}
	scopes := map[string]string{"project": "p1"}
	tables := []string{"notes"}
	changes := make([]ssp2.CommitChange, 1)
	round := func() {
		rw.Reset(io.Discard, 2)
		_ = rw.Header(&ssp2.RespHeader{LogEpoch: "e"})
		_ = rw.SubStart(&ssp2.SubStart{ID: "s", Status: ssp2.SubActive, EffectiveScopes: eff})
		for i := range 10 {
			changes[0] = ssp2.CommitChange{RowID: "n", Op: ssp2.OpUpsert, RowVersion: 1, Scopes: scopes, Row: row}
			if err := rw.Commit(&ssp2.Commit{CommitSeq: int64(i + 1), ActorID: "a", Tables: tables, Changes: changes}); err != nil {
				t.Fatal(err)
			}
		}
		_ = rw.SubEnd(&ssp2.SubEnd{NextCursor: 10})
		if err := rw.End(); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Errorf("a streamed round allocates %.1f times; want 0", n)
	}
}
