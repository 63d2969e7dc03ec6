package mysql

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Tx is a write transaction on one partition (driver.Tx): a READ
// COMMITTED transaction holding its partition's row of _sync_partitions
// locked from Begin to its end (TX-1).
type Tx struct {
	c         *Conn
	partition string
	// sc holds the Tx's connection, and with it its server session, until
	// the Tx's outcome is settled (TX-10): no other Tx may use the session
	// a settle look-up may KILL.
	sc       *sql.Conn
	tx       *sql.Tx
	token    []byte          // the Tx's entry in the partition's outcomes ring (outcome.go)
	beginCtx context.Context // Begin's: when it ends, database/sql rolls the Tx back
	// txReads serves GetRow, ScanRows, GetPushResult and ScanRowsByIndex:
	// the Conn's reads on tx, as operations of the Tx.
	txReads
	// baseSeq is max_seq when the Tx began; seq the last one it allocated.
	// Begin stored baseSeq + 1 (reservePartition); Commit writes max_seq
	// only when seq differs from that.
	baseSeq, seq int64

	// state is finished/aborted and the lock guarding the fields below.
	// The Tx is aborted when an operation failed with an engine error or
	// because its context ended (isAbort): the engine may have rolled the
	// transaction back (a deadlock does), so the Tx accepts nothing more
	// and Commit fails. Logical errors (unknown table, invalid value, a
	// unique collision, which InnoDB rolls back alone) leave it usable.
	state txstate.State

	// Staged upserts (stage.go): rows of one table, not yet written,
	// written as one multi-row statement before any other operation of
	// the Tx that reaches the engine runs, or at Commit.
	stageTable *table
	// stageGuarded: the staged rows are guarded creates (GW-1), written
	// by a plain INSERT (stage).
	stageGuarded bool
	stageArgs    []any // x.insertArgs of each row
	stageIDs     []any // the row ids of staged guarded creates (guardNoTombstonesSQL)
	stageRows    int
	stageBytes   int // argBytes of stageArgs
	// grun: guarded updates gathered (stage.go), open only while no
	// upserts are staged.
	grun guardedRun
	// deferred: writes kept for later (stage.go), written before the
	// staged upserts, which came after them.
	deferred []deferredStmt
	// guardErr: the failure of a kept write that aborted the Tx on a
	// guard or a constraint (flushStaged), which Commit reports even when
	// another operation sent the write (GW-2).
	guardErr error
	// saved: the TX-8 savepoint is taken (savepointFirst); finishing:
	// Commit or CommitRejected runs, and needs none.
	saved, finishing bool
	// bind: the client binding BindClient kept (bindClient's arguments),
	// written again by CommitRejected (CR-7).
	bind []any
}

var _ driver.Tx = (*Tx)(nil)

