package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-10…PUSH-15: a commit writing one row several times, the
// hooks that see the candidate state (ValidateOp, ValidateCommit), server
// commands, per-call options and the protocol's refusal codes —
// sync.Store.Push over any driver.

func init() {
	register(
		Case{Name: "PUSH-10/one-row-written-by-several-ops-in-order", Run: pushRowThrice},
		Case{Name: "PUSH-10/base-checked-against-the-row-earlier-ops-left", Run: pushStagedBase},
		Case{Name: "PUSH-11/validator-sees-the-row-refusal-stored-and-replayed", Run: pushValidateOpRefuses},
		Case{Name: "PUSH-11/values-returned-are-what-row-log-and-result-carry", Run: pushValidateOpValues},
		Case{Name: "PUSH-11/bad-values-and-hook-errors-write-nothing", Run: pushValidateOpErrors},
		Case{Name: "PUSH-12/commit-validator-sees-the-candidate-and-blames-an-op", Run: pushValidateCommit},
		Case{Name: "PUSH-13/commands-replay-clients-refused-the-namespace", Run: pushCommands},
		Case{Name: "PUSH-14/per-call-options-replace-the-stores-for-one-call", Run: pushWithOptions},
		Case{Name: "PUSH-15/protocol-refusal-codes-stored-and-replayed", Run: pushProtocolRefusals},
	)
}

// pushExpectNothing checks that a push left the partition as before and
// stored no result under (client, commit).
func pushExpectNothing(t T, conn driver.Conn, p, what string, before pushState, client, commit string) {
	t.Helper()
	expectEqual(t, what+": the partition after", before, pushStateOf(t, conn, p))
	_, found, err := conn.GetPushResult(t.Context(), p, client, commit)
	must(t, "GetPushResult", err)
	expectEqual(t, what+": a result stored", false, found)
}

// pushExpectStored checks that r is the result stored under (client,
// commit), and that pushing req again replays it exactly, writing
// nothing (PUSH-1).
func pushExpectStored(t T, conn driver.Conn, s *syncstore.Store, p, what string, req syncstore.PushRequest, r syncstore.PushResponse) {
	t.Helper()
	stored, found, err := conn.GetPushResult(t.Context(), p, req.ClientID, req.ClientCommitID)
	must(t, "GetPushResult", err)
	expectEqual(t, what+": stored", true, found)
	expectEqual(t, what+": the stored result is the one answered", r.PushResult, stored)
	before := pushStateOf(t, conn, p)
	again := pushDo(t, s, p, req)
	expectEqual(t, what+": replayed", syncstore.PushResponse{PushResult: r.PushResult, Replayed: true}, again)
	expectEqual(t, what+": the partition after the replay", before, pushStateOf(t, conn, p))
}

