package mysql

import (
	"context"
	"database/sql"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/stmtcache"
)

// OpenDB returns a Conn over db, a *sql.DB of go-sql-driver/mysql that the
// host owns (its pool sizes, TLS and timeouts stay the host's): it checks
// that db's connections are configured as the store needs, creates the
// infrastructure tables if needed (as Open does) and returns the Conn.
// Wrap it with sync.OpenConn to get a Store.
//
// cfg is the configuration db was opened with (mysql.ParseDSN of its
// DSN, or the Config of its connector). The store reads its database name
// (it must be db's current database) and opens from it, with its own
// settings, the two small pools it keeps apart from db: authoritative
// queries (their own session settings and no default database) and the
// look-ups that settle a lost COMMIT answer (TX-10), which must not wait
// behind a full db. Both are closed by Close.
//
// Connections: a Tx holds one of db's from Begin to its end and never
// takes a second (a statement the pool has not prepared yet is prepared on
// the Tx's own); EnsureSchema and a storage upgrade hold one for a named
// lock and work on another, so MaxOpenConns must be at least 2, and above
// the number of pushes that run at once for them not to queue.
//
// The Conn borrows db: Close rolls back the Conn's open Txs and closes the
// statements it prepared on db, never db itself. Nothing is changed on db
// or its sessions. Instead, db's DSN must already carry what Open sets for
// itself, and OpenDB checks each on one of db's connections, failing
// with CodeInvalidArgument naming the first missing parameter:
//
//	clientFoundRows=true                           (UPDATE counts matched rows)
//	interpolateParams=false (the default)          (binary protocol: floats bit for bit)
//	charset=utf8mb4&collation=utf8mb4_nopad_bin    (MariaDB; utf8mb4_0900_bin on MySQL)
//	sql_mode='STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION' (or any sql_mode with STRICT_ALL_TABLES)
//	transaction_isolation='READ-COMMITTED'         (tx_isolation on MariaDB)
//
// multiStatements must be off in cfg (the default). innodb_lock_wait_timeout
// is the host's: Open sets 5 s; a longer one only lets a lock wait run
// longer before Begin retries it, and ctx still bounds every call.
// Errors: CodeInvalidArgument as above or for a nil db or cfg, or a cfg
// naming no database or another one than db's; CodeUnavailable when the
// server cannot be reached within ctx.
func OpenDB(ctx context.Context, db *sql.DB, cfg *mysql.Config) (*Conn, error) {
	if db == nil || cfg == nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: OpenDB: nil *sql.DB or *mysql.Config")
	}
	if cfg.DBName == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: OpenDB: the configuration names no database (…/dbname)")
	}
	if cfg.MultiStatements {
		return nil, missingParam("multiStatements=false", "a store never sends more than one statement at once")
	}
	c, err := probeHostDB(ctx, db, cfg)
	if err != nil {
		return nil, err
	}
	c.db, c.hostDB = db, true
	c.stmts = stmtcache.New(db)
	if err := c.initInfra(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// probeHostDB checks db on one of its connections, given back before
// OpenDB goes on (so a pool of one connection works), and returns the
// Conn to complete.
func probeHostDB(ctx context.Context, db *sql.DB, cfg *mysql.Config) (*Conn, error) {
	sc, err := db.Conn(ctx)
	if err != nil {
		return nil, mapErr(ctx, err, "mysql: OpenDB: connect")
	}
	defer func() { _ = sc.Close() }()
	var version, current string
	var maxPacket int64
	if err := sc.QueryRowContext(ctx, "SELECT VERSION(), @@max_allowed_packet, COALESCE(DATABASE(), '')").Scan(&version, &maxPacket, &current); err != nil {
		return nil, mapErr(ctx, err, "mysql: OpenDB: connect")
	}
	if current != cfg.DBName {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: OpenDB: the *sql.DB's current database is not the one the configuration names")
	}
	c, err := newConn(cfg, version, maxPacket, false) // a host's pool is never opened as a replica
	if err != nil {
		return nil, err
	}
	if err := c.checkSession(ctx, sc); err != nil {
		return nil, err
	}
	if err := checkFoundRows(ctx, sc); err != nil {
		return nil, err
	}
	return c, nil
}

func missingParam(param, why string) error {
	return driver.Errorf(driver.CodeInvalidArgument, "mysql: OpenDB: the *sql.DB's DSN needs %s (%s)", param, why)
}

// checkSession checks the session settings of sc, one of the host db's
// connections, against sessionParams, and that it sends bound values in
// the binary protocol (interpolateParams off).
func (c *Conn) checkSession(ctx context.Context, sc *sql.Conn) error {
	var charset, coll, mode, iso string
	if err := sc.QueryRowContext(ctx, "SELECT @@session.character_set_connection, @@session.collation_connection, @@session.sql_mode, @@session."+c.isolationVar()).
		Scan(&charset, &coll, &mode, &iso); err != nil {
		return mapErr(ctx, err, "mysql: OpenDB: read the session settings")
	}
	switch {
	case charset != "utf8mb4" || coll != c.coll:
		return missingParam("charset=utf8mb4&collation="+c.coll, "strings compare and order bytewise, NO PAD")
	case !hasMode(mode, "STRICT_ALL_TABLES"):
		return missingParam("sql_mode='"+coreSQLMode+"'", "a value that does not fit fails instead of being truncated")
	case iso != "READ-COMMITTED":
		return missingParam(c.isolationVar()+"='READ-COMMITTED'", "the isolation every Tx is built for")
	}
	// A prepared statement's execution counts in Com_stmt_execute; an
	// interpolated query does not.
	before, err := stmtExecutions(ctx, sc)
	if err != nil {
		return err
	}
	var one int
	if err := sc.QueryRowContext(ctx, "SELECT ?", 1).Scan(&one); err != nil {
		return mapErr(ctx, err, "mysql: OpenDB: probe the protocol")
	}
	after, err := stmtExecutions(ctx, sc)
	if err != nil {
		return err
	}
	if after == before {
		return missingParam("interpolateParams=false", "bound values travel in the binary protocol, floats bit for bit")
	}
	return nil
}

// stmtExecutions is the session's count of prepared statement executions.
func stmtExecutions(ctx context.Context, sc *sql.Conn) (int64, error) {
	var name string
	var n int64
	if err := sc.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_execute'").Scan(&name, &n); err != nil {
		return 0, mapErr(ctx, err, "mysql: OpenDB: probe the protocol")
	}
	return n, nil
}

