package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

var p1 = map[string][]string{"project_id": {"p1"}}

// TestRoundPushPull: a push applies, the pushing client's pull in the same
// round bootstraps it, a second client pulls it incrementally, and a
// replay answers cached (SPEC §6.3, §4.5, §4.7, §2.3).
func TestRoundPushPull(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", map[string][]string{"project_id": {"p1", "p2"}})
		e.grant("bob", map[string][]string{"project_id": {"p1"}})
		ep := e.epoch("alice", "c1")

		m := e.sync("alice", 2, hdr("c1", ep),
			commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"), 0), upsert("tasks", "t2", e.task("t2", "p2", "two"))),
			&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
		h := m.Frames[0].(*ssp2.RespHeader)
		if h.LogEpoch != ep || h.ResetRequired || !h.LatestSchemaVersion.Present || h.LatestSchemaVersion.Value != 3 {
			t.Fatalf("header %+v", h)
		}
		pr := framesOf[*ssp2.PushResult](m)
		if len(pr) != 1 || pr[0].Status != ssp2.PushApplied || pr[0].CommitSeq != 1 || len(pr[0].Results) != 2 {
			t.Fatalf("push result %+v", pr)
		}
		secs := sections(m)
		if len(secs) != 1 || !secs[0].start.Bootstrap || secs[0].start.Status != ssp2.SubActive || len(secs[0].inline) != 1 {
			t.Fatalf("sections %+v", secs)
		}
		if secs[0].end.NextCursor != 1 || secs[0].end.BootstrapState != "" {
			t.Fatalf("sub end %+v", secs[0].end)
		}
		seg, err := ssp2.DecodeSegment(secs[0].inline[0].Payload)
		if err != nil {
			t.Fatal(err)
		}
		if len(seg.Blocks) != 1 || len(seg.Blocks[0]) != 1 || seg.Blocks[0][0].Values[0] != "t1" || seg.Blocks[0][0].ServerVersion != 1 {
			t.Fatalf("segment %s", seg.Render())
		}

		// bob pulls incrementally from 0: commit 1 with only p1's change.
		m = e.sync("bob", 2, hdr("c2", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 0))
		secs = sections(m)
		if len(secs) != 1 || secs[0].start.Bootstrap || len(secs[0].commits) != 1 {
			t.Fatalf("incremental %+v", secs)
		}
		c := secs[0].commits[0]
		if c.CommitSeq != 1 || c.ActorID != "alice" || len(c.Changes) != 1 || c.Changes[0].RowID != "t1" || c.Changes[0].RowVersion != 1 ||
			c.Changes[0].Scopes["project_id"] != "p1" || e.decodeTask(c.Changes[0].Row)["title"] != "one" {
			t.Fatalf("commit %+v", c)
		}
		if c.CreatedAtMs != e.clock.Now().UnixMilli() {
			t.Fatalf("createdAt %d, want the server clock %d", c.CreatedAtMs, e.clock.Now().UnixMilli())
		}
		if secs[0].end.NextCursor != 1 {
			t.Fatalf("next cursor %d", secs[0].end.NextCursor)
		}

		// Replay: cached with the original seq (§2.3).
		m = e.sync("alice", 2, hdr("c1", ep),
			commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"), 0), upsert("tasks", "t2", e.task("t2", "p2", "two"))))
		pr = framesOf[*ssp2.PushResult](m)
		if len(pr) != 1 || pr[0].Status != ssp2.PushCached || pr[0].CommitSeq != 1 {
			t.Fatalf("replay %+v", pr)
		}
		// A replay whose ops differ (an outbox re-encoded) still answers the
		// stored result (§2.3), never sync.idempotency_key_reused.
		m = e.sync("alice", 2, hdr("c1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "other"))))
		if pr = framesOf[*ssp2.PushResult](m); pr[0].Status != ssp2.PushCached || pr[0].CommitSeq != 1 {
			t.Fatalf("re-encoded replay %+v", pr)
		}
		if head, _ := e.store.MaxCommitSeq(context.Background(), "p1"); head != 1 {
			t.Fatalf("head %d after replays", head)
		}
	})
}

// TestRoundConflicts: a stale baseVersion is a conflict carrying the
// server's row; a baseVersion on an absent row is sync.row_missing; the
// rejection replays as itself; a delete's baseVersion is ignored (§6.2,
// §6.3).
func TestRoundConflicts(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		e.sync("alice", 2, hdr("c1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))
		m := e.sync("alice", 2, hdr("c1", ep),
			commit("k2", upsert("tasks", "t1", e.task("t1", "p1", "two"), 1)),
			commit("k3", upsert("tasks", "t1", e.task("t1", "p1", "three"), 1), upsert("tasks", "t9", e.task("t9", "p1", "x"))),
			commit("k4", upsert("tasks", "t9", e.task("t9", "p1", "x")), upsert("tasks", "t8", e.task("t8", "p1", "y"), 5)),
			commit("k5", ssp2.PushOperation{Table: "tasks", RowID: "t1", Op: ssp2.OpDelete, BaseVersion: ssp2.Some(int64(77))}))
		pr := framesOf[*ssp2.PushResult](m)
		if len(pr) != 4 {
			t.Fatalf("results %+v", pr)
		}
		if pr[0].Status != ssp2.PushApplied {
			t.Fatalf("k2 %+v", pr[0])
		}
		r := pr[1]
		if r.Status != ssp2.PushRejected || r.CommitSeq != 0 || len(r.Results) != 1 || r.Results[0].OpIndex != 0 ||
			r.Results[0].Status != ssp2.OpConflict || r.Results[0].Code != "sync.version_conflict" || r.Results[0].ServerVersion != 2 {
			t.Fatalf("k3 %+v", r)
		}
		if got := e.decodeTask(r.Results[0].ServerRow)["title"]; got != "two" {
			t.Fatalf("conflict server row title %v", got)
		}
		r = pr[2]
		if r.Status != ssp2.PushRejected || len(r.Results) != 1 || r.Results[0].OpIndex != 1 || r.Results[0].Status != ssp2.OpError ||
			r.Results[0].Code != "sync.row_missing" || r.Results[0].Retryable {
			t.Fatalf("k4 %+v", r)
		}
		if _, found, _ := e.store.GetRow(context.Background(), "p1", "tasks", "t9"); found {
			t.Fatal("k4's first op was applied: commits are atomic (§6.4)")
		}
		if pr[3].Status != ssp2.PushApplied {
			t.Fatalf("k5 %+v", pr[3])
		}
		// The conflict replays as itself (§2.3).
		m = e.sync("alice", 2, hdr("c1", ep),
			commit("k3", upsert("tasks", "t1", e.task("t1", "p1", "three"), 1), upsert("tasks", "t9", e.task("t9", "p1", "x"))))
		if r = framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushRejected || r.Results[0].Status != ssp2.OpConflict || r.Results[0].ServerVersion != 2 {
			t.Fatalf("replayed conflict %+v", r)
		}
	})
}

// TestRoundAuthorization: writes are authorized against the stored row
// (or the inserted payload), scope columns never move on update, and a
// failing resolver refuses writes and revokes reads (§3.2, §3.4).
func TestRoundAuthorization(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", map[string][]string{"project_id": {"p1", "p2"}})
		e.grant("mallory", map[string][]string{"project_id": {"p2"}})
		ep := e.epoch("alice", "c1")
		e.sync("alice", 2, hdr("c1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))

		forbidden := func(m *ssp2.Message, what string) {
			t.Helper()
			r := framesOf[*ssp2.PushResult](m)[0]
			if r.Status != ssp2.PushRejected || r.Results[0].Code != "sync.forbidden" {
				t.Fatalf("%s: %+v", what, r)
			}
		}
		// Insert into a scope not held; update and delete of a row in a
		// scope not held — even when the payload names a held scope.
		forbidden(e.sync("mallory", 2, hdr("m1", ep), commit("a", upsert("tasks", "t5", e.task("t5", "p1", "x")))), "insert")
		forbidden(e.sync("mallory", 2, hdr("m1", ep), commit("b", upsert("tasks", "t1", e.task("t1", "p2", "mine")))), "update")
		forbidden(e.sync("mallory", 2, hdr("m1", ep), commit("c", del("tasks", "t1"))), "delete")
		// Deleting an absent row needs no authorization (§6.2).
		if r := framesOf[*ssp2.PushResult](e.sync("mallory", 2, hdr("m1", ep), commit("d", del("tasks", "nope"))))[0]; r.Status != ssp2.PushApplied {
			t.Fatalf("absent delete %+v", r)
		}
		// A held update that tries to move the row keeps its scope (§3.4
		// rule 5).
		m := e.sync("alice", 2, hdr("c1", ep), commit("k2", upsert("tasks", "t1", e.task("t1", "p2", "moved"))))
		if r := framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushApplied {
			t.Fatalf("update %+v", r)
		}
		row, _, _ := e.store.GetRow(context.Background(), "p1", "tasks", "t1")
		if row.Values["project_id"] != "p1" || row.Values["title"] != "moved" {
			t.Fatalf("row after a scope move attempt %+v", row.Values)
		}
		// A failing resolver: writes forbidden, subscriptions revoked.
		e.setFailing(true)
		m = e.sync("alice", 2, hdr("c1", ep), commit("k3", upsert("tasks", "t7", e.task("t7", "p1", "x"))),
			&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 0))
		forbidden(m, "resolver down")
		secs := sections(m)
		if secs[0].start.Status != ssp2.SubRevoked || secs[0].start.ReasonCode != "sync.scope_revoked" || secs[0].end.NextCursor != 0 ||
			len(secs[0].start.EffectiveScopes) != 0 {
			t.Fatalf("revoked %+v %+v", secs[0].start, secs[0].end)
		}
		e.setFailing(false)
		// Revocation by grant: a requested value not held; partial loss too.
		e.grant("alice", map[string][]string{"project_id": {"p2"}})
		m = e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3},
			sub("s1", "tasks", map[string][]string{"project_id": {"p1"}}, 0),
			sub("s2", "tasks", map[string][]string{"project_id": {"p1", "p2"}}, -1))
		secs = sections(m)
		if secs[0].start.Status != ssp2.SubRevoked || secs[1].start.Status != ssp2.SubActive ||
			len(secs[1].start.EffectiveScopes["project_id"]) != 1 {
			t.Fatalf("narrowed %+v %+v", secs[0].start, secs[1].start)
		}
	})
}

