package sync_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

var updateWire = flag.Bool("update-wire", false, "rewrite sync/testdata/wire/*.json from the current encoding")

// wireSchema has a column of every type (SCH-1).
var wireSchema = sync.Schema{Tables: []sync.Table{{Name: "notes", PrimaryKey: "id",
	Columns: []sync.Column{{Name: "id", Type: sync.TypeString}, {Name: "org", Type: sync.TypeString},
		{Name: "n", Type: sync.TypeInteger}, {Name: "f", Type: sync.TypeFloat}, {Name: "ok", Type: sync.TypeBoolean},
		{Name: "doc", Type: sync.TypeJSON}, {Name: "blob", Type: sync.TypeBytes}, {Name: "maybe", Type: sync.TypeString, Nullable: true}},
	Scopes: []sync.Scope{{Variable: "org", Column: "org"}}}}}

func wireValues(id string) sync.Values {
	return sync.Values{"id": id, "org": "o1", "n": int64(9007199254740993), "f": 2.5, "ok": true,
		"doc": sync.JSON(`{"a": [1, 2]}`), "blob": []byte{0, 1, 0xfe}, "maybe": nil}
}

// wireCase is one value of a wire type, its golden file, and how a
// decoded copy is typed back (TypeValues) before it is compared.
type wireCase struct {
	name  string
	value any
	fresh func() any
	typed func(t *testing.T, v any)
}

func typeValues(t *testing.T, table string, v *sync.Values) {
	t.Helper()
	typed, err := sync.TypeValues(wireSchema, table, *v)
	if err != nil {
		t.Fatal(err)
	}
	*v = typed
}

func wireCases() []wireCase {
	base := int64(3)
	change := sync.Change{Table: "notes", RowID: "r1", Op: sync.OpUpsert, Scopes: sync.Scopes{"org": "o1"}, Values: wireValues("r1"), RowVersion: 4}
	del := sync.Change{Table: "notes", RowID: "r2", Op: sync.OpDelete, Scopes: sync.Scopes{"org": "o1"}}
	typeChanges := func(t *testing.T, cs []sync.Change) {
		for i := range cs {
			typeValues(t, cs[i].Table, &cs[i].Values)
		}
	}
	return []wireCase{
		{"push_request", sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", Ops: []sync.PushOp{
			{Table: "notes", RowID: "r1", Op: sync.OpUpsert, Values: wireValues("r1"), BaseVersion: &base},
			{Table: "notes", RowID: "r2", Op: sync.OpDelete}}},
			func() any { return new(sync.PushRequest) },
			func(t *testing.T, v any) {
				if err := sync.TypePushRequest(wireSchema, v.(*sync.PushRequest)); err != nil {
					t.Fatal(err)
				}
			}},
		{"push_response_applied", sync.PushResponse{PushResult: sync.PushResult{Status: sync.PushApplied, CommitSeq: 7, RecordedAtMs: 1700000000000,
			Ops: []sync.OpResult{{Status: sync.OpApplied, ServerVersion: 4}, {Status: sync.OpApplied}}},
			Changes: []sync.Change{change, del}},
			func() any { return new(sync.PushResponse) },
			func(t *testing.T, v any) { typeChanges(t, v.(*sync.PushResponse).Changes) }},
		{"push_response_rejected", sync.PushResponse{PushResult: sync.PushResult{Status: sync.PushRejected, RecordedAtMs: 1700000000000,
			Ops: []sync.OpResult{{Status: sync.OpApplied},
				{Status: sync.OpConflict, Code: sync.OpCodeVersionConflict, Message: "base version 3, server version 4", ServerVersion: 4, ServerRow: wireValues("r1")},
			}}, Replayed: true},
			func() any { return new(sync.PushResponse) },
			func(t *testing.T, v any) { typeValues(t, "notes", &v.(*sync.PushResponse).Ops[1].ServerRow) }},
		{"push_response_refused", sync.PushResponse{PushResult: sync.PushResult{Status: sync.PushRejected, RecordedAtMs: 1700000000000,
			Ops: []sync.OpResult{{Status: sync.OpError, Code: "todo.locked", Message: "the list is locked", Retryable: true, Details: `{"until":5}`}}}},
			func() any { return new(sync.PushResponse) }, func(*testing.T, any) {}},
		{"pull_request", sync.PullRequest{ClientID: "c1", WireVersion: 2, Subscriptions: []sync.PullSubscription{
			{ID: "s1", Table: "notes", Scopes: sync.ScopeFilter{"org": {"o1", "o2"}}, Cursor: sync.PullBootstrap, LimitRows: 100},
			{ID: "s2", Table: "notes", Scopes: sync.ScopeFilter{"org": {"o3"}}, Cursor: 7, BootstrapToken: "dG9rZW4", LimitChanges: 50}}},
			func() any { return new(sync.PullRequest) }, func(*testing.T, any) {}},
		{"pull_response", sync.PullResponse{MaxCommitSeq: 9, Epoch: "e1", Subscriptions: []sync.PullResult{
			{ID: "s1", Status: sync.PullActive, Bootstrap: true, Fresh: true, AsOfCommitSeq: 9, NextCursor: 9, BootstrapToken: "dG9rZW4",
				Rows: []sync.Row{{ID: "r1", ServerVersion: 4, Scopes: sync.Scopes{"org": "o1"}, Values: wireValues("r1")}}},
			{ID: "s2", Status: sync.PullActive, NextCursor: 9, Commits: []sync.Commit{{Seq: 8, ClientID: "c2", ClientCommitID: "k9", ActorID: "a2",
				CreatedAtMs: 1700000000000, Changes: []sync.Change{change, del}}}},
			{ID: "s3", Status: sync.PullReset, Reason: sync.CodeCursorExpired, NextCursor: sync.PullBootstrap}}},
			func() any { return new(sync.PullResponse) },
			func(t *testing.T, v any) {
				r := v.(*sync.PullResponse)
				for i := range r.Subscriptions[0].Rows {
					typeValues(t, "notes", &r.Subscriptions[0].Rows[i].Values) // s1 reads notes
				}
				typeChanges(t, r.Subscriptions[1].Commits[0].Changes)
			}},
		{"error", &sync.Error{Code: sync.CodeInvalidValue, Message: "Push: op 1: column \"n\" is not an int64", Rule: "V-3", Column: "n", OpIndex: 1},
			func() any { return new(sync.Error) }, func(*testing.T, any) {}},
		{"error_retryable", &sync.Error{Code: sync.CodeWriteConflict, Message: "another push of the partition won; nothing was written", Rule: "TX-9", OpIndex: -1},
			func() any { return new(sync.Error) }, func(*testing.T, any) {}},
	}
}

