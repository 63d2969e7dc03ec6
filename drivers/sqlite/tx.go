package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Tx is a write transaction on one partition (driver.Tx). It holds the
// store's writer connection from Begin to Commit/Rollback, so it is
// serialized against every other Tx (TX-1).
type Tx struct {
	c         *Conn
	partition string
	st        *txStmts
	beginCtx  context.Context // Begin's: when it ends, database/sql rolls the Tx back
	// txReads serves GetRow, ScanRows, GetPushResult and ScanRowsByIndex:
	// the Conn's reads through st, as operations of the Tx.
	txReads

	// state is finished/aborted and the lock guarding the fields below.
	// The Tx is aborted when an operation failed with an engine error or
	// because its context ended (isAbort). SQLite may have rolled the
	// transaction back on its own (an interrupt, a full disk), after
	// which further statements would run in autocommit mode and persist
	// one by one; so an aborted Tx accepts no further statement and
	// Commit fails. Logical errors (unknown table, invalid value, a
	// unique collision, which SQLite rolls back alone) leave the Tx usable.
	state   txstate.State
	lastSeq int64 // the last seq AppendCommit allocated, 0 if none (announced by Commit, FAN-1)
	// bind is the client binding BindClient staged, written again by
	// CommitRejected after its rollback to the savepoint (CR-7).
	bind []any

	// Staged upserts (stage.go): rows of one table, not yet written,
	// written as one multi-row statement before any other operation of
	// the Tx runs.
	stageTable *sqlitesql.Table
	stageArgs  []any // ?1 (the partition), then UpsertRowArgs of each row
	stageRows  int
}

var _ driver.Tx = (*Tx)(nil)

// Begin starts a write transaction on partition (TX-1): BEGIN IMMEDIATE on
// the writer, then a SAVEPOINT for CommitRejected (TX-8). It waits for the
// writer while another Tx holds it, until ctx ends (CodeUnavailable). If
// ctx is cancelled later, the Tx is rolled back and fails (TX-6).
func (c *Conn) Begin(ctx context.Context, partition string) (driver.Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.promoteStatements(ctx)
	if err := c.gate.acquire(ctx, false); err != nil {
		return nil, c.mapErr(ctx, err, "sqlite: begin")
	}
	sqlTx, err := c.w.BeginTx(ctx, nil)
	c.gate.release()
	if err != nil {
		return nil, c.mapErr(ctx, err, "sqlite: begin")
	}
	t := &Tx{c: c, partition: partition, st: newTxStmts(c, c.wr, sqlTx), beginCtx: ctx}
	t.txReads = sqlrows.NewInTx[runner](t.op, t.st, partition, c.reads())
	if err := t.st.exec(ctx, sqlitesql.Savepoint); err != nil {
		_ = sqlTx.Rollback()
		return nil, err
	}
	if !c.txs.Add(t) { // Close ran meanwhile
		_ = sqlTx.Rollback()
		return nil, errClosed()
	}
	return t, nil
}

// Partition returns the partition the Tx writes.
func (t *Tx) Partition() string { return t.partition }

// op runs fn unless the Tx is finished (CodeTxFinished, TX-5) or aborted,
// and aborts the Tx when fn fails with an engine error or an ended context
// (TX-6). Upserts staged before it are written first (stage.go), so fn
// sees them (TX-3) and runs after them.
func (t *Tx) op(ctx context.Context, fn func() error) error {
	return t.opStaged(ctx, true, fn)
}

// opStaged is op; flush=false leaves staged upserts staged (UpsertRow).
func (t *Tx) opStaged(ctx context.Context, flush bool, fn func() error) error {
	// A Conn closed under the Tx rolled it back (ERR-4): t.c.check.
	return t.state.Do(ctx, txstate.Engine{Closed: t.c.check, IsAbort: isAbort}, func() error {
		if flush {
			if err := t.flushStaged(ctx); err != nil {
				return err
			}
		}
		return fn()
	})
}

// isAbort reports whether err may have ended the engine transaction.
// schema_newer here means the store was migrated under the Tx.
func isAbort(ctx context.Context, err error) bool {
	return txstate.IsAbort(ctx, err, driver.CodeSchemaNewer)
}

