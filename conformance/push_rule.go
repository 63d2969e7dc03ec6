package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-1…PUSH-6 and PUSH-8: sync.Store.Push over any driver
// (the engine is portable, so the suite judges engine and driver
// together). Races and unknown outcomes (PUSH-1's race, PUSH-7) are in
// push_outcomes.go.

func init() {
	register(
		Case{Name: "PUSH-1/replay-returns-the-stored-result-writes-nothing", Run: pushReplay},
		Case{Name: "PUSH-1/replay-of-a-rejection", Run: pushReplayRejected},
		Case{Name: "PUSH-2/same-key-other-request-is-refused", Run: pushKeyReused},
		Case{Name: "PUSH-3/stale-base-is-a-conflict-with-the-server-row", Run: pushStaleBase},
		Case{Name: "PUSH-3/create-over-existing-and-update-of-missing-conflict", Run: pushCreateUpdateConflicts},
		Case{Name: "PUSH-3/no-base-version-applies-over-anything", Run: pushNoBase},
		Case{Name: "PUSH-3/batched-push-reads-match-single-reads", Run: pushBeginnerMatches},
		Case{Name: "PUSH-3/reads-of-tables-named-like-sql-aliases", Run: pushAliasNamedTables},
		Case{Name: "PUSH-4/versions-scopes-and-changes-from-the-rows-written", Run: pushAppliedShape},
		Case{Name: "PUSH-4/delete-logs-the-last-scopes", Run: pushDelete},
		// Catches: a row moved to another scope logged only under its new
		// scopes, so the old scope's subscribers keep a stale copy.
		Case{Name: "PUSH-4/moving-a-row-out-of-a-scope-logs-its-delete", Run: pushMove},
		Case{Name: "PUSH-4/writes-of-tables-named-like-sql-keywords", Run: pushKeywordNamedTables},
		Case{Name: "PUSH-5/conflict-rejects-the-whole-commit", Run: pushAllOrNothing},
		Case{Name: "PUSH-5/unique-collision-is-an-op-error", Run: pushUniqueCollision},
		Case{Name: "PUSH-6/authorize-per-op-refusal-rejects", Run: pushAuthorize},
		Case{Name: "PUSH-6/plan-reactions-enqueued-with-the-commit", Capability: driver.CapReactions, Run: pushPlanReactions},
		Case{Name: "PUSH-8/bad-input-is-typed-and-writes-nothing", Run: pushBadInput},
	)
}

// pushStore returns a fresh store and a sync.Store over it with
// TestSchema ensured (the harness closes the Conn).
func pushStore(t T, h Harness) (driver.Conn, *syncstore.Store) {
	t.Helper()
	conn := openStore(t, h)
	s := syncstore.OpenConn(conn)
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	return conn, s
}

// pushTodo returns an upsert of todo id in project and owner with title.
func pushTodo(id, project, owner, title string, base *int64) syncstore.PushOp {
	return syncstore.PushOp{Table: tTodos, RowID: id, Op: driver.OpUpsert, BaseVersion: base, Values: driver.Values{
		"id": id, "title": title, "done": false, "project_id": project, "owner_id": owner, "updated_at": int64(1700000000000)}}
}

// pushDel returns a delete of todo id.
func pushDel(id string, base *int64) syncstore.PushOp {
	return syncstore.PushOp{Table: tTodos, RowID: id, Op: driver.OpDelete, BaseVersion: base}
}

func pushReq(client, commit string, ops ...syncstore.PushOp) syncstore.PushRequest {
	return syncstore.PushRequest{ClientID: client, ClientCommitID: commit, ActorID: "actor-" + client, Ops: ops}
}

// pushDo runs Push or fails the case.
func pushDo(t T, s *syncstore.Store, p string, req syncstore.PushRequest) syncstore.PushResponse {
	t.Helper()
	resp, err := s.Push(t.Context(), p, req)
	must(t, fmt.Sprintf("Push(%s/%s)", req.ClientID, req.ClientCommitID), err)
	return resp
}

// pushState is what a push can change in a partition: its rows of
// todos and users, its log, and its max seq.
type pushState struct {
	MaxSeq int64
	Rows   []driver.Row
	Log    []driver.Commit
}

func pushStateOf(t T, conn driver.Conn, p string) pushState {
	t.Helper()
	ctx := t.Context()
	var st pushState
	var err error
	st.MaxSeq, err = conn.MaxCommitSeq(ctx, p)
	must(t, "MaxCommitSeq", err)
	for _, tb := range []struct{ table, key string }{{tTodos, "project"}, {tUsers, "org"}} {
		for _, v := range []string{"p1", "p2", "p7", "o1", "o2"} {
			rows, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tb.table, Filter: driver.ScopeFilter{tb.key: {v}}, Limit: winAll})
			must(t, "ScanRows", err)
			st.Rows = append(st.Rows, rows...)
			if tb.table == tTodos {
				st.Log = append(st.Log, winRead(t, conn, p, winQ(tb.table, driver.ScopeFilter{tb.key: {v}}, math.MaxInt64))...)
			}
		}
	}
	return st
}

// pushExpectRow checks the stored row of todos id.
func pushExpectRow(t T, conn driver.Conn, p, rule, id string, want *driver.Row) {
	t.Helper()
	row, found, err := conn.GetRow(t.Context(), p, tTodos, id)
	must(t, "GetRow", err)
	if want == nil {
		expectEqual(t, rule+": row "+id+" exists", false, found)
		return
	}
	expectEqual(t, rule+": row "+id, *want, row)
}

// rowOf is the row an upsert op writes at version v.
func rowOf(o syncstore.PushOp, v int64) driver.Row {
	return driver.Row{ID: o.RowID, ServerVersion: v, Values: o.Values,
		Scopes: driver.Scopes{"project": o.Values["project_id"].(string), "owner": o.Values["owner_id"].(string)}}
}

