package conformance

import (
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The case for PUSH-9: a push of upserts with base versions, which Push
// writes by guarded writes on a driver.GuardedBeginner and reads first on
// any other driver — the answers must be the same on both.

func init() {
	register(
		Case{Name: "PUSH-9/a-guarded-push-answers-as-a-read-first-push", Run: pushGuardedAnswers},
	)
}

// Catches: a guarded push (PUSH-9) that answers or writes otherwise than
// a push that reads first: a create over a row applied, a stale update
// applied, a scope move logged without its delete, a replay applied again
// over rows deleted since or over row ids never written, a unique collision reported as an error rather
// than an op error, versions or changes that differ.
func pushGuardedAnswers(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	create := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", v(0)), pushTodo("t2", "p7", "o1", "two", v(0)))
	r := pushDo(t, s, "p1", create)
	expectEqual(t, "PUSH-9: creates", driver.PushApplied, r.Status)
	expectEqual(t, "PUSH-9: the creates' results", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 1},
		{Status: driver.OpApplied, ServerVersion: 1}}, r.Ops)
	expectEqual(t, "PUSH-9: the creates' changes", []driver.Change{
		upsertChange(tTodos, pushRow(pushTodo("t1", "p7", "o1", "one", nil), 1)),
		upsertChange(tTodos, pushRow(pushTodo("t2", "p7", "o1", "two", nil), 1))}, r.Changes)
	stored := r.PushResult

	// A create over a stored row: a conflict with the server row,
	// nothing written.
	before := pushStateOf(t, conn, "p1")
	r = pushDo(t, s, "p1", pushReq("c2", "k1", pushTodo("t3", "p7", "o1", "three", v(0)), pushTodo("t1", "p7", "o1", "mine", v(0))))
	expectEqual(t, "PUSH-9: a create over a stored row", []driver.OpResult{{Status: driver.OpApplied},
		{Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict, Message: opMessage(r, 1), ServerVersion: 1,
			ServerRow: pushTodo("t1", "p7", "o1", "one", nil).Values}}, r.Ops)
	expectEqual(t, "PUSH-9: the partition after a create over a stored row", before, pushStateOf(t, conn, "p1"))

	// An update at the current version, in the same scopes: one upsert.
	r = pushDo(t, s, "p1", pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "one v2", v(1))))
	expectEqual(t, "PUSH-9: an update at the current version", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}, r.Ops)
	expectEqual(t, "PUSH-9: its changes", []driver.Change{upsertChange(tTodos, pushRow(pushTodo("t1", "p7", "o1", "one v2", nil), 2))}, r.Changes)

	// A stale update: a conflict at the server's version.
	before = pushStateOf(t, conn, "p1")
	r = pushDo(t, s, "p1", pushReq("c2", "k2", pushTodo("t1", "p7", "o1", "stale", v(1))))
	expectEqual(t, "PUSH-9: a stale update", []driver.OpResult{{Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict,
		Message: opMessage(r, 0), ServerVersion: 2, ServerRow: pushTodo("t1", "p7", "o1", "one v2", nil).Values}}, r.Ops)
	expectEqual(t, "PUSH-9: the partition after a stale update", before, pushStateOf(t, conn, "p1"))

	// An update into another project: a delete under the old scopes,
	// then the upsert.
	r = pushDo(t, s, "p1", pushReq("c1", "k3", pushTodo("t1", "p1", "o1", "moved", v(2))))
	expectEqual(t, "PUSH-9: a scope move", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 3}}, r.Ops)
	expectEqual(t, "PUSH-9: a scope move's changes", []driver.Change{
		{Table: tTodos, RowID: "t1", Op: driver.OpDelete, Scopes: driver.Scopes{"project": "p7", "owner": "o1"}},
		upsertChange(tTodos, pushRow(pushTodo("t1", "p1", "o1", "moved", nil), 3))}, r.Changes)

	// The first push again after its rows were deleted: a replay of its
	// stored result, nothing written — although every row guard holds.
	pushDo(t, s, "p1", pushReq("c1", "k4", pushDel("t1", nil), pushDel("t2", nil)))
	before = pushStateOf(t, conn, "p1")
	r = pushDo(t, s, "p1", create)
	expectEqual(t, "PUSH-9: a replay over deleted rows, replayed", true, r.Replayed)
	expectEqual(t, "PUSH-9: a replay over deleted rows, its result", stored, r.PushResult)
	expectEqual(t, "PUSH-9: the partition after a replay over deleted rows", before, pushStateOf(t, conn, "p1"))

	// A result stored by other means (PUSH-2) under the key of a push
	// that creates a row id never written: every row guard holds (no
	// row, no tombstone: PUSH-18), only the result's guard fails; the
	// push replays the result, nothing written.
	direct := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5, Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.x"}}}
	tx := begin(t, conn, "p1")
	must(t, "PutPushResult", tx.PutPushResult(t.Context(), "c1", "k-direct", direct))
	commit(t, tx)
	before = pushStateOf(t, conn, "p1")
	r = pushDo(t, s, "p1", pushReq("c1", "k-direct", pushTodo("t8", "p7", "o1", "never", v(0))))
	expectEqual(t, "PUSH-9: a push under a stored key over a row id never written, replayed", true, r.Replayed)
	expectEqual(t, "PUSH-9: a push under a stored key over a row id never written, its result", direct, r.PushResult)
	expectEqual(t, "PUSH-9: the partition after a push under a stored key", before, pushStateOf(t, conn, "p1"))

	// A create that collides on a unique index: an op error.
	u := func(id, email string) syncstore.PushOp {
		return syncstore.PushOp{Table: tUsers, RowID: id, Op: driver.OpUpsert, BaseVersion: v(0),
			Values: driver.Values{"id": id, "org": "o1", "email": email}}
	}
	pushDo(t, s, "p1", pushReq("c1", "k5", u("u1", "a@x")))
	before = pushStateOf(t, conn, "p1")
	r = pushDo(t, s, "p1", pushReq("c2", "k5", u("u2", "b@x"), u("u3", "a@x")))
	expectEqual(t, "PUSH-9: a unique collision", []driver.OpResult{{Status: driver.OpApplied},
		{Status: driver.OpError, Code: syncstore.OpCodeConstraintViolation, Message: opMessage(r, 1)}}, r.Ops)
	expectEqual(t, "PUSH-9: the partition after a unique collision", before, pushStateOf(t, conn, "p1"))
	max, err := conn.MaxCommitSeq(t.Context(), "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "PUSH-9: the partition's max seq (applied pushes only)", int64(5), max)
}

// pushRow is the row an upsert op writes at server version v.
func pushRow(o syncstore.PushOp, v int64) driver.Row {
	return driver.Row{ID: o.RowID, ServerVersion: v, Scopes: driver.Scopes{"project": o.Values["project_id"].(string),
		"owner": o.Values["owner_id"].(string)}, Values: o.Values}
}

// opMessage is the message of r's op i (free text), or "" when r has no
// op i (the comparison then fails on the results).
func opMessage(r syncstore.PushResponse, i int) string {
	if i < len(r.Ops) {
		return r.Ops[i].Message
	}
	return ""
}