// UpsertRow creates or fully replaces the row (ROW-1, ROW-2). A collision
// on a declared unique index fails with CodeConstraintViolation; SQLite
// rolls back that statement alone, so nothing changed and the Tx stays
// usable (SCH-10, TX-8). Errors: CodeUnknownTable, CodeInvalidValue (a
// value of the wrong Go type, V-3).
//
// A row of a table without a unique declared index is staged and written
// with the next rows of the same table in one statement, before any other
// operation of the Tx (stage.go): it cannot fail on a constraint, and
// every later read of the Tx sees it (TX-3). An engine failure while
// writing it fails that later operation and aborts the Tx, which then
// writes nothing (TX-6).
func (t *Tx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	x, err := t.c.state.Table(table)
	if err != nil {
		return t.op(ctx, func() error { return err })
	}
	if !x.Batchable() || x.HasNullInRequired(row) {
		return t.op(ctx, func() error {
			args, err := x.UpsertArgs(t.partition, row)
			if err != nil {
				return err
			}
			return t.st.exec(ctx, x.Upsert, args...)
		})
	}
	return t.opStaged(ctx, false, func() error { return t.stage(ctx, x, row) })
}

// DeleteRow removes the row; a missing row is a no-op (ROW-3).
func (t *Tx) DeleteRow(ctx context.Context, table, id string) error {
	return t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		if err := t.st.exec(ctx, x.KeepTombstone, t.partition, id, table); err != nil { // ROW-5
			return err
		}
		if err := t.st.exec(ctx, x.Delete, t.partition, id); err != nil {
			return err
		}
		return t.clearBlobRefs(ctx, table, id) // BLOB-1 (blobrefs.go)
	})
}

// RowTombstone reads the id's tombstone in the Tx (ROW-5): the row's
// version while it exists, else the version it had when last deleted,
// else 0.
func (t *Tx) RowTombstone(ctx context.Context, table, id string) (int64, error) {
	return txstate.Value(ctx, t.op, func() (v int64, err error) {
		x, err := t.c.state.Table(table)
		if err != nil {
			return 0, err
		}
		err = t.c.queryRow(ctx, t.st, x.Tombstone, []any{t.partition, id, table}, &v)
		return v, err
	})
}

// AppendCommit allocates the next seq of the partition (max_seq + 1 in
// this transaction, so two commits in one Tx are consecutive and a
// rollback consumes nothing: SEQ-1…SEQ-3) and records the commit, its
// changes and one change-scope entry per (change, variable) — four
// statements up to 64 changes and 128 entries (multi-row inserts, the
// values bound: sqlitesql.InsertChangeRows). The changes are encoded
// before the first write.
func (t *Tx) AppendCommit(ctx context.Context, in driver.CommitInput) (int64, error) {
	changes, err := sqlitesql.NewChangeArgs(in.Changes)
	if err != nil {
		return 0, err
	}
	return txstate.Value(ctx, t.op, func() (seq int64, err error) {
		if err := t.c.queryRow(ctx, t.st, sqlitesql.NextSeq, []any{t.partition}, &seq); err != nil {
			return 0, err
		}
		if err := t.st.exec(ctx, sqlitesql.InsertCommit, t.partition, seq, in.ClientID, in.ClientCommitID, in.ActorID, in.CreatedAtMs); err != nil {
			return 0, err
		}
		if err := t.execChunks(ctx, seq, changes.Changes, 7, sqlitesql.MaxChangeRows, sqlitesql.InsertChangeRows); err != nil {
			return 0, err
		}
		if err := t.execChunks(ctx, seq, changes.Scopes, 4, sqlitesql.MaxChangeScopeRows, sqlitesql.InsertChangeScopeRows); err != nil {
			return 0, err
		}
		t.lastSeq = seq
		return seq, nil
	})
}

// PutPushResult stores r unless a result is already stored or staged
// under the key: first writer wins, a later put is ignored (PR-3).
func (t *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.op, func(text []byte) error {
		return t.st.exec(ctx, sqlitesql.InsertPushResult, t.partition, clientID, clientCommitID, string(text))
	})
}