// Catches: a commit that writes a row more than once refused (PUSH-8
// used to), or applied with every op checked and versioned against the
// stored row (a create then an update ending at version 1, a re-create
// after a delete of the same commit conflicting or numbered from 1 —
// PUSH-18: it continues after the deleted row's version), changes coalesced or
// out of op order, a move inside the commit logged without its delete, a
// puller that ends with another row than the one stored. The second and
// third pushes are all upserts with base versions: guarded (PUSH-9)
// where the driver has guarded writes, so each guard must see the rows
// the earlier ops of its Tx wrote (GW-1).
func pushRowThrice(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	replicas := []*pullReplica{newPullReplica(pullSub("p7", "p7", 0)), newPullReplica(pullSub("p8", "p8", 0))}
	for _, r := range replicas {
		r.sync(t, s, "p1", 3) // bootstrapped on an empty partition
	}
	one, two := pushTodo("t1", "p7", "o1", "one", v(0)), pushTodo("t1", "p7", "o1", "two", v(1))
	three := pushTodo("t1", "p7", "o1", "three", v(0))
	req := pushReq("w1", "k1", one, two, pushDel("t1", v(2)), three)
	r := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-10: create, update, delete, re-create: result", driver.PushResult{Status: driver.PushApplied, CommitSeq: 1,
		RecordedAtMs: r.RecordedAtMs, CacheIdentity: r.CacheIdentity, Ops: []driver.OpResult{
			{Status: driver.OpApplied, ServerVersion: 1}, {Status: driver.OpApplied, ServerVersion: 2},
			{Status: driver.OpApplied}, {Status: driver.OpApplied, ServerVersion: 3}}}, r.PushResult)
	r1 := r.PushResult
	first := []driver.Change{upsertChange(tTodos, rowOf(one, 1)), upsertChange(tTodos, rowOf(two, 2)),
		deleteChange(tTodos, rowOf(two, 2)), upsertChange(tTodos, rowOf(three, 3))}
	expectEqual(t, "PUSH-10: one change per op, in op order", first, r.Changes)
	want := rowOf(three, 3)
	pushExpectRow(t, conn, "p1", "PUSH-10", "t1", &want)

	// Two updates within the scopes, then a move and an update after it.
	four, five := pushTodo("t1", "p7", "o1", "four", v(3)), pushTodo("t1", "p7", "o1", "five", v(4))
	r = pushDo(t, s, "p1", pushReq("w1", "k2", four, five))
	expectEqual(t, "PUSH-10: two updates of one row: results", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 4},
		{Status: driver.OpApplied, ServerVersion: 5}}, r.Ops)
	second := []driver.Change{upsertChange(tTodos, rowOf(four, 4)), upsertChange(tTodos, rowOf(five, 5))}
	expectEqual(t, "PUSH-10: two updates of one row: changes", second, r.Changes)
	six, seven := pushTodo("t1", "p8", "o1", "six", v(5)), pushTodo("t1", "p8", "o1", "seven", v(6))
	r = pushDo(t, s, "p1", pushReq("w1", "k3", six, seven))
	expectEqual(t, "PUSH-10: a move, then an update: results", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 6},
		{Status: driver.OpApplied, ServerVersion: 7}}, r.Ops)
	third := []driver.Change{deleteChange(tTodos, rowOf(five, 5)), upsertChange(tTodos, rowOf(six, 6)), upsertChange(tTodos, rowOf(seven, 7))}
	expectEqual(t, "PUSH-10: a move, then an update: changes", third, r.Changes)
	want = rowOf(seven, 7)
	pushExpectRow(t, conn, "p1", "PUSH-10", "t1", &want)

	// The log by scope, and what pullers of each scope end with.
	meta := func(seq int64, cs ...driver.Change) driver.Commit {
		return driver.Commit{Seq: seq, ClientID: "w1", ClientCommitID: fmt.Sprintf("k%d", seq), ActorID: "actor-w1", Changes: cs}
	}
	var got []driver.Commit
	for _, c := range winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, math.MaxInt64)) {
		c.CreatedAtMs = 0
		got = append(got, c)
	}
	expectEqual(t, "PUSH-10: the log of p7", []driver.Commit{meta(1, first...), meta(2, second...), meta(3, third[0])}, got)
	for i, r := range replicas {
		r.sync(t, s, "p1", 3)
		expectEqual(t, "PUSH-10: the rows a puller of "+r.sub.ID+" ends with", pullServerRows(t, conn, "p1", r.sub), r.sorted())
		expectEqual(t, "PUSH-10: rows a puller of "+r.sub.ID+" holds", i, len(r.rows))
	}
	// The first push replays as it was answered.
	again := pushDo(t, s, "p1", req)
	expectEqual(t, "PUSH-10: replay of the first push", syncstore.PushResponse{PushResult: r1, Replayed: true}, again)
}

