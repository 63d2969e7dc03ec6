package ssp2_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/internal/upstream"
	"github.com/syncstore/syncstore/ssp2"
)

// Fuzz targets: decoding never panics, and whatever decodes re-encodes to
// exactly its input (the encoding is canonical), which decodes again.

// seedVectors adds upstream's vector files matching pattern, when the
// tree is there (fuzzing works without it, from the generated seeds).
func seedVectors(f *testing.F, pattern string) {
	dir, err := upstream.Dir()
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "spec", "vectors", pattern))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func seedMessages(f *testing.F) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	row, _ := codec.Append(nil, notesRow(1))
	for _, m := range []*ssp2.Message{
		{WireVersion: 2, Kind: ssp2.KindRequest, Frames: []ssp2.Frame{
			&ssp2.ReqHeader{ClientID: "c", SchemaVersion: 1, LogEpoch: "e"},
			&ssp2.PushCommit{ClientCommitID: "x", Operations: []ssp2.PushOperation{{Table: "notes", RowID: "n", Op: ssp2.OpUpsert, BaseVersion: ssp2.Some(int64(0)), Payload: row}, {Table: "notes", RowID: "m", Op: ssp2.OpDelete}}},
			&ssp2.PullHeader{Accept: 15},
			&ssp2.Subscription{ID: "s", Table: "notes", Scopes: map[string][]string{"a": {"1"}, "b": nil}, Params: `{"p":1}`, Cursor: -1, BootstrapState: `[1]`},
		}},
		{WireVersion: 1, Kind: ssp2.KindResponse, Frames: []ssp2.Frame{
			&ssp2.RespHeader{LatestSchemaVersion: ssp2.Some(int32(2))},
			&ssp2.Lease{LeaseID: "l", ExpiresAtMs: 5},
			&ssp2.PushResult{ClientCommitID: "x", Status: ssp2.PushRejected, Results: []ssp2.OpResult{{Status: ssp2.OpConflict, Code: "sync.version_conflict", ServerVersion: 3, ServerRow: row}, {OpIndex: 1, Status: ssp2.OpError, Code: "app.x"}}},
			&ssp2.PushResultDetails{ClientCommitID: "x", Entries: []ssp2.DetailEntry{{OpIndex: 1, Details: `{"fieldPaths":["a"],"references":{"k":"v"}}`}}},
			&ssp2.SubStart{ID: "s", Status: ssp2.SubActive, EffectiveScopes: map[string][]string{"a": {"1"}}},
			&ssp2.Commit{CommitSeq: 1, Tables: []string{"notes"}, Changes: []ssp2.CommitChange{{Op: ssp2.OpUpsert, RowVersion: 1, Scopes: map[string]string{"a": "1"}, Row: row}, {Op: ssp2.OpDelete}}},
			&ssp2.SubEnd{NextCursor: 1},
			&ssp2.UnknownFrame{FrameType: 0x20, Payload: []byte{1}},
			ssp2.NewErrorBody(ssp2.CodeInvalidRequest, "m").Frame(),
		}},
	} {
		b, err := m.Encode()
		if err != nil {
			panic(err)
		}
		f.Add(b)
	}
}

func roundTrip(t *testing.T, b []byte, decode func([]byte) (*ssp2.Message, error)) {
	m, err := decode(b)
	if err != nil {
		if ssp2.CodeOf(err) == "" {
			t.Fatalf("decode error without a code: %v", err)
		}
		return
	}
	enc, err := m.Encode()
	if err != nil {
		t.Fatalf("a decoded message does not encode: %v", err)
	}
	if !bytes.Equal(enc, b) {
		t.Fatalf("decode→encode is not the input:\n in %x\nout %x", b, enc)
	}
	if _, err := decode(enc); err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	_ = m.Render()
}

func FuzzDecodeRequest(f *testing.F) {
	seedMessages(f)
	seedVectors(f, "request/*.bin")
	seedVectors(f, "request/invalid/*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, func(b []byte) (*ssp2.Message, error) {
			r, err := ssp2.DecodeRequest(b)
			if err != nil {
				return nil, err
			}
			if r.Header == nil || (len(r.Commits) == 0 && r.Pull == nil) {
				t.Fatalf("a decoded request without its header or content")
			}
			return &r.Message, nil
		})
	})
}

