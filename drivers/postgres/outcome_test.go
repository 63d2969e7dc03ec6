package postgres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testlane"
)

// Commit outcomes (TX-10, docs/reliability.md "Commit outcomes"): faults
// injected between the driver and the server around COMMIT, and a storm
// of random deadlines on a pool of one connection.

// openProxied opens a store on a fresh database whose connections all go
// through a fault proxy, with dsnParams added to the DSN.
func openProxied(t *testing.T, dsnParams ...string) faulttest.ProxiedStore {
	t.Helper()
	dsn := testdbDSN(t)
	for _, p := range dsnParams {
		dsn = withParam(dsn, p)
	}
	c, proxy := openProxiedDSN(t, dsn)
	admin := adminConn(t, dsn)
	return faulttest.ProxiedStore{Conn: c, Proxy: proxy, Quiesce: func(t *testing.T) {
		t.Helper()
		const q = `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND (xact_start IS NOT NULL OR state LIKE 'idle in transaction%')`
		eventually(t, "no session of the store in a transaction", func() error {
			var n int
			if err := admin.QueryRow(context.Background(), q).Scan(&n); err != nil {
				return err
			}
			if n != 0 {
				return fmt.Errorf("%d sessions in a transaction", n)
			}
			return nil
		})
	}}
}

// openProxiedDSN opens a Conn with the suite's schema on dsn whose
// connections all go through a fault proxy.
func openProxiedDSN(t *testing.T, dsn string) (*Conn, *faulttest.Proxy) {
	t.Helper()
	cfg, err := parseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	proxy := faulttest.NewProxy(t, faulttest.PostgresWire, target)
	host, port, _ := net.SplitHostPort(proxy.Addr())
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.Fallbacks = nil
	c, err := open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return c, proxy
}

// TestCommitFaults: the reply to COMMIT held past the context's end or
// dropped with the connection, and the COMMIT itself held past the
// context's end (faulttest.CommitFaults), for Commit and CommitRejected.
func TestCommitFaults(t *testing.T) {
	faulttest.CommitFaults(t, func(t *testing.T) faulttest.ProxiedStore { return openProxied(t) })
}

// TestOutcomeStorm: 1,600 pushes over two partitions from 4 goroutines on
// a pool of one connection, each under a context that ends after a random
// 0–20 ms (one in eight without a deadline). Every push whose Commit
// returned nil is there, every push whose error said "not written" is
// absent, every unknown outcome resolves by its push result (TX-10).
func TestOutcomeStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	pushes := 1600
	if faulttest.RaceEnabled() {
		pushes = 400
	}
	c := openDSN(t, withParam(testdbDSN(t), "pool_max_conns=1"))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	counts := faulttest.OutcomeStorm{Pushes: pushes, Workers: 4, Partitions: []string{"P", "Q"},
		MaxDeadline: 20 * time.Millisecond, NoDeadlineEvery: 8, Seed: seed}.Run(t, c)
	t.Logf("%d pushes on a pool of one: %s", pushes, counts)
}
