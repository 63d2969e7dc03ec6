package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/driver/fanpoll"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/stmtcache"
	"github.com/syncstore/syncstore/internal/txset"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// committedReads and txReads are sqlrows' read halves, embedded in Conn
// and Tx under unexported names: their methods serve driver.Conn and
// driver.Tx, the fields stay private to the package.
type (
	committedReads = sqlrows.Committed[runner]
	txReads        = sqlrows.InTx[runner]
)

// Conn is an open SQLite store (driver.Conn). It is safe for concurrent
// use; see the package doc for how reads and writes are routed. It also
// implements driver.EngineVersioner.
//
// Building blocks for code in this package (capabilities):
//   - infrastructure DDL: append to sqlitesql.InfraDDL in an init of
//     the dialect; Open runs it in its first write transaction;
//   - fixed statements: list them in sqlitesql.InfraStatements (all,
//     prepared on the writer) and ReadStatements (those run outside a
//     write transaction, prepared on the readers);
//   - c.writeTx (Conn-level atomic writes), c.writeOne (one autocommit
//     write), c.readTx (several reads on one snapshot), c.reader() (one
//     read), c.queryRow / c.query on any runner;
//   - inside a Tx: t.op(ctx, fn) (finished/aborted checks) and t.st, the
//     Tx's runner; c.state.Table(name) for an ensured table's SQL (SCH-8).
type Conn struct {
	w, r *sql.DB // writer (one connection), readers (query_only pool)
	// wr, rd: the prepared statements of each. wr.Get must not be called
	// while the caller's goroutine holds the writer's connection (a Tx):
	// use wr.Peek there.
	wr, rd *stmtcache.Cache
	// committedReads serves GetRow, ScanRows, GetPushResult and
	// ScanRowsByIndex: the Conn's reads of committed data (the readers).
	committedReads
	// state is the ensured schema; it serializes this Conn's EnsureSchema
	// calls, other processes are serialized by the write transaction.
	state   schemaplan.State[*sqlitesql.Table, struct{}]
	closed  atomic.Bool
	txs     txset.Set[*Tx] // open transactions, rolled back by Close (ERR-4)
	tmpDir  string         // private directory of a ":memory:" store, removed by Close
	aq      *queryPool     // authoritative-query connections (query.go)
	fan     fanpoll.Hub    // commit fanout (fanout.go)
	fanFile string         // the store file's URI, the key of the in-process hub
	recs    recordBatcher  // PutClientRecord's group commit (recordbatch.go)
	gate    writerGate     // the order of the writer's takers (writergate.go)

	// promote lists statements write transactions prepared for
	// themselves, to be prepared on the writer's pool (stage.go).
	promoteMu gosync.Mutex
	promote   []string
}

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.EngineVersioner = (*Conn)(nil)
)

func open(ctx context.Context, dsn string) (*Conn, error) {
	t, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c := &Conn{tmpDir: t.tmpDir, aq: newQueryPool(t.dsnFor(false))}
	c.committedReads = sqlrows.NewCommitted(c.reader(), c.reads())
	c.gate.weight = c.recs.queued
	c.joinFanout(t.fanKey())
	fail := func(err error, what string) (*Conn, error) {
		_ = c.Close()
		return nil, openErr(ctx, err, t.path, what)
	}
	if c.w, err = openDB(t.dsnFor(true), 1); err != nil {
		return fail(err, "sqlite: open the writer")
	}
	c.wr = stmtcache.New(c.w)
	if err := c.initInfraBusyRetry(ctx, t.busyMs); err != nil {
		return fail(err, "sqlite: initialize the store")
	}
	if c.r, err = openDB(t.dsnFor(false), max(4, runtime.GOMAXPROCS(0))); err != nil {
		return fail(err, "sqlite: open the readers")
	}
	c.rd = stmtcache.New(c.r)
	if err := c.r.PingContext(ctx); err != nil {
		return fail(err, "sqlite: open a reader")
	}
	for _, q := range sqlitesql.InfraStatements {
		if _, err := c.wr.Get(ctx, q); err != nil {
			return fail(err, "sqlite: prepare statements")
		}
	}
	for _, q := range sqlitesql.ReadStatements {
		if _, err := c.rd.Get(ctx, q); err != nil {
			return fail(err, "sqlite: prepare statements")
		}
	}
	return c, nil
}

