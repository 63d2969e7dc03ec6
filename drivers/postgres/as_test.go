package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
)

// The pgx.Tx of Tx.As (TX-11): its statements see the writes the Tx
// buffered (TX-3); it refuses to end the Tx's transaction; its Begin is a
// savepoint whose rollback undoes only the host's nested writes; after
// the Tx ends every call fails with tx_finished. Conn.As hands out the
// pool.
func TestTxAsPgxTx(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	var pool *pgxpool.Pool
	if !c.As(&pool) || pool == nil {
		t.Fatal("Conn.As(**pgxpool.Pool) = false")
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE host_notes (k text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.UpsertRow(ctx, "todos", todoRow("t1", "p7", "o1")); err != nil { // buffered
		t.Fatal(err)
	}
	var ptx pgx.Tx
	if !driver.AsOf(tx, &ptx) {
		t.Fatal("Tx.As(*pgx.Tx) = false")
	}
	var n int
	if err := ptx.QueryRow(ctx, `SELECT count(*) FROM "todos"`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows the handle sees = %d, %v; want the buffered upsert (1)", n, err)
	}
	if err := ptx.Commit(ctx); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("handle Commit = %v, want invalid_argument", err)
	}
	if err := ptx.Rollback(ctx); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("handle Rollback = %v, want invalid_argument", err)
	}
	if _, err := ptx.Exec(ctx, "INSERT INTO host_notes VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	nested, err := ptx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nested.Exec(ctx, "INSERT INTO host_notes VALUES ('kept')"); err == nil {
		t.Fatal("duplicate key in the savepoint succeeded")
	}
	if err := nested.Rollback(ctx); err != nil {
		t.Fatalf("savepoint rollback: %v", err)
	}
	if err := nested.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("second savepoint rollback = %v, want ErrTxClosed", err)
	}
	nested, err = ptx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nested.Exec(ctx, "INSERT INTO host_notes VALUES ('nested')"); err != nil {
		t.Fatal(err)
	}
	if err := nested.Commit(ctx); err != nil {
		t.Fatalf("savepoint release: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit after a recovered host error: %v", err)
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM host_notes").Scan(&n); err != nil || n != 2 {
		t.Fatalf("host rows after Commit = %d, %v; want 2", n, err)
	}
	if _, err := ptx.Exec(ctx, "SELECT 1"); driver.CodeOf(err) != driver.CodeTxFinished {
		t.Fatalf("handle after Commit = %v, want tx_finished", err)
	}
	if driver.AsOf(tx, &ptx) {
		t.Fatal("Tx.As after Commit = true")
	}
}

// A host statement that fails outside a savepoint aborts the engine
// transaction: the Tx's Commit then writes nothing and says so (TX-6,
// TX-10).
func TestTxAsHostErrorAbortsTheTx(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("t1", "p7", "o1")); err != nil {
		t.Fatal(err)
	}
	var ptx pgx.Tx
	if !driver.AsOf(tx, &ptx) {
		t.Fatal("Tx.As(*pgx.Tx) = false")
	}
	if _, err := ptx.Exec(ctx, "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("a bad host statement succeeded")
	}
	err = tx.Commit(ctx)
	if err == nil || driver.CodeOf(err) == driver.CodeCommitOutcomeUnknown {
		t.Fatalf("Commit after a failed host statement = %v, want a 'nothing written' error", err)
	}
	if _, found, err := c.GetRow(ctx, "p1", "todos", "t1"); err != nil || found {
		t.Fatalf("row after the failed Commit: found=%v err=%v", found, err)
	}
}
