package ssp2_test

import (
	"bytes"
	"fmt"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// A client's request, as it would arrive in a POST /sync body.
func exampleRequest() []byte {
	codec, _ := ssp2.NewRowCodec(exampleColumns)
	row, _ := codec.Append(nil, driver.Values{"id": "t1", "title": "Write the report", "done": false})
	b, _ := (&ssp2.Message{WireVersion: 2, Kind: ssp2.KindRequest, Frames: []ssp2.Frame{
		&ssp2.ReqHeader{ClientID: "client-a", SchemaVersion: 1, LogEpoch: "epoch-1"},
		&ssp2.PushCommit{ClientCommitID: "c-1", Operations: []ssp2.PushOperation{
			{Table: "tasks", RowID: "t1", Op: ssp2.OpUpsert, BaseVersion: ssp2.Some(int64(0)), Payload: row},
		}},
		&ssp2.PullHeader{Accept: ssp2.AcceptInlineRows | ssp2.AcceptExternalRows},
		&ssp2.Subscription{ID: "sub-tasks", Table: "tasks", Scopes: map[string][]string{"project": {"p1"}}, Cursor: 41},
	}}).Encode()
	return b
}

var exampleColumns = []ssp2.Column{
	{Name: "id", Type: ssp2.TypeString},
	{Name: "title", Type: ssp2.TypeString},
	{Name: "done", Type: ssp2.TypeBoolean},
}

// Decode a request and its push payloads into the engine's values.
func ExampleDecodeRequest() {
	req, err := ssp2.DecodeRequest(exampleRequest())
	if err != nil {
		// A decode error carries its §10 code and is safe to return to the
		// client (as JSON, §10.1).
		fmt.Println(string(ssp2.CodeOf(err)))
		return
	}
	codec, _ := ssp2.NewRowCodec(exampleColumns) // once per (table, schema version)
	fmt.Println(req.Header.ClientID, req.Header.SchemaVersion, req.Header.LogEpoch)
	for _, c := range req.Commits {
		for _, op := range c.Operations {
			values, err := codec.Decode(op.Payload) // a failure rejects this commit only
			fmt.Println(c.ClientCommitID, op.Op, op.Table, op.RowID, *op.BaseVersion.Ptr(), values["title"], err)
		}
	}
	for _, s := range req.Subscriptions {
		fmt.Println(s.ID, s.Table, s.Scopes["project"], s.Cursor)
	}
	// Output:
	// client-a 1 epoch-1
	// c-1 upsert tasks t1 0 Write the report <nil>
	// sub-tasks tasks [p1] 41
}

// Stream a response frame by frame; each call is one Write (one WebSocket
// message on a socket round).
func ExampleResponseWriter() {
	var out bytes.Buffer
	rw := ssp2.NewResponseWriter(&out, 2) // the request's wire version
	codec, _ := ssp2.NewRowCodec(exampleColumns)

	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(rw.Header(&ssp2.RespHeader{LogEpoch: "epoch-1"}))
	must(rw.PushResult(&ssp2.PushResult{ClientCommitID: "c-1", Status: ssp2.PushApplied, CommitSeq: 42,
		Results: []ssp2.OpResult{{OpIndex: 0, Status: ssp2.OpApplied}}}))
	must(rw.SubStart(&ssp2.SubStart{ID: "sub-tasks", Status: ssp2.SubActive,
		EffectiveScopes: map[string][]string{"project": {"p1"}}}))
	row, err := codec.Append(nil, driver.Values{"id": "t1", "title": "Write the report", "done": false})
	must(err)
	must(rw.Commit(&ssp2.Commit{CommitSeq: 42, CreatedAtMs: 1782993600000, ActorID: "actor-1", Tables: []string{"tasks"},
		Changes: []ssp2.CommitChange{{TableIndex: 0, RowID: "t1", Op: ssp2.OpUpsert, RowVersion: 1,
			Scopes: map[string]string{"project": "p1"}, Row: row}}}))
	must(rw.SubEnd(&ssp2.SubEnd{NextCursor: 42}))
	// A misordered call is refused and writes nothing.
	fmt.Println(rw.Commit(&ssp2.Commit{}) != nil)
	must(rw.End())

	fmt.Println(rw.Frames(), "frames,", rw.Written(), "bytes")
	m, _ := ssp2.DecodeResponse(out.Bytes())
	for _, f := range m.Frames {
		fmt.Println(f.Type())
	}
	// Output:
	// true
	// 6 frames, 247 bytes
	// RESP_HEADER
	// PUSH_RESULT
	// SUB_START
	// COMMIT
	// SUB_END
}

// Write a rows segment and learn its content address.
func ExampleSegmentWriter() {
	var out bytes.Buffer
	sw, _ := ssp2.NewSegmentWriter(&out, ssp2.SegmentHeader{Table: "tasks", SchemaVersion: 1, Columns: exampleColumns})
	_ = sw.WriteRow(3, driver.Values{"id": "t1", "title": "Write the report", "done": true})
	info, _ := sw.Close()
	fmt.Println(info.ID == ssp2.SegmentID(out.Bytes()), info.ByteLength, info.RowCount)
	rendered, _ := ssp2.Render(out.Bytes())
	fmt.Println(string(rendered))
	// Output:
	// true 100 1
	// {"magic":"SSG2","formatVersion":1,"table":"tasks","schemaVersion":1,"columns":[{"name":"id","type":"string","nullable":false},{"name":"title","type":"string","nullable":false},{"name":"done","type":"boolean","nullable":false}],"blocks":[[{"serverVersion":3,"values":{"id":"t1","title":"Write the report","done":true}}]]}
}

// The §10 error body for an HTTP-level failure.
func ExampleNewErrorBody() {
	b := ssp2.NewErrorBody(ssp2.CodeTooManyOperations, "the push has 600 operations; the limit is 500")
	j, _ := b.MarshalJSON()
	fmt.Println(string(j))
	// Output:
	// {"code":"sync.too_many_operations","category":"invalid-request","retryable":false,"recommendedAction":"splitBatch","message":"the push has 600 operations; the limit is 500"}
}
