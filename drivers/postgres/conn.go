package postgres

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/partgate"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/txset"
)

// Conn is an open PostgreSQL store (driver.Conn) over a pgx pool. It is
// safe for concurrent use. It also implements driver.EngineVersioner and
// the capability interfaces listed in the package doc.
type Conn struct {
	pool *pgxpool.Pool
	cfg  *pgxpool.Config
	// state is the ensured schema; it serializes this Conn's EnsureSchema
	// calls, other processes are serialized by the schema advisory lock.
	state  schemaplan.State[*table, struct{}]
	closed atomic.Bool

	schemaName atomic.Pointer[string]          // current_schema, read once (authoritative queries)
	procNames  atomic.Pointer[map[string]bool] // lower-case names of the server's functions, read once (field notation)

	txs txset.Set[*Tx] // open transactions, rolled back by Close (ERR-4)
	// gates serializes this Conn's Txs per partition and remembers each
	// partition's committed max seq, so a Tx can defer its Begin (Tx).
	gates partgate.Gates[int64]

	// replica: the server is a hot standby; the Conn is read-only
	// (replica.go).
	replica bool
	// hostPool: the pool is the host's (OpenPool), so Close leaves it open.
	hostPool bool
	// listen, if set, is the connection config of SubscribeCommits'
	// listener connections (Options.ListenerDSN); else cfg's.
	listen *pgx.ConnConfig
	// fanout is SubscribeCommits' one listener, shared by every
	// subscription (fanout.go).
	fanout fanHub
}

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.EngineVersioner = (*Conn)(nil)
)

func open(ctx context.Context, cfg *pgxpool.Config) (*Conn, error) {
	pool, err := newPool(ctx, cfg)
	if err != nil {
		return nil, mapErr(ctx, err, "postgres: open the pool")
	}
	c := &Conn{pool: pool, cfg: cfg}
	rec, err := inRecovery(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, mapErr(ctx, err, "postgres: initialize the store")
	}
	if rec {
		c.replica = true
		err = c.openReplica(ctx)
	} else {
		err = c.initInfra(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return c, nil
}

// newPool creates the pool (lazily connecting).
func newPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	return pgxpool.NewWithConfig(ctx, cfg)
}

// initInfra creates the infrastructure tables (idempotent) in one
// transaction under the infrastructure advisory lock, so concurrent
// openers never race on CREATE TABLE, checks the stored format and
// upgrades an older one (retention.go).
func (c *Conn) initInfra(ctx context.Context) error {
	var (
		schema  string
		retired []string
	)
	err := c.inTx(ctx, "postgres: initialize the store", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKeyInfra); err != nil {
			return err
		}
		// DDL goes as one simple-protocol script: a pipeline would
		// prepare the statements that use the new tables before they exist.
		if _, err := tx.Exec(ctx, strings.Join(infraDDL, ";\n"), pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlInsertMetaIfAbsent, metaFormat, infraFormat)
		var format string
		b.Queue(sqlSelectMeta, metaFormat).QueryRow(func(r pgx.Row) error { return r.Scan(&format) })
		b.Queue(sqlExistingIndexes, retiredIndexes).QueryRow(func(r pgx.Row) error { return r.Scan(&schema, &retired) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return upgradeFormat(ctx, tx, format)
	})
	if err == nil {
		c.dropRetiredIndexes(ctx, schema, retired)
	}
	return err
}

// retiredDropTimeout bounds dropRetiredIndexes on one Open (a variable
// for tests).
var retiredDropTimeout = 5 * time.Second

// dropRetiredIndexes drops the indexes of earlier formats still present
// in the store's schema (retiredIndexes), each with DROP INDEX
// CONCURRENTLY: it waits for the transactions that may use the index but
// never blocks reads or writes of the table, as a plain DROP INDEX's
// ACCESS EXCLUSIVE lock would. It is best effort and bounded by
// retiredDropTimeout: an index left (a cancelled drop leaves it invalid,
// which no plan uses, though writes still maintain it) is dropped by a
// later Open. Older releases refuse a store of a newer format, so they
// never keep it (docs/retention.md says what their refused Open costs).
func (c *Conn) dropRetiredIndexes(ctx context.Context, schema string, names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, retiredDropTimeout)
	defer cancel()
	for _, n := range names {
		// n comes from retiredIndexes, never from input; quoted all the
		// same, and qualified: the drop runs on another connection of the
		// pool, and only the store's own schema is looked in.
		if _, err := c.pool.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+quote(schema)+"."+quote(n), pgx.QueryExecModeSimpleProtocol); err != nil {
			return
		}
	}
}

// inTx runs fn in a transaction on one pool connection and commits it;
// any error rolls back. Errors are mapped with what.
func (c *Conn) inTx(ctx context.Context, what string, fn func(pgx.Tx) error) error {
	if err := c.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, c.pool, fn)
	return c.mapErr(ctx, err, what)
}

// Close rolls back every open Tx and closes the pool. A second Close is a
// no-op; every other operation afterwards fails with CodeClosed (ERR-4).
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	for _, t := range c.txs.Close() {
		_ = t.Rollback(context.Background())
	}
	c.fanout.close()
	if !c.hostPool {
		c.pool.Close()
	}
	return nil
}

// errClosed is returned by every operation after Close (ERR-4).
func errClosed() error { return driver.Errorf(driver.CodeClosed, "postgres: the store is closed") }

func (c *Conn) check() error {
	if c.closed.Load() {
		return errClosed()
	}
	return nil
}

// mapErr is mapErr that reports a closed store as such (CodeClosed,
// ERR-4), whatever its pool answered.
func (c *Conn) mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if c.closed.Load() && !errors.As(err, &de) {
		return errClosed()
	}
	return mapErr(ctx, err, what)
}

// EngineVersion returns "PostgreSQL " + server_version (driver.EngineVersioner).
func (c *Conn) EngineVersion(ctx context.Context) (string, error) {
	var v string
	if err := c.queryRow(ctx, c.pool, sqlEngineVersionText, nil, &v); err != nil {
		return "", err
	}
	return "PostgreSQL " + v, nil
}

// querier is what reads run on: the pool, or a Tx's connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queryRow runs q and scans its one row into dest. It returns
// pgx.ErrNoRows unwrapped so callers can treat "not found".
func (c *Conn) queryRow(ctx context.Context, r querier, q string, args []any, dest ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	err := r.QueryRow(ctx, q, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return pgx.ErrNoRows
	}
	return c.mapErr(ctx, err, "postgres: read")
}

// exec runs one autocommit statement on the pool and returns the number
// of rows it changed.
func (c *Conn) exec(ctx context.Context, what, q string, args ...any) (int64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	tag, err := c.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, c.mapErr(ctx, err, what)
	}
	return tag.RowsAffected(), nil
}