// TestRoundRequestErrors: request-level failures answer HTTP JSON errors
// with the catalog's shape and write nothing (§1.7, §10.1).
func TestRoundRequestErrors(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	e.grant("bob", p1)
	ep := e.epoch("alice", "c1")
	e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	ops := make([]ssp2.PushOperation, 501)
	for i := range ops {
		ops[i] = del("tasks", "x")
	}
	cases := []struct {
		name   string
		actor  string
		body   []byte
		status int
		code   string
	}{
		{"garbage", "alice", []byte("nope"), 400, "sync.invalid_request"},
		{"no auth", "", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}), 401, "sync.auth_required"},
		{"empty commit", "alice", append(req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3})[:8], 0x01, 0, 0, 0, 0), 400, "sync.invalid_request"},
		{"acquisition with a push", "alice", req(2, hdr("c1", ""), commit("k", del("tasks", "x"))), 400, "sync.invalid_request"},
		{"reserved client id", "alice", req(2, hdr(`["remote-command","x"]`, ep), &ssp2.PullHeader{Accept: 3}), 400, "sync.invalid_client_id"},
		{"client bound to another actor", "bob", req(2, hdr("c1", ep), commit("k", del("tasks", "x"))), 400, "sync.invalid_client_id"},
		{"client bound to another actor, pull", "bob", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}), 400, "sync.invalid_client_id"},
		{"too many operations", "alice", req(2, hdr("c1", ep), commit("k", ops...)), 400, "sync.too_many_operations"},
		{"no rows accept bit", "alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 4}), 400, "sync.invalid_request"},
		{"duplicate subscription", "alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, -1), sub("s", "tasks", p1, -1)), 400, "sync.invalid_subscription"},
		{"unknown table", "alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "nope", p1, -1)), 400, "sync.unknown_table"},
		{"undeclared key", "alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", map[string][]string{"owner": {"a"}}, -1)), 400, "sync.invalid_subscription"},
		{"requested star", "alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", map[string][]string{"project_id": {"*"}}, -1)), 400, "sync.invalid_subscription"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.post(tc.actor, tc.body)
			if res.status != tc.status || errorCode(res) != tc.code {
				t.Fatalf("got %d %v, want %d %s", res.status, res.err, tc.status, tc.code)
			}
			for _, k := range []string{"code", "category", "retryable", "recommendedAction", "message"} {
				if _, ok := res.err[k]; !ok {
					t.Fatalf("error body lacks %q: %v", k, res.err)
				}
			}
			if head, _ := e.store.MaxCommitSeq(context.Background(), "p1"); head != 0 {
				t.Fatalf("a refused request wrote a commit")
			}
		})
	}
	// A client id bound by a push alone (CR-7): another actor's commit
	// under it is refused at request level, and nothing is written.
	e.sync("alice", 2, hdr("c2", ep), commit("k1", upsert("tasks", "t9", e.task("t9", "p1", "nine"))))
	bound := e.post("bob", req(2, hdr("c2", ep), commit("k2", upsert("tasks", "t8", e.task("t8", "p1", "eight")))))
	if bound.status != 400 || errorCode(bound) != "sync.invalid_client_id" {
		t.Fatalf("commit under a client id a push bound to another actor: %d %v", bound.status, bound.err)
	}
	if head, _ := e.store.MaxCommitSeq(context.Background(), "p1"); head != 1 {
		t.Fatalf("head %d after the refused commit, want 1", head)
	}
	if _, found, _ := e.store.GetPushResult(context.Background(), "p1", "c2", "k2"); found {
		t.Fatalf("the refused commit left a push result")
	}
	// A resolver returning a variable no table declares fails the request.
	e.grant("alice", map[string][]string{"nope": {"x"}})
	res := e.post("alice", req(2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "tasks", p1, -1)))
	if res.status != 400 || errorCode(res) != "sync.invalid_subscription" {
		t.Fatalf("undeclared resolved key: %d %v", res.status, res.err)
	}
	// 415 before anything else.
	r, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/sync", nil)
	r.Header.Set("Content-Type", "application/json")
	resp, err := e.ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("content type: %d", resp.StatusCode)
	}
}

