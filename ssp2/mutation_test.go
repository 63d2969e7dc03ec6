package ssp2_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// Mutations of the golden vectors: programmatic changes that a decoder
// must refuse with the named code, and the ones it must accept (unknown
// frames where they are legal).

type rawFrame struct {
	typ     ssp2.FrameType
	payload []byte
}

// split cuts a valid message into its header and frames (END excluded).
func split(t *testing.T, b []byte) ([]byte, []rawFrame) {
	t.Helper()
	var fs []rawFrame
	off := ssp2.HeaderLen
	for {
		typ := ssp2.FrameType(b[off])
		n := int(binary.LittleEndian.Uint32(b[off+1:]))
		if typ == ssp2.FrameEnd {
			return b[:ssp2.HeaderLen], fs
		}
		fs = append(fs, rawFrame{typ, b[off+5 : off+5+n]})
		off += 5 + n
	}
}

// join reassembles a message, END included.
func join(header []byte, fs []rawFrame) []byte {
	out := append([]byte(nil), header...)
	for _, f := range fs {
		out = append(out, byte(f.typ))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f.payload)))
		out = append(out, f.payload...)
	}
	return append(out, 0, 0, 0, 0, 0)
}

func with(fs []rawFrame, i int, f rawFrame) []rawFrame {
	out := append([]rawFrame(nil), fs...)
	out[i] = f
	return out
}

func insert(fs []rawFrame, i int, f rawFrame) []rawFrame {
	out := append([]rawFrame(nil), fs[:i]...)
	out = append(out, f)
	return append(out, fs[i:]...)
}

func patched(p []byte, at int, b ...byte) []byte {
	out := append([]byte(nil), p...)
	copy(out[at:], b)
	return out
}

type vector struct {
	kind, name string
	bin        []byte
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	var vs []vector
	for _, kind := range []string{"request", "response"} {
		dir, m := loadManifest(t, kind)
		for _, c := range m.Cases {
			vs = append(vs, vector{kind, c.Name, readFile(t, filepath.Join(dir, c.Bin))})
		}
	}
	return vs
}

func wantCode(t *testing.T, what string, b []byte, code ssp2.Code) {
	t.Helper()
	_, err := ssp2.Decode(b)
	if got := ssp2.CodeOf(err); got != code {
		t.Errorf("%s: got %v, want %s", what, err, code)
	}
}

func wantAccepted(t *testing.T, what string, b []byte) *ssp2.Message {
	t.Helper()
	m, err := ssp2.Decode(b)
	if err != nil {
		t.Errorf("%s: refused: %v", what, err)
		return nil
	}
	if enc, err := m.Encode(); err != nil || !bytes.Equal(enc, b) {
		t.Errorf("%s: re-encoding differs (%v)", what, err)
	}
	return m
}

const invalid = ssp2.CodeInvalidRequest

func TestMutationsEnvelope(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.kind+"/"+v.name, func(t *testing.T) {
			b := v.bin
			for _, flags := range []byte{1, 0x80, 0xFF} {
				wantCode(t, fmt.Sprintf("flags %#x", flags), patched(b, 7, flags), invalid)
			}
			for _, kind := range []byte{0, 3, 0xFF} {
				wantCode(t, fmt.Sprintf("msgKind %#x", kind), patched(b, 6, kind), invalid)
			}
			for _, wv := range []uint16{0, 3, 999, 0xFFFF} {
				wantCode(t, fmt.Sprintf("wire version %d", wv), patched(b, 4, byte(wv), byte(wv>>8)), invalid)
			}
			wantCode(t, "magic", patched(b, 0, 'S', 'S', 'P', '1'), invalid)
			// Every proper prefix is truncated: at every frame boundary and
			// inside every frame.
			for n := range len(b) {
				if _, err := ssp2.Decode(b[:n]); ssp2.CodeOf(err) != invalid {
					t.Fatalf("prefix of %d bytes: %v", n, err)
				}
			}
			wantCode(t, "a byte after END", append(append([]byte(nil), b...), 0), invalid)
			wantCode(t, "a second END", append(append([]byte(nil), b...), 0, 0, 0, 0, 0), invalid)
			endWithLength := append(append([]byte(nil), b[:len(b)-4]...), 1, 0, 0, 0, 0)
			wantCode(t, "END with length 1", endWithLength, invalid)
			// A frame whose length reaches past the end.
			wantCode(t, "overlong first frame", patched(b, ssp2.HeaderLen+1, 0xFF, 0xFF, 0xFF, 0x7F), invalid)
		})
	}
}

