package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/txstate"
)

// The push path's statements (docs/performance.md "Raw-loop ratios per
// engine"): a commit's upserts, changes and change-scope entries
// are written with one multi-row INSERT each instead of one statement per
// row, as the raw loop does: each statement costs a round through
// database/sql and modernc (argument conversion, a context watcher,
// binding, a VDBE program start) whatever it writes.

// stage adds row to the upserts staged in the Tx, writing the staged ones
// first when they are of another table or already fill a statement. The
// caller holds the Tx's lock (t.state) and has checked that x is Batchable and row has no
// NULL in a required column. A value of the wrong Go type fails at once
// with CodeInvalidValue (nothing staged); an ended ctx fails the call and
// aborts the Tx, as a statement run under it would (TX-6).
func (t *Tx) stage(ctx context.Context, x *sqlitesql.Table, row driver.Row) error {
	if err := ctx.Err(); err != nil {
		return t.c.mapErr(ctx, err, "sqlite: upsert")
	}
	if t.beginCtx.Err() != nil {
		// database/sql rolls the transaction back when Begin's context
		// ends: the next statement would fail with sql.ErrTxDone.
		return txstate.ErrBeginEnded("sqlite", sql.ErrTxDone)
	}
	if t.stageRows > 0 && (t.stageTable != x || t.stageRows == x.MaxUpsertRows()) {
		if err := t.flushStaged(ctx); err != nil {
			return err
		}
	}
	if t.stageRows == 0 {
		t.stageTable = x
		t.stageArgs = append(t.stageArgs[:0], t.partition)
	}
	args, err := x.AppendUpsertRowArgs(t.stageArgs, row)
	if err != nil {
		return err
	}
	t.stageArgs = args
	t.stageRows++
	return nil
}

// flushStaged writes the staged upserts in one statement (UpsertRows).
// Any failure aborts the Tx (the rows cannot collide on a constraint, so
// it is the engine's or the context's), which then writes nothing. The
// caller holds the Tx's lock (t.state).
func (t *Tx) flushStaged(ctx context.Context) error {
	if t.stageRows == 0 {
		return nil
	}
	err := t.execPooled(ctx, t.stageTable.UpsertRows(t.stageRows), t.stageArgs)
	t.dropStaged()
	if err != nil {
		t.state.Abort()
	}
	return err
}

// execPooled runs q in the Tx and, when the writer's pool has not
// prepared q yet (the Tx prepared it for itself), asks for it to be
// (promoteStatements). For the push path's multi-row statements, whose
// texts are bounded in number (one per size).
func (t *Tx) execPooled(ctx context.Context, q string, args []any) error {
	return t.st.exec(ctx, t.c.pooled(q), args...)
}

// pooled returns q, asking for it to be prepared on the writer's pool
// (promoteStatements) when the pool has not prepared it yet, so a write
// transaction that runs it prepares it for itself once, not every time.
// For texts bounded in number (one per size up to a fixed maximum): the
// push path's multi-row writes and its reads of rows and tombstones by
// id list (sqlitesql.MaxTombstonesIn ids at most).
func (c *Conn) pooled(q string) string {
	if c.wr.Peek(q) == nil {
		c.wantPooled(q)
	}
	return q
}

// dropStaged forgets the staged upserts (the Tx discards them).
func (t *Tx) dropStaged() {
	t.stageTable, t.stageRows = nil, 0
	clear(t.stageArgs) // no references kept to the rows' values
	t.stageArgs = t.stageArgs[:0]
}

// execChunks runs the multi-row statement stmt(n) over args, width
// values per tuple, at most maxRows tuples per statement, each with the
// partition and seq first (?1, ?2).
func (t *Tx) execChunks(ctx context.Context, seq int64, args []any, width, maxRows int, stmt func(n int) string) error {
	for len(args) > 0 {
		n := min(len(args)/width, maxRows)
		call := make([]any, 0, 2+n*width)
		call = append(call, t.partition, seq)
		call = append(call, args[:n*width]...)
		if err := t.execPooled(ctx, stmt(n), call); err != nil {
			return err
		}
		args = args[n*width:]
	}
	return nil
}

// promoteStatements prepares on the writer's pool the statements that
// transactions had to prepare for themselves because the pool did not
// have them yet (a multi-row statement of a size not seen before: see
// txStmts.stmt), so the next transactions reuse them. It runs in Begin
// before the transaction starts, when the writer is free; a statement
// that fails to prepare stays unpooled (transactions prepare it again).
func (c *Conn) promoteStatements(ctx context.Context) {
	c.promoteMu.Lock()
	qs := c.promote
	c.promote = nil
	c.promoteMu.Unlock()
	for _, q := range qs {
		_, _ = c.wr.Get(ctx, q)
	}
}

// wantPooled records q, prepared by a write transaction for itself, for
// promoteStatements.
func (c *Conn) wantPooled(q string) {
	c.promoteMu.Lock()
	defer c.promoteMu.Unlock()
	if len(c.promote) < maxPromote {
		c.promote = append(c.promote, q)
	}
}

// maxPromote bounds the statements waiting for promoteStatements.
const maxPromote = 64