// TestRoundCommitLevelRejections: an unknown table or an undecodable
// payload in a push operation rejects that commit only; the batch goes on
// (§1.7, §6.4).
func TestRoundCommitLevelRejections(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	m := e.sync("alice", 2, hdr("c1", ep),
		commit("a", upsert("nope", "t1", e.task("t1", "p1", "x"))),
		commit("b", upsert("tasks", "t1", []byte{1, 2, 3})),
		commit("c", upsert("tasks", "t2", e.task("t1", "p1", "pk differs"))),
		commit("d", upsert("tasks", "t3", e.task("t3", "p1", "ok"))))
	pr := framesOf[*ssp2.PushResult](m)
	want := []string{"sync.unknown_table", "sync.invalid_request", "sync.invalid_request", ""}
	for i, w := range want {
		if w == "" {
			if pr[i].Status != ssp2.PushApplied {
				t.Fatalf("commit %d: %+v", i, pr[i])
			}
			continue
		}
		if pr[i].Status != ssp2.PushRejected || pr[i].Results[0].Code != w {
			t.Fatalf("commit %d: %+v, want %s", i, pr[i], w)
		}
	}
}

// TestRoundEpochAndFloor: epoch acquisition, a stale epoch, the schema
// floor and wire version 1 before and after a rotation (§1.6, §2.1, §9).
func TestRoundEpochAndFloor(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		// A stale epoch: reset, nothing processed.
		m := e.sync("alice", 2, hdr("c1", "stale"), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
		if h := m.Frames[0].(*ssp2.RespHeader); !h.ResetRequired || h.LogEpoch != ep || len(m.Frames) != 1 {
			t.Fatalf("stale epoch %+v", m.Frames)
		}
		// Schema floor (older and newer), with the epoch fields on v2.
		for _, v := range []int32{2, 4} {
			m = e.sync("alice", 2, &ssp2.ReqHeader{ClientID: "c1", SchemaVersion: v, LogEpoch: ep},
				commit("k", upsert("tasks", "t1", e.task("t1", "p1", "x"))))
			h := m.Frames[0].(*ssp2.RespHeader)
			if len(m.Frames) != 1 || h.RequiredSchemaVersion.Value != 3 || !h.RequiredSchemaVersion.Present || h.LatestSchemaVersion.Value != 3 || h.LogEpoch != ep || h.ResetRequired {
				t.Fatalf("floor %d: %+v", v, m.Frames)
			}
		}
		// Wire version 1 is served before any rotation, answered in v1.
		m = e.sync("alice", 1, &ssp2.ReqHeader{ClientID: "c1", SchemaVersion: 3},
			commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "x"))), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 0))
		if m.WireVersion != 1 || framesOf[*ssp2.PushResult](m)[0].Status != ssp2.PushApplied {
			t.Fatalf("v1 %+v", m)
		}
		if head, _ := e.store.MaxCommitSeq(context.Background(), "p1"); head != 1 {
			t.Fatal("the floor responses processed a push")
		}
		ep2, err := e.srv.RotateLogEpoch(context.Background(), "p1")
		if err != nil || ep2 == ep || ep2 == "" {
			t.Fatalf("rotate: %q %v", ep2, err)
		}
		res := e.post("alice", req(1, &ssp2.ReqHeader{ClientID: "c1", SchemaVersion: 3}, &ssp2.PullHeader{Accept: 3}))
		if res.status != 400 || errorCode(res) != "sync.client_wire_unsupported" {
			t.Fatalf("v1 after rotation: %d %v", res.status, res.err)
		}
		m = e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3})
		if h := m.Frames[0].(*ssp2.RespHeader); !h.ResetRequired || h.LogEpoch != ep2 {
			t.Fatalf("old epoch after rotation %+v", h)
		}
	})
}

