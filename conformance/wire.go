package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for WIRE-1 (the JSON form of what a host sends to clients) and
// ERR-5 (an error's rule is a field, not message text), over any driver.

func init() {
	register(
		Case{Name: "WIRE-1/push-and-pull-answers-round-trip-through-json", Run: wireRoundTrip},
		Case{Name: "ERR-5/rule-is-a-field-not-message-text", Run: errRuleField},
	)
}

// wireKinds is a row of the kinds table with a value of every type.
func wireKinds(id string, i int64) syncstore.Values {
	return syncstore.Values{"id": id, "grp": "g1", "s": "snow ☃ \"quoted\"", "i": i, "f": -0.125, "b": true,
		"j": driver.JSON(`{"b": 1, "a": [true, null]}`), "x": []byte{0, 0xff, 7}}
}

// wireBack encodes v as JSON and decodes it into a new value of v's
// type, numbers as json.Number.
func wireBack[V any](t T, what string, v V) V {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, what+": json.Marshal", err)
	var back V
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	must(t, what+": json decode of "+string(b), dec.Decode(&back))
	return back
}

// wireTyped types v as a row of table (sync.TypeValues) or fails.
func wireTyped(t T, table string, v syncstore.Values) syncstore.Values {
	t.Helper()
	typed, err := syncstore.TypeValues(TestSchema(), table, v)
	must(t, "WIRE-1: TypeValues", err)
	return typed
}

// Catches: values a driver reads back in a Go type the JSON form cannot
// carry exactly (an int64 past 2^53 as a float64, bytes as a string),
// or a wire type whose JSON form loses a field.
func wireRoundTrip(t T, h Harness) {
	_, s := pushStore(t, h)
	ctx := t.Context()
	nullRow := syncstore.Values{"id": "k2", "grp": "g1", "s": nil, "i": nil, "f": nil, "b": nil, "j": nil, "x": []byte{}}
	req := syncstore.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1", Ops: []syncstore.PushOp{
		{Table: tKinds, RowID: "k1", Op: driver.OpUpsert, Values: wireKinds("k1", 1<<62+1), BaseVersion: syncstore.Version(0)},
		{Table: tKinds, RowID: "k2", Op: driver.OpUpsert, Values: nullRow}}}
	back := wireBack(t, "WIRE-1: PushRequest", req)
	must(t, "WIRE-1: TypePushRequest", syncstore.TypePushRequest(TestSchema(), &back))
	back.ActorID = req.ActorID // the host's, never the client's
	expectEqual(t, "WIRE-1: PushRequest through JSON", req, back)

	r, err := s.Push(ctx, "p1", back)
	must(t, "WIRE-1: Push", err)
	stale, err := s.Push(ctx, "p1", syncstore.PushRequest{ClientID: "c1", ClientCommitID: "k2", ActorID: "a1", Ops: []syncstore.PushOp{
		{Table: tKinds, RowID: "k1", Op: driver.OpUpsert, Values: wireKinds("k1", 5), BaseVersion: syncstore.Version(0)}}})
	must(t, "WIRE-1: a stale push", err)
	for _, resp := range []syncstore.PushResponse{r, stale} {
		got := wireBack(t, "WIRE-1: PushResponse", resp)
		for i := range got.Changes {
			got.Changes[i].Values = wireTyped(t, got.Changes[i].Table, got.Changes[i].Values)
		}
		for i := range got.Ops {
			got.Ops[i].ServerRow = wireTyped(t, tKinds, got.Ops[i].ServerRow)
		}
		want := resp
		want.CacheIdentity = "" // the store's own, not on the wire
		expectEqual(t, "WIRE-1: PushResponse through JSON", want, got)
	}
	expectEqual(t, "WIRE-1: the stale push conflicts with the row", driver.OpConflict, stale.Ops[0].Status)

	sub := syncstore.PullSubscription{ID: "s1", Table: tKinds, Scopes: driver.ScopeFilter{"grp": {"g1"}}, Cursor: syncstore.PullBootstrap}
	pull := syncstore.PullRequest{ClientID: "c1", ActorID: "a1", Subscriptions: []syncstore.PullSubscription{sub}}
	boot, err := s.Pull(ctx, "p1", pull)
	must(t, "WIRE-1: bootstrap Pull", err)
	sub.Cursor = 0 // then the whole log as a window
	pull.Subscriptions = []syncstore.PullSubscription{sub}
	window, err := s.Pull(ctx, "p1", pull)
	must(t, "WIRE-1: incremental Pull", err)
	expectEqual(t, "WIRE-1: the bootstrap's rows", 2, len(boot.Subscriptions[0].Rows))
	expectEqual(t, "WIRE-1: the window's commits", 1, len(window.Subscriptions[0].Commits))
	for _, resp := range []syncstore.PullResponse{boot, window} {
		got := wireBack(t, "WIRE-1: PullResponse", resp)
		for _, sr := range got.Subscriptions {
			for i := range sr.Rows {
				sr.Rows[i].Values = wireTyped(t, tKinds, sr.Rows[i].Values) // the subscription's table
			}
			for _, c := range sr.Commits {
				for i := range c.Changes {
					c.Changes[i].Values = wireTyped(t, c.Changes[i].Table, c.Changes[i].Values)
				}
			}
		}
		expectEqual(t, "WIRE-1: PullResponse through JSON", resp, got)
	}
}