// Catches: an op's base version checked against the stored row instead
// of the row the earlier ops of its commit left (a second update at the
// stored version applied over the first, a second create over the
// first's row applied, an update of a row an earlier op deleted applied),
// or a guarded push whose guard sees only the stored row; a rejected
// commit that keeps its first writes.
func pushStagedBase(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("c1", "k0", pushTodo("t1", "p7", "o1", "stored", nil)))
	a := pushTodo("t1", "p7", "o1", "a", v(1))
	cases := []struct {
		name string
		ops  []syncstore.PushOp
		// conflict is op 1's result after ops[0] passed.
		conflict driver.OpResult
	}{
		{"two updates at the stored version", []syncstore.PushOp{a, pushTodo("t1", "p7", "o1", "b", v(1))},
			driver.OpResult{ServerVersion: 2, ServerRow: a.Values}},
		{"two creates of one row", []syncstore.PushOp{pushTodo("t2", "p7", "o1", "x", v(0)), pushTodo("t2", "p7", "o1", "y", v(0))},
			driver.OpResult{ServerVersion: 1, ServerRow: pushTodo("t2", "p7", "o1", "x", nil).Values}},
		{"an update after a delete", []syncstore.PushOp{pushDel("t1", v(1)), pushTodo("t1", "p7", "o1", "b", v(1))},
			driver.OpResult{}},
		{"a delete after a delete", []syncstore.PushOp{pushDel("t1", v(1)), pushDel("t1", v(1))}, driver.OpResult{}},
	}
	for i, c := range cases {
		what := "PUSH-10: " + c.name
		before := pushStateOf(t, conn, "p1")
		req := pushReq("c2", fmt.Sprintf("k%d", i), c.ops...)
		r := pushDo(t, s, "p1", req)
		c.conflict.Status, c.conflict.Code, c.conflict.Message = driver.OpConflict, syncstore.OpCodeVersionConflict, opMessage(r, 1)
		expectEqual(t, what, driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs, CacheIdentity: r.CacheIdentity,
			Ops: []driver.OpResult{{Status: driver.OpApplied}, c.conflict}}, r.PushResult)
		expectEqual(t, what+": the partition after", before, pushStateOf(t, conn, "p1"))
		pushExpectStored(t, conn, s, "p1", what, req, r)
	}
	// Without base versions each op applies over the row the previous one
	// left: versions 2 and 3. Authorize sees that row too, in its input
	// and through the Tx.
	var seen []string
	r, err := s.PushWith(t.Context(), "p1", pushReq("c2", "lww", pushTodo("t1", "p7", "o1", "x", nil), pushTodo("t1", "p7", "o1", "y", nil)),
		syncstore.PushOptions{Authorize: func(ctx context.Context, tx *syncstore.Tx, in syncstore.AuthorizeInput) error {
			row, _, err := tx.GetRow(ctx, tTodos, in.Op.RowID)
			seen = append(seen, fmt.Sprintf("#%d v%d tx v%d", in.Index, in.Current.ServerVersion, row.ServerVersion))
			return err
		}})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-10: two last-writer-wins updates", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2},
		{Status: driver.OpApplied, ServerVersion: 3}}, r.Ops)
	expectEqual(t, "PUSH-10: what Authorize sees of them", []string{"#0 v1 tx v1", "#1 v2 tx v2"}, seen)
	want := rowOf(pushTodo("t1", "p7", "o1", "y", nil), 3)
	pushExpectRow(t, conn, "p1", "PUSH-10", "t1", &want)
}

// closedTodo is todo id with done set: the validators below refuse to
// change it.
func closedTodo(id string, base *int64) syncstore.PushOp {
	o := pushTodo(id, "p7", "o1", "closed", base)
	o.Values["done"] = true
	return o
}

// Catches: ValidateOp not called, called with the pushed row or the
// stored row where the commit's earlier ops changed it, called for a
// delete of a missing row, for a replay, after the op that failed, or
// before the base check; its refusal lost, not stored, or replayed
// otherwise than answered.
func pushValidateOpRefuses(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("c1", "k0", closedTodo("t1", nil), pushTodo("t3", "p7", "o1", "three", nil)))
	var calls []string
	o := syncstore.PushOptions{ValidateOp: func(ctx context.Context, tx *syncstore.Tx, in syncstore.OpInput) (syncstore.Values, error) {
		row, _, err := tx.GetRow(ctx, tTodos, in.Op.RowID)
		if err != nil {
			return nil, err
		}
		calls = append(calls, fmt.Sprintf("#%d %s %s exists=%v v%d (tx v%d) current=%v values=%v", in.Index, in.Op.Op, in.Op.RowID, in.Exists,
			in.Current.ServerVersion, row.ServerVersion, in.Current.Values["title"], in.Op.Values["title"]))
		if in.Op.Op == driver.OpUpsert && in.Exists && in.Current.Values["done"] == true {
			return nil, &syncstore.Refusal{Code: "app.closed", Message: "a done todo is read-only",
				Details: `{"fieldPaths":["done"],"reason":"todo.closed","requiredAction":"reopen"}`}
		}
		return nil, nil
	}}
	before := pushStateOf(t, conn, "p1")
	req := pushReq("c2", "k1", pushTodo("t2", "p7", "o1", "two", v(0)), pushDel("t-missing", nil), pushDel("t3", v(1)),
		pushTodo("t1", "p7", "o1", "edit", v(1)), pushTodo("t4", "p7", "o1", "after", nil))
	r, err := s.PushWith(t.Context(), "p1", req, o)
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-11: refused by the validator", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs,
		CacheIdentity: r.CacheIdentity, Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied}, {Status: driver.OpApplied},
			{Status: driver.OpError, Code: "app.closed", Message: "a done todo is read-only",
				Details: `{"fieldPaths":["done"],"reason":"todo.closed","requiredAction":"reopen"}`}}}, r.PushResult)
	expectEqual(t, "PUSH-11: ValidateOp calls", []string{
		"#0 upsert t2 exists=false v0 (tx v0) current=<nil> values=two",
		"#2 delete t3 exists=true v1 (tx v1) current=three values=<nil>",
		"#3 upsert t1 exists=true v1 (tx v1) current=closed values=edit"}, calls)
	expectEqual(t, "PUSH-11: the partition after the refusal", before, pushStateOf(t, conn, "p1"))
	calls = nil
	pushExpectStored(t, conn, s, "p1", "PUSH-11: the validator's refusal", req, r)
	again, err := s.PushWith(t.Context(), "p1", req, o)
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-11: replayed through PushWith", syncstore.PushResponse{PushResult: r.PushResult, Replayed: true}, again)
	expectEqual(t, "PUSH-11: ValidateOp calls for replays", []string(nil), calls)

	// A stale op is refused by its base check before the validator runs.
	r, err = s.PushWith(t.Context(), "p1", pushReq("c2", "k2", pushTodo("t1", "p7", "o1", "edit", v(7))), o)
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-11: a stale op's result", driver.OpConflict, opStatus(r, 0))
	expectEqual(t, "PUSH-11: ValidateOp calls for a stale op", []string(nil), calls)

	// The validator sees the row as the earlier ops of the commit left it.
	r, err = s.PushWith(t.Context(), "p1", pushReq("c2", "k3", pushTodo("t5", "p7", "o1", "new", v(0)),
		pushTodo("t5", "p7", "o1", "newer", v(1)), pushDel("t5", v(2))), o)
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-11: a row's ops in one commit: status", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-11: ValidateOp calls for a row's ops in one commit", []string{
		"#0 upsert t5 exists=false v0 (tx v0) current=<nil> values=new",
		"#1 upsert t5 exists=true v1 (tx v1) current=new values=newer",
		"#2 delete t5 exists=true v2 (tx v2) current=newer values=<nil>"}, calls)
}

