package mysql

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Guarded writes (driver.GuardedBeginner, GW-1…GW-3): sync.Store.Push
// writes a push of upserts with base versions without BeginPush's read
// (PUSH-9), one round trip fewer. Every guarded write is kept like the
// Tx's other writes (stage.go) and sent before its next operation that
// reaches the engine, or at Commit, so a guard that does not hold
// usually fails Commit: the Tx is then rolled back, nothing written, and
// Commit returns CodeWriteConflict (or CodeConstraintViolation for a
// collision that may be on a unique declared index).
//
//   - a create (base 0) is staged with the Tx's other creates of the
//     table into one plain multi-row INSERT (no ON DUPLICATE KEY): a key
//     stored, or written earlier by the Tx, fails it with 1062 — so a
//     push of creates makes exactly the statements of W1's commit;
//   - an update (base > 0) is an UPDATE … WHERE the key, the version is
//     base and the scope columns hold the new values (<=>): the
//     connection counts matched rows (ClientFoundRows), and one not
//     matched fails the Tx. Adjacent updates of one table go out as two
//     statements, whatever their number: a guard UPDATE that sets
//     nothing new and must match every one of them (guardTouch), then
//     the multi-row upsert (stage.go, guardedRun);
//   - the push result is a plain INSERT (no ON DUPLICATE KEY): 1062 when
//     a result is stored or staged under the key.
//
// On Galera each guard is checked against the node's own state; a
// concurrent write certified on another node fails the Tx at COMMIT as
// any write does (1213, CodeWriteConflict: nothing written, TX-9).

var (
	_ driver.GuardedBeginner = (*Conn)(nil)
	_ driver.GuardedTx       = (*Tx)(nil)
)

// BeginGuarded is Begin (driver.GuardedBeginner).
func (c *Conn) BeginGuarded(ctx context.Context, partition string) (driver.GuardedTx, error) {
	return txstate.Guarded(c.Begin(ctx, partition))
}

// UpsertRowGuarded is UpsertRow on the guard that the row is at version
// base (0: no row) and, when base > 0, that its scope columns hold the
// new values (GW-1). The write is kept for later (see above); a row
// binding NULL to a non-nullable column is sent at once, so the engine's
// error is this call's. A guard that does not hold aborts the Tx: the
// call or Commit fails with CodeWriteConflict or CodeConstraintViolation
// and nothing is written (GW-2). Errors: those of UpsertRow.
func (t *Tx) UpsertRowGuarded(ctx context.Context, table string, row driver.Row, base int64) error {
	return t.opStaged(ctx, false, func() error {
		x, args, size, err := t.rowArgs(table, row)
		if err != nil {
			return err
		}
		if !x.nullInRequired(args) {
			if base == 0 {
				if err := t.stage(ctx, x, args, size, true); err != nil {
					return err
				}
				t.stageIDs = append(t.stageIDs, row.ID) // guarded against a tombstone too (deferStaged)
				return nil
			}
			if err := t.live(ctx, "mysql: upsert row"); err != nil {
				return err
			}
			cloneBytes(args)
			if x.upsertRows == nil { // a unique declared index: no multi-row upsert
				t.deferGuarded(deferredStmt{q: x.guardedUpdate, args: x.guardedUpdateArgs(args, base), guard: guardMatch, want: 1})
				return nil
			}
			t.gatherGuarded(x, args, size, base)
			return nil
		}
		// Sent at once, after the kept writes: the engine refuses the
		// NULL, and the error belongs to this call.
		d := deferredStmt{q: x.insert, args: args}
		if base == 0 {
			t.deferGuarded(deferredStmt{q: guardNoTombstonesSQL(1), args: []any{t.partition, table, row.ID}, guard: guardMatch}) // ROW-5
		}
		if base > 0 {
			d = deferredStmt{q: x.guardedUpdate, args: x.guardedUpdateArgs(args, base), guard: guardMatch, want: 1}
		} else if !x.unique {
			d.guard = guardDup
		}
		t.deferGuarded(d)
		return t.flushStaged(ctx)
	})
}

// PutPushResultGuarded is PutPushResult on the guard that no result is
// stored or staged under the key (GW-3): a plain INSERT, kept with the
// Tx's other writes (stage.go); a result under the key fails the Tx at
// its next operation that reaches the engine or at Commit with
// CodeWriteConflict, nothing written (GW-2).
func (t *Tx) PutPushResultGuarded(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.opKeep, func(text []byte) error {
		if err := t.live(ctx, "mysql: put push result"); err != nil {
			return err
		}
		t.deferGuarded(deferredStmt{q: insertPushResultGuarded, args: []any{t.partition, clientID, clientCommitID, text},
			guard: guardDup})
		return nil
	})
}