// ruleAtEnd matches a message ending in a parenthesis of rule IDs.
var ruleAtEnd = regexp.MustCompile(`\([A-Z]+-[0-9]+(?:(?:, |…)[A-Z]+-[0-9]+)*\)$`)

// Catches: an error whose message carries its rule ID as text ("…
// (WIN-8)") instead of Rule, from the store's checks or the driver's
// own; a JSON form without the rule, or one errors.Is no longer matches.
func errRuleField(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	push(t, conn, "p1", tUsers, driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o1"},
		Values: driver.Values{"id": "u1", "org": "o1", "email": "a@x"}})
	tx := begin(t, conn, "p1")
	collision := tx.UpsertRow(ctx, tUsers, driver.Row{ID: "u2", ServerVersion: 1, Scopes: driver.Scopes{"org": "o1"},
		Values: driver.Values{"id": "u2", "org": "o1", "email": "a@x"}})
	_ = tx.Rollback(ctx)
	_, ahead := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7"}},
		AfterSeq: 1 << 40, ThroughSeq: 1 << 41, LimitChanges: 10})
	_, badID := s.Push(ctx, "p1", pushReq("", "k1", pushTodo("t1", "p7", "o1", "x", nil)))
	_, badValue := s.Push(ctx, "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "x", nil), syncstore.PushOp{Table: tTodos, RowID: "t2", Op: driver.OpUpsert,
		Values: driver.Values{"id": "t2", "title": 7, "done": false, "project_id": "p7", "owner_id": "o1", "updated_at": int64(1)}}))
	for _, c := range []struct {
		what string
		err  error
		code driver.Code
		rule string // "" when any rule (a driver's own) will do
	}{
		{"the driver's unique collision (SCH-10)", collision, driver.CodeConstraintViolation, ""},
		{"the driver's cursor ahead (WIN-8)", ahead, driver.CodeCursorAhead, ""},
		{"Push with an empty client id", badID, driver.CodeInvalidArgument, "V-2"},
		{"Push with a value of the wrong type", badValue, driver.CodeInvalidValue, "V-3"},
	} {
		var e *driver.Error
		if !errors.As(c.err, &e) || e.Code != c.code {
			t.Errorf("ERR-5: %s: got %v, want code %s", c.what, c.err, c.code)
			continue
		}
		if ruleAtEnd.MatchString(e.Message) {
			t.Errorf("ERR-5: %s: the message %q ends with its rule; the rule belongs in Rule (%q)", c.what, e.Message, e.Rule)
		}
		if c.rule != "" && e.Rule != c.rule {
			t.Errorf("ERR-5: %s: Rule %q, want %q", c.what, e.Rule, c.rule)
		}
		b, err := json.Marshal(e)
		must(t, "ERR-5: json.Marshal", err)
		var back driver.Error
		must(t, "ERR-5: json.Unmarshal", json.Unmarshal(b, &back))
		if !errors.Is(&back, e) || back.Message != e.Message || back.Rule != e.Rule || back.OpIndex != e.OpIndex || back.Column != e.Column {
			t.Errorf("ERR-5: %s: %s decodes as %s", c.what, b, fmt.Sprintf("%+v", back))
		}
	}
	if e := (*driver.Error)(nil); errors.As(badValue, &e) && e.OpIndex != 1 {
		t.Errorf("ERR-5: the wrong-typed value's error has OpIndex %d, want 1", e.OpIndex)
	}
}
