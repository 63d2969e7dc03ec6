package postgres

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/internal/testlane"
	syncstore "github.com/syncstore/syncstore/sync"
)

// hostPool returns a pool the test owns, the way a host builds its own:
// here with statements never prepared (QueryExecModeExec, what a
// transaction-mode PgBouncer before 1.21 needs), so the suite also shows
// the driver relies on no statement cache and no per-connection setup.
func hostPool(t conformance.T, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("host pool: %v", err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("host pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// hostPoolCases are the suite's cases run over a host's pool: those
// that depend most on how connections are made, held and given back
// (transactions, their failures and outcomes, concurrent writers and
// claimers, value fidelity through the pool's exec mode, queries, fanout,
// the escape hatch). The whole suite passes too (run it with
// SYNCSTORE_TEST_HOST_POOL_ALL=1; 65 connection-bound cases took 48 s,
// the whole suite 8 min); it is not run by default, as it doubles the
// package's time.
var hostPoolCases = regexp.MustCompile(`^TestConformanceOverHostPool($|/(TX-(1|2|6|8|10|11)|SEQ-4|VAL-1|PR-6|RX-3|AQ-4|FAN-1|ERR-3)/)`)

// TestConformanceOverHostPool runs the suite on Conns opened over a pool
// the host owns (OpenPool), so what the contract says holds there too;
// Close leaves the pool open (each case's cleanup closes it). A full lane:
// it runs under SYNCSTORE_TEST_FULL=1 (docs/testing.md).
func TestConformanceOverHostPool(t *testing.T) {
	testlane.RequireFull(t, "the suite's connection-bound cases again over a host's pool")
	all := os.Getenv("SYNCSTORE_TEST_HOST_POOL_ALL") == "1"
	base := testdb.PostgresServer(t)
	var dsns gosync.Map // *Conn → dsn
	open := func(ct conformance.T, dsn string) driver.Conn {
		ct.Helper()
		c, err := OpenPool(ct.Context(), hostPool(ct, dsn), Options{})
		if err != nil {
			ct.Fatalf("OpenPool: %v", err)
		}
		ct.Cleanup(func() { _ = c.Close() })
		dsns.Store(c, dsn)
		return c
	}
	h := conformance.Harness{
		Name: "postgres-host-pool",
		Open: func(ct conformance.T) driver.Conn {
			ct.Helper()
			if !all && !hostPoolCases.MatchString(ct.Name()) {
				ct.Skipf("not among the host-pool cases (SYNCSTORE_TEST_HOST_POOL_ALL=1 runs them all)")
			}
			dsn, drop, err := Driver{}.Provision(ct.Context(), base)
			if err != nil {
				ct.Fatalf("provision: %v", err)
			}
			ct.Cleanup(func() { _ = drop(context.Background()) })
			return open(ct, dsn)
		},
		Reopen: func(ct conformance.T, c driver.Conn) driver.Conn {
			dsn, ok := dsns.Load(c)
			if !ok {
				ct.Fatalf("Reopen of a Conn this harness did not open")
			}
			return open(ct, dsn.(string))
		},
		Capabilities:       expectedCaps,
		ParallelPartitions: true,
		HostTable:          pgHostTable,
	}
	conformance.Run(t, h)
}

// Close of a Conn over the host's pool rolls back its Txs and leaves the
// pool open and usable; Store.As hands the pool back.
func TestOpenPoolCloseLeavesThePool(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewPostgres(t)
	pool := hostPool(t, dsn)
	c, err := OpenPool(ctx, pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := syncstore.OpenConn(c)
	if err := store.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	var got *pgxpool.Pool
	if !store.As(&got) || got != pool {
		t.Fatal("Store.As(**pgxpool.Pool) did not hand back the host's pool")
	}
	tx, err := store.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("t1", "p7", "o1")); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the host's pool after Close: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "todos"`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the Tx Close rolled back = %d, %v; want 0", n, err)
	}
	if st := pool.Stat(); st.AcquiredConns() != 0 {
		t.Fatalf("connections still held after Close: %d", st.AcquiredConns())
	}
	if _, err := c.MaxCommitSeq(ctx, "p1"); !errors.Is(err, driver.ErrClosed) {
		t.Fatalf("MaxCommitSeq after Close = %v, want closed", err)
	}
}

func TestOpenPoolBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenPool(ctx, nil, Options{}); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("OpenPool(nil) = %v, want invalid_argument", err)
	}
	pool := hostPool(t, testdb.NewPostgres(t))
	for _, dsn := range []string{"  ", "postgres://u:secret@[::1", "host=x port=notaport"} {
		_, err := OpenPool(ctx, pool, Options{ListenerDSN: dsn})
		if driver.CodeOf(err) != driver.CodeInvalidArgument {
			t.Fatalf("OpenPool(listener %q) = %v, want invalid_argument", dsn, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Fatalf("the error repeats the DSN: %v", err)
		}
	}
}

// SubscribeCommits connects with Options.ListenerDSN, not the pool's
// config: a listener DSN naming a port nobody serves fails the
// subscription while the pool works; the server's own DSN delivers wakes.
func TestOpenPoolListenerDSN(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewPostgres(t)
	pool := hostPool(t, dsn)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // nobody serves it now
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := OpenPool(ctx, pool, Options{ListenerDSN: "host=127.0.0.1 port=" + strconv.Itoa(port) + " user=" + cc.User + " dbname=" + cc.Database + " connect_timeout=5"})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := dead.SubscribeCommits(sctx); err == nil {
		t.Fatal("SubscribeCommits over an unserved listener DSN succeeded: the listener does not use Options.ListenerDSN")
	}
	if _, err := dead.MaxCommitSeq(ctx, "p1"); err != nil {
		t.Fatalf("the pool's side: %v", err)
	}

	live, err := OpenPool(ctx, pool, Options{ListenerDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	wakes, err := live.SubscribeCommits(sctx)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := pushTodos(ctx, live, "p1", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-wakes:
		if w.Partition != "p1" || w.CommitSeq != seq {
			t.Fatalf("wake = %+v, want p1/%d", w, seq)
		}
	case <-sctx.Done():
		t.Fatal("no wake through the listener DSN")
	}
}