// Catches: a replay that applies again (a second commit, versions bumped),
// answers a new result, or is not marked Replayed.
func pushReplay(t T, h Harness) {
	conn, s := pushStore(t, h)
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil), pushTodo("t2", "p7", "o1", "two", syncstore.Version(0)))
	first := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-1: first push", false, first.Replayed)
	expectEqual(t, "PUSH-1: first push status", driver.PushApplied, first.Status)
	before := pushStateOf(t, conn, "p1")
	for i := range 3 {
		again := pushDo(t, s, "p1", req)
		expectEqual(t, fmt.Sprintf("PUSH-1: replay %d", i), syncstore.PushResponse{PushResult: first.PushResult, Replayed: true}, again)
	}
	expectEqual(t, "PUSH-1: the partition after the replays", before, pushStateOf(t, conn, "p1"))
	stored, found, err := conn.GetPushResult(t.Context(), "p1", "c1", "k1")
	must(t, "GetPushResult", err)
	expectEqual(t, "PUSH-1: stored result found", true, found)
	expectEqual(t, "PUSH-1: the stored result is the one answered", first.PushResult, stored)
	// The key is per partition and per client (P-1).
	other := pushDo(t, s, "p2", req)
	expectEqual(t, "PUSH-1: the same key in another partition applies", false, other.Replayed)
	req.ClientID = "c2"
	req.ActorID = "actor-c1"
	other = pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-1: the same commit id of another client applies", false, other.Replayed)
}

// Catches: a rejection that is not stored (a retry is applied again, or
// decided anew) or a replayed rejection that writes.
func pushReplayRejected(t T, h Harness) {
	conn, s := pushStore(t, h)
	pushDo(t, s, "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	req := pushReq("c2", "k1", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(0)))
	rej := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-1: the stale create is rejected", driver.PushRejected, rej.Status)
	// The row moves on: the same request would now still conflict, but
	// at another version. A replay answers the stored rejection as is.
	pushDo(t, s, "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "uno", syncstore.Version(1))))
	before := pushStateOf(t, conn, "p1")
	again := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-1: replayed rejection", syncstore.PushResponse{PushResult: rej.PushResult, Replayed: true}, again)
	expectEqual(t, "PUSH-1: the partition after the replay", before, pushStateOf(t, conn, "p1"))
}

// Catches: a key reused for other ops answered with the old result (the
// new ops silently dropped) or applied over it.
func pushKeyReused(t T, h Harness) {
	conn, s := pushStore(t, h)
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil))
	first := pushDo(t, s, "p1", req)
	before := pushStateOf(t, conn, "p1")
	variants := map[string]syncstore.PushRequest{}
	v := req
	v.Ops = []syncstore.PushOp{pushTodo("t1", "p7", "o1", "other title", nil)}
	variants["other values"] = v
	v = req
	v.Ops = []syncstore.PushOp{pushTodo("t1", "p7", "o1", "one", syncstore.Version(0))}
	variants["a base version"] = v
	v = req
	v.Ops = []syncstore.PushOp{pushTodo("t1", "p7", "o1", "one", nil), pushDel("t9", nil)}
	variants["one more op"] = v
	for name, v := range variants {
		_, err := s.Push(t.Context(), "p1", v)
		expectCode(t, "PUSH-2: the same key with "+name, err, driver.CodeIdempotencyKeyReused)
	}
	// Another actor under the key: the digest differs too, but the client
	// id is bound to the key's owner, and that answer comes first (CR-7).
	v = req
	v.ActorID = "someone-else"
	_, err := s.Push(t.Context(), "p1", v)
	expectCode(t, "PUSH-2: the same key with another actor (CR-7)", err, driver.CodeClientActorMismatch)
	expectEqual(t, "PUSH-2: the partition after the refused pushes", before, pushStateOf(t, conn, "p1"))
	again := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-2: the original request still replays", first.PushResult, again.PushResult)
}

// Catches: a base version compared with the wrong thing (the client's own
// previous version, the row's version +1), a conflict without the server
// row, or one that still writes.
func pushStaleBase(t T, h Harness) {
	conn, s := pushStore(t, h)
	create := pushTodo("t1", "p7", "o1", "one", syncstore.Version(0))
	pushDo(t, s, "p1", pushReq("c1", "k1", create))
	upd := pushTodo("t1", "p7", "o2", "two", syncstore.Version(1))
	r := pushDo(t, s, "p1", pushReq("c1", "k2", upd))
	expectEqual(t, "PUSH-3: update at the current version", driver.PushApplied, r.Status)
	for _, base := range []int64{1, 3, 0} {
		stale := pushTodo("t1", "p7", "o1", "stale", syncstore.Version(base))
		r = pushDo(t, s, "p1", pushReq("c2", fmt.Sprintf("s%d", base), stale))
		expectEqual(t, fmt.Sprintf("PUSH-3: result of an update based on version %d of a row at 2", base), driver.PushResult{
			Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs, CacheIdentity: r.CacheIdentity,
			Ops: []driver.OpResult{{Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict, Message: r.Ops[0].Message,
				ServerVersion: 2, ServerRow: upd.Values}}}, r.PushResult)
	}
	want := rowOf(upd, 2)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", &want)
	// A stale delete conflicts the same way and keeps the row.
	r = pushDo(t, s, "p1", pushReq("c2", "d1", pushDel("t1", syncstore.Version(1))))
	expectEqual(t, "PUSH-3: stale delete", driver.OpConflict, r.Ops[0].Status)
	expectEqual(t, "PUSH-3: stale delete's server version", int64(2), r.Ops[0].ServerVersion)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", &want)
	r = pushDo(t, s, "p1", pushReq("c2", "d2", pushDel("t1", syncstore.Version(2))))
	expectEqual(t, "PUSH-3: delete at the current version", driver.PushApplied, r.Status)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", nil)
}

