package postgres

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// expectedCaps are the capabilities the driver must declare; the suite
// fails ERR-3 on any difference.
var expectedCaps = []driver.Capability{driver.CapCommitFanout, driver.CapIndexLookup, driver.CapReactions, driver.CapBlobRefs, driver.CapAdmin, driver.CapAuthoritativeQuery, driver.CapReactionsAcross, driver.CapLeases}

// TestConformance runs the whole shared suite against the driver, one
// fresh database per case on the server testdb finds (ParallelPartitions:
// a Tx on one partition never waits for another's, TX-1).
//
// Harness.Unreachable is a Conn whose pool dials a local TCP listener that
// accepts and never answers (a black-holed server): Begin must give up at
// its context's deadline (TX-7) with a retryable CodeUnavailable.
//
// Cases run in parallel (Harness.ParallelCases): each has a database of
// its own, and most of a case's time is the server's (creating and
// dropping its database, fsync), not this process's CPU.
func TestConformance(t *testing.T) {
	h := harness(t)
	h.ParallelCases = true
	conformance.Run(t, h)
}

func harness(t *testing.T) conformance.Harness {
	t.Helper()
	base := testdb.PostgresServer(t)
	h, err := conformance.HarnessFor("postgres", Driver{}, base, expectedCaps, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		real := h.Open(ct).(*Conn)
		return blackholed(ct, real)
	}
	h.HostTable = pgHostTable
	return h
}

// blackholed returns a Conn with real's schema whose pool dials a listener
// that never answers.
func blackholed(t conformance.T, real *Conn) *Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accepted, never answered
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	cfg := real.cfg.Copy()
	cfg.ConnConfig.Host = "127.0.0.1"
	cfg.ConnConfig.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.ConnConfig.Fallbacks = nil
	cfg.ConnConfig.ConnectTimeout = 0
	pool, err := newPool(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	c := &Conn{pool: pool, cfg: cfg}
	c.state.Store(real.state.Load())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pgHostTable creates host_notes through the Conn's pool (As
// **pgxpool.Pool) and writes it through a Tx's pgx.Tx (TX-11).
func pgHostTable(t conformance.T, conn driver.Conn) conformance.HostTable {
	t.Helper()
	var pool *pgxpool.Pool
	if !driver.AsOf(conn, &pool) {
		t.Fatalf("host table: the Conn's As gave no *pgxpool.Pool")
	}
	if _, err := pool.Exec(t.Context(), "CREATE TABLE host_notes (k text PRIMARY KEY)"); err != nil {
		t.Fatalf("host table: %v", err)
	}
	return pgHostNotes{}
}

type pgHostNotes struct{}

func (pgHostNotes) Insert(ctx context.Context, tx driver.Tx, key string) error {
	var ptx pgx.Tx
	if !driver.AsOf(tx, &ptx) {
		return conformance.ErrNoHandle
	}
	_, err := ptx.Exec(ctx, "INSERT INTO host_notes (k) VALUES ($1)", key)
	return err
}

func (pgHostNotes) Count(ctx context.Context, tx driver.Tx) (n int, err error) {
	var ptx pgx.Tx
	if !driver.AsOf(tx, &ptx) {
		return 0, conformance.ErrNoHandle
	}
	err = ptx.QueryRow(ctx, "SELECT count(*) FROM host_notes").Scan(&n)
	return n, err
}