// Begin starts a write transaction on partition (TX-1): START
// TRANSACTION, then one INSERT … ON DUPLICATE KEY UPDATE that locks the
// partition's row (creating it for a new partition), reserves the Tx's
// first seq and records the Tx's outcome token (reservePartition,
// outcome.go): 2 round trips. The SAVEPOINT CommitRejected rolls back to
// (TX-8) is taken later, before the first statement that writes ahead of
// Commit (stage.go), so a Tx whose writes wait for Commit never sends
// it. It waits while
// another Tx of the partition holds the row — lock-wait timeouts and
// deadlocks are retried — until ctx ends (CodeUnavailable). If ctx ends
// later, the Tx is rolled back and fails (TX-6).
func (c *Conn) Begin(ctx context.Context, partition string) (driver.Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.replica {
		return nil, errReplica("mysql: begin")
	}
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		t, err := c.begin(ctx, partition)
		if err == nil {
			return t, nil
		}
		if !isLockRetry(err) || ctx.Err() != nil {
			return nil, c.mapErr(ctx, err, "mysql: begin")
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// begin is one attempt of Begin.
func (c *Conn) begin(ctx context.Context, partition string) (*Tx, error) {
	sc, err := c.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.beginOn(ctx, sc, nil)
	if err != nil {
		_ = sc.Close()
		return nil, err
	}
	token := newOutcomeToken()
	var first int64
	res, err := c.exec(ctx, tx, reservePartition, partition, token, token)
	if err == nil {
		first, err = res.LastInsertId()
	}
	if err == nil && first < 1 {
		err = driver.Errorf(driver.CodeInternal, "mysql: begin: the engine returned no reserved seq")
	}
	if err == nil {
		t := &Tx{c: c, partition: partition, sc: sc, tx: tx, token: token, beginCtx: ctx, baseSeq: first - 1, seq: first - 1}
		t.txReads = sqlrows.NewInTx(t.op, tx, partition, c.reads())
		if c.txs.Add(t) {
			return t, nil
		}
		err = errClosed() // Close ran meanwhile (ERR-4)
	}
	_ = tx.Rollback()
	c.endTx(tx)
	_ = sc.Close()
	return nil, err
}

// Partition returns the partition the Tx writes.
func (t *Tx) Partition() string { return t.partition }

// op runs fn unless the Tx is finished (CodeTxFinished, TX-5) or aborted,
// and aborts the Tx when fn fails with an engine error or an ended
// context (TX-6). Upserts staged before it are written first (stage.go),
// so fn sees them (TX-3) and runs after them.
func (t *Tx) op(ctx context.Context, fn func() error) error {
	return t.opStaged(ctx, true, fn)
}

// opStaged is op; flush=false leaves the staged and deferred writes
// where they are (UpsertRow, AppendCommit, PutPushResult).
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

// isAbort reports whether err may have ended the engine transaction. A
// write conflict is a deadlock or a Galera abort: the engine rolled the
// whole transaction back, and a later statement would run outside it.
func isAbort(ctx context.Context, err error) bool {
	return txstate.IsAbort(ctx, err, driver.CodeWriteConflict)
}

// exec runs one writing statement of the Tx, after the TX-8 savepoint
// when it runs ahead of Commit (savepointFirst); errors are mapped.
func (t *Tx) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := t.savepointFirst(ctx); err != nil {
		return nil, err
	}
	res, err := t.c.exec(ctx, t.tx, q, args...)
	if err != nil {
		return nil, t.c.mapErr(ctx, err, "mysql: write")
	}
	return res, nil
}

// rowArgs returns the table of a row's write, its insertArgs and their
// size in a packet (argBytes). Errors: CodeUnknownTable,
// CodeInvalidValue (a value over a limit, or over the packet).
func (t *Tx) rowArgs(name string, row driver.Row) (*table, []any, int, error) {
	x, err := t.c.state.Table(name)
	if err != nil {
		return nil, nil, 0, err
	}
	args, err := x.insertArgs(t.partition, row)
	if err != nil {
		return nil, nil, 0, err
	}
	size, err := t.c.fitsPacket(args, "mysql: upsert row")
	return x, args, size, err
}

// UpsertRow creates or fully replaces the row (ROW-1, ROW-2), replacing
// only on its primary key (SCH-10).
//
// A row of a table without a declared unique index (the primary key is
// its only unique key, so ON DUPLICATE KEY can fire on nothing else) is
// staged and written with the next rows of the same table in one INSERT
// … ON DUPLICATE KEY UPDATE before any other operation of the Tx that
// reaches the engine, or at Commit (stage.go): it cannot fail on a
// constraint, and every later read of the Tx sees it (TX-3). An engine failure while writing it fails that
// later operation and aborts the Tx, which then writes nothing (TX-6). A
// row binding NULL to a non-nullable column is written at once.
//
// On a table with a unique index the row is UPDATEd by primary key, and
// INSERTed when that matched nothing. A unique collision (1062) fails
// with CodeConstraintViolation; InnoDB rolls back that statement alone,
// so nothing changed and the Tx stays usable (TX-8). Errors:
// CodeUnknownTable, CodeInvalidValue (a key column's limit,
// docs/mysql.md; nothing staged).
func (t *Tx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return t.opStaged(ctx, false, func() error {
		x, args, size, err := t.rowArgs(table, row)
		if err != nil {
			return err
		}
		if x.upsert != "" && !x.nullInRequired(args) {
			return t.stage(ctx, x, args, size, false)
		}
		if err := t.flushStaged(ctx); err != nil {
			return err
		}
		if x.upsert != "" {
			_, err := t.exec(ctx, x.upsert, args...)
			return err
		}
		res, err := t.exec(ctx, x.update, x.updateArgs(args)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return t.c.mapErr(ctx, err, "mysql: upsert row")
		}
		_, err = t.exec(ctx, x.insert, args...)
		return err
	})
}

// DeleteRow removes the row and its blob references (BLOB-1); a missing
// row is a no-op (ROW-3).
func (t *Tx) DeleteRow(ctx context.Context, table, id string) error {
	return t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		if _, err = t.exec(ctx, keepTombstoneSQL(x), t.partition, table, t.partition, id); err != nil { // ROW-5
			return err
		}
		if _, err = t.exec(ctx, x.del, t.partition, id); err != nil {
			return err
		}
		return t.clearBlobRefs(ctx, table, id) // BLOB-1: a deleted row references nothing
	})
}

