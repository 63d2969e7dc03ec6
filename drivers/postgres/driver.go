// Package postgres is the syncstore driver for PostgreSQL (13+), over
// github.com/jackc/pgx/v5 (pgxpool). Import it for its side effect and
// open a store by name:
//
//	import _ "github.com/syncstore/syncstore/drivers/postgres"
//	store, err := sync.Open("postgres", "postgres://app@db:5432/sync")
//
// # DSN
//
// Every DSN pgx accepts: a URL (postgres://user:pass@host:5432/db?sslmode=…)
// or keyword/value pairs ("host=db user=app dbname=sync"), including
// pgxpool's pool_max_conns, pool_min_conns, … parameters. The store lives
// in the database's search_path schema (normally public).
//
// # How the contract is met
//
//   - Partition serialization (TX-1): Begin locks the partition's own row
//     of _sync_partitions (SELECT … FOR UPDATE; created first if missing).
//     Transactions on different partitions never wait for each other; no
//     table lock and no advisory lock is taken on the write path.
//   - A Tx holds one pool connection from Begin to its end and never takes
//     a second one, so a pool of 2 serves any number of concurrent pushes.
//   - Hot writes are pipelined with pgx.Batch: writes that cannot fail on
//     valid input (upserts of tables without a unique index, deletes,
//     commits, push results) are buffered and sent with the next read or
//     with COMMIT; a push commit costs 2 round trips (Begin, Commit).
//     Upserts of a table with a unique index run at once inside a
//     savepoint, so a collision fails that upsert alone (SCH-10, TX-8).
//   - CommitRejected rolls back to a savepoint opened right after the
//     lock, so the partition is never released in between (TX-8).
//   - ids and scope values are text COLLATE "C" (bytewise order, SCAN-1);
//     json is text, not jsonb (byte-for-byte, VAL-1); int8, float8 and
//     bytea travel in the binary protocol (floats bit for bit).
//   - If a Tx's context ends, the Tx is rolled back at once and its
//     connection is returned (or discarded if it is not idle), so no
//     session is left idle in transaction (TX-6).
//   - EnsureSchema runs its DDL in one transaction under a transaction
//     advisory lock on a fixed schema key (SCH-7); DDL is transactional in
//     PostgreSQL, so an interrupted migration leaves nothing half-done.
//   - Commit fanout (FAN-1) is LISTEN/NOTIFY: the commit's NOTIFY is
//     queued in the same transaction, so it is sent iff the commit lands.
//     See SubscribeCommits.
//
// # Capabilities
//
// Every capability of the contract: reactions (claims with FOR UPDATE
// SKIP LOCKED, enqueue buffered into the push's Commit pipeline;
// reactions.go), index-lookup (indexlookup.go), blob-refs (blobrefs.go),
// admin (admin.go), authoritative-query (a REPEATABLE READ READ ONLY
// transaction over partition CTEs, with a plan check; query.go,
// query_text.go) and commit-fanout (fanout.go). docs/postgres.md has the
// details.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// init registers the driver as "postgres": sync.Open("postgres", dsn).
func init() { syncstore.Register("postgres", Driver{}) }

// DefaultDSN is the server Provision uses for an empty base DSN: the
// local PostgreSQL as user postgres.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres"

// Driver opens PostgreSQL stores. The zero value is ready to use and safe
// for concurrent use. It implements driver.Driver and driver.Provisioner.
type Driver struct{}

var (
	_ driver.Driver      = Driver{}
	_ driver.Provisioner = Driver{}
)

// Open connects a pool to dsn (see the package doc), creates the
// infrastructure tables if needed and returns a Conn safe for concurrent
// use. Errors: CodeInvalidArgument for an empty or malformed DSN (the
// message never repeats the DSN: it may hold a password),
// CodeUnavailable when the server cannot be reached within ctx.
func (Driver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	cfg, err := parseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return open(ctx, cfg)
}

func parseConfig(dsn string) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: empty DSN")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: malformed DSN")
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	return cfg, nil
}

// Provision creates a fresh, empty database for tests
// (driver.Provisioner): CREATE DATABASE with a random name
// ("syncstore_t_" + 16 hex digits, UTF8, from template0) on the server of
// baseDSN ("" = DefaultDSN), and returns the DSN of the new database.
// drop runs DROP DATABASE … WITH (FORCE), which also ends sessions still
// connected. A Provision that fails after sending CREATE DATABASE (its
// ctx ended, the connection broke) drops the name again on a context of
// its own, so it never leaves a database behind. Errors:
// CodeInvalidArgument (malformed base DSN),
// CodeUnavailable (server unreachable or the role may not create
// databases).
func (Driver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if baseDSN == "" {
		baseDSN = DefaultDSN
	}
	if _, err := pgx.ParseConfig(baseDSN); err != nil {
		return "", nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: malformed base DSN")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "syncstore_t_" + hex.EncodeToString(b[:])
	dsn, err := withDatabase(baseDSN, name)
	if err != nil {
		return "", nil, err
	}
	drop := func(ctx context.Context) error {
		return adminExec(ctx, baseDSN, "DROP DATABASE IF EXISTS "+quote(name)+" WITH (FORCE)")
	}
	if err := adminExec(ctx, baseDSN, "CREATE DATABASE "+quote(name)+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		// The server may have created the database although the client
		// gave up (ctx ended mid-statement, connection lost before the
		// reply): drop it, on a context of its own, so no failed
		// Provision leaves a database behind.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = drop(dctx)
		cancel()
		return "", nil, err
	}
	return dsn, drop, nil
}

// adminExec runs one statement on a short-lived connection to dsn.
func adminExec(ctx context.Context, dsn, stmt string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return mapErr(ctx, err, "postgres: connect to the provisioning server")
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "postgres: provision a database")
	}
	return nil
}

// withDatabase returns dsn pointing at database name instead.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", driver.Errorf(driver.CodeInvalidArgument, "postgres: malformed base DSN")
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}