func TestMutationsFrames(t *testing.T) {
	unknown := rawFrame{0x17, []byte("reserved")}
	for _, v := range loadVectors(t) {
		t.Run(v.kind+"/"+v.name, func(t *testing.T) {
			hdr, fs := split(t, v.bin)
			other := rawFrame{ssp2.FrameSubStart, nil} // a response frame in a request
			if v.kind == "response" {
				other = rawFrame{ssp2.FrameReqHeader, nil}
			}
			errorAt := -1
			for i, f := range fs {
				if f.typ == ssp2.FrameError {
					errorAt = i
				}
			}
			for i, f := range fs {
				if f.typ.Registered() {
					// §1.2 rule 3: a known frame's payload is consumed exactly.
					wantCode(t, fmt.Sprintf("frame %d %s with a trailing byte", i, f.typ), join(hdr, with(fs, i, rawFrame{f.typ, append(append([]byte(nil), f.payload...), 0)})), invalid)
					if len(f.payload) > 0 {
						wantCode(t, fmt.Sprintf("frame %d %s one byte short", i, f.typ), join(hdr, with(fs, i, rawFrame{f.typ, f.payload[:len(f.payload)-1]})), invalid)
					}
				}
				// A registered frame of the other kind is not unknown.
				wantCode(t, fmt.Sprintf("other kind's frame at %d", i), join(hdr, insert(fs, i, other)), invalid)
				// An unknown frame is legal strictly between the header frame and
				// END, never first and never after ERROR.
				mut := join(hdr, insert(fs, i, unknown))
				switch {
				case i == 0:
					wantCode(t, "unknown frame first", mut, invalid)
				case errorAt >= 0 && i > errorAt:
					wantCode(t, "unknown frame after ERROR", mut, invalid)
				default:
					if m := wantAccepted(t, fmt.Sprintf("unknown frame at %d", i), mut); m != nil {
						if len(m.Frames) != len(fs)+1 {
							t.Errorf("unknown frame at %d not preserved: %d frames", i, len(m.Frames))
						} else if u, ok := m.Frames[i].(*ssp2.UnknownFrame); !ok || !bytes.Equal(u.Payload, unknown.payload) {
							t.Errorf("unknown frame at %d not preserved: %s", i, m.Frames[i].Type())
						}
					}
				}
			}
			if errorAt < 0 {
				wantAccepted(t, "unknown frame before END", join(hdr, append(append([]rawFrame(nil), fs...), unknown)))
			} else {
				wantCode(t, "unknown frame after ERROR, before END", join(hdr, append(append([]rawFrame(nil), fs...), unknown)), invalid)
			}
			// Unknown frame types across the byte range are skipped; the
			// reserved ones included.
			for _, ft := range []ssp2.FrameType{0x05, 0x0F, 0x17, 0x18, 0x1A, 0x1C, 0x1E, 0x20, 0x2F, 0x80, 0xFF} {
				if errorAt < 0 {
					wantAccepted(t, fmt.Sprintf("unknown type %#x", byte(ft)), join(hdr, append(append([]rawFrame(nil), fs...), rawFrame{ft, nil})))
				}
			}
			// The header frame twice.
			wantCode(t, "header frame twice", join(hdr, insert(fs, 1, fs[0])), invalid)
			// No frames at all.
			wantCode(t, "no frames", join(hdr, nil), invalid)
		})
	}
}

// Field mutations, at offsets computed from the vectors' layouts.

func strLen(s string) int { return 4 + len(s) }

func vectorFrames(t *testing.T, kind, name string) ([]byte, []rawFrame) {
	t.Helper()
	dir, _ := loadManifest(t, kind)
	return split(t, readFile(t, filepath.Join(dir, name+".bin")))
}

func frameOf(fs []rawFrame, typ ssp2.FrameType) int {
	for i, f := range fs {
		if f.typ == typ {
			return i
		}
	}
	return -1
}