// AppendCommit allocates the next seq of the partition (the Tx holds the
// partition's row; its first seq was reserved by Begin, the next are
// consecutive: SEQ-1…SEQ-3) and records the commit, its changes and one
// change-scope entry per (change, variable): three statements up to
// batchRows changes and entries (multi-row INSERTs, every value bound,
// split by size), kept with the staged upserts and written before the
// Tx's next operation that reaches the engine, or at Commit (stage.go),
// so AppendCommit itself makes no round trip. Values are encoded and
// sized here. A rollback consumes nothing (SEQ-2). On a Galera node the
// seq may have been taken by a commit certified on another node: the
// write that finds it (a later operation, or Commit) fails with
// CodeWriteConflict and the Tx writes nothing (TX-9).
func (t *Tx) AppendCommit(ctx context.Context, in driver.CommitInput) (int64, error) {
	chRows := make([][]any, 0, len(in.Changes))
	var csRows [][]any
	var vars []string
	for i, ch := range in.Changes {
		scopes := ch.Scopes
		if scopes == nil {
			scopes = driver.Scopes{}
		}
		sj, err := encodeScopes(scopes)
		if err != nil {
			return 0, err
		}
		var vals any
		var version int64
		if ch.Op == driver.OpUpsert {
			b, err := driver.EncodeValues(ch.Values)
			if err != nil {
				return 0, err
			}
			vals, version = b, ch.RowVersion
		}
		// p and seq are set below, once the seq is known.
		r := []any{t.partition, int64(0), i, ch.Table, ch.RowID, string(ch.Op), sj, vals, version}
		if _, err := t.c.fitsPacket(r, "mysql: append commit"); err != nil {
			return 0, err
		}
		chRows = append(chRows, r)
		vars = vars[:0]
		for k := range scopes {
			vars = append(vars, k)
		}
		sort.Strings(vars)
		for _, k := range vars {
			csRows = append(csRows, []any{nil, ch.Table, k, scopes[k], nil, i})
		}
	}
	return txstate.Value(ctx, t.opKeep, func() (int64, error) {
		if err := t.live(ctx, "mysql: append commit"); err != nil {
			return 0, err
		}
		seq := t.seq + 1
		for _, r := range chRows {
			r[0], r[1] = t.partition, seq
		}
		for _, r := range csRows {
			r[0], r[4] = t.partition, seq
		}
		t.deferStmt(insertCommit, []any{t.partition, seq, in.ClientID, in.ClientCommitID, in.ActorID, in.CreatedAtMs}, true)
		t.deferBatches(&insertChangesSQL, chRows, true)
		t.deferBatches(&insertChangeScopesSQL, csRows, true)
		t.seq = seq
		return seq, nil
	})
}

// opKeep is opStaged leaving the staged and deferred writes in place.
func (t *Tx) opKeep(ctx context.Context, fn func() error) error {
	return t.opStaged(ctx, false, fn)
}