// TestRoundLimitCommits: a window over limitCommits is cut before the
// commit that would exceed it, one oversized commit alone is delivered
// whole, and the next pull goes on from the last commit delivered (§4.2,
// §4.5).
func TestRoundLimitCommits(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		e.sync("alice", 2, hdr("c1", ep),
			commit("a", upsert("tasks", "t1", e.task("t1", "p1", "a")), upsert("tasks", "t2", e.task("t2", "p1", "b"))),
			commit("b", upsert("tasks", "t3", e.task("t3", "p1", "c")), upsert("tasks", "t4", e.task("t4", "p1", "d")), upsert("tasks", "t5", e.task("t5", "p1", "e"))),
			commit("c", upsert("tasks", "t6", e.task("t6", "p1", "f"))))
		pull := func(cursor int64, limit int32) *section {
			m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3, LimitCommits: limit}, sub("s1", "tasks", p1, cursor))
			return sections(m)[0]
		}
		s := pull(0, 4)
		if len(s.commits) != 1 || s.commits[0].CommitSeq != 1 || s.end.NextCursor != 1 {
			t.Fatalf("limit 4 from 0: %d commits, next %d", len(s.commits), s.end.NextCursor)
		}
		s = pull(1, 2)
		if len(s.commits) != 1 || s.commits[0].CommitSeq != 2 || len(s.commits[0].Changes) != 3 || s.end.NextCursor != 2 {
			t.Fatalf("oversized alone: %d commits, next %d", len(s.commits), s.end.NextCursor)
		}
		s = pull(2, 0)
		if len(s.commits) != 1 || s.end.NextCursor != 3 {
			t.Fatalf("rest: %d commits, next %d", len(s.commits), s.end.NextCursor)
		}
		s = pull(3, 0)
		if len(s.commits) != 0 || s.end.NextCursor != 3 {
			t.Fatalf("caught up: %d commits, next %d", len(s.commits), s.end.NextCursor)
		}
	})
}

