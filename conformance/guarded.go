package conformance

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/driver"
)

// Cases for GW-1…GW-3: the guarded writes of a driver.GuardedBeginner
// (optional; a driver without it skips them, and Push reads first). The
// engine's use of them, PUSH-9, is in push_guarded.go.

func init() {
	register(
		Case{Name: "GW-1/guarded-writes-land-when-their-guards-hold", Run: gwHold},
		Case{Name: "GW-2/a-failed-guard-writes-nothing", Run: gwFail},
		Case{Name: "GW-3/a-guarded-result-over-a-stored-or-staged-one-writes-nothing", Run: gwResult},
	)
}

// gwBegin begins a guarded Tx on p, or skips the case.
func gwBegin(t T, conn driver.Conn, p string) driver.GuardedTx {
	t.Helper()
	gb, ok := conn.(driver.GuardedBeginner)
	if !ok {
		t.Skipf("the driver is not a driver.GuardedBeginner (optional): Push reads before it writes")
	}
	tx, err := gb.BeginGuarded(t.Context(), p)
	must(t, "BeginGuarded", err)
	return tx
}

// gwVersion returns row at server version v.
func gwVersion(row driver.Row, v int64) driver.Row {
	row.ServerVersion = v
	return row
}

// Catches: a guard checked against the wrong row, version or scopes
// (a create refused, an update at the current version refused), a guard
// that does not see the Tx's own earlier write, a guarded write that
// writes other values, versions or scopes than UpsertRow would.
func gwHold(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	push(t, conn, "p1", tTodos, todo("t1", "p7", "o1"))
	push(t, conn, "p2", tTodos, todo("t2", "p7", "o1")) // the same id in another partition: not p1's row
	tx := gwBegin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	t1 := todo("t1", "p7", "o1")
	t1.Values["title"] = "second"
	t2 := todo("t2", "p1", "o2")
	t3 := todo("t3", "p7", "o1")
	must(t, "GW-1: UpsertRowGuarded of a stored row at its version", tx.UpsertRowGuarded(ctx, tTodos, gwVersion(t1, 2), 1))
	must(t, "GW-1: UpsertRowGuarded of a new row (base 0)", tx.UpsertRowGuarded(ctx, tTodos, t2, 0))
	must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, t3))
	must(t, "GW-1: UpsertRowGuarded of a row the Tx wrote (TX-3)", tx.UpsertRowGuarded(ctx, tTodos, gwVersion(t3, 2), 1))
	must(t, "GW-1: UpsertRowGuarded of a row the Tx wrote, again", tx.UpsertRowGuarded(ctx, tTodos, gwVersion(t2, 2), 1))
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1", CreatedAtMs: 1,
		Changes: []driver.Change{upsertChange(tTodos, gwVersion(t1, 2))}})
	must(t, "AppendCommit", err)
	res := driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1, Ops: []driver.OpResult{{Status: driver.OpApplied, ServerVersion: 2}}}
	must(t, "GW-3: PutPushResultGuarded of a new key", tx.PutPushResultGuarded(ctx, "c1", "k1", res))
	commit(t, tx)
	expectEqual(t, "GW-1: the commit's seq", int64(2), seq)
	for _, want := range []driver.Row{gwVersion(t1, 2), gwVersion(t2, 2), gwVersion(t3, 2)} {
		got, found, err := conn.GetRow(ctx, "p1", tTodos, want.ID)
		must(t, "GetRow", err)
		expectEqual(t, "GW-1: row "+want.ID+" found", true, found)
		expectEqual(t, "GW-1: row "+want.ID, want, got)
	}
	got, found, err := conn.GetPushResult(ctx, "p1", "c1", "k1")
	must(t, "GetPushResult", err)
	expectEqual(t, "GW-3: the guarded result, found", true, found)
	expectEqual(t, "GW-3: the guarded result", res, got)
	other, _, err := conn.GetRow(ctx, "p2", tTodos, "t2")
	must(t, "GetRow", err)
	expectEqual(t, "GW-1: the other partition's row", todo("t2", "p7", "o1"), other)
}