// Catches: "create" (base 0) that overwrites an existing row, and an
// update or delete based on a version of a row that no longer exists
// applied as a create (upstream's handler does the latter).
func pushCreateUpdateConflicts(t T, h Harness) {
	conn, s := pushStore(t, h)
	orig := pushTodo("t1", "p7", "o1", "one", nil)
	pushDo(t, s, "p1", pushReq("c1", "k1", orig))
	r := pushDo(t, s, "p1", pushReq("c2", "k1", pushTodo("t1", "p7", "o1", "mine", syncstore.Version(0))))
	expectEqual(t, "PUSH-3: create over an existing row", []driver.OpResult{{Status: driver.OpConflict,
		Code: syncstore.OpCodeVersionConflict, Message: r.Ops[0].Message, ServerVersion: 1, ServerRow: orig.Values}}, r.Ops)
	want := rowOf(orig, 1)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", &want)
	for i, o := range []syncstore.PushOp{pushTodo("t2", "p7", "o1", "two", syncstore.Version(4)), pushDel("t2", syncstore.Version(1))} {
		r := pushDo(t, s, "p1", pushReq("c2", fmt.Sprintf("m%d", i), o))
		expectEqual(t, fmt.Sprintf("PUSH-3: %s of a missing row at base %d", o.Op, *o.BaseVersion), []driver.OpResult{{
			Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict, Message: r.Ops[0].Message}}, r.Ops)
		expectEqual(t, "PUSH-3: status", driver.PushRejected, r.Status)
	}
	pushExpectRow(t, conn, "p1", "PUSH-3", "t2", nil)
	seq, err := conn.MaxCommitSeq(t.Context(), "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "PUSH-3: commits after the conflicts", int64(1), seq)
}

// Catches: a nil base version taken as 0 (a create check).
func pushNoBase(t T, h Harness) {
	conn, s := pushStore(t, h)
	for i, title := range []string{"one", "two", "three"} {
		r := pushDo(t, s, "p1", pushReq("c1", fmt.Sprintf("k%d", i), pushTodo("t1", "p7", "o1", title, nil)))
		expectEqual(t, "PUSH-3: an op without a base version applies", driver.PushApplied, r.Status)
	}
	want := rowOf(pushTodo("t1", "p7", "o1", "three", nil), 3)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", &want)
	r := pushDo(t, s, "p1", pushReq("c1", "d", pushDel("t1", nil), pushDel("t-missing", nil)))
	expectEqual(t, "PUSH-3: deletes without a base version", driver.PushApplied, r.Status)
	pushExpectRow(t, conn, "p1", "PUSH-3", "t1", nil)
}

// Catches: versions not bumped (or bumped from the client's base), scopes
// not recomputed when a row moves, changes that disagree with the rows
// (values, version, scopes), changes out of op order.
func pushAppliedShape(t T, h Harness) {
	conn, s := pushStore(t, h)
	a1, b1 := pushTodo("ta", "p1", "o1", "a", nil), pushTodo("tb", "p1", "o1", "b", nil)
	r1 := pushDo(t, s, "p1", pushReq("c1", "k1", b1, a1))
	expectEqual(t, "PUSH-4: first commit result", driver.PushResult{Status: driver.PushApplied, CommitSeq: 1,
		RecordedAtMs: r1.RecordedAtMs, CacheIdentity: r1.CacheIdentity,
		Ops: []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 1}, {Status: driver.OpApplied, ServerVersion: 1}}}, r1.PushResult)
	a2 := pushTodo("ta", "p2", "o2", "a moved", syncstore.Version(1)) // moves to p2/o2
	c1 := pushTodo("tc", "p2", "o1", "c", nil)
	r2 := pushDo(t, s, "p1", pushReq("c2", "k1", a2, c1))
	expectEqual(t, "PUSH-4: second commit's new versions", []int64{2, 1}, []int64{r2.Ops[0].ServerVersion, r2.Ops[1].ServerVersion})
	rows := map[string]driver.Row{"ta": rowOf(a2, 2), "tb": rowOf(b1, 1), "tc": rowOf(c1, 1)}
	for id, want := range rows {
		pushExpectRow(t, conn, "p1", "PUSH-4", id, &want)
	}
	ch := func(r driver.Row) driver.Change { return upsertChange(tTodos, r) }
	expectEqual(t, "PUSH-4: first response's changes", []driver.Change{ch(rowOf(b1, 1)), ch(rowOf(a1, 1))}, r1.Changes)
	// ta leaves p1/o1: a delete under its old scopes comes before its upsert.
	leave := driver.Change{Table: tTodos, RowID: "ta", Op: driver.OpDelete, Scopes: rowOf(a1, 1).Scopes}
	expectEqual(t, "PUSH-4: second response's changes", []driver.Change{leave, ch(rows["ta"]), ch(rows["tc"])}, r2.Changes)
	// The log, read by scope, carries exactly what was written.
	meta := func(seq int64, client string, cs ...driver.Change) driver.Commit {
		return driver.Commit{Seq: seq, ClientID: client, ClientCommitID: "k1", ActorID: "actor-" + client, CreatedAtMs: map[int64]int64{1: r1.RecordedAtMs, 2: r2.RecordedAtMs}[seq], Changes: cs}
	}
	expectEqual(t, "PUSH-4: log of project p2", []driver.Commit{meta(2, "c2", ch(rows["ta"]), ch(rows["tc"]))},
		winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p2"}}, math.MaxInt64)))
	expectEqual(t, "PUSH-4: log of owner o1", []driver.Commit{meta(1, "c1", ch(rowOf(b1, 1)), ch(rowOf(a1, 1))), meta(2, "c2", leave, ch(rows["tc"]))},
		winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"owner": {"o1"}}, math.MaxInt64)))
	stored, _, err := conn.GetPushResult(t.Context(), "p1", "c2", "k1")
	must(t, "GetPushResult", err)
	expectEqual(t, "PUSH-4: stored result", r2.PushResult, stored)
}