// keepScopesMergeTitle is a ValidateOp that keeps a stored row's scope
// columns (SSP2 §3.4 rule 5: an update cannot move a row) and merges the
// title (stored + "+" + pushed, a stand-in for a CRDT column's merge);
// a create gets owner "o9" whatever was pushed.
func keepScopesMergeTitle(ctx context.Context, tx *syncstore.Tx, in syncstore.OpInput) (syncstore.Values, error) {
	if in.Op.Op == driver.OpDelete {
		return nil, nil
	}
	v := in.Op.Values
	if !in.Exists {
		v["owner_id"] = "o9"
		return v, nil
	}
	v["project_id"], v["owner_id"] = in.Current.Values["project_id"], in.Current.Values["owner_id"]
	v["title"] = fmt.Sprint(in.Current.Values["title"]) + "+" + fmt.Sprint(v["title"])
	return v, nil
}

// Catches: the values a ValidateOp returns not written, or written but
// not logged or answered (the log built from the pushed values), scopes
// computed from the pushed values (a stripped move that still moves, a
// delete logged under scopes the row never left), a commit's later op
// validated against the pushed values of an earlier one, or a push with
// a ValidateOp written by guarded writes, skipping it (PUSH-9).
func pushValidateOpValues(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("c1", "k0", pushTodo("t1", "p7", "o1", "a", nil)))
	o := syncstore.PushOptions{ValidateOp: keepScopesMergeTitle}
	r, err := s.PushWith(t.Context(), "p1", pushReq("c1", "k1", pushTodo("t1", "p8", "o2", "b", v(1)), pushTodo("t2", "p7", "o1", "new", v(0))), o)
	must(t, "PushWith", err)
	t1 := rowOf(pushTodo("t1", "p7", "o1", "a+b", nil), 2)
	t2 := rowOf(pushTodo("t2", "p7", "o9", "new", nil), 1)
	expectEqual(t, "PUSH-11: results with the validator's values", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2},
		{Status: driver.OpApplied, ServerVersion: 1}}, r.Ops)
	expectEqual(t, "PUSH-11: changes built from the validator's values", []driver.Change{upsertChange(tTodos, t1), upsertChange(tTodos, t2)}, r.Changes)
	pushExpectRow(t, conn, "p1", "PUSH-11", "t1", &t1)
	pushExpectRow(t, conn, "p1", "PUSH-11", "t2", &t2)
	expectEqual(t, "PUSH-11: commits of p8 (the stripped move)", []int64(nil),
		seqs(winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p8"}}, math.MaxInt64))))
	log := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"owner": {"o9"}}, math.MaxInt64))
	expectEqual(t, "PUSH-11: commits of owner o9 (the created row's scopes)", []int64{2}, seqs(log))
	// Two updates of t1 in one commit: the second merges over the first.
	r, err = s.PushWith(t.Context(), "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "c", v(2)), pushTodo("t1", "p7", "o1", "d", v(3))), o)
	must(t, "PushWith", err)
	t1c := rowOf(pushTodo("t1", "p7", "o1", "a+b+c", nil), 3)
	t1d := rowOf(pushTodo("t1", "p7", "o1", "a+b+c+d", nil), 4)
	expectEqual(t, "PUSH-11: changes of two merged updates", []driver.Change{upsertChange(tTodos, t1c), upsertChange(tTodos, t1d)}, r.Changes)
	pushExpectRow(t, conn, "p1", "PUSH-11", "t1", &t1d)
}

