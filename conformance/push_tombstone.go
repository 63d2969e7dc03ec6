package conformance

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-18 (a row's server version never repeats) and ROW-5 (a
// deleted row's tombstone), over any driver.

func init() {
	register(
		Case{Name: "PUSH-18/stale-update-never-lands-on-a-re-created-row", Run: pushStaleOnRecreated},
		Case{Name: "PUSH-18/re-create-continues-in-one-commit-and-without-base", Run: pushRecreateShapes},
		Case{Name: "PUSH-18/tombstone-outlives-prune-and-stays-in-its-partition", Run: pushTombstoneKept},
		Case{Name: "ROW-5/delete-keeps-a-tombstone-seen-in-the-tx", Run: rowTombstone},
	)
}

// pushConflictAt is the conflict an op meets at server version v with
// server row values (nil: no row).
func pushConflictAt(r syncstore.PushResponse, v int64, values driver.Values) []driver.OpResult {
	msg := ""
	if len(r.Ops) > 0 {
		msg = r.Ops[len(r.Ops)-1].Message
	}
	return []driver.OpResult{{Status: driver.OpConflict, Code: syncstore.OpCodeVersionConflict, Message: msg,
		ServerVersion: v, ServerRow: values}}
}

// Catches: a driver or engine that numbers a re-created row from 1 again
// (no tombstone, a tombstone not read with the rows, a guarded create
// that ignores it), so that a client holding version 2 of the old row —
// offline while it was deleted, re-created and edited once — updates the
// new row with base 2 and no conflict.
func pushStaleOnRecreated(t T, h Harness) {
	conn, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("a", "k1", pushTodo("t1", "p7", "o1", "one", v(0))))
	pushDo(t, s, "p1", pushReq("a", "k2", pushTodo("t1", "p7", "o1", "two", v(1))))
	// Client b holds version 2, and goes offline.
	pushDo(t, s, "p1", pushReq("a", "k3", pushDel("t1", v(2))))
	// A base version on the deleted row: a conflict at version 0, as for
	// any missing row (PUSH-3).
	r := pushDo(t, s, "p1", pushReq("b", "k0", pushTodo("t1", "p7", "o1", "stale", v(2))))
	expectEqual(t, "PUSH-3: an update of a deleted row", pushConflictAt(r, 0, nil), r.Ops)
	// Re-created (base 0, as a create is guarded where the driver has
	// guarded writes) and edited once.
	r = pushDo(t, s, "p1", pushReq("a", "k4", pushTodo("t1", "p7", "o1", "new", v(0))))
	expectEqual(t, "PUSH-18: the re-created row's version", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 3}}, r.Ops)
	edited := pushTodo("t1", "p7", "o1", "new, edited", v(3))
	r = pushDo(t, s, "p1", pushReq("a", "k5", edited))
	expectEqual(t, "PUSH-18: the re-created row, edited", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 4}}, r.Ops)
	// b comes back with its update at base 2.
	r = pushDo(t, s, "p1", pushReq("b", "k1", pushTodo("t1", "p7", "o1", "stale", v(2))))
	expectEqual(t, "PUSH-18: a stale update of the re-created row", pushConflictAt(r, 4, edited.Values), r.Ops)
	want := rowOf(edited, 4)
	pushExpectRow(t, conn, "p1", "PUSH-18", "t1", &want)
	// A stale delete is refused too.
	r = pushDo(t, s, "p1", pushReq("b", "k2", pushDel("t1", v(2))))
	expectEqual(t, "PUSH-18: a stale delete of the re-created row", pushConflictAt(r, 4, edited.Values), r.Ops)
}

// Catches: a re-create numbered from 1 when the delete is an earlier op
// of the same commit (the push's own delete not taken as the
// tombstone), when the create has no base version (last writer wins), or
// when the delete removed a row the Tx had just written.
func pushRecreateShapes(t T, h Harness) {
	_, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("a", "k1", pushTodo("t1", "p7", "o1", "one", nil), pushTodo("t1", "p7", "o1", "two", nil),
		pushTodo("t2", "p7", "o1", "one", nil)))
	// In one commit: delete at 2, re-create, delete again, re-create.
	r := pushDo(t, s, "p1", pushReq("a", "k2", pushDel("t1", v(2)), pushTodo("t1", "p7", "o1", "three", v(0)),
		pushDel("t1", v(3)), pushTodo("t1", "p7", "o1", "four", nil)))
	expectEqual(t, "PUSH-18: delete and re-create twice in one commit", []driver.OpResult{{Status: driver.OpApplied},
		{Status: driver.OpApplied, ServerVersion: 3}, {Status: driver.OpApplied}, {Status: driver.OpApplied, ServerVersion: 4}}, r.Ops)
	// A delete in its own commit, then a create without a base version.
	pushDo(t, s, "p1", pushReq("a", "k3", pushDel("t2", nil)))
	r = pushDo(t, s, "p1", pushReq("a", "k4", pushTodo("t2", "p7", "o1", "again", nil)))
	expectEqual(t, "PUSH-18: a create without base version over a tombstone", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}, r.Ops)
	// A row created and deleted in one commit leaves its version too.
	pushDo(t, s, "p1", pushReq("a", "k5", pushTodo("t3", "p7", "o1", "brief", v(0)), pushDel("t3", v(1))))
	r = pushDo(t, s, "p1", pushReq("a", "k6", pushTodo("t3", "p7", "o1", "back", v(0))))
	expectEqual(t, "PUSH-18: a re-create after a row created and deleted in one commit", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}, r.Ops)
}

