package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/txstate"
)

// As hands the host the pool the Conn runs on (driver.Aser): a
// **pgxpool.Pool target is set to it. The Conn keeps owning the pool it
// opened (and never closes one the host brought, OpenPool): the host must
// not close it while the Conn is open. Every other target: false.
func (c *Conn) As(target any) bool {
	p, ok := target.(**pgxpool.Pool)
	if !ok || p == nil || c.closed.Load() {
		return false
	}
	*p = c.pool
	return true
}

// As hands the host the engine transaction of the Tx (driver.Aser): a
// *pgx.Tx target is set to a pgx.Tx whose statements run on the Tx's own
// connection, inside its transaction, while it holds the partition's row
// lock (TX-1; a deferred Tx opens its engine transaction here, on
// Begin's ctx, and As answers false, the Tx aborted, if that fails): they land with Commit and vanish with Rollback or
// CommitRejected (TX-2, TX-8). Each call on it first sends the writes the
// Tx has buffered (so the host's statements run after, and see, every
// earlier write of the Tx, TX-3). Its Commit and Rollback do not end the
// transaction: they fail with CodeInvalidArgument (end the Tx instead);
// its Begin opens a savepoint, whose Commit releases it and whose
// Rollback rolls back to it, as pgx's pseudo nested transactions do. A
// statement that fails outside such a savepoint aborts the engine
// transaction: the Tx's Commit then fails and writes nothing (TX-6).
// LargeObjects is not available through it. After the Tx ends, As
// returns false and a handle taken earlier fails every call with
// CodeTxFinished. Every other target: false.
func (t *Tx) As(target any) bool {
	p, ok := target.(*pgx.Tx)
	if !ok || p == nil {
		return false
	}
	t.state.Lock()
	defer t.state.Unlock()
	if !t.state.Usable() || t.released || t.c.closed.Load() {
		return false
	}
	if t.deferred { // the host's statements need the engine transaction, and Conn() its connection
		if _, err := t.pipeline(t.beginCtx, nil, nil, nil); err != nil {
			t.abort()
			return false
		}
	}
	*p = &hostTx{t: t}
	return true
}

// hostTx is the pgx.Tx that Tx.As hands out. depth 0 is the Tx's own
// transaction; depth n > 0 the host's savepoint syncstore_host_n.
type hostTx struct {
	t     *Tx
	depth int
	ended bool // a savepoint released or rolled back
}

var _ pgx.Tx = (*hostTx)(nil)

// conn returns the Tx's connection once the Tx's buffered writes are sent,
// or why the handle cannot be used. Called with the Tx's lock held.
func (h *hostTx) conn(ctx context.Context) (*pgx.Conn, error) {
	t := h.t
	switch {
	case t.c.closed.Load():
		return nil, errClosed()
	case t.state.Finished():
		return nil, driver.Errorf(driver.CodeTxFinished, "postgres: the transaction of this handle has ended (TX-5)")
	case t.state.Aborted() || t.released:
		return nil, txstate.ErrAborted()
	case h.ended:
		return nil, pgx.ErrTxClosed
	}
	if len(t.pending) > 0 {
		if _, err := t.pipeline(ctx, nil, nil, nil); err != nil {
			t.abort()
			return nil, t.c.mapErr(ctx, err, "postgres: send the transaction's buffered writes")
		}
	}
	return t.pc.Conn(), nil
}

// with runs fn on the connection with the Tx's lock held.
func (h *hostTx) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	h.t.state.Lock()
	defer h.t.state.Unlock()
	c, err := h.conn(ctx)
	if err != nil {
		return err
	}
	return fn(c)
}

func (h *hostTx) savepoint() string { return fmt.Sprintf("syncstore_host_%d", h.depth) }

// Begin opens a savepoint inside the transaction (a pseudo nested
// transaction, as pgx's).
func (h *hostTx) Begin(ctx context.Context) (pgx.Tx, error) {
	n := &hostTx{t: h.t, depth: h.depth + 1}
	err := h.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SAVEPOINT "+n.savepoint())
		return err
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

func errHostEnds() error {
	return driver.Errorf(driver.CodeInvalidArgument,
		"postgres: the transaction belongs to the store's Tx: end it with the Tx's Commit or Rollback, not through the handle")
}

// Commit releases a savepoint; on the Tx's own transaction it fails
// (CodeInvalidArgument).
func (h *hostTx) Commit(ctx context.Context) error {
	if h.depth == 0 {
		return errHostEnds()
	}
	return h.endSavepoint(ctx, "RELEASE SAVEPOINT "+h.savepoint())
}

// Rollback rolls back to a savepoint and releases it; on the Tx's own
// transaction it fails (CodeInvalidArgument). After the savepoint ended
// it returns an error matching pgx.ErrTxClosed.
func (h *hostTx) Rollback(ctx context.Context) error {
	if h.depth == 0 {
		return errHostEnds()
	}
	sp := h.savepoint()
	return h.endSavepoint(ctx, "ROLLBACK TO SAVEPOINT "+sp+"; RELEASE SAVEPOINT "+sp)
}

func (h *hostTx) endSavepoint(ctx context.Context, q string) error {
	return h.with(ctx, func(c *pgx.Conn) error {
		h.ended = true
		_, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol)
		return err
	})
}

func (h *hostTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (n int64, err error) {
	err = h.with(ctx, func(c *pgx.Conn) error {
		n, err = c.CopyFrom(ctx, table, columns, src)
		return err
	})
	return n, err
}

func (h *hostTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	var br pgx.BatchResults
	if err := h.with(ctx, func(c *pgx.Conn) error { br = c.SendBatch(ctx, b); return nil }); err != nil {
		return errBatch{err}
	}
	return br
}

// LargeObjects is not available through the handle: pgx builds it only
// over its own transactions. Its methods panic.
func (h *hostTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (h *hostTx) Prepare(ctx context.Context, name, sql string) (sd *pgconn.StatementDescription, err error) {
	err = h.with(ctx, func(c *pgx.Conn) error {
		sd, err = c.Prepare(ctx, name, sql)
		return err
	})
	return sd, err
}

func (h *hostTx) Exec(ctx context.Context, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	err = h.with(ctx, func(c *pgx.Conn) error {
		tag, err = c.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

func (h *hostTx) Query(ctx context.Context, sql string, args ...any) (rows pgx.Rows, err error) {
	err = h.with(ctx, func(c *pgx.Conn) error {
		rows, err = c.Query(ctx, sql, args...)
		return err
	})
	return rows, err
}

func (h *hostTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := h.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return rowOf{rows}
}

// Conn returns the Tx's connection. Statements run on it directly skip
// the sending of the Tx's buffered writes; prefer the handle's methods.
func (h *hostTx) Conn() *pgx.Conn { return h.t.pc.Conn() }

// rowOf is pgx's QueryRow over Rows: the first row, ErrNoRows if none.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is the BatchResults of a batch that was never sent.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
