package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// TestConformance runs the whole shared suite against the driver, one
// fresh store (a file in its own directory) per case.
//
// Harness.Unreachable is an honest analogue for an embedded engine: a
// store whose write lock another process holds (a raw connection in BEGIN
// IMMEDIATE), so Begin cannot get the engine and must give up at its
// context's deadline (TX-7) with a retryable CodeUnavailable (ERR-1).
func TestConformance(t *testing.T) {
	h, err := conformance.HarnessFor("sqlite", Driver{}, t.TempDir(), []driver.Capability{driver.CapReactions, driver.CapAuthoritativeQuery, driver.CapIndexLookup, driver.CapBlobRefs, driver.CapAdmin, driver.CapCommitFanout, driver.CapReactionsAcross, driver.CapLeases}, false)
	if err != nil {
		t.Fatal(err)
	}
	h.QueriesApart = true // a pool of query connections of their own: pushes use the writer, reads the readers
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		conn := h.Open(ct)
		holdWriteLock(ct, conn.(*Conn))
		return conn
	}
	h.HostTable = func(ct conformance.T, conn driver.Conn) conformance.HostTable {
		return conformance.SQLHostTable(ct, conn, "CREATE TABLE host_notes (k TEXT PRIMARY KEY)")
	}
	conformance.Run(t, h)
}

// holdWriteLock takes the write lock of c's database from a separate raw
// connection (as another process would) until the test ends.
func holdWriteLock(t conformance.T, c *Conn) {
	t.Helper()
	ctx := context.Background()
	var file string
	if err := c.r.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		t.Fatalf("database file: %v", err)
	}
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatalf("raw open: %v", err)
	}
	lock, err := raw.Conn(ctx)
	if err != nil {
		t.Fatalf("raw conn: %v", err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("raw BEGIN IMMEDIATE: %v", err)
	}
	t.Cleanup(func() {
		_, _ = lock.ExecContext(ctx, "ROLLBACK")
		_ = lock.Close()
		_ = raw.Close()
	})
}
