package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/txstate"
)

// BeginGuarded is Begin (driver.GuardedBeginner). A guarded write is
// buffered like any write that cannot fail on valid input and carries
// its guard in its own statement, so a guarded push — W7's: creates,
// AppendCommit, PutPushResultGuarded, Commit — is sent whole in Commit's
// pipeline, one round trip, where a push that reads first takes two
// (PUSH-9).
func (c *Conn) BeginGuarded(ctx context.Context, partition string) (driver.GuardedTx, error) {
	return txstate.Guarded(c.Begin(ctx, partition))
}

// UpsertRowGuarded is UpsertRow on the guard that the row is at version
// base (0: no row) with the scope columns holding row's values (GW-1).
// It is buffered: base 0 as a create (adjacent creates of one table share
// one INSERT, insertN), which fails on the primary key when the row
// exists (23505: CodeConstraintViolation); base > 0 as the guarded update,
// which divides by zero when the row is not as guarded (22012:
// CodeWriteConflict). Either fails the Tx's pipeline, so nothing of the
// Tx is written (GW-2); a unique declared index fails it the same way.
func (t *Tx) UpsertRowGuarded(ctx context.Context, table string, row driver.Row, base int64) error {
	return t.op(ctx, func() error {
		x, args, err := t.rowArgs(table, row)
		if err != nil {
			return err
		}
		if base == 0 {
			t.guardNoTombstone(x, row.ID)
			t.stageUpsert(x, row.ID, args, true)
			return nil
		}
		t.pending = append(t.pending, stmt{x.guardedUpdate, append(args, base)})
		return nil
	})
}

// PutPushResultGuarded buffers r on the guard that no result is stored or
// staged under the key: a plain insert, failing the Tx on the key
// (23505: CodeConstraintViolation) otherwise (GW-3).
func (t *Tx) PutPushResultGuarded(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.op, func(text []byte) error {
		t.pending = append(t.pending, stmt{sqlInsertPushResultGuarded, []any{t.partition, clientID, clientCommitID, string(text)}})
		return nil
	})
}

// guardNoTombstone buffers the guard that id has no tombstone (GW-1,
// ROW-5), before the create it guards: the ids of adjacent creates of one
// table share one statement, so a guarded push of creates stays a few
// statements whatever its size.
func (t *Tx) guardNoTombstone(x *table, id string) {
	g := &t.tombGuard
	if g.x == x && g.at >= 0 && g.at < len(t.pending) && t.pending[g.at].sql == sqlGuardNoTombstones &&
		t.run.x == x && t.run.insert && t.run.at == len(t.pending)-1 && g.at == t.run.at-1 {
		p := &t.pending[g.at]
		p.args[2] = append(p.args[2].([]string), id)
		return
	}
	t.pending = append(t.pending, stmt{sqlGuardNoTombstones, []any{t.partition, x.def.Name, []string{id}}})
	*g = tombGuard{x: x, at: len(t.pending) - 1}
}

// tombGuard is the guard statement of the creates of the run after it.
type tombGuard struct {
	x  *table
	at int // index in pending
}