// Catches: a guard that does not hold but lets the Tx commit (a create
// over a row, an update of a missing row or at another version, or into
// other scopes — alone or among updates that hold, in either scope —
// logged as if nothing moved; an update checked against the stored row
// where the Tx wrote it since); a failed guard that keeps
// the Tx's other writes, its commit or its seq; a failure reported with
// another code; a partition left unusable.
func gwFail(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	push(t, conn, "p1", tTodos, gwVersion(todo("t1", "p7", "o1"), 2), gwVersion(todo("t5", "p7", "o1"), 2))
	push(t, conn, "p1", tUsers, user("u1", "o1", "a@x"))
	moved := gwVersion(todo("t1", "p1", "o1"), 3) // t1 into another project
	cases := []struct {
		name  string
		table string
		row   driver.Row
		base  int64
		// held and after: guarded updates that hold, made just before
		// and after row's (a driver may check adjacent updates together).
		held, after []driver.Row
	}{
		{"a create over a stored row", tTodos, todo("t1", "p7", "o1"), 0, nil, nil},
		{"an update of a missing row", tTodos, gwVersion(todo("t-missing", "p7", "o1"), 2), 1, nil, nil},
		{"an update at an older version", tTodos, gwVersion(todo("t1", "p7", "o1"), 2), 1, nil, nil},
		{"an update at a newer version", tTodos, gwVersion(todo("t1", "p7", "o1"), 4), 3, nil, nil},
		{"an update into other scopes", tTodos, moved, 2, nil, nil},
		{"a create that collides on a unique index", tUsers, user("u2", "o1", "a@x"), 0, nil, nil},
		{"a create over a row the Tx wrote", tTodos, todo("t9", "p7", "o1"), 0, nil, nil},
		{"a stale update after one that holds", tTodos, gwVersion(todo("t5", "p7", "o1"), 2), 1,
			[]driver.Row{gwVersion(todo("t1", "p7", "o1"), 3)}, nil},
		{"a stale update before one that holds", tTodos, gwVersion(todo("t1", "p7", "o1"), 2), 1,
			nil, []driver.Row{gwVersion(todo("t5", "p7", "o1"), 3)}},
		// A scope move among updates that hold, of either scope: a driver
		// that guards adjacent updates together must check each one's
		// scopes too.
		{"an update into other scopes after one that holds", tTodos, gwVersion(todo("t5", "p1", "o1"), 3), 2,
			[]driver.Row{gwVersion(todo("t1", "p7", "o1"), 3)}, nil},
		{"an update to another owner before one that holds", tTodos, gwVersion(todo("t1", "p7", "o2"), 3), 2,
			nil, []driver.Row{gwVersion(todo("t5", "p7", "o1"), 3)}},
		// A guard checks the row as the Tx left it, not as stored: a
		// second update at the stored version of a row the Tx updated
		// is stale (a push writing one row twice, PUSH-10).
		{"an update at the stored version of a row the Tx updated", tTodos, gwVersion(todo("t5", "p7", "o1"), 3), 2,
			[]driver.Row{gwVersion(todo("t5", "p7", "o1"), 3)}, nil},
	}
	for i, c := range cases {
		before := pushStateOf(t, conn, "p1")
		what := "GW-2: " + c.name
		tx := gwBegin(t, conn, "p1")
		// Unguarded writes before and after the guarded one, in the
		// order a push makes them.
		err := tx.UpsertRow(ctx, tTodos, todo("t9", "p7", "o1"))
		for _, r := range c.held {
			if err == nil {
				err = tx.UpsertRowGuarded(ctx, tTodos, r, r.ServerVersion-1)
			}
		}
		if err == nil {
			err = tx.UpsertRowGuarded(ctx, c.table, c.row, c.base)
		}
		for _, r := range c.after {
			if err == nil {
				err = tx.UpsertRowGuarded(ctx, tTodos, r, r.ServerVersion-1)
			}
		}
		if err == nil {
			err = tx.UpsertRow(ctx, tTodos, todo("t8", "p7", "o1"))
		}
		if err == nil {
			_, err = tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("k%d", i), ActorID: "a1",
				CreatedAtMs: 1, Changes: []driver.Change{upsertChange(c.table, c.row)}})
		}
		if err == nil {
			err = tx.PutPushResultGuarded(ctx, "c1", fmt.Sprintf("k%d", i), driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1})
		}
		gwEnd(t, what, tx, err)
		expectEqual(t, what+": the partition after", before, pushStateOf(t, conn, "p1"))
		for _, id := range []string{"t8", "t9", "t-missing", "u2"} {
			for _, table := range []string{tTodos, tUsers} {
				_, found, err := conn.GetRow(ctx, "p1", table, id)
				must(t, "GetRow", err)
				if found {
					t.Errorf("%s: row %s of %s was written", what, id, table)
				}
			}
		}
		_, found, err := conn.GetPushResult(ctx, "p1", "c1", fmt.Sprintf("k%d", i))
		must(t, "GetPushResult", err)
		expectEqual(t, what+": a result stored", false, found)
	}
	// The partition works, and the failed Txs consumed no seq (SEQ-2).
	seq := push(t, conn, "p1", tTodos, todo("t7", "p7", "o1"))
	expectEqual(t, "GW-2: the seq after the failed guards", int64(3), seq)
}

