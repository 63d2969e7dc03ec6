// Package sqlrows reads database/sql result sets for the drivers built on
// database/sql (sqlite, mysql): what pgx.CollectRows is to postgres.
package sqlrows

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Collect reads every row of rows with scan, then closes rows. On a scan
// error it returns nil and that error; otherwise the rows read (nil when
// none) and rows.Err(). The caller maps the error.
func Collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Read is Collect of a query's answer, rows and err as the query
// returned them: a query error (already mapped by the caller) is returned
// as is; a scan or iteration error is mapped by mapErr(ctx, err, what),
// the driver's Conn.mapErr (which maps nil to nil).
func Read[T any](ctx context.Context, rows *sql.Rows, err error, scan func(*sql.Rows) (T, error), mapErr func(context.Context, error, string) error, what string) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out, err := Collect(rows, scan)
	return out, mapErr(ctx, err, what)
}

// Decode reads every row of rows into dest and decodes it with decode,
// then closes rows: a table's rows read with its select list (its
// ScanDest and DecodeRow). A scan or iteration error is returned through
// mapErr; decode's error as it is.
func Decode[T any](rows *sql.Rows, dest []any, decode func([]any) (T, error), mapErr func(error) error) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, mapErr(err)
		}
		v, err := decode(dest)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// String scans a row of one string column (Collect's scan).
func String(rows *sql.Rows) (string, error) {
	var s string
	err := rows.Scan(&s)
	return s, err
}

// LazyDB is a pool opened on first use and closed once (the drivers'
// authoritative-query pools). The zero value is unopened.
type LazyDB struct {
	mu     gosync.Mutex
	db     *sql.DB
	closed bool
}

// Get returns the pool, opening it with open the first time (an error of
// open is returned and the next Get tries again). After Close it fails
// with closedErr().
func (l *LazyDB) Get(open func() (*sql.DB, error), closedErr func() error) (*sql.DB, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, closedErr()
	}
	if l.db == nil {
		db, err := open()
		if err != nil {
			return nil, err
		}
		l.db = db
	}
	return l.db, nil
}

// Close closes the pool if it was opened; later Gets fail.
func (l *LazyDB) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.db == nil {
		return nil
	}
	return l.db.Close()
}

// OnConn runs fn on a connection of db taken for it alone and returns
// what fn returns; acquire maps the error of taking the connection. A
// connection fn failed on is dropped (its Raw callback returns
// driver.ErrBadConn), never pooled again: it may still be inside a
// transaction or hold a session setting.
func OnConn[T any](ctx context.Context, db *sql.DB, acquire func(error) error, fn func(*sql.Conn) (T, error)) (T, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		var zero T
		return zero, acquire(err)
	}
	defer conn.Close()
	v, err := fn(conn)
	if err != nil {
		_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
	}
	return v, err
}

// AnyDest returns n destinations for (*sql.Rows).Scan, each a *any; read
// what Scan stored with Scanned.
func AnyDest(n int) []any {
	dest := make([]any, n)
	for i := range dest {
		dest[i] = new(any)
	}
	return dest
}

// Scanned returns what Scan stored in dest[i], a destination of AnyDest.
func Scanned(dest []any, i int) any { return *(dest[i].(*any)) }

// ClientCursor scans a row of (client id, cursor, updated at): a client
// cursor listing's row (CR-2; Collect's scan).
func ClientCursor(rows *sql.Rows) (driver.ClientCursor, error) {
	var cc driver.ClientCursor
	err := rows.Scan(&cc.ClientID, &cc.Cursor, &cc.UpdatedAtMs)
	return cc, err
}

// PartitionEntry scans a row of (partition, epoch, epoch required as an
// integer 0/1, updated at): a registry listing's row (REG-3; Collect's
// scan).
func PartitionEntry(rows *sql.Rows) (driver.PartitionEntry, error) {
	var e driver.PartitionEntry
	var req int64
	if err := rows.Scan(&e.Partition, &e.Epoch, &req, &e.UpdatedAtMs); err != nil {
		return e, err
	}
	e.EpochRequired = req != 0
	return e, nil
}

// CommitWake scans a row of (partition, commit seq): a partitions' heads
// read of the commit fanout (FAN-1; Collect's scan). The partition is
// scanned as bytes, which every engine's text converts to.
func CommitWake(rows *sql.Rows) (driver.CommitWake, error) {
	var w driver.CommitWake
	var p []byte
	if err := rows.Scan(&p, &w.CommitSeq); err != nil {
		return w, err
	}
	w.Partition = string(p)
	return w, nil
}

