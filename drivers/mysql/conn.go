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
	"github.com/syncstore/syncstore/internal/txset"
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
	// stmtBytes bounds the bound values of one multi-row write (bytes):
	// half the server's max_allowed_packet (or the DSN's, if smaller), so
	// a statement packet always fits. A single row larger than it is sent
	// alone, as before batching.
	stmtBytes int
	// maxPacket is the server's max_allowed_packet, or the DSN's when
	// smaller (bytes): the most one statement's bound values may take
	// (fitsPacket).
	maxPacket int
	stmts     *stmtCache
	state     atomic.Pointer[schemaState]
	// ensureMu serializes this Conn's EnsureSchema calls; other processes
	// are serialized by GET_LOCK.
	ensureMu gosync.Mutex
	closed   atomic.Bool
	txs      txset.Set[*Tx] // open transactions, rolled back by Close (ERR-4)
	aq       queryPool      // authoritative queries (query.go)
	replica  bool           // the server is a read-only replica (replica.go)
	fan      fanpoll.Hub    // commit fanout by polling (fanout.go)

	// connector makes the pool's connections; outcomes is a small pool of
	// its own that settles lost COMMIT answers (outcome.go), opened on
	// first use.
	connector   sqldriver.Connector
	outcomeOnce gosync.Once
	outcomes    *sql.DB
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
	if cfg.MaxAllowedPacket > 0 && int64(cfg.MaxAllowedPacket) < maxPacket {
		maxPacket = int64(cfg.MaxAllowedPacket)
	}
	c := &Conn{version: version, maria: strings.Contains(strings.ToLower(version), "mariadb"),
		stmtBytes: int(max(maxPacket/2, minStmtBytes)), maxPacket: int(maxPacket), replica: readOnly}
	c.fan.Heads = c.commitHeads
	c.coll = "utf8mb4_0900_bin"
	isolationVar := "transaction_isolation"
	if c.maria {
		c.coll = "utf8mb4_nopad_bin"
		isolationVar = "tx_isolation"
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
	cfg.Params["collation_connection"] = "'" + c.coll + "'"
	cfg.Params["sql_mode"] = "'" + coreSQLMode + "'"
	cfg.Params[isolationVar] = "'READ-COMMITTED'"
	cfg.Params["innodb_lock_wait_timeout"] = strconv.Itoa(lockWaitTimeoutS)
	if c.replica {
		// Every transaction and statement of a replica's sessions is
		// read-only: a write fails on the server (1792) even for a user
		// read_only does not stop (replica.go).
		cfg.Params[readOnlyVar(c.maria)] = "1"
	}
	c.cfg = cfg
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	c.connector = connector
	c.db = sql.OpenDB(connector)
	c.db.SetMaxIdleConns(8)
	c.db.SetConnMaxIdleTime(time.Minute)
	c.stmts = newStmtCache(c.db)
	if err := c.initInfra(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
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
		c.stmts.close()
	}
	_ = c.aq.close()
	c.outcomeOnce.Do(func() {}) // no outcomes pool after Close
	if c.outcomes != nil {
		_ = c.outcomes.Close()
	}
	if c.db != nil {
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
func (c *Conn) stmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	st, err := c.stmts.get(ctx, q)
	if err != nil {
		return nil, err
	}
	if tx != nil {
		return tx.StmtContext(ctx, st), nil
	}
	return st, nil
}

// exec runs q on tx (nil: the pool) and returns the engine's result; the
// error is the engine's, unmapped, so callers can classify it.
func (c *Conn) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	st, err := c.stmt(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// query runs a multi-row statement on tx (nil: the pool). Statement texts
// that vary with their input (long value lists) are run unprepared so they
// do not fill the cache.
func (c *Conn) query(ctx context.Context, tx *sql.Tx, q string, args []any, what string) (*sql.Rows, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if len(args) > maxCachedArgs {
		if tx != nil {
			rows, err = tx.QueryContext(ctx, q, args...)
		} else {
			rows, err = c.db.QueryContext(ctx, q, args...)
		}
	} else {
		var st *sql.Stmt
		if st, err = c.stmt(ctx, tx, q); err == nil {
			rows, err = st.QueryContext(ctx, args...)
		}
	}
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	return rows, nil
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
		return c.mapErr(ctx, err, "mysql: prepare a statement")
	}
	err = st.QueryRowContext(ctx, args...).Scan(dest...)
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
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	return c.mapErr(ctx, err, what)
}

// stmtCache prepares each statement text once on the pool; database/sql
// re-prepares it on each connection as needed.
type stmtCache struct {
	db *sql.DB
	mu gosync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

func (s *stmtCache) get(ctx context.Context, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.m[q]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.m[q]; ok {
		_ = st.Close()
		return prev, nil
	}
	s.m[q] = st
	return st, nil
}

func (s *stmtCache) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		_ = st.Close()
	}
	s.m = map[string]*sql.Stmt{}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
