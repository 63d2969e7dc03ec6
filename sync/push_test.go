package sync_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// The engine's own unit checks on SQLite; the PUSH rules over every
// driver are conformance/push_*.go.

func noteOp(id, body string, base *int64) sync.PushOp {
	return sync.PushOp{Table: "notes", RowID: id, Op: driver.OpUpsert,
		Values: driver.Values{"id": id, "proj": "p7", "body": body}, BaseVersion: base}
}

func pushOK(t *testing.T, s *sync.Store, req sync.PushRequest) sync.PushResponse {
	t.Helper()
	resp, err := s.Push(t.Context(), "p1", req)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	return resp
}

func TestPushAppliesReplaysAndConflicts(t *testing.T) {
	s := openSQLite(t)
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	req := sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1",
		Ops: []sync.PushOp{noteOp("n1", "one", sync.Version(0)), noteOp("n2", "two", nil)}}
	first := pushOK(t, s, req)
	if first.Status != driver.PushApplied || first.CommitSeq != 1 || first.Replayed || len(first.Changes) != 2 {
		t.Fatalf("first push: %+v", first)
	}
	if first.Ops[0].ServerVersion != 1 || first.Changes[0].RowVersion != 1 {
		t.Fatalf("new rows get version 1: %+v", first)
	}
	again := pushOK(t, s, req)
	if !again.Replayed || again.Changes != nil || !cmp.Equal(again.PushResult, first.PushResult) {
		t.Fatalf("replay: %+v, want the stored %+v", again, first.PushResult)
	}
	// The same key with other ops is not a replay.
	other := req
	other.Ops = []sync.PushOp{noteOp("n1", "changed", nil)}
	if _, err := s.Push(t.Context(), "p1", other); !errors.Is(err, sync.ErrIdempotencyKeyReused) {
		t.Fatalf("key reused: err %v", err)
	}
	// Update at the right base, then a stale one.
	upd := pushOK(t, s, sync.PushRequest{ClientID: "c1", ClientCommitID: "k2", ActorID: "a1",
		Ops: []sync.PushOp{noteOp("n1", "uno", sync.Version(1))}})
	if upd.Status != driver.PushApplied || upd.Ops[0].ServerVersion != 2 {
		t.Fatalf("update: %+v", upd)
	}
	stale := pushOK(t, s, sync.PushRequest{ClientID: "c2", ClientCommitID: "k1", ActorID: "a2",
		Ops: []sync.PushOp{noteOp("n2", "deux", nil), noteOp("n1", "eins", sync.Version(1))}})
	if stale.Status != driver.PushRejected || len(stale.Ops) != 2 || stale.Ops[1].Status != driver.OpConflict ||
		stale.Ops[1].ServerVersion != 2 || stale.Ops[1].ServerRow["body"] != "uno" {
		t.Fatalf("stale update: %+v", stale)
	}
	row, _, err := s.GetRow(t.Context(), "p1", "notes", "n2")
	if err != nil || row.Values["body"] != "two" {
		t.Fatalf("a rejected commit wrote its first op: %+v %v", row, err)
	}
}

