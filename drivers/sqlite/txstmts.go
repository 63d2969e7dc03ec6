package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/internal/stmtcache"
)

// txStmts hands out statements bound to one transaction (a write
// transaction on the writer, or a read transaction on a reader): the
// pool's prepared statement re-bound with StmtContext, or, for a text the
// pool has not prepared, one prepared inside the transaction. It never
// prepares on the pool itself, which would need a second connection
// while the transaction holds one (the writer has only one).
type txStmts struct {
	c    *Conn
	base *stmtcache.Cache
	tx   *sql.Tx
	m    map[string]*sql.Stmt
}

func newTxStmts(c *Conn, base *stmtcache.Cache, tx *sql.Tx) *txStmts {
	return &txStmts{c: c, base: base, tx: tx, m: make(map[string]*sql.Stmt, 8)}
}

func (t *txStmts) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := t.m[q]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if base := t.base.Peek(q); base != nil {
		st = t.tx.StmtContext(ctx, base)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
	}
	t.m[q] = st
	return st, nil
}

// exec runs q with args in the transaction.
func (t *txStmts) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.execResult(ctx, q, args...)
	return err
}

// execResult runs q with args and returns the number of rows it changed.
func (t *txStmts) execResult(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return 0, t.c.mapErr(ctx, err, "sqlite: prepare a statement")
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, t.c.mapErr(ctx, err, "sqlite: write")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, t.c.mapErr(ctx, err, "sqlite: write")
	}
	return n, nil
}

// writeTx runs fn in one write transaction on the writer (BEGIN
// IMMEDIATE) and commits when fn returns nil; otherwise it rolls back and
// returns fn's error. Used by Conn-level writes that need atomicity.
func (c *Conn) writeTx(ctx context.Context, what string, fn func(t *txStmts) error) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := c.gate.acquire(ctx, false); err != nil {
		return c.mapErr(ctx, err, what+": begin")
	}
	defer c.gate.release()
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return c.mapErr(ctx, err, what+": begin")
	}
	if err := fn(newTxStmts(c, c.wr, tx)); err != nil {
		_ = tx.Rollback()
		return c.mapErr(ctx, err, what)
	}
	if err := tx.Commit(); err != nil {
		return c.mapErr(ctx, err, what+": commit")
	}
	return nil
}

// readTx runs fn in one read transaction on a reader, so every statement
// of fn sees the same committed snapshot (a read made of several
// statements, e.g. a bounded scan or a multi-round window read).
func (c *Conn) readTx(ctx context.Context, what string, fn func(r runner) error) error {
	if err := c.check(); err != nil {
		return err
	}
	tx, err := c.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c.mapErr(ctx, err, what+": begin")
	}
	defer func() { _ = tx.Rollback() }()
	return fn(newTxStmts(c, c.rd, tx))
}

// writeOne runs a single autocommit write statement on the writer.
func (c *Conn) writeOne(ctx context.Context, what, q string, args ...any) error {
	_, err := c.writeCount(ctx, what, q, args...)
	return err
}

// writeCount runs a single autocommit write statement on the writer,
// after the writer gate, and returns the number of rows it changed.
func (c *Conn) writeCount(ctx context.Context, what, q string, args ...any) (int64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	st, err := c.wr.Get(ctx, q)
	if err != nil {
		return 0, c.mapErr(ctx, err, what)
	}
	if err := c.gate.acquire(ctx, false); err != nil {
		return 0, c.mapErr(ctx, err, what)
	}
	defer c.gate.release()
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, c.mapErr(ctx, err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, c.mapErr(ctx, err, what)
	}
	return n, nil
}