func hasMode(modes, mode string) bool {
	for _, m := range strings.Split(modes, ",") {
		if m == mode {
			return true
		}
	}
	return false
}

// checkFoundRows checks that an UPDATE on sc counts the rows it matched,
// not only those it changed (clientFoundRows): an UPDATE that rewrites a
// row of a temporary table with itself must count 1.
func checkFoundRows(ctx context.Context, sc *sql.Conn) error {
	var n int64
	err := func() error {
		if _, err := sc.ExecContext(ctx, "CREATE TEMPORARY TABLE _sync_probe (k INT PRIMARY KEY)"); err != nil {
			return err
		}
		defer func() {
			_, _ = sc.ExecContext(context.WithoutCancel(ctx), "DROP TEMPORARY TABLE IF EXISTS _sync_probe")
		}()
		if _, err := sc.ExecContext(ctx, "INSERT INTO _sync_probe (k) VALUES (1)"); err != nil {
			return err
		}
		res, err := sc.ExecContext(ctx, "UPDATE _sync_probe SET k = k WHERE k = 1")
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}()
	if err != nil {
		return mapErr(ctx, err, "mysql: OpenDB: probe clientFoundRows (a temporary table)")
	}
	if n != 1 {
		return missingParam("clientFoundRows=true", "an UPDATE reports the rows it matched")
	}
	return nil
}
