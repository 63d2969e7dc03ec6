package mysql

import (
	"database/sql"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/stmtcache"
	"github.com/syncstore/syncstore/internal/testdb"
)

// declaredCaps are the capabilities the driver implements; the suite
// cross-checks them (ERR-3).
var declaredCaps = []driver.Capability{driver.CapReactions, driver.CapAuthoritativeQuery, driver.CapIndexLookup, driver.CapBlobRefs, driver.CapAdmin, driver.CapCommitFanout, driver.CapReactionsAcross, driver.CapLeases}

// TestConformance runs the whole shared suite against the driver, one
// fresh database per case on the server internal/testdb finds
// (SYNCSTORE_TEST_MYSQL_DSN, the local service, or a container).
// Transactions of different partitions run in parallel (TX-1).
//
// Harness.Unreachable is a Conn whose server accepts TCP connections but
// never answers the handshake (a hung server), so Begin must give up at
// its context's deadline (TX-7).
//
// Cases run in parallel (Harness.ParallelCases): each has a database of
// its own, and most of a case's time is the server's.
func TestConformance(t *testing.T) {
	h, err := conformance.HarnessFor("mysql", Driver{}, testdb.MySQLServer(t), declaredCaps, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		return hungConn(ct)
	}
	h.HostTable = func(ct conformance.T, conn driver.Conn) conformance.HostTable {
		return conformance.SQLHostTable(ct, conn, "CREATE TABLE host_notes (k VARCHAR(64) PRIMARY KEY) ENGINE=InnoDB")
	}
	h.ParallelCases = true
	conformance.Run(t, h)
}

// hungConn returns a Conn to a listener that accepts connections and
// never writes a byte.
func hungConn(t conformance.T) *Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.DBName = "tcp", ln.Addr().String(), "root", "hung"
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("connector: %v", err)
	}
	c := &Conn{db: sql.OpenDB(connector), cfg: cfg, maria: true, coll: "utf8mb4_nopad_bin"}
	c.stmts = stmtcache.New(c.db)
	t.Cleanup(func() {
		_ = c.Close()
		_ = ln.Close()
		<-done
		for _, h := range held {
			_ = h.Close()
		}
	})
	return c
}