// Catches: a delete logged without the row's scopes (pullers of its scope
// never learn it went), or logged with the client's idea of them; a delete
// of a missing row that logs a change.
func pushDelete(t T, h Harness) {
	conn, s := pushStore(t, h)
	a := pushTodo("ta", "p7", "o1", "a", nil)
	pushDo(t, s, "p1", pushReq("c1", "k1", a))
	r := pushDo(t, s, "p1", pushReq("c1", "k2", pushDel("ta", syncstore.Version(1)), pushDel("t-missing", nil)))
	expectEqual(t, "PUSH-4: delete result", []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied}}, r.Ops)
	del := driver.Change{Table: tTodos, RowID: "ta", Op: driver.OpDelete, Scopes: driver.Scopes{"project": "p7", "owner": "o1"}}
	expectEqual(t, "PUSH-4: delete changes", []driver.Change{del}, r.Changes)
	log := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, math.MaxInt64))
	expectEqual(t, "PUSH-4: commits of p7", []int64{1, 2}, seqs(log))
	if len(log) == 2 {
		expectEqual(t, "PUSH-4: the delete in the log", []driver.Change{del}, log[1].Changes)
	}
	// Re-creating the row continues after the deleted row's version
	// (PUSH-18).
	r = pushDo(t, s, "p1", pushReq("c1", "k3", pushTodo("ta", "p7", "o1", "again", syncstore.Version(0))))
	expectEqual(t, "PUSH-18: a re-created row's version", int64(2), r.Ops[0].ServerVersion)
}

func pushMove(t T, h Harness) {
	conn, s := pushStore(t, h)
	pushDo(t, s, "p1", pushReq("c1", "k1", pushTodo("ta", "p7", "o1", "a", nil)))
	r := pushDo(t, s, "p1", pushReq("c1", "k2", pushTodo("ta", "p8", "o1", "moved", syncstore.Version(1))))
	del := driver.Change{Table: tTodos, RowID: "ta", Op: driver.OpDelete, Scopes: driver.Scopes{"project": "p7", "owner": "o1"}}
	moved := rowOf(pushTodo("ta", "p8", "o1", "moved", nil), 2)
	up := driver.Change{Table: tTodos, RowID: "ta", Op: driver.OpUpsert, Scopes: moved.Scopes, Values: moved.Values, RowVersion: 2}
	expectEqual(t, "PUSH-4: a move's changes (a delete under the old scopes, then the upsert)", []driver.Change{del, up}, r.Changes)
	old := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, math.MaxInt64))
	expectEqual(t, "PUSH-4: commits of the old scope", []int64{1, 2}, seqs(old))
	if len(old) == 2 {
		expectEqual(t, "PUSH-4: what the old scope's subscribers read of the move", []driver.Change{del}, old[1].Changes)
	}
	nw := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p8"}}, math.MaxInt64))
	expectEqual(t, "PUSH-4: commits of the new scope", []int64{2}, seqs(nw))
	if len(nw) == 1 {
		expectEqual(t, "PUSH-4: what the new scope's subscribers read of the move", []driver.Change{up}, nw[0].Changes)
	}
	// An edit that keeps the scopes logs the upsert alone.
	r = pushDo(t, s, "p1", pushReq("c1", "k3", pushTodo("ta", "p8", "o1", "again", syncstore.Version(2))))
	expectEqual(t, "PUSH-4: an edit within its scopes logs one change", 1, len(r.Changes))
}

// Catches: ops before the failing one written (not all-or-nothing), a
// commit seq consumed by the rejection, per-op results not stored.
func pushAllOrNothing(t T, h Harness) {
	conn, s := pushStore(t, h)
	pushDo(t, s, "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil), pushTodo("t2", "p7", "o1", "two", nil)))
	before := pushStateOf(t, conn, "p1")
	req := pushReq("c2", "k1", pushTodo("t3", "p7", "o1", "new", nil), pushDel("t2", syncstore.Version(1)),
		pushTodo("t1", "p7", "o1", "stale", syncstore.Version(7)), pushTodo("t4", "p7", "o1", "after", nil))
	r := pushDo(t, s, "p1", req)
	t1 := rowOf(pushTodo("t1", "p7", "o1", "one", nil), 1)
	expectEqual(t, "PUSH-5: rejected result", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs,
		CacheIdentity: r.CacheIdentity, Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied},
			{Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict, Message: r.Ops[2].Message, ServerVersion: 1, ServerRow: t1.Values}}}, r.PushResult)
	expectEqual(t, "PUSH-5: rejected response's changes", []driver.Change(nil), r.Changes)
	expectEqual(t, "PUSH-5: the partition after the rejection", before, pushStateOf(t, conn, "p1"))
	stored, found, err := conn.GetPushResult(t.Context(), "p1", "c2", "k1")
	must(t, "GetPushResult", err)
	expectEqual(t, "PUSH-5: rejection stored", true, found)
	expectEqual(t, "PUSH-5: the stored rejection", r.PushResult, stored)
	// The next commit takes seq 2: the rejection consumed none (SEQ-2).
	n := pushDo(t, s, "p1", pushReq("c2", "k2", pushTodo("t3", "p7", "o1", "new", nil)))
	expectEqual(t, "PUSH-5: the next commit's seq", int64(2), n.CommitSeq)
}