// Catches: values a ValidateOp returns written unchecked (another row
// id, a column missing or of the wrong type, values for a delete), a
// hook error that writes or stores something, a reserved refusal code
// stored; a constraint-violation refusal not stored as a rejection.
func pushValidateOpErrors(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("c1", "k0", pushTodo("t1", "p7", "o1", "a", nil)))
	boom := errors.New("validator store down")
	with := func(change func(syncstore.Values)) func(context.Context, *syncstore.Tx, syncstore.OpInput) (syncstore.Values, error) {
		return func(_ context.Context, _ *syncstore.Tx, in syncstore.OpInput) (syncstore.Values, error) {
			if in.Op.Op == driver.OpDelete {
				return syncstore.Values{"id": in.Op.RowID}, nil
			}
			change(in.Op.Values)
			return in.Op.Values, nil
		}
	}
	fails := func(err error) func(context.Context, *syncstore.Tx, syncstore.OpInput) (syncstore.Values, error) {
		return func(context.Context, *syncstore.Tx, syncstore.OpInput) (syncstore.Values, error) { return nil, err }
	}
	upd := pushTodo("t1", "p7", "o1", "b", v(1))
	cases := []struct {
		name string
		hook func(context.Context, *syncstore.Tx, syncstore.OpInput) (syncstore.Values, error)
		ops  []syncstore.PushOp
		code driver.Code
	}{
		{"another row id", with(func(x syncstore.Values) { x["id"] = "t9" }), []syncstore.PushOp{upd}, driver.CodeInvalidValue},
		{"a column missing", with(func(x syncstore.Values) { delete(x, "title") }), []syncstore.PushOp{upd}, driver.CodeInvalidValue},
		{"a value of the wrong type", with(func(x syncstore.Values) { x["title"] = int64(5) }), []syncstore.PushOp{upd}, driver.CodeInvalidValue},
		{"values for a delete", with(func(syncstore.Values) {}), []syncstore.PushOp{pushDel("t1", v(1))}, driver.CodeInvalidArgument},
		{"a reserved refusal code", fails(&syncstore.Refusal{Code: "sync.bogus"}), []syncstore.PushOp{upd}, driver.CodeInvalidArgument},
		{"a hook error", fails(boom), []syncstore.PushOp{upd}, ""},
	}
	for i, c := range cases {
		what := "PUSH-11: " + c.name
		before := pushStateOf(t, conn, "p1")
		key := fmt.Sprintf("k%d", i)
		ops := append([]syncstore.PushOp{pushTodo("t2", "p7", "o1", "new", nil)}, c.ops...)
		_, err := s.PushWith(t.Context(), "p1", pushReq("c2", key, ops...), syncstore.PushOptions{ValidateOp: func(ctx context.Context, tx *syncstore.Tx, in syncstore.OpInput) (syncstore.Values, error) {
			if in.Index == 0 {
				return nil, nil
			}
			return c.hook(ctx, tx, in)
		}})
		if c.code == "" {
			expectEqual(t, what+": the hook's own error is returned", true, errors.Is(err, boom))
		} else {
			expectCode(t, what, err, c.code)
			var e *driver.Error
			if errors.As(err, &e) {
				expectEqual(t, what+": the error's op index", 1, e.OpIndex)
			}
		}
		pushExpectNothing(t, conn, "p1", what, before, "c2", key)
	}
	// A refusal with the constraint-violation code is a stored rejection.
	req := pushReq("c2", "cv", upd)
	r, err := s.PushWith(t.Context(), "p1", req, syncstore.PushOptions{ValidateOp: fails(&syncstore.Refusal{
		Code: syncstore.OpCodeConstraintViolation, Message: "the write validator failed"})})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-11: a constraint-violation refusal", []driver.OpResult{{Status: driver.OpError,
		Code: syncstore.OpCodeConstraintViolation, Message: "the write validator failed"}}, r.Ops)
	pushExpectStored(t, conn, s, "p1", "PUSH-11: a constraint-violation refusal", req, r)
}

