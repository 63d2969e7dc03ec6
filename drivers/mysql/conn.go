package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/driver/fanpoll"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/stmtcache"
	"github.com/syncstore/syncstore/internal/txset"
)

// committedReads and txReads are sqlrows' read halves, embedded in Conn
// and Tx under unexported names: their methods serve driver.Conn and
// driver.Tx, the fields stay private to the package.
type (
	committedReads = sqlrows.Committed[*sql.Tx]
	txReads        = sqlrows.InTx[*sql.Tx]
)

// Conn is an open MySQL/MariaDB store (driver.Conn): a database/sql pool
// whose connections are all configured alike (see the package doc). It is
// safe for concurrent use and also implements driver.EngineVersioner.
type Conn struct {
	db      *sql.DB
	cfg     *mysql.Config
	maria   bool   // MariaDB rather than MySQL
	coll    string // the NO PAD binary collation of utf8mb4
	version string // VERSION()
	// committedReads serves GetRow, ScanRows, GetPushResult and
	// ScanRowsByIndex: the Conn's reads of committed data (the pool).
	committedReads
	// stmtBytes bounds the bound values of one multi-row write (bytes):
	// half the server's max_allowed_packet (or the DSN's, if smaller), so
	// a statement packet always fits. A single row larger than it is sent
	// alone, as before batching.
	stmtBytes int
	// maxPacket is the server's max_allowed_packet, or the DSN's when
	// smaller (bytes): the most one statement's bound values may take
	// (fitsPacket).
	maxPacket int
	stmts     *stmtcache.Cache
	// state is the ensured schema; it serializes this Conn's EnsureSchema
	// calls, other processes are serialized by GET_LOCK.
	state   schemaplan.State[*table, struct{}]
	closed  atomic.Bool
	txs     txset.Set[*Tx] // open transactions, rolled back by Close (ERR-4)
	aq      queryPool      // authoritative queries (query.go)
	replica bool           // the server is a read-only replica (replica.go)
	fan     fanpoll.Hub    // commit fanout by polling (fanout.go)

	// connector makes the pool's connections; outcomes is a small pool of
	// its own that settles lost COMMIT answers (outcome.go), opened on
	// first use.
	connector   sqldriver.Connector
	outcomeOnce gosync.Once
	outcomes    *sql.DB

	// hostDB: db is the host's (OpenDB), so Close leaves it open.
	hostDB bool

	// wsrep: the server is a MariaDB Galera node; its transactions are
	// guarded against a brute-force abort lost under a prepare (wsrep.go).
	wsrep bool
	guard wsrepGuard
}

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.EngineVersioner = (*Conn)(nil)
)

// lockWaitTimeoutS bounds one InnoDB lock wait (seconds); waits that must
// last longer (Begin on a busy partition) are retried until ctx ends.
const lockWaitTimeoutS = 5