// Catches: a unique-index collision surfacing as a raw engine error, as
// an error of Push (nothing stored), or applied over the other row.
func pushUniqueCollision(t T, h Harness) {
	conn, s := pushStore(t, h)
	u := func(id, email string, base *int64) syncstore.PushOp {
		return syncstore.PushOp{Table: tUsers, RowID: id, Op: driver.OpUpsert, BaseVersion: base,
			Values: driver.Values{"id": id, "org": "o1", "email": email}}
	}
	pushDo(t, s, "p1", pushReq("c1", "k1", u("u1", "a@x", nil)))
	before := pushStateOf(t, conn, "p1")
	for i, req := range []syncstore.PushRequest{
		pushReq("c2", "k1", u("u2", "b@x", nil), u("u3", "a@x", nil)),                  // collides with a stored row
		pushReq("c2", "k2", u("u2", "b@x", syncstore.Version(0)), u("u3", "b@x", nil)), // with a row of the same commit
	} {
		r := pushDo(t, s, "p1", req)
		what := fmt.Sprintf("PUSH-5: collision %d", i)
		expectEqual(t, what+": status", driver.PushRejected, r.Status)
		if len(r.Ops) != 2 {
			t.Errorf("%s: %d op results, want 2: %+v", what, len(r.Ops), r.Ops)
			continue
		}
		expectEqual(t, what+": results", []driver.OpResult{{Status: driver.OpApplied},
			{Status: driver.OpError, Code: syncstore.OpCodeConstraintViolation, Message: r.Ops[1].Message}}, r.Ops)
	}
	expectEqual(t, "PUSH-5: the partition after the collisions", before, pushStateOf(t, conn, "p1"))
	// Moving u1's email away frees it, in one commit.
	r := pushDo(t, s, "p1", pushReq("c2", "k3", u("u1", "c@x", syncstore.Version(1)), u("u2", "a@x", nil)))
	expectEqual(t, "PUSH-5: a swap in one commit", driver.PushApplied, r.Status)
}

// Catches: Authorize called for a replay, after the failing op, or after
// the base check (a conflict then shows the server row to an actor the
// op was refused for); a refusal's code lost; an invalid code stored.
func pushAuthorize(t T, h Harness) {
	conn, s := pushStore(t, h)
	secret := pushTodo("t-secret", "p7", "o1", "secret", nil)
	pushDo(t, s, "p1", pushReq("c1", "k1", secret))
	var calls []string
	s.SetPushOptions(syncstore.PushOptions{Authorize: func(ctx context.Context, tx *syncstore.Tx, in syncstore.AuthorizeInput) error {
		calls = append(calls, fmt.Sprintf("%s/%s#%d %s exists=%v v%d", in.ClientID, in.ClientCommitID, in.Index, in.Op.RowID, in.Exists, in.Current.ServerVersion))
		if in.Exists && in.Current.Values["owner_id"] != "o-"+in.ActorID {
			return &syncstore.Refusal{Code: "app.forbidden", Message: "not your row", Details: `{"owner":"other"}`}
		}
		return nil
	}})
	req := pushReq("mallory", "k1", pushTodo("t-new", "p7", "o-actor-mallory", "mine", nil),
		pushTodo("t-secret", "p7", "o-actor-mallory", "stolen", syncstore.Version(0)), pushTodo("t-later", "p7", "o1", "x", nil))
	r := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-6: refused result", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs,
		CacheIdentity: r.CacheIdentity, Ops: []driver.OpResult{{Status: driver.OpApplied},
			{Status: driver.OpError, Code: "app.forbidden", Message: "not your row", Details: `{"owner":"other"}`}}}, r.PushResult)
	expectEqual(t, "PUSH-6: Authorize calls", []string{"mallory/k1#0 t-new exists=false v0", "mallory/k1#1 t-secret exists=true v1"}, calls)
	calls = nil
	again := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-6: replay of the refusal", true, again.Replayed)
	expectEqual(t, "PUSH-6: Authorize calls for a replay", []string(nil), calls)
	pushExpectRow(t, conn, "p1", "PUSH-6", "t-new", nil)
	// A refusal with a reserved code is the host's bug: an error, nothing stored.
	s.SetPushOptions(syncstore.PushOptions{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error {
		return &syncstore.Refusal{Code: "sync.bogus"}
	}})
	_, err := s.Push(t.Context(), "p1", pushReq("c3", "k1", pushTodo("t-x", "p7", "o1", "x", nil)))
	expectCode(t, "PUSH-6: a refusal with a reserved code", err, driver.CodeInvalidArgument)
	// Any other error of the hook aborts the push.
	boom := errors.New("policy store down")
	s.SetPushOptions(syncstore.PushOptions{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error { return boom }})
	_, err = s.Push(t.Context(), "p1", pushReq("c3", "k2", pushTodo("t-x", "p7", "o1", "x", nil)))
	expectEqual(t, "PUSH-6: the hook's own error is returned", true, errors.Is(err, boom))
	for _, k := range []string{"k1", "k2"} {
		_, found, err := conn.GetPushResult(t.Context(), "p1", "c3", k)
		must(t, "GetPushResult", err)
		expectEqual(t, "PUSH-6: a result stored by an aborted push "+k, false, found)
	}
}