// Catches: ValidateCommit not called, called for a rejected commit or a
// replay, without every op (a delete of a missing row left out), with
// rows other than before and after each op, or while the commit's writes
// are not yet visible in the Tx (GetRow, ScanRows); its refusal failing
// another op than the one it blames, or not stored; an out-of-range
// blame or a hook error that writes anything.
func pushValidateCommit(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("c1", "k0", pushTodo("t2", "p7", "o1", "two", nil), pushTodo("t3", "p7", "o1", "three", nil)))
	var calls []string
	// refuse returns a ValidateCommit that notes what it sees, then
	// returns err.
	refuse := func(err error) func(context.Context, *syncstore.Tx, syncstore.CandidateCommit) error {
		return func(ctx context.Context, tx *syncstore.Tx, c syncstore.CandidateCommit) error {
			calls = append(calls, fmt.Sprintf("%s/%s by %s in %s: %d ops", c.ClientID, c.ClientCommitID, c.ActorID, c.Partition, len(c.Ops)))
			for i, o := range c.Ops {
				calls = append(calls, fmt.Sprintf("#%d %s %s exists=%v v%d %v -> v%d %v", i, o.Op.Op, o.Op.RowID, o.Exists,
					o.Current.ServerVersion, o.Current.Values["title"], o.Written.ServerVersion, o.Written.Values["title"]))
			}
			row, found, rerr := tx.GetRow(ctx, tTodos, "t1")
			if rerr != nil {
				return rerr
			}
			rows, rerr := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7"}}, Limit: 10})
			if rerr != nil {
				return rerr
			}
			calls = append(calls, fmt.Sprintf("candidate: t1 found=%v v%d; p7 %v", found, row.ServerVersion, ids(rows)))
			return err
		}
	}
	blame := refuse(&syncstore.Refusal{Code: "app.budget", Message: "over budget", Details: `{"reason":"budget.exceeded"}`, OpIndex: 2})
	ops := []syncstore.PushOp{pushTodo("t1", "p7", "o1", "one", v(0)), pushTodo("t2", "p7", "o1", "two'", v(1)),
		pushDel("t3", v(1)), pushDel("t-missing", nil)}
	before := pushStateOf(t, conn, "p1")
	req := pushReq("c2", "k1", ops...)
	r, err := s.PushWith(ctx, "p1", req, syncstore.PushOptions{ValidateCommit: blame})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-12: ValidateCommit's view", []string{
		"c2/k1 by actor-c2 in p1: 4 ops",
		"#0 upsert t1 exists=false v0 <nil> -> v1 one",
		"#1 upsert t2 exists=true v1 two -> v2 two'",
		"#2 delete t3 exists=true v1 three -> v0 <nil>",
		"#3 delete t-missing exists=false v0 <nil> -> v0 <nil>",
		"candidate: t1 found=true v1; p7 [t1 t2]"}, calls)
	expectEqual(t, "PUSH-12: the refused commit", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs,
		CacheIdentity: r.CacheIdentity, Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied},
			{Status: driver.OpError, Code: "app.budget", Message: "over budget", Details: `{"reason":"budget.exceeded"}`}}}, r.PushResult)
	expectEqual(t, "PUSH-12: the partition after the refusal", before, pushStateOf(t, conn, "p1"))
	calls = nil
	s.SetPushOptions(syncstore.PushOptions{ValidateCommit: blame})
	pushExpectStored(t, conn, s, "p1", "PUSH-12: the commit validator's refusal", req, r)
	expectEqual(t, "PUSH-12: ValidateCommit calls for a replay", []string(nil), calls)

	// A commit with a conflict is rejected before the validator runs.
	r = pushDo(t, s, "p1", pushReq("c2", "k2", pushTodo("t2", "p7", "o1", "x", v(5))))
	expectEqual(t, "PUSH-12: a conflicting commit", driver.OpConflict, opStatus(r, 0))
	expectEqual(t, "PUSH-12: ValidateCommit calls for a conflicting commit", []string(nil), calls)

	// A blame outside the commit, and a hook error, write nothing.
	boom := errors.New("ledger down")
	for i, hook := range []func(context.Context, *syncstore.Tx, syncstore.CandidateCommit) error{
		refuse(&syncstore.Refusal{Code: "app.budget", OpIndex: 4}), refuse(boom)} {
		key := fmt.Sprintf("bad%d", i)
		_, err := s.PushWith(ctx, "p1", pushReq("c2", key, ops...), syncstore.PushOptions{ValidateCommit: hook})
		if i == 0 {
			expectCode(t, "PUSH-12: a refusal blaming op 4 of 4", err, driver.CodeInvalidArgument)
		} else {
			expectEqual(t, "PUSH-12: the hook's own error is returned", true, errors.Is(err, boom))
		}
		pushExpectNothing(t, conn, "p1", "PUSH-12: "+key, before, "c2", key)
	}

	// A validator that accepts: the commit lands as it saw it.
	r, err = s.PushWith(ctx, "p1", pushReq("c2", "k3", ops...), syncstore.PushOptions{ValidateCommit: refuse(nil)})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-12: an accepted commit", driver.PushApplied, r.Status)
	_, found, err := conn.GetRow(ctx, "p1", tTodos, "t3")
	must(t, "GetRow", err)
	expectEqual(t, "PUSH-12: t3 after the accepted commit", false, found)
}