// open probes the server's flavour, then opens the configured pool and
// creates the infrastructure tables.
func open(ctx context.Context, cfg *mysql.Config) (*Conn, error) {
	version, maxPacket, readOnly, err := probeVersion(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := newConn(cfg, version, maxPacket, readOnly)
	if err != nil {
		return nil, err
	}
	c.db = sql.OpenDB(c.connector)
	c.db.SetMaxIdleConns(8)
	c.db.SetConnMaxIdleTime(time.Minute)
	c.stmts = stmtcache.New(c.db)
	if err := c.initInfra(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// newConn returns a Conn without a pool for a server of version whose
// max_allowed_packet is maxPacket (readOnly: a replica, replica.go), with
// c.cfg and c.connector: cfg with
// what every connection of the store needs (see the package doc; the
// session settings are also sessionParams).
func newConn(cfg *mysql.Config, version string, maxPacket int64, readOnly bool) (*Conn, error) {
	if cfg.MaxAllowedPacket > 0 && int64(cfg.MaxAllowedPacket) < maxPacket {
		maxPacket = int64(cfg.MaxAllowedPacket)
	}
	c := &Conn{version: version, maria: strings.Contains(strings.ToLower(version), "mariadb"),
		stmtBytes: int(max(maxPacket/2, minStmtBytes)), maxPacket: int(maxPacket), replica: readOnly}
	c.fan.Heads = c.commitHeads
	c.committedReads = sqlrows.NewCommitted[*sql.Tx](nil, c.reads())
	c.coll = "utf8mb4_0900_bin"
	if c.maria {
		c.coll = "utf8mb4_nopad_bin"
	}
	cfg = cfg.Clone()
	cfg.InterpolateParams = false
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	cfg.ParseTime = false
	if err := cfg.Apply(mysql.Charset("utf8mb4", "")); err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range c.sessionParams() {
		cfg.Params[k] = v
	}
	c.cfg = cfg
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	c.connector = connector
	return c, nil
}

// isolationVar is the name of the session's isolation variable.
func (c *Conn) isolationVar() string {
	if c.maria {
		return "tx_isolation"
	}
	return "transaction_isolation"
}

// sessionParams are the session variables every connection of the store
// is opened with, as DSN parameters (quoted values).
func (c *Conn) sessionParams() map[string]string {
	p := map[string]string{
		"collation_connection":     "'" + c.coll + "'",
		"sql_mode":                 "'" + coreSQLMode + "'",
		c.isolationVar():           "'READ-COMMITTED'",
		"innodb_lock_wait_timeout": strconv.Itoa(lockWaitTimeoutS),
	}
	if c.replica {
		// Every transaction and statement of a replica's sessions is
		// read-only: a write fails on the server (1792) even for a user
		// read_only does not stop (replica.go).
		p[readOnlyVar(c.maria)] = "1"
	}
	return p
}

// coreSQLMode is the sql_mode of every connection: strict (a value that
// does not fit fails instead of being truncated), no silent engine change.
const coreSQLMode = "STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION"

// minStmtBytes is the least Conn.stmtBytes: MySQL's max_allowed_packet
// is at least 1 KiB; 512 bytes still carry a W1 row.
const minStmtBytes = 512

// probeVersion connects once with the user's configuration and returns
// VERSION() and @@max_allowed_packet (bytes). CodeUnavailable when the
// server cannot be reached.
func probeVersion(ctx context.Context, cfg *mysql.Config) (string, int64, bool, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", 0, false, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var v string
	var maxPacket int64
	var readOnly bool
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@max_allowed_packet, @@read_only").Scan(&v, &maxPacket, &readOnly); err != nil {
		return "", 0, false, connectErr(ctx, err)
	}
	return v, maxPacket, readOnly, nil
}

// initInfra creates the infrastructure tables (idempotent), checks the
// stored format and upgrades an older one (retention.go).
func (c *Conn) initInfra(ctx context.Context) error {
	if c.replica {
		return c.openReplica(ctx)
	}
	if err := c.probeWsrep(ctx); err != nil {
		return err
	}
	for _, q := range infraDDL {
		if err := c.retry(ctx, func() error {
			_, err := c.db.ExecContext(ctx, q)
			return err
		}); err != nil {
			return c.mapErr(ctx, err, "mysql: initialize the store")
		}
	}
	if err := c.upgradeOutcomes(ctx); err != nil {
		return err
	}
	if err := c.ensureReactionIndexes(ctx); err != nil {
		return err
	}
	if err := c.execRetry(ctx, "mysql: initialize the store", insertMetaIfAbsent, metaFormat, formatVersion); err != nil {
		return err
	}
	var format string
	if err := c.queryRow(ctx, nil, selectMeta, []any{metaFormat}, &format); err != nil {
		return err
	}
	return c.upgradeFormat(ctx, format)
}

// Close rolls back every open Tx and closes the pool. A second Close is a
// no-op; every other operation afterwards fails with CodeClosed (ERR-4).
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.fan.Close()
	for _, t := range c.txs.Close() {
		_ = t.Rollback(context.Background())
	}
	if c.stmts != nil {
		c.stmts.Close()
	}
	_ = c.aq.Close()
	c.outcomeOnce.Do(func() {}) // no outcomes pool after Close
	if c.outcomes != nil {
		_ = c.outcomes.Close()
	}
	if c.db != nil && !c.hostDB {
		if err := c.db.Close(); err != nil {
			return driver.Wrap(driver.CodeInternal, err, "mysql: close")
		}
	}
	return nil
}

func (c *Conn) check() error {
	if c.closed.Load() {
		return errClosed()
	}
	return nil
}

// EngineVersion returns "MariaDB 10.11.…" or "MySQL 8.…" (driver.EngineVersioner).
func (c *Conn) EngineVersion(ctx context.Context) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	v, _, _ := strings.Cut(c.version, "-")
	if c.maria {
		return "MariaDB " + v, nil
	}
	return "MySQL " + v, nil
}