// Catches: reactions planned for a rejected or replayed commit, enqueued
// apart from the commit (another seq, or landing without it).
func pushPlanReactions(t T, h Harness) {
	conn, s := pushStore(t, h)
	var planned []int64
	s.SetPushOptions(syncstore.PushOptions{PlanReactions: func(ctx context.Context, tx *syncstore.Tx, c syncstore.AppliedCommit) ([]driver.ReactionInput, error) {
		planned = append(planned, c.CommitSeq)
		return []driver.ReactionInput{{Key: fmt.Sprintf("notify-%s-%s", c.ClientID, c.ClientCommitID), Type: "notify",
			Payload: driver.JSON(fmt.Sprintf(`{"changes":%d}`, len(c.Changes))), MaxAttempts: 3, CreatedAtMs: c.CreatedAtMs}}, nil
	}})
	req := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil), pushTodo("t2", "p7", "o1", "two", nil))
	r := pushDo(t, s, "p1", req)
	pushDo(t, s, "p1", req)                                                                            // replay
	pushDo(t, s, "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(0)))) // rejected
	expectEqual(t, "PUSH-6: PlanReactions calls", []int64{r.CommitSeq}, planned)
	rs, err := s.ListReactions(t.Context(), "p1", driver.ReactionListQuery{Limit: 10})
	must(t, "ListReactions", err)
	var got []string
	for _, x := range rs {
		got = append(got, fmt.Sprintf("%s seq=%d %s", x.Key, x.SourceCommitSeq, x.Payload))
	}
	// The stored key is derived from the commit (PUSH-16).
	key := syncstore.ReactionKey("c1", "k1", "notify-c1-k1")
	expectEqual(t, "PUSH-6: reactions", []string{fmt.Sprintf("%s seq=%d {\"changes\":2}", key, r.CommitSeq)}, got)
	// A planner error aborts the push: no commit, no reaction. So does a
	// reaction an enqueue refuses (here a key taken by a reaction enqueued
	// directly: RX-1).
	taken := syncstore.ReactionKey("c1", "k3", "notify")
	must(t, "setup: enqueue", s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *syncstore.Tx) error {
		return tx.EnqueueReactions(ctx, 0, []driver.ReactionInput{{Key: taken, Type: "notify", Payload: `{}`, MaxAttempts: 1}})
	}))
	boom := errors.New("planner failed")
	for _, plan := range []struct {
		what string
		rs   []driver.ReactionInput
		err  error
		code driver.Code
	}{
		{"a planner error", nil, boom, ""},
		{"a key taken in the partition", []driver.ReactionInput{{Key: "notify", Type: "notify", Payload: `{}`, MaxAttempts: 1}}, nil, driver.CodeDuplicateReactionKey},
	} {
		s.SetPushOptions(syncstore.PushOptions{PlanReactions: func(context.Context, *syncstore.Tx, syncstore.AppliedCommit) ([]driver.ReactionInput, error) {
			return plan.rs, plan.err
		}})
		before := pushStateOf(t, conn, "p1")
		_, err = s.Push(t.Context(), "p1", pushReq("c1", "k3", pushTodo("t3", "p7", "o1", "three", nil)))
		if plan.err != nil && !errors.Is(err, plan.err) {
			t.Errorf("PUSH-6: %s: got %v, want the planner's error", plan.what, err)
		}
		if plan.code != "" {
			expectCode(t, "PUSH-6: "+plan.what, err, plan.code)
		}
		expectEqual(t, "PUSH-6: the partition after the aborted push: "+plan.what, before, pushStateOf(t, conn, "p1"))
	}
}

// Catches: bad input that reaches the driver (something written, an
// engine error instead of the typed one).
func pushBadInput(t T, h Harness) {
	conn, s := pushStore(t, h)
	pushDo(t, s, "p1", pushReq("c1", "k0", pushTodo("t1", "p7", "o1", "one", nil)))
	before := pushStateOf(t, conn, "p1")
	bad := pushTodo("t2", "p7", "o1", "x", nil)
	bad.Values["updated_at"] = 5 // an int, not an int64 (V-3)
	noPK := pushTodo("t3", "p7", "o1", "x", nil)
	noPK.RowID = "t4"
	many := make([]syncstore.PushOp, syncstore.MaxPushOps+1)
	for i := range many {
		many[i] = pushTodo(fmt.Sprintf("m%d", i), "p7", "o1", "x", nil)
	}
	ok := pushTodo("t5", "p7", "o1", "x", nil)
	cases := []struct {
		name string
		req  syncstore.PushRequest
		code driver.Code
	}{
		{"no ops", pushReq("c1", "k1"), driver.CodeInvalidArgument},
		{"too many ops", pushReq("c1", "k1", many...), driver.CodePushTooLarge},
		{"unknown table", pushReq("c1", "k1", ok, syncstore.PushOp{Table: "nope", RowID: "x", Op: driver.OpDelete}), driver.CodeUnknownTable},
		{"a wrong value type", pushReq("c1", "k1", ok, bad), driver.CodeInvalidValue},
		{"a row id unlike the primary key", pushReq("c1", "k1", noPK), driver.CodeInvalidValue},
		{"a reserved client id", pushReq(`["remote-command",7]`, "k1", ok), driver.CodeInvalidClientID},
		{"an empty commit id", pushReq("c1", "", ok), driver.CodeInvalidArgument},
		{"a negative base version", pushReq("c1", "k1", pushTodo("t5", "p7", "o1", "x", syncstore.Version(-1))), driver.CodeInvalidArgument},
	}
	for _, c := range cases {
		_, err := s.Push(t.Context(), "p1", c.req)
		expectCode(t, "PUSH-8: "+c.name, err, c.code)
	}
	_, err := s.Push(t.Context(), "", pushReq("c1", "k1", ok))
	expectCode(t, "PUSH-8: an empty partition", err, driver.CodeInvalidArgument)
	expectEqual(t, "PUSH-8: the partition after bad pushes", before, pushStateOf(t, conn, "p1"))
	_, found, err := conn.GetPushResult(t.Context(), "p1", "c1", "k1")
	must(t, "GetPushResult", err)
	expectEqual(t, "PUSH-8: a result stored for a bad push", false, found)
}