// Catches: a server command refused, or pushed under another client id;
// a command applied again when pushed again, or its key reused for
// other ops; clients let into the namespace by Push, PushWith or Pull;
// a command id outside the namespace accepted by PushCommand.
func pushCommands(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	id := syncstore.CommandClientID("nightly-rollup")
	var seen []string
	s.SetPushOptions(syncstore.PushOptions{Authorize: func(_ context.Context, _ *syncstore.Tx, in syncstore.AuthorizeInput) error {
		seen = append(seen, in.ClientID+" as "+in.ActorID)
		return nil
	}})
	cmd := syncstore.PushRequest{ClientID: id, ClientCommitID: "run-1", ActorID: "server", Ops: []syncstore.PushOp{pushTodo("t1", "p7", "o1", "rolled up", syncstore.Version(0))}}
	r, err := s.PushCommand(ctx, "p1", cmd, syncstore.PushOptions{})
	must(t, "PushCommand", err)
	expectEqual(t, "PUSH-13: a command", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-13: the Store's hooks run for a command", []string{id + " as server"}, seen)
	log := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, math.MaxInt64))
	expectEqual(t, "PUSH-13: commits", 1, len(log))
	if len(log) == 1 {
		expectEqual(t, "PUSH-13: the command's commit names it", [3]string{id, "run-1", "server"},
			[3]string{log[0].ClientID, log[0].ClientCommitID, log[0].ActorID})
	}
	before := pushStateOf(t, conn, "p1")
	again, err := s.PushCommand(ctx, "p1", cmd, syncstore.PushOptions{})
	must(t, "PushCommand", err)
	expectEqual(t, "PUSH-13: the command again", syncstore.PushResponse{PushResult: r.PushResult, Replayed: true}, again)
	other := cmd
	other.Ops = []syncstore.PushOp{pushTodo("t1", "p7", "o1", "other", nil)}
	_, err = s.PushCommand(ctx, "p1", other, syncstore.PushOptions{})
	expectCode(t, "PUSH-13: the command's key with other ops", err, driver.CodeIdempotencyKeyReused)
	expectEqual(t, "PUSH-13: the partition after the replay", before, pushStateOf(t, conn, "p1"))
	// A rejected command is stored and replayed like a client's.
	stale := cmd
	stale.ClientCommitID = "run-2"
	rej, err := s.PushCommand(ctx, "p1", stale, syncstore.PushOptions{})
	must(t, "PushCommand", err)
	expectEqual(t, "PUSH-13: a stale command", driver.PushRejected, rej.Status)
	again, err = s.PushCommand(ctx, "p1", stale, syncstore.PushOptions{})
	must(t, "PushCommand", err)
	expectEqual(t, "PUSH-13: the stale command again", syncstore.PushResponse{PushResult: rej.PushResult, Replayed: true}, again)

	// Clients stay out of the namespace; commands stay in it.
	before = pushStateOf(t, conn, "p1")
	client := cmd
	client.ClientCommitID = "run-3"
	_, err = s.Push(ctx, "p1", client)
	expectCode(t, "PUSH-13: Push under the command namespace", err, driver.CodeInvalidClientID)
	_, err = s.PushWith(ctx, "p1", client, syncstore.PushOptions{})
	expectCode(t, "PUSH-13: PushWith under the command namespace", err, driver.CodeInvalidClientID)
	_, err = s.Pull(ctx, "p1", syncstore.PullRequest{ClientID: id, ActorID: "server", Subscriptions: []syncstore.PullSubscription{pullSub("s", "p7", 0)}})
	expectCode(t, "PUSH-13: Pull under the command namespace", err, driver.CodeInvalidClientID)
	for _, bad := range []string{"c1", `["remote-command"]`, " " + id} {
		c := client
		c.ClientID = bad
		_, err = s.PushCommand(ctx, "p1", c, syncstore.PushOptions{})
		expectCode(t, fmt.Sprintf("PUSH-13: PushCommand under client id %q", bad), err, driver.CodeInvalidClientID)
	}
	expectEqual(t, "PUSH-13: the partition after the refused pushes", before, pushStateOf(t, conn, "p1"))
}