// BindClient binds clientID to actorID (CR-7): it reads the client's
// actor and, when the partition holds no record of the client, stages the
// binding record. The Tx holds the writer, so no other write of the
// record can come between the read and the write. A record of another
// actor → CodeClientActorMismatch; the Tx stays usable (the caller rolls
// it back).
func (t *Tx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	return t.op(ctx, func() error {
		var bound string
		err := t.c.queryRow(ctx, t.st, sqlitesql.SelectClientActor, []any{t.partition, clientID}, &bound)
		switch {
		case err == sql.ErrNoRows:
			args := []any{t.partition, clientID, actorID, atMs}
			if err := t.st.exec(ctx, sqlitesql.BindClient, args...); err != nil {
				return err
			}
			t.bind = args
			return nil
		case err != nil:
			return err
		case bound != actorID:
			return errClientBound()
		}
		return nil
	})
}

// errClientBound is BindClient's refusal (CR-7).
func errClientBound() error {
	return driver.Errorf(driver.CodeClientActorMismatch, "sqlite: the client id is bound to another actor; nothing was written (CR-7)")
}

// CommitRejected rolls back to the savepoint opened at Begin (discarding
// every staged write, also after a failed statement), stores r as
// PutPushResult does and commits — the write lock is never released in
// between (TX-8). On any error the Tx is rolled back.
func (t *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	text, encErr := driver.EncodePushResult(r)
	return t.finish(ctx, func() error {
		t.dropStaged()
		if encErr != nil {
			return encErr
		}
		if err := t.st.exec(ctx, sqlitesql.RollbackToSavepoint); err != nil {
			return err
		}
		t.lastSeq = 0
		if t.bind != nil { // the binding stays (CR-7)
			if err := t.st.exec(ctx, sqlitesql.BindClient, t.bind...); err != nil {
				return err
			}
		}
		if err := t.st.exec(ctx, sqlitesql.InsertPushResult, t.partition, clientID, clientCommitID, string(text)); err != nil {
			return err
		}
		return t.st.tx.Commit()
	})
}

// Commit makes every write of the Tx visible at once (TX-2). On any error
// nothing was written and the Tx is finished.
//
// Outcome (TX-10): SQLite runs in the process, so no answer is ever lost
// and Commit never returns CodeCommitOutcomeUnknown. A COMMIT that
// SQLite reports as failed did not commit: it either left the transaction
// open (SQLITE_BUSY), which modernc's Tx.Commit then rolls back, or
// rolled it back itself; an interrupt (Begin's context ending) cannot
// stop a COMMIT once the commit has started, which then returns nil
// (outcome_test.go puts both inside the COMMIT). In WAL mode a COMMIT
// waits for no lock, so it returns within the time of its own write.
func (t *Tx) Commit(ctx context.Context) error {
	err := t.finish(ctx, func() error {
		if err := t.flushStaged(ctx); err != nil {
			return err
		}
		return t.st.tx.Commit()
	})
	if err == nil && t.lastSeq > 0 {
		t.c.publish(driver.CommitWake{Partition: t.partition, CommitSeq: t.lastSeq})
	}
	return err
}

// finish runs fn (which ends the engine transaction on success) once; on
// failure it rolls back. Afterwards the Tx is finished (TX-5).
func (t *Tx) finish(ctx context.Context, fn func() error) error {
	t.state.Lock()
	defer t.state.Unlock()
	defer t.c.txs.Remove(t)
	rollback := func() { _ = t.st.tx.Rollback() }
	if err := t.state.End(txstate.Engine{Closed: t.c.check}, rollback, ctx); err != nil {
		return err
	}
	if err := fn(); err != nil {
		rollback()
		if errors.Is(err, sql.ErrTxDone) {
			return txstate.ErrBeginEnded("sqlite", err)
		}
		return t.c.mapErr(ctx, err, "sqlite: commit")
	}
	return nil
}

// Rollback discards every write of the Tx (TX-2); a second call, or one
// after Commit or after the Conn's Close (which rolled it back, ERR-4), is
// a no-op (TX-5).
func (t *Tx) Rollback(ctx context.Context) error {
	t.state.Lock()
	defer t.state.Unlock()
	if t.state.Finish() {
		return nil
	}
	t.c.txs.Remove(t)
	t.dropStaged()
	if err := t.st.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) && !t.c.closed.Load() {
		return t.c.mapErr(ctx, err, "sqlite: rollback")
	}
	return nil
}