// TestWireShape: every wire type encodes to its golden JSON
// (testdata/wire; a renamed or retagged field fails here — rewrite them
// with -update-wire only for a deliberate change of the wire shape), and
// decodes, typed by the schema, to a value equal to the one encoded.
func TestWireShape(t *testing.T) {
	for _, c := range wireCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.MarshalIndent(c.value, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "wire", c.name+".json")
			if *updateWire {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: the encoding changed (-golden +now):\n%s", path, cmp.Diff(string(want), string(got)))
			}
			back := c.fresh()
			dec := json.NewDecoder(bytes.NewReader(want))
			dec.UseNumber()
			dec.DisallowUnknownFields()
			if err := dec.Decode(back); err != nil {
				t.Fatal(err)
			}
			c.typed(t, back)
			orig := c.value
			if _, isErr := orig.(*sync.Error); !isErr {
				back = reflectElem(back)
			}
			if diff := cmp.Diff(orig, back); diff != "" {
				t.Errorf("decoded differs (-encoded +decoded):\n%s", diff)
			}
		})
	}
}

func reflectElem(v any) any {
	switch x := v.(type) {
	case *sync.PushRequest:
		return *x
	case *sync.PushResponse:
		return *x
	case *sync.PullRequest:
		return *x
	case *sync.PullResponse:
		return *x
	}
	return v
}

// TestWireInternalFieldsLeftOut: what the host sets and the store's own
// fields never reach the wire, and never come from it.
func TestWireInternalFieldsLeftOut(t *testing.T) {
	b, _ := json.Marshal(sync.PushResponse{PushResult: sync.PushResult{Status: sync.PushApplied, CommitSeq: 1, CacheIdentity: "cache-7"}})
	b2, _ := json.Marshal(sync.PushRequest{ClientID: "c", ClientCommitID: "k", ActorID: "secret-actor"})
	b3, _ := json.Marshal(sync.PullRequest{ClientID: "c", ActorID: "secret-actor", AtMs: 5, RestartBootstraps: true,
		Subscriptions: []sync.PullSubscription{{ID: "s", RecordScopes: sync.ScopeFilter{"org": {"x"}}}}})
	for _, s := range []string{string(b), string(b2), string(b3)} {
		for _, leak := range []string{"cache-7", "secret-actor", `"atMs"`, `"AtMs"`, "estart", "ecordScopes"} {
			if bytes.Contains([]byte(s), []byte(leak)) {
				t.Errorf("%s carries %q", s, leak)
			}
		}
	}
	var req sync.PushRequest
	if err := json.Unmarshal([]byte(`{"clientId":"c","clientCommitId":"k","actorId":"forged","ActorID":"forged","ops":[]}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.ActorID != "" {
		t.Errorf("a client set ActorID %q through JSON", req.ActorID)
	}
}

// TestErrorRuleField: the rule a message used to end with is Rule; the
// message speaks to the caller; errors.Is/As and Error() keep working.
func TestErrorRuleField(t *testing.T) {
	_, err := sync.TypeValues(wireSchema, "nope", nil)
	var e *sync.Error
	if !errors.As(err, &e) || !errors.Is(err, sync.ErrUnknownTable) {
		t.Fatalf("TypeValues(unknown table) = %v, want an *Error of code unknown_table", err)
	}
	if e.Rule != "SCH-8" || bytes.Contains([]byte(e.Message), []byte("SCH-8")) {
		t.Errorf("Rule %q, Message %q: want the rule in Rule only", e.Rule, e.Message)
	}
	if got, want := e.Error(), `sync.storage.unknown_table: TypeValues: table "nope" is not in the schema (SCH-8)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	b, _ := json.Marshal(err)
	var back sync.Error
	if err := json.Unmarshal(b, &back); err != nil || !errors.Is(&back, sync.ErrUnknownTable) || back.Rule != "SCH-8" || back.OpIndex != -1 {
		t.Errorf("decoded %s as %+v (%v)", b, back, err)
	}
	for _, c := range []struct{ in, msg, rule string }{
		{"a cursor beyond the head (WIN-8)", "a cursor beyond the head", "WIN-8"},
		{"not a valid query (AQ-1, AQ-2)", "not a valid query", "AQ-1, AQ-2"},
		{"window (WIN-1…WIN-5)", "window", "WIN-1…WIN-5"},
		{"lease (RX-5: nothing changes)", "lease (RX-5: nothing changes)", ""},
		{"(TX-10): re-read first", "(TX-10): re-read first", ""},
	} {
		e := driver.Errorf(sync.CodeInternal, "%s", c.in)
		if e.Message != c.msg || e.Rule != c.rule {
			t.Errorf("Errorf(%q) = message %q rule %q, want %q %q", c.in, e.Message, e.Rule, c.msg, c.rule)
		}
	}
}