// TestRoundCursorExpired: a cursor below the pruning horizon is reset with
// sync.cursor_expired, the request cursor echoed (§4.6).
func TestRoundCursorExpired(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		for _, k := range []string{"a", "b", "c"} {
			e.sync("alice", 2, hdr("c1", ep), commit(k, upsert("tasks", "t"+k, e.task("t"+k, "p1", k))))
		}
		ctx := context.Background()
		if err := e.store.SetHorizonSeq(ctx, "p1", 2); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.PruneCommitsThrough(ctx, "p1", 2); err != nil {
			t.Fatal(err)
		}
		m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 1), sub("s2", "tasks", p1, 2))
		secs := sections(m)
		if secs[0].start.Status != ssp2.SubReset || secs[0].start.ReasonCode != "sync.cursor_expired" || secs[0].end.NextCursor != 1 || len(secs[0].commits) != 0 {
			t.Fatalf("reset %+v %+v", secs[0].start, secs[0].end)
		}
		if secs[1].start.Status != ssp2.SubActive || len(secs[1].commits) != 1 || secs[1].end.NextCursor != 3 {
			t.Fatalf("at the horizon %+v", secs[1])
		}
	})
}

var _ = sync.PullBootstrap

// TestRoundStoredRejections: rejections decided inside the push — a write
// outside the grant (§3.4), a unique-index collision, a crdt value without
// a merger, a blob reference without a blob store — are stored with the
// commit and replay as themselves, even after the grant changed (§2.3).
func TestRoundStoredRejections(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", map[string][]string{"project_id": {"p1"}, "owner": {"alice"}})
		ep := e.epoch("alice", "c1")
		note := func(id, body string) []byte {
			return e.row("notes", driver.Values{"id": id, "owner": "alice", "body": body})
		}
		doc := func(id string, state []byte, file driver.JSON) []byte {
			v := driver.Values{"id": id, "owner": "alice", "state": nil, "file": nil}
			if state != nil {
				v["state"] = state
			}
			if file != "" {
				v["file"] = file
			}
			return e.row("docs", v)
		}
		blob := driver.JSON(`{"blobId":"sha256:` + strings.Repeat("a", 64) + `","byteLength":3}`)
		commits := []*ssp2.PushCommit{
			commit("n1", upsert("notes", "n1", note("n1", "same"))),
			commit("n2", upsert("notes", "n2", note("n2", "same"))),
			commit("d1", upsert("docs", "d1", doc("d1", []byte{1, 2}, ""))),
			commit("d2", upsert("docs", "d2", doc("d2", nil, blob))),
			commit("d3", upsert("docs", "d3", doc("d3", nil, ""))),
			commit("f1", upsert("tasks", "t1", e.task("t1", "p2", "elsewhere"))),
		}
		want := []string{"", "sync.constraint_violation", "sync.crdt_merge_failed", "blob.not_found", "", "sync.forbidden"}
		check := func(m *ssp2.Message, what string) {
			t.Helper()
			for i, r := range framesOf[*ssp2.PushResult](m) {
				if want[i] == "" {
					if r.Status != ssp2.PushApplied && r.Status != ssp2.PushCached {
						t.Fatalf("%s: commit %d: %+v", what, i, r)
					}
					continue
				}
				if r.Status != ssp2.PushRejected || r.Results[0].Code != want[i] {
					t.Fatalf("%s: commit %d: %+v, want %s", what, i, r, want[i])
				}
				if _, ok := ssp2.Lookup(ssp2.Code(r.Results[0].Code)); !ok {
					t.Fatalf("%s: a code outside the catalog: %s", what, r.Results[0].Code)
				}
			}
		}
		check(e.sync("alice", 2, append([]ssp2.Frame{hdr("c1", ep)}, framesAsAny(commits)...)...), "first")
		e.grant("alice", map[string][]string{"project_id": {"p1", "p2"}, "owner": {"alice"}})
		check(e.sync("alice", 2, append([]ssp2.Frame{hdr("c1", ep)}, framesAsAny(commits)...)...), "replay")
		if _, found, _ := e.store.GetRow(context.Background(), "p1", "tasks", "t1"); found {
			t.Fatal("the replay of a forbidden commit applied it")
		}
	})
}