func FuzzDecodeResponse(f *testing.F) {
	seedMessages(f)
	seedVectors(f, "response/*.bin")
	seedVectors(f, "response/invalid/*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, ssp2.DecodeResponse)
	})
}

func FuzzDecodeSegment(f *testing.F) {
	seedVectors(f, "segment/*.bin")
	seedVectors(f, "segment/invalid/*.bin")
	var out bytes.Buffer
	sw, _ := ssp2.NewSegmentWriter(&out, ssp2.SegmentHeader{Table: "t", SchemaVersion: 1, Columns: allCols, BlockRows: 2})
	for i := range 3 {
		vals := make([]any, len(allCols))
		for j, c := range allCols {
			vals[j] = randValue(randFor(i), c)
		}
		_ = sw.WriteRowValues(int64(i+1), vals)
	}
	_, _ = sw.Close()
	f.Add(out.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ssp2.DecodeSegment(b)
		if verr := ssp2.ValidateSegment(b); (verr == nil) != (err == nil) {
			t.Fatalf("DecodeSegment %v, ValidateSegment %v", err, verr)
		}
		if err != nil {
			if ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
				t.Fatalf("decode error %v", err)
			}
			return
		}
		enc, err := s.Encode()
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("decode→encode is not the input (%v)", err)
		}
		_ = s.Render()
	})
}

func FuzzRowDecode(f *testing.F) {
	codec, _ := ssp2.NewRowCodec(allCols)
	for i := range 8 {
		vals := make([]any, len(allCols))
		for j, c := range allCols {
			vals[j] = randValue(randFor(i), c)
		}
		row, err := codec.AppendValues(nil, vals)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(row)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := codec.DecodeValues(nil, b)
		if verr := codec.Validate(b); (verr == nil) != (err == nil) {
			t.Fatalf("DecodeValues %v, Validate %v", err, verr)
		}
		if err != nil {
			if ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
				t.Fatalf("decode error %v", err)
			}
			return
		}
		enc, err := codec.AppendValues(nil, vals)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("decode→encode is not the input (%v)", err)
		}
		m, err := codec.Decode(b)
		if err != nil || len(m) != len(allCols) {
			t.Fatalf("Decode: %v", err)
		}
	})
}

func FuzzParseControl(f *testing.F) {
	seedVectors(f, "realtime/*.json")
	seedVectors(f, "realtime/invalid/*.json")
	f.Add([]byte(`{"type":"ack","cursor":5}`))
	f.Add([]byte(`{"event":"presence","data":{"scopeKey":"k","error":"presence.forbidden","timestamp":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ev, err := ssp2.ParseServerEvent(b); err == nil {
			var again []byte
			switch ev.Kind {
			case ssp2.EventHello:
				again, err = ev.Hello.AppendJSON(nil)
			case ssp2.EventSync:
				again, err = ev.Sync.AppendJSON(nil)
			case ssp2.EventHeartbeat:
				again, err = ev.Heartbeat.AppendJSON(nil)
			case ssp2.EventPresence:
				again, err = ev.Presence.AppendJSON(nil)
			case ssp2.EventPresenceError:
				again, err = ev.PresenceError.AppendJSON(nil)
			default:
				return
			}
			if err != nil {
				t.Fatalf("a parsed event does not encode: %v", err)
			}
			ev2, err := ssp2.ParseServerEvent(again)
			if err != nil || ev2 != ev {
				t.Fatalf("parse→encode→parse: %v\n%+v\n%+v", err, ev, ev2)
			}
		}
		if msg, err := ssp2.ParseClientMessage(b); err == nil {
			var again []byte
			switch msg.Kind {
			case ssp2.ClientAck:
				again, err = msg.Ack.AppendJSON(nil)
			case ssp2.ClientPresence:
				again, err = msg.Presence.AppendJSON(nil)
			default:
				return
			}
			if err != nil {
				t.Fatalf("a parsed message does not encode: %v", err)
			}
			msg2, err := ssp2.ParseClientMessage(again)
			if err != nil || msg2 != msg {
				t.Fatalf("parse→encode→parse: %v\n%+v\n%+v", err, msg, msg2)
			}
		}
	})
}
