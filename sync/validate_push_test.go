package sync

import (
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestValidateApplicationCode(t *testing.T) {
	good := []string{"a", "Z", "conflict", "app.rule:v2-x_y", "x9", strings.Repeat("a", 128), "syncx.a", "Sync", "clients.x", "blob"}
	for _, c := range good {
		if err := ValidateApplicationCode(c); err != nil {
			t.Errorf("ValidateApplicationCode(%q) = %v; want nil", c, err)
		}
	}
	bad := []string{"", "1secret", "_secret", ".secret", "-secret", "secret code", "secret/x", "sécret", "secret\x00",
		"secret" + strings.Repeat("a", 123), // 129 bytes
		"sync.secret", "blob.secret", "operation.secret", "presence.secret", "client.secret", "reaction.secret",
		"SYNC.secret", "Reaction.secret", "sync.", "client."}
	for _, c := range bad {
		err := ValidateApplicationCode(c)
		expectErr(t, err, driver.CodeInvalidArgument, "", "secret")
		if err != nil && !strings.Contains(err.Error(), "V-8") {
			t.Errorf("ValidateApplicationCode(%q) message %q does not cite V-8", c, err)
		}
	}
}

func TestCheckPushResult(t *testing.T) {
	applied := driver.PushResult{Status: driver.PushApplied, CommitSeq: 3, RecordedAtMs: -1, CacheIdentity: "ci",
		Ops: []driver.OpResult{
			{Status: driver.OpApplied},
			{Status: driver.OpConflict, Code: "sync.conflict", Message: "m", ServerVersion: 2,
				ServerRow: driver.Values{"a": "x", "b": int64(1), "c": 1.5, "d": true, "e": driver.JSON("{}"), "f": []byte{}, "g": nil}},
			{Status: driver.OpError, Code: "app.failed", Retryable: true, Details: driver.JSON(`{"k":[1]}`)},
		}}
	rejected := driver.PushResult{Status: driver.PushRejected, Ops: []driver.OpResult{{Status: driver.OpError, Code: "client.bad"}}}
	for _, r := range []driver.PushResult{applied, rejected, {Status: driver.PushRejected}} {
		if err := checkPushResult("op", r); err != nil {
			t.Errorf("valid push result rejected: %v", err)
		}
	}
	withOp := func(o driver.OpResult) driver.PushResult {
		return driver.PushResult{Status: driver.PushRejected, Ops: []driver.OpResult{{Status: driver.OpApplied}, o}}
	}
	cases := []struct {
		name   string
		r      driver.PushResult
		code   driver.Code
		column string
	}{
		{"empty status", driver.PushResult{}, driver.CodeInvalidArgument, ""},
		{"unknown status", driver.PushResult{Status: "done", CommitSeq: 1}, driver.CodeInvalidArgument, ""},
		{"applied seq 0", driver.PushResult{Status: driver.PushApplied}, driver.CodeInvalidArgument, ""},
		{"applied seq -1", driver.PushResult{Status: driver.PushApplied, CommitSeq: -1}, driver.CodeInvalidArgument, ""},
		{"rejected with seq", driver.PushResult{Status: driver.PushRejected, CommitSeq: 1}, driver.CodeInvalidArgument, ""},
		{"cache identity invalid UTF-8", driver.PushResult{Status: driver.PushRejected, CacheIdentity: "secret\xff"}, driver.CodeInvalidArgument, ""},
		{"op unknown status", withOp(driver.OpResult{Status: "ok"}), driver.CodeInvalidArgument, ""},
		{"op code digit first", withOp(driver.OpResult{Status: driver.OpError, Code: "9secret"}), driver.CodeInvalidArgument, ""},
		{"op code space", withOp(driver.OpResult{Status: driver.OpError, Code: "secret x"}), driver.CodeInvalidArgument, ""},
		{"op code 129 bytes", withOp(driver.OpResult{Status: driver.OpError, Code: "secret" + strings.Repeat("x", 123)}), driver.CodeInvalidArgument, ""},
		{"op message invalid UTF-8", withOp(driver.OpResult{Status: driver.OpError, Message: "secret\xff"}), driver.CodeInvalidArgument, ""},
		{"op details invalid JSON", withOp(driver.OpResult{Status: driver.OpError, Details: driver.JSON(`{"secret"`)}), driver.CodeInvalidArgument, ""},
		{"server row NaN", withOp(driver.OpResult{Status: driver.OpConflict, ServerRow: driver.Values{"f": math.NaN()}}), driver.CodeInvalidValue, "f"},
		{"server row int", withOp(driver.OpResult{Status: driver.OpConflict, ServerRow: driver.Values{"n": 1}}), driver.CodeInvalidValue, "n"},
		{"server row nil bytes", withOp(driver.OpResult{Status: driver.OpConflict, ServerRow: driver.Values{"x": []byte(nil)}}), driver.CodeInvalidValue, "x"},
		{"server row bad JSON", withOp(driver.OpResult{Status: driver.OpConflict, ServerRow: driver.Values{"j": driver.JSON("secret")}}), driver.CodeInvalidValue, "j"},
		{"server row bad string", withOp(driver.OpResult{Status: driver.OpConflict, ServerRow: driver.Values{"s": "secret\xff"}}), driver.CodeInvalidValue, "s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectErr(t, checkPushResult("op", c.r), c.code, c.column, "secret")
		})
	}
	// Everything checkPushResult accepts must encode (PR-1 round trip).
	for _, r := range []driver.PushResult{applied, rejected} {
		if _, err := driver.EncodePushResult(r); err != nil {
			t.Errorf("EncodePushResult of an accepted result: %v", err)
		}
	}
}