// Catches: a guarded result that overwrites or silently keeps a stored
// result and lets the Tx's writes land (a replayed push applied again
// over rows deleted since), or that misses one staged in the same Tx.
func gwResult(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	stored := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5, Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.x"}}}
	tx := begin(t, conn, "p1")
	must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "stored", stored))
	commit(t, tx)
	for _, staged := range []bool{false, true} {
		key := "stored"
		if staged {
			key = "staged"
		}
		what := "GW-3: a guarded result over a " + key + " one"
		before := pushStateOf(t, conn, "p1")
		tx := gwBegin(t, conn, "p1")
		err := tx.UpsertRowGuarded(ctx, tTodos, todo("t1", "p7", "o1"), 0)
		if err == nil {
			_, err = tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: key, ActorID: "a1", CreatedAtMs: 1,
				Changes: []driver.Change{upsertChange(tTodos, todo("t1", "p7", "o1"))}})
		}
		if err == nil && staged {
			err = tx.PutPushResult(ctx, "c1", key, stored)
		}
		if err == nil {
			err = tx.PutPushResultGuarded(ctx, "c1", key, driver.PushResult{Status: driver.PushApplied, CommitSeq: 1, RecordedAtMs: 1})
		}
		gwEnd(t, what, tx, err)
		expectEqual(t, what+": the partition after", before, pushStateOf(t, conn, "p1"))
		got, found, err := conn.GetPushResult(ctx, "p1", "c1", key)
		must(t, "GetPushResult", err)
		if staged {
			expectEqual(t, what+": a result stored", false, found)
		} else {
			expectEqual(t, what+": the stored result", stored, got)
		}
	}
}

// gwEnd ends tx, whose calls so far ended with err: a Commit when they
// all succeeded, else a Rollback; then the failed guard must show
// (GW-2): write_conflict or constraint_violation from a call or Commit.
func gwEnd(t T, what string, tx driver.Tx, err error) {
	t.Helper()
	if err == nil {
		err = tx.Commit(t.Context())
	} else {
		_ = tx.Rollback(t.Context())
	}
	if code := driver.CodeOf(err); code != driver.CodeWriteConflict && code != driver.CodeConstraintViolation {
		t.Errorf("%s: got error %v (code %q), want %q or %q", what, err, code, driver.CodeWriteConflict, driver.CodeConstraintViolation)
	}
}