func TestPushValidationWritesNothing(t *testing.T) {
	s := openSQLite(t)
	schema := notesSchema()
	schema.Tables = append(schema.Tables, driver.Table{Name: "docs", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "proj", Type: driver.TypeString},
			{Name: "text", Type: driver.TypeString}},
		Scopes: []driver.Scope{{Variable: "project", Column: "proj"}}})
	if err := s.EnsureSchema(t.Context(), schema); err != nil {
		t.Fatal(err)
	}
	good := func(ops ...sync.PushOp) sync.PushRequest {
		return sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1", Ops: ops}
	}
	many := make([]sync.PushOp, sync.MaxPushOps+1)
	for i := range many {
		many[i] = noteOp("n"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), "b", nil)
	}
	big := sync.PushOp{Table: "docs", RowID: "d1", Op: driver.OpUpsert,
		Values: driver.Values{"id": "d1", "proj": "p7", "text": strings.Repeat("b", sync.MaxPushBytes)}}
	cases := []struct {
		name string
		req  sync.PushRequest
		code sync.Code
		op   int
	}{
		{"no ops", good(), sync.CodeInvalidArgument, -1},
		{"too many ops", good(many...), sync.CodePushTooLarge, -1},
		{"too many bytes", good(big), sync.CodePushTooLarge, 0},
		{"unknown table", good(sync.PushOp{Table: "nope", RowID: "x", Op: driver.OpDelete}), sync.CodeUnknownTable, 0},
		{"wrong type", good(sync.PushOp{Table: "notes", RowID: "n1", Op: driver.OpUpsert,
			Values: driver.Values{"id": "n1", "proj": "p7", "body": 3}}), sync.CodeInvalidValue, 0},
		{"pk mismatch", good(noteOp("n1", "b", nil), sync.PushOp{Table: "notes", RowID: "n2", Op: driver.OpUpsert,
			Values: driver.Values{"id": "n3", "proj": "p7", "body": "b"}}), sync.CodeInvalidValue, 1},
		{"delete with values", good(sync.PushOp{Table: "notes", RowID: "n1", Op: driver.OpDelete, Values: driver.Values{"id": "n1"}}), sync.CodeInvalidArgument, 0},
		{"unknown op", good(sync.PushOp{Table: "notes", RowID: "n1", Op: "merge"}), sync.CodeInvalidArgument, 0},
		{"negative base", good(noteOp("n1", "b", sync.Version(-1))), sync.CodeInvalidArgument, 0},
		{"reserved client id", sync.PushRequest{ClientID: `["remote-command",1]`, ClientCommitID: "k", ActorID: "a",
			Ops: []sync.PushOp{noteOp("n1", "b", nil)}}, sync.CodeInvalidClientID, -1},
		{"no actor", sync.PushRequest{ClientID: "c", ClientCommitID: "k", Ops: []sync.PushOp{noteOp("n1", "b", nil)}}, sync.CodeInvalidArgument, -1},
	}
	for _, c := range cases {
		_, err := s.Push(t.Context(), "p1", c.req)
		var e *sync.Error
		if !errors.As(err, &e) || e.Code != c.code || e.OpIndex != c.op {
			t.Errorf("%s: err %v (op index %v), want %s at op %d", c.name, err, e, c.code, c.op)
		}
	}
	if seq, err := s.MaxCommitSeq(t.Context(), "p1"); err != nil || seq != 0 {
		t.Fatalf("bad pushes wrote commits: %d %v", seq, err)
	}
	if _, found, err := s.GetPushResult(t.Context(), "p1", "c1", "k1"); err != nil || found {
		t.Fatalf("bad pushes stored a result: %v %v", found, err)
	}
}

// TestCommandClientID pins CommandClientID to what JavaScript's
// JSON.stringify writes for ["remote-command", ...parts] (the wants were
// printed by Node.js), escapes and raw characters alike.
func TestCommandClientID(t *testing.T) {
	for _, c := range []struct {
		parts []string
		want  string
	}{
		{[]string{"a", "b"}, `["remote-command","a","b"]`},
		{[]string{`say "hi"\now`}, `["remote-command","say \"hi\"\\now"]`},
		{[]string{"\x01\x1f\b\f\n\r\t\x7f/<>&\u2028é😀"}, "[\"remote-command\",\"\\u0001\\u001f\\b\\f\\n\\r\\t\x7f/<>&\u2028é😀\"]"},
		{[]string{""}, `["remote-command",""]`},
	} {
		got := sync.CommandClientID(c.parts[0], c.parts[1:]...)
		if got != c.want {
			t.Errorf("CommandClientID(%q) = %q, want %q", c.parts, got, c.want)
		}
		if !strings.HasPrefix(got, sync.RemoteCommandPrefix) {
			t.Errorf("CommandClientID(%q) = %q: not in the namespace", c.parts, got)
		}
	}
}