// Catches: a driver.PushBeginner whose reads disagree with GetRow and
// GetPushResult in the Tx it began (rows at the wrong key, another
// table's or partition's rows, rows lost past a batch bound, a result
// missed), or whose Tx does not work as Begin's.
func pushBeginnerMatches(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	pb, ok := conn.(driver.PushBeginner)
	if !ok {
		t.Skipf("the driver is not a driver.PushBeginner (optional): Push reads row by row")
	}
	push(t, conn, "p1", tTodos, todo("t1", "p7", "o1"), todo("t2", "p7", "o1"), todo("t5", "p1", "o2"))
	push(t, conn, "p1", tUsers, user("u1", "o1", "a@x"))
	push(t, conn, "p2", tTodos, todo("t3", "p7", "o1"))
	// A row deleted at version 1 and one deleted at version 3: their
	// tombstones (ROW-5) are read with the rows.
	tx0 := begin(t, conn, "p1")
	gone := todo("t-gone", "p7", "o1")
	gone.ServerVersion = 3
	must(t, "UpsertRow", tx0.UpsertRow(ctx, tTodos, todo("m005", "p7", "o1")))
	must(t, "UpsertRow", tx0.UpsertRow(ctx, tTodos, gone))
	must(t, "DeleteRow", tx0.DeleteRow(ctx, tTodos, "m005"))
	must(t, "DeleteRow", tx0.DeleteRow(ctx, tTodos, "t-gone"))
	commit(t, tx0)
	stored := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5, Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.x"}}}
	tx := begin(t, conn, "p1")
	must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "stored", stored))
	commit(t, tx)
	keys := []driver.RowKey{{Table: tUsers, ID: "u1"}, {Table: tTodos, ID: "t2"}, {Table: tTodos, ID: "t3"},
		{Table: tTodos, ID: "t-missing"}, {Table: tUsers, ID: "t5"}, {Table: tTodos, ID: "t1"}}
	for i := range 700 { // past any batch bound of the driver's
		keys = append(keys, driver.RowKey{Table: tTodos, ID: fmt.Sprintf("m%03d", i)})
	}
	keys = append(keys, driver.RowKey{Table: tTodos, ID: "t5"}, driver.RowKey{Table: tTodos, ID: "t-gone"})
	for _, key := range []string{"none", "stored"} {
		tx, got, err := pb.BeginPush(ctx, "p1", "c1", key, keys)
		must(t, "BeginPush", err)
		var want driver.PushRead
		want.Result, want.HasResult, err = tx.GetPushResult(ctx, "c1", key)
		must(t, "GetPushResult", err)
		if want.HasResult {
			got.Rows, got.Found, got.Tombstones = nil, nil, nil
		} else {
			res, has := want.Result, want.HasResult
			want = pushReadOf(t, tx, keys)
			want.Result, want.HasResult = res, has
			expectEqual(t, "ROW-5: tombstones of rows deleted at versions 1 and 3", []int64{1, 3},
				[]int64{got.Tombstones[6+5], got.Tombstones[len(keys)-1]})
		}
		expectEqual(t, "PUSH-3: BeginPush's reads against GetPushResult, GetRow and RowTombstone of key "+key, want, got)
		// The Tx is Begin's: it writes and commits.
		must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, todo("t-"+key, "p7", "o1")))
		commit(t, tx)
		_, found, err := conn.GetRow(ctx, "p1", tTodos, "t-"+key)
		must(t, "GetRow", err)
		expectEqual(t, "PUSH-3: a row written in BeginPush's Tx, after its commit", true, found)
	}
}

// Catches: a driver whose reads for a push name a derived table or a list
// of ids with an alias an application table may also have (SCH-2 allows
// "k", "v", "j", "r", "t"…), so that for a table of that name a reference
// meant for the alias resolves to the table itself: the push's reads miss
// stored rows (an update at the current version conflicts, a create
// overwrites an existing row) or fail.
func pushAliasNamedTables(t T, h Harness) {
	ctx := t.Context()
	conn := h.Open(t)
	s := syncstore.OpenConn(conn)
	names := aliasTableNames
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(ctx, aliasNamedSchema(names, driver.Scope{Variable: "g", Column: "value"})))
	// The "id" column never equals the key: a lookup that compares the
	// key with the table's own "id" column finds nothing.
	op := func(table, key, id string, base *int64) syncstore.PushOp {
		return syncstore.PushOp{Table: table, RowID: key, Op: driver.OpUpsert, BaseVersion: base,
			Values: driver.Values{"key": key, "id": id, "value": "g1"}}
	}
	var creates, updates []syncstore.PushOp
	for _, name := range names {
		creates = append(creates, op(name, "a", "other-a", syncstore.Version(0)), op(name, "b", "other-b", nil))
		updates = append(updates, op(name, "a", "other-a2", syncstore.Version(1)))
	}
	r := pushDo(t, s, "p1", pushReq("c1", "create", creates...))
	expectEqual(t, "PUSH-3: creates into tables named like aliases", driver.PushApplied, r.Status)
	r = pushDo(t, s, "p1", pushReq("c1", "update", updates...))
	expectEqual(t, "PUSH-3: updates at the current version of rows of tables named like aliases",
		driver.PushApplied, r.Status)
	if r.Status != driver.PushApplied {
		t.Errorf("PUSH-3: op results of the updates: %+v", r.Ops)
	}
	for i, name := range names {
		again := op(name, "b", "mine", syncstore.Version(0))
		r := pushDo(t, s, "p1", pushReq("c2", fmt.Sprintf("again%d", i), again))
		expectEqual(t, "PUSH-3: a create over an existing row of table "+name, []driver.OpResult{{Status: driver.OpConflict,
			Code: syncstore.OpCodeVersionConflict, Message: r.Ops[0].Message, ServerVersion: 1,
			ServerRow: driver.Values{"key": "b", "id": "other-b", "value": "g1"}}}, r.Ops)
	}
	pb, ok := conn.(driver.PushBeginner)
	if !ok {
		return
	}
	var keys []driver.RowKey
	for _, name := range names {
		keys = append(keys, driver.RowKey{Table: name, ID: "a"}, driver.RowKey{Table: name, ID: "b"},
			driver.RowKey{Table: name, ID: "other-b"})
	}
	tx, got, err := pb.BeginPush(ctx, "p1", "c3", "none", keys)
	must(t, "BeginPush over tables named like aliases", err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	expectEqual(t, "PUSH-3: BeginPush's reads of tables named like aliases against GetRow", pushReadOf(t, tx, keys), got)
}