// PutPushResult stores r unless a result is already stored or staged
// under the key: first writer wins, a later put is ignored (PR-3). The
// statement is kept with the Tx's other deferred writes (stage.go).
func (t *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.opKeep, func(text []byte) error {
		if err := t.live(ctx, "mysql: put push result"); err != nil {
			return err
		}
		t.deferStmt(insertPushResult, []any{t.partition, clientID, clientCommitID, text}, false)
		return nil
	})
}

// BindClient keeps the binding of clientID to actorID for later (CR-7):
// bindClient stores the binding record unless the client has one, locks
// the record until the Tx ends, and fails the Tx with
// CodeClientActorMismatch when the record is another actor's. It is
// written with the Tx's other kept writes (flushStaged), at the latest
// at Commit; CommitRejected writes it again.
func (t *Tx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	return t.op(ctx, func() error {
		t.bind = []any{t.partition, clientID, actorID, atMs}
		t.deferGuarded(deferredStmt{q: bindClient, args: t.bind, guard: guardBind})
		return nil
	})
}

// execBind writes bindClient with args (CR-7).
func (t *Tx) execBind(ctx context.Context, args []any) error {
	if err := t.savepointFirst(ctx); err != nil {
		return err
	}
	if _, err := t.c.exec(ctx, t.tx, bindClient, args...); err != nil {
		if errNumber(err) == erBadNull {
			return errClientBound()
		}
		return t.c.mapErr(ctx, err, "mysql: bind a client")
	}
	return nil
}

// writeBind writes the binding BindClient kept, at once (CommitRejected).
func (t *Tx) writeBind(ctx context.Context) error {
	if t.bind == nil {
		return nil
	}
	return t.execBind(ctx, t.bind)
}

// CommitRejected drops the Tx's staged and deferred writes and, when a
// write was sent ahead of it, rolls back to the savepoint taken before
// that write (discarding every write of the Tx, also after a failed
// statement, while InnoDB keeps the partition's row lock), puts back the max_seq
// Begin reserved (SEQ-2), stores r as PutPushResult does and commits
// (TX-8). Its outcome is reported as Commit's (TX-10).
func (t *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	text, encErr := driver.EncodePushResult(r)
	return t.finish(ctx, func() error {
		t.dropStaged()
		if encErr != nil {
			return encErr
		}
		if t.saved {
			if _, err := t.tx.ExecContext(ctx, rollbackToSavepoint); err != nil {
				return err
			}
		}
		t.seq = t.baseSeq
		if _, err := t.exec(ctx, setMaxSeq, t.baseSeq, t.partition); err != nil {
			return err
		}
		if err := t.writeBind(ctx); err != nil { // the binding stays (CR-7)
			return err
		}
		_, err := t.exec(ctx, insertPushResult, t.partition, clientID, clientCommitID, text)
		return err
	})
}