// retry runs fn again while it fails with a deadlock or a lock-wait
// timeout, until ctx ends. fn must be safe to repeat (a whole
// transaction, or one autocommit statement).
func (c *Conn) retry(ctx context.Context, fn func() error) error {
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 100*time.Millisecond) {
		err := fn()
		if err == nil || !isLockRetry(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

// execRetry runs one autocommit write statement, retried on lock
// conflicts (see retry).
func (c *Conn) execRetry(ctx context.Context, what, q string, args ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	err := c.retry(ctx, func() error {
		_, err := c.exec(ctx, nil, q, args...)
		return err
	})
	return c.mapErr(ctx, err, what)
}

// stmt returns the prepared statement of q, bound to tx when tx is not nil.
// A transaction never waits for a second connection: a statement the pool
// has not prepared yet is prepared on the transaction's own connection for
// this use (database/sql closes it with the transaction) and on the pool
// in the background for later ones. Preparing it on the pool first would
// take a second connection, which a pool of bounded size (a host's,
// OpenDB) may not have while every connection is held by a transaction
// waiting for this one's partition. On a Galera node a statement prepared
// inside a transaction is checked first (txStmt, wsrep.go).
func (c *Conn) stmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	if tx == nil {
		return c.stmts.Get(ctx, q)
	}
	return c.txStmt(ctx, tx, q)
}

// exec runs q on tx (nil: the pool) and returns the engine's result; the
// error is the engine's, unmapped, so callers can classify it.
func (c *Conn) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	st, err := c.stmt(ctx, tx, q)
	if err == nil {
		var res sql.Result
		if res, err = st.ExecContext(ctx, args...); err == nil {
			return res, nil
		}
	}
	c.txFailed(tx, err)
	return nil, err
}

// query runs a multi-row statement on tx (nil: the pool). Statement texts
// that vary with their input (long value lists) are run unprepared so they
// do not fill the cache.
func (c *Conn) query(ctx context.Context, tx *sql.Tx, q string, args []any, what string) (*sql.Rows, error) {
	rows, err := c.queryRaw(ctx, tx, q, args)
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	return rows, nil
}

// execArgs runs q on tx (nil: the pool) with args; texts with more than
// maxCachedArgs parameters are not kept prepared. The error is the
// engine's, unmapped.
func (c *Conn) execArgs(ctx context.Context, tx *sql.Tx, q string, args []any) (sql.Result, error) {
	if len(args) <= maxCachedArgs {
		return c.exec(ctx, tx, q, args...)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	switch {
	case tx == nil:
		return c.db.ExecContext(ctx, q, args...)
	case c.guarded(tx) == nil:
		return tx.ExecContext(ctx, q, args...)
	}
	st, err := c.oneShot(ctx, tx, q)
	var res sql.Result
	if err == nil {
		res, err = st.ExecContext(ctx, args...)
	}
	c.txFailed(tx, err)
	return res, err
}

// queryRaw is query with the engine's error unmapped, for the inside of
// writeTx (which must see a deadlock as such to retry it).
func (c *Conn) queryRaw(ctx context.Context, tx *sql.Tx, q string, args []any) (*sql.Rows, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var st *sql.Stmt
	var err error
	switch {
	case len(args) <= maxCachedArgs:
		st, err = c.stmt(ctx, tx, q)
	case tx == nil:
		return c.db.QueryContext(ctx, q, args...)
	case c.guarded(tx) == nil:
		return tx.QueryContext(ctx, q, args...)
	default:
		st, err = c.oneShot(ctx, tx, q)
	}
	var rows *sql.Rows
	if err == nil {
		rows, err = st.QueryContext(ctx, args...)
	}
	c.txFailed(tx, err)
	return rows, err
}

// maxCachedArgs: statements with more parameters are not kept prepared.
const maxCachedArgs = 64

// queryRow runs q on tx (nil: the pool) and scans its single row into
// dest. It returns sql.ErrNoRows unwrapped so callers can treat "not
// found"; other errors are mapped.
func (c *Conn) queryRow(ctx context.Context, tx *sql.Tx, q string, args []any, dest ...any) error {
	if err := c.check(); err != nil {
		return err
	}
	st, err := c.stmt(ctx, tx, q)
	if err != nil {
		c.txFailed(tx, err)
		return c.mapErr(ctx, err, "mysql: prepare a statement")
	}
	err = st.QueryRowContext(ctx, args...).Scan(dest...)
	c.txFailed(tx, err)
	if err == sql.ErrNoRows {
		return err
	}
	return c.mapErr(ctx, err, "mysql: read")
}

// writeTx runs fn in one READ COMMITTED transaction and commits when fn
// returns nil. The whole transaction is retried on a deadlock or a
// lock-wait timeout until ctx ends, so neither reaches the caller.
func (c *Conn) writeTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := c.check(); err != nil {
		return err
	}
	err := c.retry(ctx, func() error {
		sc, err := c.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer sc.Close()
		tx, err := c.beginOn(ctx, sc, nil)
		if err != nil {
			return err
		}
		defer c.endTx(tx)
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	return c.mapErr(ctx, err, what)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
