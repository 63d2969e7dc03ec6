// Package mysql is the syncstore driver for MySQL 8.0+ and MariaDB 10.6+
// over github.com/go-sql-driver/mysql. Import it for its side effect and
// open a store by name:
//
//	import _ "github.com/syncstore/syncstore/drivers/mysql"
//	store, err := sync.Open("mysql", "app:secret@tcp(db:3306)/sync")
//
// # DSN
//
// go-sql-driver/mysql's DSN (user:pass@tcp(host:3306)/dbname?params). The
// database must exist; the driver creates its tables in it. The driver
// sets what the contract needs on every connection and overrides the DSN
// for it: utf8mb4 with a binary NO PAD collation (utf8mb4_nopad_bin on
// MariaDB, utf8mb4_0900_bin on MySQL), strict SQL mode, READ COMMITTED
// isolation, server-side prepared statements (interpolateParams off),
// clientFoundRows on.
//
// # How the contract is met
//
//   - Every table is InnoDB. Partitions and ids are VARBINARY (bytewise,
//     NO PAD: "a" and "a " differ); application strings are utf8mb4 with
//     the NO PAD binary collation, so they compare and order bytewise
//     (SCAN-1, REG-3) and `a`/`A`/`a `/`é`/`e` stay distinct.
//   - A Tx is a READ COMMITTED transaction that first locks its
//     partition's row of _sync_partitions (an INSERT … ON DUPLICATE KEY
//     UPDATE that also reserves the Tx's first seq): Tx of one partition
//     serialize, Tx of different partitions never wait for each other
//     (TX-1). The commit counter lives in that row, so a rollback
//     consumes no number (SEQ-2).
//   - A push commit is 8 round trips (no pipelining in the client): the
//     upserts of a table without a unique index are staged as one
//     multi-row statement; they, a commit's log (its row, its changes and
//     change-scope entries, one multi-row INSERT each, every value bound)
//     and the push result are kept and written before the Tx's next
//     operation that reaches the engine, or at Commit (stage.go,
//     docs/mysql.md).
//   - A SAVEPOINT taken before the first write sent ahead of Commit lets
//     CommitRejected discard the Tx's writes without releasing the
//     partition (TX-8); a Tx whose writes all wait for Commit needs none.
//     InnoDB rolls back a failed statement (a unique collision) alone,
//     so the Tx stays usable.
//   - Upserts replace only on the primary key (SCH-10): on a table with a
//     declared unique index a row is UPDATEd by primary key, else
//     INSERTed, and error 1062 maps to CodeConstraintViolation; INSERT …
//     ON DUPLICATE KEY UPDATE is used only where the primary key is the
//     table's one unique key.
//   - DDL commits implicitly, so EnsureSchema is a list of steps each of
//     which checks the catalog before it runs: a migration interrupted at
//     any point re-runs to completion, and GET_LOCK serializes migrations
//     across processes (SCH-7). The schema version is written last.
//   - Floats are DOUBLE sent and read through the binary protocol
//     (bit-exact, -0.0 and subnormals included); integers BIGINT; JSON is
//     LONGTEXT (never the JSON type, which rewrites documents); bytes
//     LONGBLOB (VAL-1).
//   - Deadlocks (1213) and lock-wait timeouts (1205) never reach a caller
//     from a Conn-level write: the statement or transaction is retried
//     until its context ends. Inside a Tx they cannot happen between
//     partitions; Begin waits for the partition lock until its context
//     ends.
//   - On a MariaDB Galera node (@@wsrep_on), a statement prepared on a
//     transaction's session is followed by SELECT @@in_transaction before
//     it runs: the server does not report a brute-force abort that lands
//     during the prepare, and the session's next statements would run
//     outside the transaction; a lost one fails with 1213, a
//     write_conflict (wsrep.go, docs/mysql.md § Galera).
//
// # Capabilities
//
// Declared: reactions (claims lock due rows with SELECT … FOR UPDATE
// SKIP LOCKED and lease them by primary key in the same transaction; no
// deadlock or lock-wait error reaches a caller), authoritative-query (the
// SQLite-family text rewritten token by token, each declared table a
// partition-restricted CTE, run READ ONLY WITH CONSISTENT SNAPSHOT on
// connections with no default database; see query.go and query_text.go),
// index-lookup, blob-refs, admin and commit-fanout (polling the
// partitions' heads, fanout.go). See docs/mysql.md.
//
// # Limits (InnoDB key length, 3,072 bytes)
//
// Partitions, ids, client and commit ids (V-1, V-2: ≤ 255 bytes) fit
// every key. Scope values and the values of string or JSON columns in a
// declared index are limited to 255 characters; bytes columns in a
// declared index to 255 bytes; a longer value fails with
// CodeInvalidValue naming the column. A declared index may hold at most
// two string or JSON columns (CodeSchemaInvalid otherwise). See
// docs/mysql.md.
package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// init registers the driver as "mysql": sync.Open("mysql", dsn).
func init() { syncstore.Register("mysql", Driver{}) }

// Driver opens MySQL/MariaDB stores. The zero value is ready to use and
// safe for concurrent use. It implements driver.Driver and
// driver.Provisioner.
type Driver struct{}

var (
	_ driver.Driver      = Driver{}
	_ driver.Provisioner = Driver{}
)

// DefaultServer is the server Provision uses for an empty base DSN: the
// local service, user root without a password.
const DefaultServer = "root@tcp(127.0.0.1:3306)/"

// Open connects to the database named in dsn, creates the infrastructure
// tables if needed and returns a Conn safe for concurrent use. Errors:
// CodeInvalidArgument for a malformed DSN or one without a database name;
// CodeUnavailable when the server cannot be reached within ctx.
func (Driver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.DBName == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: the DSN names no database (…/dbname)")
	}
	c, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// parseDSN parses a go-sql-driver DSN.
func parseDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return cfg, nil
}

// Provision creates a fresh, empty database for tests (driver.Provisioner)
// on the server of baseDSN ("" = DefaultServer): CREATE DATABASE with a
// random name, returned as the DSN's database; drop runs DROP DATABASE.
// Errors: CodeInvalidArgument for a malformed base DSN, CodeUnavailable
// when the server cannot be reached.
func (Driver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if strings.TrimSpace(baseDSN) == "" {
		baseDSN = DefaultServer
	}
	cfg, err := parseDSN(baseDSN)
	if err != nil {
		return "", nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "syncstore_t_" + hex.EncodeToString(b[:])
	admin := cfg.Clone()
	admin.DBName = ""
	if err := adminExec(ctx, admin, "CREATE DATABASE "+quoteIdent(name)+" CHARACTER SET utf8mb4"); err != nil {
		return "", nil, err
	}
	store := cfg.Clone()
	store.DBName = name
	drop := func(ctx context.Context) error {
		return adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+quoteIdent(name))
	}
	return store.FormatDSN(), drop, nil
}

// adminExec runs one statement on a short-lived connection of cfg.
func adminExec(ctx context.Context, cfg *mysql.Config, q string) error {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, q); err != nil {
		return mapErr(ctx, err, "mysql: provision")
	}
	return nil
}

// quoteIdent returns name as a backquoted MySQL identifier, inner
// backquotes doubled. Identifiers are validated by sync (SCH-2) before
// they reach the driver; quoting is the second line of defence.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}
