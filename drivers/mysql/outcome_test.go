package mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/internal/testlane"
)

// Commit outcomes (TX-10, docs/reliability.md "Commit outcomes"): faults
// injected between the driver and the server around COMMIT, a storm of
// random deadlines on a pool of one connection, and the engine behaviour
// the settling relies on.

// openProxied opens a store on a fresh database whose connections all go
// through a fault proxy. admin is a direct connection to the database.
func openProxied(t *testing.T) (faulttest.ProxiedStore, *sql.DB) {
	t.Helper()
	dsn := testdb.NewMySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" {
		t.Skipf("the fault proxy speaks tcp; the test DSN uses %s", cfg.Net)
	}
	proxy := faulttest.NewProxy(t, faulttest.MySQLWire, cfg.Addr)
	proxied := cfg.Clone()
	proxied.Addr = proxy.Addr()
	c, err := Driver{}.Open(t.Context(), proxied.FormatDSN())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	admin := adminDB(t, cfg)
	return faulttest.ProxiedStore{Conn: c, Proxy: proxy, Quiesce: func(t *testing.T) {
		t.Helper()
		waitNoOpenTx(t, admin, cfg.DBName)
	}}, admin
}

// adminDB is one direct connection to cfg's database.
func adminDB(t *testing.T, cfg *mysql.Config) *sql.DB {
	t.Helper()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := sql.OpenDB(connector)
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// waitNoOpenTx waits (at most 20 s) until no session of database db but
// admin's own has an open InnoDB transaction.
func waitNoOpenTx(t *testing.T, admin *sql.DB, db string) {
	t.Helper()
	const q = `SELECT COUNT(*) FROM information_schema.INNODB_TRX x
		JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id
		WHERE p.DB = ? AND p.ID <> CONNECTION_ID()`
	var n int
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := admin.QueryRowContext(context.Background(), q, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d sessions of the store still in a transaction after 20 s", n)
		}
	}
}

// TestCommitFaults: the reply to COMMIT held past the context's end or
// dropped with the connection, and the COMMIT itself held past the
// context's end (faulttest.CommitFaults), for Commit and CommitRejected.
func TestCommitFaults(t *testing.T) {
	faulttest.CommitFaults(t, func(t *testing.T) faulttest.ProxiedStore {
		s, _ := openProxied(t)
		return s
	})
}

// TestOutcomeStorm: 1,600 pushes over two partitions from 4 goroutines on
// a pool of one connection (SetMaxOpenConns(1)), each under a context
// that ends after a random 0–20 ms (one in eight without a deadline).
// Every push whose Commit returned nil is there, every push whose error
// said "not written" is absent, every unknown outcome resolves by its
// push result (TX-10).
func TestOutcomeStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	pushes := 1600
	if faulttest.RaceEnabled() {
		pushes = 400
	}
	c := openStore(t)
	// A Tx prepares a statement it has not met yet on the pool, which a
	// pool of one cannot give while the Tx holds its connection: push
	// once first, so every statement of the storm's pushes is prepared.
	if err := faulttest.Push(context.Background(), c, "warm-up", 0); err != nil {
		t.Fatal(err)
	}
	c.db.SetMaxOpenConns(1)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	counts := faulttest.OutcomeStorm{Pushes: pushes, Workers: 4, Partitions: []string{"P", "Q"},
		MaxDeadline: 20 * time.Millisecond, NoDeadlineEvery: 8, Seed: seed}.Run(t, c)
	t.Logf("%d pushes on a pool of one: %s", pushes, counts)
}
