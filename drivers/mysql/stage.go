package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/internal/txstate"
)

// The push path's statements (issue 7, docs/performance.md "Raw-loop
// ratios per engine"): go-sql-driver/mysql has no pipelining, so every
// statement is a round trip (a write, a read and a wake-up). A commit's
// upserts of one table, its changes and its change-scope entries are
// written with one multi-row INSERT each, every value bound, split by
// batchRows rows, maxPlaceholders and Conn.stmtBytes.

// stage adds a row of x (args: x.insertArgs, size: their argBytes) to the upserts staged in
// the Tx, writing the staged ones first when they are of another table
// or the row would not fit their statement. x has no declared unique
// index, so its multi-row INSERT … ON DUPLICATE KEY UPDATE replaces only
// on the primary key (SCH-10) and cannot fail on a constraint; args bind
// no NULL to a non-nullable column. The caller holds the Tx's lock (t.state). An ended ctx
// (or Begin's, which rolls the engine transaction back) fails the call
// and aborts the Tx, as a statement run under it would (TX-6).
func (t *Tx) stage(ctx context.Context, x *table, args []any, size int) error {
	if err := ctx.Err(); err != nil {
		return t.c.mapErr(ctx, err, "mysql: upsert row")
	}
	if t.beginCtx.Err() != nil {
		return txstate.ErrBeginEnded("mysql", sql.ErrTxDone)
	}
	if t.stageRows > 0 && (t.stageTable != x || t.stageRows == x.maxRows || t.stageBytes+size > t.c.stmtBytes) {
		if err := t.flushStaged(ctx); err != nil {
			return err
		}
	}
	t.stageTable = x
	t.stageArgs = append(t.stageArgs, args...)
	t.stageRows++
	t.stageBytes += size
	return nil
}

// flushStaged writes the staged upserts in one statement. Any failure
// aborts the Tx (the rows cannot collide on a constraint, so it is the
// engine's or the context's), which then writes nothing (TX-6). The
// caller holds the Tx's lock (t.state).
func (t *Tx) flushStaged(ctx context.Context) error {
	if t.stageRows == 0 {
		return nil
	}
	_, err := t.exec(ctx, t.stageTable.upsertRows[t.stageRows], t.stageArgs...)
	t.dropStaged()
	if err != nil {
		t.state.Abort()
	}
	return err
}

// dropStaged forgets the staged upserts (the Tx discards them).
func (t *Tx) dropStaged() {
	t.stageTable, t.stageRows, t.stageBytes = nil, 0, 0
	clear(t.stageArgs) // no references kept to the rows' values
	t.stageArgs = t.stageArgs[:0]
}

// insertBatches writes tuples (each one row of stmt, all of one width)
// with the multi-row statements stmt[n] (batchLen).
func (t *Tx) insertBatches(ctx context.Context, stmt *[batchRows + 1]string, tuples [][]any) error {
	var args []any
	for len(tuples) > 0 {
		n := batchLen(tuples, batchRows, t.c.stmtBytes)
		args = args[:0]
		for _, tu := range tuples[:n] {
			args = append(args, tu...)
		}
		if _, err := t.exec(ctx, stmt[n], args...); err != nil {
			return err
		}
		tuples = tuples[n:]
	}
	return nil
}

// batchLen returns how many of tuples (at least 1 when there are any) the
// next statement carries: at most maxRows, their argBytes within
// maxBytes unless the first alone is larger.
func batchLen(tuples [][]any, maxRows, maxBytes int) int {
	n, size := 0, 0
	for n < len(tuples) && n < maxRows {
		s := argBytes(tuples[n])
		if n > 0 && size+s > maxBytes {
			break
		}
		size += s
		n++
	}
	return n
}

// packetSlack is what a statement packet needs besides its bound values
// (bytes): the header, the statement id, flags and type bytes of the
// parameters.
const packetSlack = 4096

// fitsPacket refuses args (one row, one logged change) whose values
// cannot travel in one statement under the server's max_allowed_packet:
// the server would drop the connection and the write would look
// retryable. CodeInvalidValue; nothing is sent. size is their argBytes.
func (c *Conn) fitsPacket(args []any, what string) (size int, err error) {
	size = argBytes(args)
	if size+packetSlack > c.maxPacket {
		return size, errPacket(what)
	}
	return size, nil
}

// argBytes estimates what args take in a statement packet (bytes).
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v) + 9
		case []byte:
			n += len(v) + 9
		default:
			n += 10
		}
	}
	return n
}
