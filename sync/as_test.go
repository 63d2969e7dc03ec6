package sync_test

import (
	"context"
	"database/sql"
	"testing"
)

// Tx.As gives the engine transaction until the Tx ends, then never again
// (TX-11); Store.As answers as the driver's Conn (SQLite has none).
func TestTxAsEndsWithTheTx(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t)
	for _, end := range []string{"Commit", "Rollback"} {
		tx, err := store.Begin(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		var stx *sql.Tx
		if !tx.As(&stx) || stx == nil {
			t.Fatalf("As(**sql.Tx) on an open SQLite Tx = false")
		}
		var n int
		if tx.As(&n) {
			t.Fatalf("As(*int) = true")
		}
		if end == "Commit" {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		stx = nil
		if tx.As(&stx) || stx != nil {
			t.Fatalf("As after %s = true", end)
		}
	}
	var db *sql.DB
	if store.As(&db) {
		t.Fatalf("Store.As(**sql.DB) on SQLite = true, want false (documented)")
	}
}