func framesAsAny(cs []*ssp2.PushCommit) []ssp2.Frame {
	out := make([]ssp2.Frame, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// TestRoundBootstrapPaging: one pull serves up to maxSnapshotPages pages
// pinned at one head, the resume token goes on from there, and an unusable
// token or a cursor beyond the head restarts the bootstrap rather than
// failing (§4.7).
func TestRoundBootstrapPaging(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "c1")
		e.seed("alice", "c1", ep, "p1", 250)
		ph := &ssp2.PullHeader{Accept: 3, LimitSnapshotRows: 50, MaxSnapshotPages: 3}
		m := e.sync("alice", 2, hdr("c1", ep), ph, sub("s", "tasks", p1, -1))
		sec := sections(m)[0]
		if len(sec.inline) != 3 || sec.end.BootstrapState == "" || sec.end.NextCursor != 3 {
			t.Fatalf("first pull: %d segments, %+v", len(sec.inline), sec.end)
		}
		// A commit after the pin, of a row before the pages served, does
		// not disturb the resumed bootstrap (the window after the pin
		// brings it).
		e.sync("alice", 2, hdr("c1", ep), commit("late", upsert("tasks", "p0-late", e.task("p0-late", "p1", "late"))))
		s := &ssp2.Subscription{ID: "s", Table: "tasks", Scopes: p1, Cursor: 3, BootstrapState: sec.end.BootstrapState}
		m = e.sync("alice", 2, hdr("c1", ep), ph, s)
		sec = sections(m)[0]
		rows := 0
		for _, in := range sec.inline {
			seg, _ := ssp2.DecodeSegment(in.Payload)
			for _, b := range seg.Blocks {
				rows += len(b)
			}
		}
		if rows != 100 || sec.end.BootstrapState != "" || sec.end.NextCursor != 3 {
			t.Fatalf("resumed: %d rows, %+v", rows, sec.end)
		}
		// An altered token and a cursor from the future restart.
		for _, bad := range []*ssp2.Subscription{
			{ID: "s", Table: "tasks", Scopes: p1, Cursor: 3, BootstrapState: `{"asOfCommitSeq":3,"tables":["tasks"],"tableIndex":0,"rowCursor":"AAAA"}`},
			{ID: "s", Table: "tasks", Scopes: p1, Cursor: 3, BootstrapState: `"garbage"`},
			{ID: "s", Table: "tasks", Scopes: p1, Cursor: 999},
		} {
			m = e.sync("alice", 2, hdr("c1", ep), ph, bad)
			sec = sections(m)[0]
			if sec.start.Status != ssp2.SubActive || !sec.start.Bootstrap || len(sec.inline) != 3 || sec.end.NextCursor != 4 {
				t.Fatalf("restart from %+v: %+v %+v", bad, sec.start, sec.end)
			}
			seg, _ := ssp2.DecodeSegment(sec.inline[0].Payload)
			if seg.Blocks[0][0].Values[0] != "p0-late" {
				t.Fatalf("the restart did not start at the first row: %v", seg.Blocks[0][0].Values[0])
			}
		}
	})
}