// initInfra creates the infrastructure tables in one write transaction
// (idempotent; concurrent openers serialize on BEGIN IMMEDIATE), checks
// the stored format and upgrades an older one (retention.go).
// initInfraBusyRetry is initInfra, again while it meets SQLITE_BUSY,
// within busyMs. The writer's first connection switches a file not yet in
// WAL to WAL as it opens (its journal_mode pragma), which takes an
// exclusive lock SQLite does not wait for through the busy handler: when
// several Conns open such a file at once (a new store, or one of an older
// format a rollback-journal tool made), all but one meet SQLITE_BUSY at
// once rather than after the DSN's _busy_timeout.
func (c *Conn) initInfraBusyRetry(ctx context.Context, busyMs int) error {
	deadline := time.Now().Add(time.Duration(busyMs) * time.Millisecond)
	for {
		err := c.initInfra(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *Conn) initInfra(ctx context.Context) error {
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range sqlitesql.InfraDDL {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, sqlitesql.InsertMetaIfAbsent, sqlitesql.MetaFormat, sqlitesql.InfraFormat); err != nil {
		return err
	}
	var format string
	if err := tx.QueryRowContext(ctx, sqlitesql.SelectMeta, sqlitesql.MetaFormat).Scan(&format); err != nil {
		return err
	}
	if err := upgradeFormat(ctx, tx, format); err != nil {
		return err
	}
	return tx.Commit()
}

// Close rolls back the open Tx (if any), closes the readers and the
// writer and, for a ":memory:" store, removes its private directory. A
// second Close is a no-op; every other operation afterwards fails with
// CodeClosed (ERR-4).
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.leaveFanout()
	for _, t := range c.txs.Close() {
		_ = t.Rollback(context.Background())
	}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = driver.Wrap(driver.CodeInternal, err, "sqlite: close")
		}
	}
	keep(c.aq.close())
	if c.rd != nil {
		c.rd.Close()
	}
	if c.wr != nil {
		c.wr.Close()
	}
	if c.r != nil {
		keep(c.r.Close())
	}
	if c.w != nil {
		keep(c.w.Close())
	}
	if c.tmpDir != "" {
		keep(os.RemoveAll(c.tmpDir))
	}
	return first
}

// errClosed is returned by every operation after Close (ERR-4).
func errClosed() error { return driver.Errorf(driver.CodeClosed, "sqlite: the store is closed") }

func (c *Conn) check() error {
	if c.closed.Load() {
		return errClosed()
	}
	return nil
}

// EngineVersion returns "SQLite " + sqlite_version() (driver.EngineVersioner).
func (c *Conn) EngineVersion(ctx context.Context) (string, error) {
	var v string
	if err := c.queryRow(ctx, c.reader(), sqlitesql.EngineVersion, nil, &v); err != nil {
		return "", err
	}
	return "SQLite " + v, nil
}

// runner hands out prepared statements: the readers' (outside a Tx) or
// statements bound to a write transaction.
type runner interface {
	stmt(ctx context.Context, q string) (*sql.Stmt, error)
}

type readRunner struct{ c *Conn }

func (r readRunner) stmt(ctx context.Context, q string) (*sql.Stmt, error) { return r.c.rd.Get(ctx, q) }

func (c *Conn) reader() runner { return readRunner{c} }

// queryRow runs q with args on r and scans its single row into dest. It
// returns sql.ErrNoRows unwrapped so callers can treat "not found".
func (c *Conn) queryRow(ctx context.Context, r runner, q string, args []any, dest ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	st, err := r.stmt(ctx, q)
	if err != nil {
		return c.mapErr(ctx, err, "sqlite: prepare a statement")
	}
	err = st.QueryRowContext(ctx, args...).Scan(dest...)
	if err == sql.ErrNoRows {
		return err
	}
	return c.mapErr(ctx, err, "sqlite: read")
}