// pushReadOf is the driver.PushRead of keys by GetRow and, for a missing
// row, RowTombstone in tx (no result).
func pushReadOf(t T, tx driver.Tx, keys []driver.RowKey) driver.PushRead {
	t.Helper()
	ctx := t.Context()
	want := driver.PushRead{Rows: make([]driver.Row, len(keys)), Found: make([]bool, len(keys)), Tombstones: make([]int64, len(keys))}
	var err error
	for i, k := range keys {
		want.Rows[i], want.Found[i], err = tx.GetRow(ctx, k.Table, k.ID)
		must(t, "GetRow", err)
		if !want.Found[i] {
			want.Tombstones[i], err = tx.RowTombstone(ctx, k.Table, k.ID)
			must(t, "RowTombstone", err)
		}
	}
	return want
}

// keywordTableNames are table names SCH-2 allows that SQL gives a meaning
// inside a statement: "excluded" is the row an upsert proposed (SQLite's
// and PostgreSQL's ON CONFLICT … DO UPDATE), "new" and "old" the rows of
// triggers (and MySQL's INSERT … AS new), "values" a keyword of every
// INSERT.
var keywordTableNames = []string{"excluded", "new", "old", "values"}

// Catches: a driver whose upsert names the row it proposes, or the target
// table, with a name an application table may also have, so that for a
// table of that name an update reads the stored row instead of the pushed
// one — Push answers and logs the new version and values while the row
// keeps its old ones (SQLite's "excluded.col" resolved to a table named
// excluded) — or fails (PostgreSQL: an ambiguous reference). Creates
// (two rows of a table in one statement), updates at the current version
// (one row, then two), a delete; after each push the rows read back, and
// at the end the log, must be what the push answered.
func pushKeywordNamedTables(t T, h Harness) {
	ctx := t.Context()
	conn := h.Open(t)
	s := syncstore.OpenConn(conn)
	names := slices.Concat(keywordTableNames, aliasTableNames)
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(ctx, aliasNamedSchema(names, driver.Scope{Variable: "g", Column: "value"})))
	up := func(table, key, id string, base *int64) syncstore.PushOp {
		return syncstore.PushOp{Table: table, RowID: key, Op: driver.OpUpsert, BaseVersion: base,
			Values: driver.Values{"key": key, "id": id, "value": "g1"}}
	}
	rowOf := func(o syncstore.PushOp, v int64) driver.Row {
		return driver.Row{ID: o.RowID, ServerVersion: v, Values: o.Values, Scopes: driver.Scopes{"g": "g1"}}
	}
	rows := map[string]map[string]driver.Row{} // table → key → stored row
	logged := map[string][]driver.Change{}     // table → changes, in log order
	for _, name := range names {
		rows[name] = map[string]driver.Row{}
	}
	// step pushes one op per table and key (keys in order; base nil for
	// a create with no base, else the version it expects) and checks the
	// answer and the rows.
	step := func(commit string, keys []string, id string, base func(key string) *int64, del bool) {
		t.Helper()
		var ops []syncstore.PushOp
		var wantOps []driver.OpResult
		var wantChanges []driver.Change
		for _, name := range names {
			for _, key := range keys {
				if del {
					old := rows[name][key]
					ops = append(ops, syncstore.PushOp{Table: name, RowID: key, Op: driver.OpDelete, BaseVersion: base(key)})
					wantOps = append(wantOps, driver.OpResult{Status: driver.OpApplied})
					ch := deleteChange(name, old)
					wantChanges, logged[name] = append(wantChanges, ch), append(logged[name], ch)
					delete(rows[name], key)
					continue
				}
				o := up(name, key, id, base(key))
				r := rowOf(o, rows[name][key].ServerVersion+1)
				ops = append(ops, o)
				wantOps = append(wantOps, driver.OpResult{Status: driver.OpApplied, ServerVersion: r.ServerVersion})
				ch := upsertChange(name, r)
				wantChanges, logged[name] = append(wantChanges, ch), append(logged[name], ch)
				rows[name][key] = r
			}
		}
		resp := pushDo(t, s, "p1", pushReq("c1", commit, ops...))
		expectEqual(t, "PUSH-4: "+commit+" into tables named like SQL keywords: status", driver.PushApplied, resp.Status)
		expectEqual(t, "PUSH-4: "+commit+" into tables named like SQL keywords: op results", wantOps, resp.Ops)
		expectEqual(t, "PUSH-4: "+commit+" into tables named like SQL keywords: changes", wantChanges, resp.Changes)
		for _, name := range names {
			for _, key := range []string{"a", "b"} {
				got, found, err := conn.GetRow(ctx, "p1", name, key)
				must(t, "GetRow", err)
				want, ok := rows[name][key]
				what := fmt.Sprintf("PUSH-4: after %s, row %s of table %q", commit, key, name)
				expectEqual(t, what+" exists", ok, found)
				if ok && found {
					expectEqual(t, what, want, got)
				}
			}
		}
		if t.Failed() {
			t.Fatalf("PUSH-4: stopped after %s: every later push starts from its rows", commit)
		}
	}
	at := func(v int64) func(string) *int64 { return func(string) *int64 { return syncstore.Version(v) } }
	step("create", []string{"a", "b"}, "id-1", func(key string) *int64 {
		if key == "a" {
			return syncstore.Version(0)
		}
		return nil
	}, false)
	step("update-a", []string{"a"}, "id-2", at(1), false)
	step("update-both", []string{"a", "b"}, "id-3", func(key string) *int64 {
		return syncstore.Version(map[string]int64{"a": 2, "b": 1}[key])
	}, false)
	step("delete-b", []string{"b"}, "", at(2), true)
	for _, name := range names {
		var got []driver.Change
		for _, c := range winRead(t, conn, "p1", winQ(name, driver.ScopeFilter{"g": {"g1"}}, math.MaxInt64)) {
			got = append(got, c.Changes...)
		}
		expectEqual(t, fmt.Sprintf("PUSH-4: the log of table %q", name), logged[name], got)
	}
}