// Catches: PushWith's options ignored, or kept for later calls (written
// into the Store's), or replacing the Store's fields it leaves unset.
func pushWithOptions(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	at := func(ms int64) func() time.Time { return func() time.Time { return time.UnixMilli(ms) } }
	s.SetPushOptions(syncstore.PushOptions{Now: at(1_700_000_000_111), Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error {
		return &syncstore.Refusal{Code: "app.store_wide"}
	}})
	allow := func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error { return nil }
	r, err := s.PushWith(ctx, "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)), syncstore.PushOptions{Authorize: allow})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-14: the call's Authorize", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-14: the Store's clock where the call sets none", int64(1_700_000_000_111), r.RecordedAtMs)
	r = pushDo(t, s, "p1", pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil)))
	expectEqual(t, "PUSH-14: Push after PushWith keeps the Store's Authorize", []driver.OpResult{{Status: driver.OpError, Code: "app.store_wide"}}, r.Ops)
	r, err = s.PushWith(ctx, "p1", pushReq("c1", "k3", pushTodo("t2", "p7", "o1", "two", nil)), syncstore.PushOptions{Authorize: allow, Now: at(1_700_000_000_222)})
	must(t, "PushWith", err)
	expectEqual(t, "PUSH-14: the call's clock", int64(1_700_000_000_222), r.RecordedAtMs)
	got, _, err := conn.GetPushResult(ctx, "p1", "c1", "k3")
	must(t, "GetPushResult", err)
	expectEqual(t, "PUSH-14: the stored result's time", int64(1_700_000_000_222), got.RecordedAtMs)
}

// opStatus is the status of r's op i, or "" when r has no op i.
func opStatus(r syncstore.PushResponse, i int) driver.OpStatus {
	if i < len(r.Ops) {
		return r.Ops[i].Status
	}
	return ""
}

// pushProtocolRefusals: a hook may refuse with one of the protocol's
// op codes (PUSH-15) — each is stored and replayed exactly, from
// Authorize and from ValidateOp alike — while any other reserved code is
// still the host's bug: invalid_argument, nothing stored (PUSH-6).
func pushProtocolRefusals(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	pushDo(t, s, "p1", pushReq("c0", "k0", pushTodo("t-stored", "p7", "o1", "a", nil)))
	refuse := func(code string) error {
		return &syncstore.Refusal{Code: code, Message: "refused by the protocol", Retryable: code == "sync.missing_scopes"}
	}
	for i, code := range syncstore.ProtocolRefusalCodes {
		client := fmt.Sprintf("c%d", i+1)
		hooks := []syncstore.PushOptions{
			{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error { return refuse(code) }},
			{ValidateOp: func(context.Context, *syncstore.Tx, syncstore.OpInput) (syncstore.Values, error) {
				return nil, refuse(code)
			}},
		}
		for j, o := range hooks {
			req := pushReq(client, fmt.Sprintf("k%d", j), pushTodo("t-new", "p7", "o1", "x", nil), pushTodo("t-stored", "p7", "o1", "b", nil))
			what := fmt.Sprintf("PUSH-15: %s from hook %d", code, j)
			r, err := s.PushWith(ctx, "p1", req, o)
			must(t, what, err)
			want := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: r.RecordedAtMs, CacheIdentity: r.CacheIdentity,
				Ops: []driver.OpResult{{Status: driver.OpError, Code: code, Message: "refused by the protocol", Retryable: code == "sync.missing_scopes"}}}
			expectEqual(t, what+": the stored result", want, r.PushResult)
			again, err := s.PushWith(ctx, "p1", req, o)
			must(t, what+": replay", err)
			expectEqual(t, what+": replayed", true, again.Replayed)
			expectEqual(t, what+": the replayed result", want, again.PushResult)
			pushExpectRow(t, conn, "p1", "PUSH-15", "t-new", nil)
		}
	}
	before := pushStateOf(t, conn, "p1")
	for i, code := range []string{"sync.bogus", "sync.version_conflict", "blob.forbidden", "reaction.handler_error", "SYNC.FORBIDDEN"} {
		req := pushReq("c9", fmt.Sprintf("x%d", i), pushTodo("t-new", "p7", "o1", "x", nil))
		_, err := s.PushWith(ctx, "p1", req, syncstore.PushOptions{
			Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error { return refuse(code) }})
		expectCode(t, "PUSH-15: a reserved code outside the protocol's: "+code, err, driver.CodeInvalidArgument)
		pushExpectNothing(t, conn, "p1", "PUSH-15: "+code, before, "c9", req.ClientCommitID)
	}
}
