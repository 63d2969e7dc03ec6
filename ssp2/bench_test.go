package ssp2_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// A typical round: a 10-operation push and a pull of 3 subscriptions; the
// response carries the push result and 50 one-change commits per
// subscription.

func benchRow(i int) driver.Values {
	return driver.Values{
		"id": "note-" + strconv.Itoa(i), "title": "A title of some length", "body": "The body of the note, a sentence or two of text.",
		"count": int64(i), "score": 0.5, "done": i%2 == 0, "meta": driver.JSON(`{"tags":["a","b"]}`), "blob": nil,
	}
}

func typicalRequest(b testing.TB) []byte {
	codec, _ := ssp2.NewRowCodec(notesCols)
	push := &ssp2.PushCommit{ClientCommitID: "commit-000042"}
	for i := range 10 {
		row, err := codec.Append(nil, benchRow(i))
		if err != nil {
			b.Fatal(err)
		}
		push.Operations = append(push.Operations, ssp2.PushOperation{Table: "notes", RowID: "note-" + strconv.Itoa(i), Op: ssp2.OpUpsert, BaseVersion: ssp2.Some(int64(3)), Payload: row})
	}
	frames := []ssp2.Frame{&ssp2.ReqHeader{ClientID: "client-a", SchemaVersion: 1, LogEpoch: "epoch-1"}, push, &ssp2.PullHeader{Accept: 3}}
	for s := range 3 {
		frames = append(frames, &ssp2.Subscription{ID: "sub-" + strconv.Itoa(s), Table: "notes", Scopes: map[string][]string{"project": {"p1"}}, Cursor: 1000})
	}
	msg, err := (&ssp2.Message{WireVersion: 2, Kind: ssp2.KindRequest, Frames: frames}).Encode()
	if err != nil {
		b.Fatal(err)
	}
	return msg
}

func BenchmarkDecodeRequest(b *testing.B) {
	msg := typicalRequest(b)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ssp2.DecodeRequest(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRequestRows adds what a server does next: each payload
// decoded to driver.Values for sync.Store.Push.
func BenchmarkDecodeRequestRows(b *testing.B) {
	msg := typicalRequest(b)
	codec, _ := ssp2.NewRowCodec(notesCols)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := ssp2.DecodeRequest(msg)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range req.Commits {
			for _, op := range c.Operations {
				if _, err := codec.Decode(op.Payload); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkEncodeResponse streams the round's response, encoding each
// commit's row from driver.Values, through one reused ResponseWriter.
func BenchmarkEncodeResponse(b *testing.B) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	rows := make([]driver.Values, 150)
	for i := range rows {
		rows[i] = benchRow(i)
	}
	scopes := map[string]string{"project": "p1"}
	eff := map[string][]string{"project": {"p1"}}
	tables := []string{"notes"}
	results := make([]ssp2.OpResult, 10)
	for i := range results {
		results[i] = ssp2.OpResult{OpIndex: int32(i), Status: ssp2.OpApplied}
	}
	var (
		rw      = ssp2.NewResponseWriter(io.Discard, 2)
		scratch []byte
		changes = make([]ssp2.CommitChange, 1)
		hdr     = ssp2.RespHeader{LogEpoch: "epoch-1"}
		pr      = ssp2.PushResult{ClientCommitID: "commit-000042", Status: ssp2.PushApplied, CommitSeq: 1001, Results: results}
		ss      = ssp2.SubStart{Status: ssp2.SubActive, EffectiveScopes: eff}
		cm      = ssp2.Commit{ActorID: "actor-1", Tables: tables}
		se      = ssp2.SubEnd{}
		subIDs  = []string{"sub-0", "sub-1", "sub-2"}
	)
	b.ReportAllocs()
	for b.Loop() {
		rw.Reset(io.Discard, 2)
		if err := rw.Header(&hdr); err != nil {
			b.Fatal(err)
		}
		if err := rw.PushResult(&pr); err != nil {
			b.Fatal(err)
		}
		for s := range 3 {
			ss.ID = subIDs[s]
			if err := rw.SubStart(&ss); err != nil {
				b.Fatal(err)
			}
			for c := range 50 {
				var err error
				scratch, err = codec.Append(scratch[:0], rows[s*50+c])
				if err != nil {
					b.Fatal(err)
				}
				changes[0] = ssp2.CommitChange{RowID: "note", Op: ssp2.OpUpsert, RowVersion: 2, Scopes: scopes, Row: scratch}
				cm.CommitSeq, cm.CreatedAtMs, cm.Changes = int64(1000+c), 1782993600000, changes
				if err := rw.Commit(&cm); err != nil {
					b.Fatal(err)
				}
			}
			se.NextCursor = 1050
			if err := rw.SubEnd(&se); err != nil {
				b.Fatal(err)
			}
		}
		if err := rw.End(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(rw.Written())
}

func BenchmarkRowAppend(b *testing.B) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	v := benchRow(7)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = codec.Append(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkRowDecode(b *testing.B) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	row, _ := codec.Append(nil, benchRow(7))
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.Decode(row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRowDecodeValues(b *testing.B) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	row, _ := codec.Append(nil, benchRow(7))
	vals := make([]any, 0, len(notesCols))
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if vals, err = codec.DecodeValues(vals[:0], row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRowValidate(b *testing.B) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	row, _ := codec.Append(nil, benchRow(7))
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		if err := codec.Validate(row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSegmentWriter1000Rows(b *testing.B) {
	rows := make([]driver.Values, 1000)
	for i := range rows {
		rows[i] = benchRow(i)
	}
	h := ssp2.SegmentHeader{Table: "notes", SchemaVersion: 1, Columns: notesCols}
	sw, err := ssp2.NewSegmentWriter(io.Discard, h)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sw.Reset(io.Discard, h); err != nil {
			b.Fatal(err)
		}
		for i, r := range rows {
			if err := sw.WriteRow(int64(i+1), r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := sw.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