func TestMutationsFields(t *testing.T) {
	type mutation struct {
		name  string
		frame ssp2.FrameType
		// payload rewrites the frame's payload.
		payload func(p []byte) []byte
		code    ssp2.Code
	}
	set := func(at int, b ...byte) func([]byte) []byte {
		return func(p []byte) []byte { return patched(p, at, b...) }
	}
	u32 := func(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
	u64 := func(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
	minus53 := int64(-1 << 53)

	// request/push-multi-commit: REQ_HEADER client-a / 1; PUSH_COMMIT c-0001
	// with op 0 (notes, n-1, upsert, baseVersion 3, payload).
	ccid, table, rowID := "c-0001", "notes", "n-1"
	opAt := strLen(ccid) + 4 + strLen(table) + strLen(rowID)
	reqMut := []mutation{
		{"empty clientId", ssp2.FrameReqHeader, func(p []byte) []byte { return append(u32(0), p[strLen("client-a"):]...) }, invalid},
		{"schemaVersion 0", ssp2.FrameReqHeader, set(strLen("client-a"), 0, 0, 0, 0), invalid},
		{"schemaVersion -1", ssp2.FrameReqHeader, set(strLen("client-a"), 0xFF, 0xFF, 0xFF, 0xFF), invalid},
		{"clientId not UTF-8", ssp2.FrameReqHeader, set(4, 0xC3, 0x28), invalid},
		{"op 0", ssp2.FramePushCommit, set(opAt, 0), invalid},
		{"op 3", ssp2.FramePushCommit, set(opAt, 3), invalid},
		{"op delete with a payload", ssp2.FramePushCommit, set(opAt, 2), invalid},
		{"baseVersion presence 2", ssp2.FramePushCommit, set(opAt+1, 2), invalid},
		{"baseVersion 2^53", ssp2.FramePushCommit, set(opAt+2, u64(1<<53)...), invalid},
		{"baseVersion -2^53", ssp2.FramePushCommit, set(opAt+2, u64(uint64(minus53))...), invalid},
		{"baseVersion MinInt64", ssp2.FramePushCommit, set(opAt+2, u64(1<<63)...), invalid},
		{"payload presence 2", ssp2.FramePushCommit, set(opAt+10, 2), invalid},
		{"empty clientCommitId", ssp2.FramePushCommit, func(p []byte) []byte { return append(u32(0), p[strLen(ccid):]...) }, invalid},
		{"zero operations", ssp2.FramePushCommit, func(p []byte) []byte { return append(append([]byte(nil), p[:strLen(ccid)]...), 0, 0, 0, 0) }, ssp2.CodeEmptyCommit},
		{"operation count past the end", ssp2.FramePushCommit, set(strLen(ccid), 0xFF, 0xFF, 0xFF, 0x0F), invalid},
	}
	hdr, fs := vectorFrames(t, "request", "push-multi-commit")
	for _, m := range reqMut {
		i := frameOf(fs, m.frame)
		wantCode(t, m.name, join(hdr, with(fs, i, rawFrame{m.frame, m.payload(fs[i].payload)})), m.code)
	}
	// The zero-operation commit is reported as sync.empty_commit even when
	// a grammar error comes earlier in the message (frames decode first).
	zero := rawFrame{ssp2.FramePushCommit, append(append([]byte(nil), fs[1].payload[:strLen(ccid)]...), 0, 0, 0, 0)}
	wantCode(t, "empty commit after a pull", join(hdr, []rawFrame{fs[0], {ssp2.FramePullHeader, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}}, zero}), ssp2.CodeEmptyCommit)

	// request/pull-bootstrap: PULL_HEADER; SUBSCRIPTION sub-notes (scopes
	// project: [p1, p2], team: [t9]; params; cursor -1).
	hdr, fs = vectorFrames(t, "request", "pull-bootstrap")
	pull := frameOf(fs, ssp2.FramePullHeader)
	for _, accept := range []byte{0x10, 0x80, 0xF3} {
		wantCode(t, fmt.Sprintf("accept %#x", accept), join(hdr, with(fs, pull, rawFrame{ssp2.FramePullHeader, patched(fs[pull].payload, 12, accept)})), invalid)
	}
	for _, accept := range []byte{0, 1, 0x0F} { // bits 0/1 are request validation, not decode
		wantAccepted(t, fmt.Sprintf("accept %#x", accept), join(hdr, with(fs, pull, rawFrame{ssp2.FramePullHeader, patched(fs[pull].payload, 12, accept)})))
	}
	sub := pull + 1
	p := fs[sub].payload
	mapAt := strLen("sub-notes") + strLen("notes")
	key1 := mapAt + 4
	val1 := key1 + strLen("project")
	entry1 := strLen("project") + 4 + strLen("p1") + strLen("p2")
	key2 := key1 + entry1
	entry2 := strLen("team") + 4 + strLen("t9")
	afterMap := key2 + entry2
	// Swap the two entries: out of order.
	swapped := append(append(append(append([]byte(nil), p[:key1]...), p[key2:afterMap]...), p[key1:key2]...), p[afterMap:]...)
	wantCode(t, "scope keys out of order", join(hdr, with(fs, sub, rawFrame{ssp2.FrameSubscription, swapped})), invalid)
	dup := append(append(append(append([]byte(nil), p[:key1]...), p[key1:key2]...), p[key1:key2]...), p[afterMap:]...)
	wantCode(t, "scope key twice", join(hdr, with(fs, sub, rawFrame{ssp2.FrameSubscription, dup})), invalid)
	wantCode(t, "scope value not UTF-8", join(hdr, with(fs, sub, rawFrame{ssp2.FrameSubscription, patched(p, val1+4+4, 0xFF)})), invalid)
	paramsAt := afterMap
	wantCode(t, "params presence 2", join(hdr, with(fs, sub, rawFrame{ssp2.FrameSubscription, patched(p, paramsAt, 2)})), invalid)
	// params {"includeArchived":false} → {"includeArchived":fals} is not JSON.
	wantCode(t, "params not JSON", join(hdr, with(fs, sub, rawFrame{ssp2.FrameSubscription, patched(p, paramsAt+1+4+len(`{"includeArchived":fals`), '}')})), invalid)
	// Re-encoding the decoded request never reorders maps: the swapped
	// bytes are refused, so canonical order is the only order.

	// response frames.
	hdr, fs = vectorFrames(t, "response", "commits-incremental")
	ss := frameOf(fs, ssp2.FrameSubStart)
	statusAt := strLen("sub-notes")
	for _, st := range []byte{0, 4, 0xFF} {
		wantCode(t, fmt.Sprintf("SUB_START status %d", st), join(hdr, with(fs, ss, rawFrame{ssp2.FrameSubStart, patched(fs[ss].payload, statusAt, st)})), invalid)
	}
	wantCode(t, "SUB_START bootstrap 2", join(hdr, with(fs, ss, rawFrame{ssp2.FrameSubStart, patched(fs[ss].payload, len(fs[ss].payload)-1, 2)})), invalid)
	cm := frameOf(fs, ssp2.FrameCommit)
	changeAt := 8 + 8 + strLen("actor-1") + 4 + strLen("notes") + 4
	wantCode(t, "tableIndex out of range", join(hdr, with(fs, cm, rawFrame{ssp2.FrameCommit, patched(fs[cm].payload, changeAt, 1)})), invalid)
	opAt = changeAt + 2 + strLen("n-2")
	wantCode(t, "change op 3", join(hdr, with(fs, cm, rawFrame{ssp2.FrameCommit, patched(fs[cm].payload, opAt, 3)})), invalid)
	wantCode(t, "change op delete with row", join(hdr, with(fs, cm, rawFrame{ssp2.FrameCommit, patched(fs[cm].payload, opAt, 2)})), invalid)
	wantCode(t, "rowVersion presence 2", join(hdr, with(fs, cm, rawFrame{ssp2.FrameCommit, patched(fs[cm].payload, opAt+1, 2)})), invalid)
	wantCode(t, "commitSeq 2^53", join(hdr, with(fs, cm, rawFrame{ssp2.FrameCommit, patched(fs[cm].payload, 0, u64(1<<53)...)})), invalid)
	// COMMIT and a segment in one subscription, either order.
	seg := rawFrame{ssp2.FrameSegmentRef, segmentRefPayload(t)}
	wantCode(t, "segment after COMMIT", join(hdr, insert(fs, cm+1, seg)), invalid)
	wantCode(t, "COMMIT after segment", join(hdr, insert(fs, cm, seg)), invalid)
	wantCode(t, "COMMIT outside a subscription", join(hdr, insert(fs, ss, fs[cm])), invalid)
	wantCode(t, "no SUB_END", join(hdr, fs[:len(fs)-1]), invalid)
	wantCode(t, "SUB_END twice", join(hdr, append(append([]rawFrame(nil), fs...), fs[len(fs)-1])), invalid)
	wantCode(t, "nested SUB_START", join(hdr, insert(fs, ss+1, fs[ss])), invalid)

	hdr, fs = vectorFrames(t, "response", "push-conflict")
	pr := frameOf(fs, ssp2.FramePushResult)
	p = fs[pr].payload
	statusAt = strLen("c-0002")
	wantCode(t, "PUSH_RESULT status 4", join(hdr, with(fs, pr, rawFrame{ssp2.FramePushResult, patched(p, statusAt, 4)})), invalid)
	wantCode(t, "rejected with commitSeq", join(hdr, with(fs, pr, rawFrame{ssp2.FramePushResult, append(append(append(append([]byte(nil), p[:statusAt+1]...), 1), u64(5)...), p[statusAt+2:]...)})), invalid)
	wantCode(t, "applied without commitSeq", join(hdr, with(fs, pr, rawFrame{ssp2.FramePushResult, patched(p, statusAt, 1)})), invalid)
	wantCode(t, "result record status 4", join(hdr, with(fs, pr, rawFrame{ssp2.FramePushResult, patched(p, statusAt+2+4+4, 4)})), invalid)
	// PUSH_RESULT after a subscription.
	ssFrame := rawFrame{ssp2.FrameSubStart, append(append(u32(1), 's', 1), append(u32(0), append(u32(0), 0)...)...)}
	endFrame := rawFrame{ssp2.FrameSubEnd, append(u64(1), 0)}
	wantAccepted(t, "PUSH_RESULT then a subscription", join(hdr, append(append([]rawFrame(nil), fs...), ssFrame, endFrame)))
	wantCode(t, "PUSH_RESULT after a subscription", join(hdr, []rawFrame{fs[0], ssFrame, endFrame, fs[pr]}), invalid)

	hdr, fs = vectorFrames(t, "response", "lease-issued")
	ls := frameOf(fs, ssp2.FrameLease)
	wantCode(t, "LEASE twice", join(hdr, insert(fs, ls, fs[ls])), invalid)
	wantCode(t, "LEASE after SUB_START", join(hdr, append([]rawFrame{fs[0]}, append(append([]rawFrame(nil), fs[ls+1:]...), fs[ls])...)), invalid)
	wantCode(t, "empty leaseId", join(hdr, with(fs, ls, rawFrame{ssp2.FrameLease, append(u32(0), u64(1)...)})), invalid)
	// Ordering rules look at known frames only (§1.2 rule 2).
	wantAccepted(t, "LEASE after an unknown frame", join(hdr, insert(fs, ls, rawFrame{0x17, nil})))

	hdr, fs = vectorFrames(t, "response", "bootstrap-segments")
	ref := frameOf(fs, ssp2.FrameSegmentRef)
	p = fs[ref].payload
	mediaAt := strLen("sha256:c24f8baa413f0d38cfa8babdb0c095b421eeaf47ce0d85050111958f57f6668c")
	wantCode(t, "mediaType 3", join(hdr, with(fs, ref, rawFrame{ssp2.FrameSegmentRef, patched(p, mediaAt, 3)})), invalid)
	// Drop urlExpiresAtMs (its presence byte and value) → url without expiry.
	wantCode(t, "url without urlExpiresAtMs", join(hdr, with(fs, ref, rawFrame{ssp2.FrameSegmentRef, append(append([]byte(nil), p[:len(p)-9]...), 0)})), invalid)
	inl := frameOf(fs, ssp2.FrameSegmentInline)
	wantCode(t, "inline segment flags", join(hdr, with(fs, inl, rawFrame{ssp2.FrameSegmentInline, patched(fs[inl].payload, 6, 1)})), invalid)
	wantCode(t, "inline segment missing end marker", join(hdr, with(fs, inl, rawFrame{ssp2.FrameSegmentInline, fs[inl].payload[:len(fs[inl].payload)-4]})), invalid)
	wantCode(t, "inline segment serverVersion 0", join(hdr, with(fs, inl, rawFrame{ssp2.FrameSegmentInline, zeroFirstServerVersion(t, fs[inl].payload)})), invalid)

	hdr, fs = vectorFrames(t, "response", "error-mid-stream")
	er := frameOf(fs, ssp2.FrameError)
	p = fs[er].payload
	wantCode(t, "ERROR retryable 2", join(hdr, with(fs, er, rawFrame{ssp2.FrameError, patched(p, strLen("sync.missing_scopes")+strLen("handler emitted a change without stored scopes")+strLen("internal"), 2)})), invalid)
	wantCode(t, "frame after ERROR", join(hdr, append(append([]rawFrame(nil), fs...), rawFrame{ssp2.FrameSubEnd, append(u64(1), 0)})), invalid)
	wantCode(t, "ERROR twice", join(hdr, append(append([]rawFrame(nil), fs...), fs[er])), invalid)

	hdr, fs = vectorFrames(t, "response", "epoch-reset") // wire version 2
	wantCode(t, "v2 empty logEpoch", join(hdr, []rawFrame{{ssp2.FrameRespHeader, append([]byte{0, 0}, append(u32(0), 1)...)}}), invalid)
	wantCode(t, "v2 resetRequired 2", join(hdr, []rawFrame{{ssp2.FrameRespHeader, patched(fs[0].payload, len(fs[0].payload)-1, 2)}}), invalid)
	wantCode(t, "v2 header read as v1", join(patched(hdr, 4, 1), fs), invalid)
}

// segmentRefPayload is a minimal SEGMENT_REF payload.
func segmentRefPayload(t *testing.T) []byte {
	t.Helper()
	m := &ssp2.Message{WireVersion: 1, Kind: ssp2.KindResponse, Frames: []ssp2.Frame{
		&ssp2.RespHeader{},
		&ssp2.SubStart{ID: "s", Status: ssp2.SubActive},
		&ssp2.SegmentRef{SegmentID: "sha256:x", MediaType: ssp2.MediaRows, Table: "t"},
		&ssp2.SubEnd{},
	}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, fs := split(t, b)
	return fs[2].payload
}

// zeroFirstServerVersion zeroes the first row's serverVersion of a rows
// segment.
func zeroFirstServerVersion(t *testing.T, seg []byte) []byte {
	t.Helper()
	s, err := ssp2.DecodeSegment(seg)
	if err != nil || len(s.Blocks) == 0 {
		t.Fatal(err)
	}
	// The header is what precedes the first block: re-encode an empty
	// segment of the same columns to learn its length.
	empty, err := (&ssp2.Segment{Table: s.Table, SchemaVersion: s.SchemaVersion, Columns: s.Columns}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	return patched(seg, len(empty)-4+8, 0, 0, 0, 0, 0, 0, 0, 0)
}

func TestMutationsPushResultDetails(t *testing.T) {
	rejected := &ssp2.PushResult{ClientCommitID: "c-1", Status: ssp2.PushRejected, Results: []ssp2.OpResult{{OpIndex: 2, Status: ssp2.OpError, Code: "app.x", Message: "m"}}}
	details := func(id string, idx int32, d string) *ssp2.PushResultDetails {
		return &ssp2.PushResultDetails{ClientCommitID: id, Entries: []ssp2.DetailEntry{{OpIndex: idx, Details: driver.JSON(d)}}}
	}
	good := details("c-1", 2, `{"fieldPaths":["a.b"],"reason":"bad_value"}`)
	m := &ssp2.Message{WireVersion: 1, Kind: ssp2.KindResponse, Frames: []ssp2.Frame{&ssp2.RespHeader{}, rejected, good}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, "details after their rejected result", b)
	hdr, fs := split(t, b)
	wantAccepted(t, "details after an unknown frame", join(hdr, insert(fs, 2, rawFrame{0x17, nil})))
	for name, frames := range map[string][]rawFrame{
		"details without a result": {fs[0], fs[2]},
		"details twice":            {fs[0], fs[1], fs[2], fs[2]},
	} {
		wantCode(t, name, join(hdr, frames), invalid)
	}
	for name, d := range map[string]*ssp2.PushResultDetails{
		"another commit":   details("c-2", 2, `{"reason":"x"}`),
		"not an error op":  details("c-1", 0, `{"reason":"x"}`),
		"free-form reason": details("c-1", 2, `{"reason":"Show this sentence"}`),
		"unknown member":   details("c-1", 2, `{"reason":"x","stack":"y"}`),
	} {
		enc := &ssp2.Message{WireVersion: 1, Kind: ssp2.KindResponse, Frames: []ssp2.Frame{&ssp2.RespHeader{}, rejected, d}}
		if _, err := enc.Encode(); err == nil {
			t.Errorf("%s: encoded", name)
		}
		// The same frame, forced onto the wire, is refused by the decoder.
		e, _ := (&ssp2.Message{WireVersion: 1, Kind: ssp2.KindResponse, Frames: []ssp2.Frame{&ssp2.RespHeader{}, rejected}}).Encode()
		h2, fs2 := split(t, e)
		payload := append(binary.LittleEndian.AppendUint32(nil, uint32(len(d.ClientCommitID))), d.ClientCommitID...)
		payload = binary.LittleEndian.AppendUint32(payload, 1)
		payload = binary.LittleEndian.AppendUint32(payload, uint32(d.Entries[0].OpIndex))
		payload = binary.LittleEndian.AppendUint32(payload, uint32(len(d.Entries[0].Details)))
		payload = append(payload, d.Entries[0].Details...)
		wantCode(t, name, join(h2, append(fs2, rawFrame{ssp2.FramePushResultDetails, payload})), invalid)
	}
}

func TestMutationsSegments(t *testing.T) {
	dir, m := loadManifest(t, "segment")
	for _, c := range m.Cases {
		t.Run(c.Name, func(t *testing.T) {
			b := readFile(t, filepath.Join(dir, c.Bin))
			seg, err := ssp2.DecodeSegment(b)
			if err != nil {
				t.Fatal(err)
			}
			want := func(what string, x []byte) {
				t.Helper()
				if err := ssp2.ValidateSegment(x); ssp2.CodeOf(err) != invalid {
					t.Errorf("%s: %v", what, err)
				}
			}
			want("magic", patched(b, 0, 'X'))
			want("format version 2", patched(b, 4, 2))
			want("flags", patched(b, 6, 0, 1))
			for n := range len(b) {
				if err := ssp2.ValidateSegment(b[:n]); ssp2.CodeOf(err) != invalid {
					t.Fatalf("prefix of %d bytes: %v", n, err)
				}
			}
			want("byte after the end marker", append(append([]byte(nil), b...), 0))
			// Column records start after magic, version, flags, table and
			// schemaVersion, and the u16 count.
			col := 8 + 4 + len(seg.Table) + 4 + 2
			tagAt := col + 4 + len(seg.Columns[0].Name)
			want("unknown type tag", patched(b, tagAt, 9))
			want("reserved column flag", patched(b, tagAt+1, 3))
			// The first row's bitmap follows the header, the block prefix and
			// the serverVersion.
			header := col
			for _, c := range seg.Columns {
				header += 4 + len(c.Name) + 2
			}
			bitmapAt := header + 8 + 8
			nonNull := -1
			for i, c := range seg.Columns {
				if !c.Nullable {
					nonNull = i
					break
				}
			}
			want("NULL bit on a non-nullable column", patched(b, bitmapAt+nonNull/8, b[bitmapAt+nonNull/8]|1<<(nonNull%8)))
			if n := len(seg.Columns); n%8 != 0 {
				last := bitmapAt + (n-1)/8
				want("bitmap padding bit", patched(b, last, b[last]|0x80))
			}
			want("block byteLength + 1", patched(b, header+4, b[header+4]+1))
			want("serverVersion 0", patched(b, header+8, 0, 0, 0, 0, 0, 0, 0, 0))
		})
	}
}