func TestCheckIndexQueryOrder(t *testing.T) {
	cs := &compiledSchema{tables: map[string]*compiledTable{"kinds": kindsTable(t)}}
	ok := driver.IndexQuery{Table: "kinds", Index: "by_int", Values: []any{int64(1), nil}, Limit: 1000}
	if err := cs.checkIndexQuery("op", ok); err != nil {
		t.Fatalf("valid index query rejected: %v", err)
	}
	q := func(f func(q *driver.IndexQuery)) driver.IndexQuery {
		c := ok
		c.Values = append([]any(nil), ok.Values...)
		f(&c)
		return c
	}
	cases := []struct {
		name string
		q    driver.IndexQuery
		code driver.Code
	}{
		// Each case also breaks every later rule, so the order shows.
		{"unknown table first", driver.IndexQuery{Table: "nope", Index: "nope", Limit: 0, Values: []any{1}}, driver.CodeUnknownTable},
		{"limit before index", q(func(q *driver.IndexQuery) { q.Limit = 1001; q.Index = "nope"; q.Values = nil }), driver.CodeInvalidLimit},
		{"limit 0", q(func(q *driver.IndexQuery) { q.Limit = 0 }), driver.CodeInvalidLimit},
		{"index before count", q(func(q *driver.IndexQuery) { q.Index = "nope"; q.Values = []any{1} }), driver.CodeIndexNotFound},
		{"count before type", q(func(q *driver.IndexQuery) { q.Values = []any{1} }), driver.CodeIndexValueCountMismatch},
		{"count too many", q(func(q *driver.IndexQuery) { q.Values = append(q.Values, int64(2)) }), driver.CodeIndexValueCountMismatch},
		{"type int", q(func(q *driver.IndexQuery) { q.Values[0] = 1 }), driver.CodeInvalidValue},
		{"type NUL string", q(func(q *driver.IndexQuery) { q.Values[1] = "secret\x00" }), driver.CodeInvalidValue},
		{"after row id", q(func(q *driver.IndexQuery) { q.AfterRowID = "secret\xff" }), driver.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectErr(t, cs.checkIndexQuery("op", c.q), c.code, "-", "secret")
		})
	}
}

func TestCheckClientRecord(t *testing.T) {
	cs := &compiledSchema{tables: map[string]*compiledTable{"kinds": kindsTable(t)}}
	rec := func(f func(r *driver.ClientRecord)) driver.ClientRecord {
		r := driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: -1, Cursor: -1, UpdatedAtMs: -1,
			Subscriptions: []driver.Subscription{{ID: "s1", Table: "kinds", Scopes: driver.ScopeFilter{"grp": {"g", ""}}},
				{ID: "s2", Table: "kinds"}}}
		f(&r)
		return r
	}
	if err := cs.checkClientRecord("op", rec(func(*driver.ClientRecord) {})); err != nil {
		t.Fatalf("valid record rejected: %v", err)
	}
	cases := []struct {
		name string
		r    driver.ClientRecord
		code driver.Code
	}{
		{"empty client id", rec(func(r *driver.ClientRecord) { r.ClientID = "" }), driver.CodeInvalidArgument},
		{"remote-command client id", rec(func(r *driver.ClientRecord) { r.ClientID = `["remote-command","secret"]` }), driver.CodeInvalidClientID},
		{"empty actor", rec(func(r *driver.ClientRecord) { r.ActorID = "" }), driver.CodeInvalidArgument},
		{"actor 256 bytes", rec(func(r *driver.ClientRecord) { r.ActorID = strings.Repeat("a", 256) }), driver.CodeInvalidArgument},
		{"subscription empty id", rec(func(r *driver.ClientRecord) { r.Subscriptions[1].ID = "" }), driver.CodeInvalidArgument},
		{"subscription unknown table", rec(func(r *driver.ClientRecord) { r.Subscriptions[1].Table = "nope" }), driver.CodeUnknownTable},
		{"subscription bad value", rec(func(r *driver.ClientRecord) { r.Subscriptions[0].Scopes["grp"][0] = "secret\x00" }), driver.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectErr(t, cs.checkClientRecord("op", c.r), c.code, "-", "secret")
		})
	}
}