// Commit writes the staged and deferred writes and commits: every write of the Tx
// becomes visible at once (TX-2). max_seq holds the seq Begin reserved;
// it is written again only when the Tx appended no commit (back to the
// base: SEQ-2) or several (SEQ-3). It returns when the server answers or
// ctx ends, whichever is first.
//
// Outcome (TX-10): nil only if the Tx committed. When ctx ends while the
// COMMIT is in flight, or the connection breaks before its answer, Commit
// settles the outcome from the partition's outcomes ring within
// outcomeLookupTimeout (outcome.go: the Tx's session is killed and gone
// before the decision, so a COMMIT still in flight can never land later):
// nil if it committed, CodeUnavailable if it did not (nothing written),
// CodeCommitOutcomeUnknown if the look-up failed. An error the server
// answers to COMMIT, and every error before it, means nothing was
// written. The Tx is finished afterwards.
func (t *Tx) Commit(ctx context.Context) error {
	err := t.finish(ctx, func() error {
		if err := t.flushStaged(ctx); err != nil {
			return err
		}
		if t.seq != t.baseSeq+1 {
			if _, err := t.exec(ctx, setMaxSeq, t.seq, t.partition); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && t.guardErr != nil && driver.CodeOf(err) == driver.CodeUnavailable {
		// A kept guarded write failed under an earlier operation, which
		// aborted the Tx (ErrAborted): nothing was written, for that
		// reason (GW-2).
		return t.guardErr
	}
	return err
}

// finish ends the Tx once: it runs prepare (the statements before
// COMMIT), then commits; on any failure before COMMIT it rolls back.
// Afterwards the Tx is finished (TX-5).
func (t *Tx) finish(ctx context.Context, prepare func() error) error {
	t.state.Lock()
	defer t.state.Unlock()
	defer t.c.txs.Remove(t)
	rollback := func() { _ = t.rollback() }
	if err := t.state.End(txstate.Engine{Closed: t.c.check}, rollback, ctx); err != nil {
		return err
	}
	t.finishing = true
	if err := prepare(); err != nil {
		rollback()
		if errors.Is(err, sql.ErrTxDone) {
			return txstate.ErrBeginEnded("mysql", err)
		}
		return t.c.mapErr(ctx, err, "mysql: commit")
	}
	if err := ctx.Err(); err != nil {
		rollback()
		return driver.Wrap(driver.CodeUnavailable, err, "mysql: commit: context ended; the transaction was rolled back (TX-6)")
	}
	err := t.commit(ctx)
	if err == nil && t.seq > t.baseSeq {
		t.c.fan.Publish(driver.CommitWake{Partition: t.partition, CommitSeq: t.seq}) // FAN-1, this process at once
	}
	return err
}

// commit sends COMMIT on a goroutine of its own (go-sql-driver's COMMIT
// takes no context) and waits for its answer or ctx's end. An answer lost
// either way is settled (TX-10); the connection goes back to the pool
// only once COMMIT has returned and the outcome is settled.
func (t *Tx) commit(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- t.tx.Commit() }()
	var err error
	answered := true
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done: // it answered just as ctx ended
		default:
			err, answered = ctx.Err(), false
		}
	}
	if answered {
		t.c.endTx(t.tx)
	}
	if answered && (err == nil || !commitAnswerLost(err)) {
		_ = t.sc.Close()
		return t.c.mapErr(ctx, err, "mysql: commit")
	}
	err = t.c.settleCommit(ctx, t.partition, t.token, t.baseSeq, err)
	if answered {
		_ = t.sc.Close()
	} else {
		go func() {
			<-done
			t.c.endTx(t.tx)
			_ = t.sc.Close()
		}()
	}
	return err
}

// commitAnswerLost reports whether a failed COMMIT may have reached the
// server without its answer reaching us: not when the server answered
// with an error (the COMMIT failed, the transaction is rolled back), nor
// when database/sql never sent it (Begin's context had ended: it rolled
// the transaction back instead).
func commitAnswerLost(err error) bool {
	return errNumber(err) == 0 && !errors.Is(err, sql.ErrTxDone) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// rollback rolls the engine transaction back and returns the connection
// to the pool.
func (t *Tx) rollback() error {
	t.dropStaged()
	err := t.tx.Rollback()
	t.c.endTx(t.tx)
	_ = t.sc.Close()
	return err
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
	if err := t.rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) && !errors.Is(err, sql.ErrConnDone) && !t.c.closed.Load() {
		return t.c.mapErr(ctx, err, "mysql: rollback")
	}
	return nil
}

// RowTombstone reads the id's tombstone, seeing the Tx's own writes
// (ROW-5, TX-3): the row's version while it exists, else the version it
// had when last deleted, else 0.
func (t *Tx) RowTombstone(ctx context.Context, table, id string) (v int64, err error) {
	err = t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		rows, err := t.c.query(ctx, t.tx, tombstoneSQL(x), []any{t.partition, id, t.partition, table, id}, "mysql: read a tombstone")
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			if err := rows.Scan(&v); err != nil {
				return t.c.mapErr(ctx, err, "mysql: read a tombstone")
			}
		}
		return t.c.mapErr(ctx, rows.Err(), "mysql: read a tombstone")
	})
	return v, err
}