// Catches: tombstones dropped by Prune (even a Prune that removes every
// commit, result and client record it may), or shared across partitions.
func pushTombstoneKept(t T, h Harness) {
	_, s := pushStore(t, h)
	v := syncstore.Version
	pushDo(t, s, "p1", pushReq("a", "k1", pushTodo("t1", "p7", "o1", "one", nil), pushTodo("t1", "p7", "o1", "two", nil),
		pushTodo("t1", "p7", "o1", "three", nil)))
	pushDo(t, s, "p1", pushReq("a", "k2", pushDel("t1", v(3))))
	pol := syncstore.RetentionPolicy{NoDefaults: true}
	for range 3 {
		rep, err := s.Prune(t.Context(), "p1", pol)
		must(t, "Prune", err)
		if !rep.More {
			break
		}
	}
	r := pushDo(t, s, "p1", pushReq("a", "k3", pushTodo("t1", "p7", "o1", "back", v(0))))
	expectEqual(t, "PUSH-18: a re-create after a Prune of everything", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 4}}, r.Ops)
	// The same row id in another partition has its own history (P-1).
	r = pushDo(t, s, "p2", pushReq("a", "k1", pushTodo("t1", "p7", "o1", "other", v(0))))
	expectEqual(t, "PUSH-18: the row id in another partition", []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 1}}, r.Ops)
}

// Catches: a driver whose DeleteRow keeps no tombstone, keeps it in
// another table's or partition's name, keeps it before the Tx commits
// or after it rolls back, or whose RowTombstone does not see the Tx's
// own delete.
func rowTombstone(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	tomb := func(tx driver.Tx, table, id string) int64 {
		t.Helper()
		v, err := tx.RowTombstone(ctx, table, id)
		must(t, "RowTombstone", err)
		return v
	}
	r := todo("t1", "p7", "o1")
	r.ServerVersion = 7
	tx := begin(t, conn, "p1")
	must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, r))
	expectEqual(t, "ROW-5: a row id never deleted", int64(0), tomb(tx, tTodos, "t-never"))
	commit(t, tx)

	tx = begin(t, conn, "p1")
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "t1"))
	expectEqual(t, "ROW-5: the tombstone of the Tx's own delete", int64(7), tomb(tx, tTodos, "t1"))
	must(t, "Rollback", tx.Rollback(ctx))

	tx = begin(t, conn, "p1")
	expectEqual(t, "ROW-5: a rolled-back delete keeps the row", true, rowExists(t, tx, "t1"))
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "t1"))
	must(t, "DeleteRow of a missing row", tx.DeleteRow(ctx, tTodos, "t-missing"))
	commit(t, tx)

	tx = begin(t, conn, "p2")
	expectEqual(t, "ROW-5: the id in another partition", int64(0), tomb(tx, tTodos, "t1"))
	must(t, "Rollback", tx.Rollback(ctx))
	tx = begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	expectEqual(t, "ROW-5: the tombstone after the delete committed", int64(7), tomb(tx, tTodos, "t1"))
	expectEqual(t, "ROW-5: a missing row deleted", int64(0), tomb(tx, tTodos, "t-missing"))
	expectEqual(t, "ROW-5: the id in another table", int64(0), tomb(tx, tUsers, "t1"))
	// Re-created at 8 and deleted again in one Tx: the newer tombstone.
	r.ServerVersion = 8
	must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, r))
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "t1"))
	expectEqual(t, "ROW-5: a later delete replaces the tombstone", int64(8), tomb(tx, tTodos, "t1"))
	_, err := tx.RowTombstone(ctx, "no_such_table", "t1")
	expectCode(t, "ROW-5: RowTombstone of an unknown table", err, driver.CodeUnknownTable)
}

// rowExists reports whether the todo id exists in tx.
func rowExists(t T, tx driver.Tx, id string) bool {
	t.Helper()
	_, found, err := tx.GetRow(t.Context(), tTodos, id)
	must(t, "GetRow", err)
	return found
}