// Reads are a database/sql driver's reads through a runner R (what they
// take to read committed data, or inside a Tx's engine transaction): the
// row of ROW-4, the scan of SCAN-1…SCAN-5, the push result of PR-2, the
// index lookup of IXL-1.
type Reads[R any] struct {
	Row        func(ctx context.Context, r R, partition, table, id string) (driver.Row, bool, error)
	Rows       func(ctx context.Context, r R, partition string, q driver.ScanQuery) ([]driver.Row, error)
	PushResult func(ctx context.Context, r R, partition, clientID, clientCommitID string) (driver.PushResult, bool, error)
	Index      func(ctx context.Context, r R, partition string, q driver.IndexQuery) ([]driver.Row, error)
}

// Committed is the committed-data read half of a database/sql driver's
// Conn (mysql, sqlite), embedded in it: GetRow, ScanRows, GetPushResult
// and ScanRowsByIndex run its Reads through the runner of committed data.
type Committed[R any] struct {
	runner R
	reads  Reads[R]
}

// NewCommitted returns the Committed that reads through runner.
func NewCommitted[R any](runner R, reads Reads[R]) Committed[R] {
	return Committed[R]{runner: runner, reads: reads}
}

// GetRow returns the committed row (ROW-4: missing → false, nil).
func (x Committed[R]) GetRow(ctx context.Context, partition, table, id string) (driver.Row, bool, error) {
	return x.reads.Row(ctx, x.runner, partition, table, id)
}

// ScanRows returns committed rows selected by q (SCAN-1…SCAN-5).
func (x Committed[R]) ScanRows(ctx context.Context, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	return x.reads.Rows(ctx, x.runner, partition, q)
}

// GetPushResult returns a committed push result (PR-2, PR-5).
func (x Committed[R]) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	return x.reads.PushResult(ctx, x.runner, partition, clientID, clientCommitID)
}

// ScanRowsByIndex returns the committed rows of partition whose index
// columns equal q.Values position by position (nil matches NULL), with id
// > q.AfterRowID, ascending bytewise by id, at most q.Limit (IXL-1).
// Errors, in IXL-2's order: CodeUnknownTable (SCH-8), CodeIndexNotFound,
// CodeIndexValueCountMismatch, CodeInvalidValue. q.Limit is trusted:
// sync.Store refuses one outside 1…1,000 before the driver runs (V-5).
func (x Committed[R]) ScanRowsByIndex(ctx context.Context, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	return x.reads.Index(ctx, x.runner, partition, q)
}

// InTx is the read half of a database/sql driver's Tx (mysql, sqlite),
// embedded in it: GetRow, ScanRows, GetPushResult and ScanRowsByIndex
// each run its Reads through the Tx's runner as one operation of the Tx
// (its op: TX-5, TX-6; staged upserts are written first), so they see
// the Tx's own writes (TX-3, IXL-3).
type InTx[R any] struct {
	op        func(context.Context, func() error) error
	runner    R
	partition string
	reads     Reads[R]
}

// NewInTx returns the InTx of a Tx on partition whose operations run
// through op and read through runner.
func NewInTx[R any](op func(context.Context, func() error) error, runner R, partition string, reads Reads[R]) InTx[R] {
	return InTx[R]{op: op, runner: runner, partition: partition, reads: reads}
}

// GetRow reads a row, seeing the Tx's own writes (TX-3).
func (x InTx[R]) GetRow(ctx context.Context, table, id string) (row driver.Row, found bool, err error) {
	err = x.op(ctx, func() error {
		row, found, err = x.reads.Row(ctx, x.runner, x.partition, table, id)
		return err
	})
	return row, found, err
}

// ScanRows scans rows, seeing the Tx's own writes (TX-3).
func (x InTx[R]) ScanRows(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error) {
	return txstate.Value(ctx, x.op, func() ([]driver.Row, error) { return x.reads.Rows(ctx, x.runner, x.partition, q) })
}

// GetPushResult reads a push result, seeing one staged in the Tx (TX-3).
func (x InTx[R]) GetPushResult(ctx context.Context, clientID, clientCommitID string) (r driver.PushResult, found bool, err error) {
	err = x.op(ctx, func() error {
		r, found, err = x.reads.PushResult(ctx, x.runner, x.partition, clientID, clientCommitID)
		return err
	})
	return r, found, err
}

// ScanRowsByIndex is the Conn's ScanRowsByIndex inside the Tx: it sees the
// Tx's own writes (IXL-3, TX-3).
func (x InTx[R]) ScanRowsByIndex(ctx context.Context, q driver.IndexQuery) ([]driver.Row, error) {
	return txstate.Value(ctx, x.op, func() ([]driver.Row, error) { return x.reads.Index(ctx, x.runner, x.partition, q) })
}
