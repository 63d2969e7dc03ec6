package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// Closing the store under an open Tx must not let the Tx write on: its
// operations and Commit fail, and nothing of it lands (Conn.Close: operations
// after Close fail; TX-2). With :memory: a "successful" Commit would report
// data that is already gone.
func TestCloseUnderOpenTxFailsTheTx(t *testing.T) {
	for _, dsn := range []string{filepath.Join(t.TempDir(), "s.db"), ":memory:"} {
		ctx := context.Background()
		conn, err := Driver{}.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		row := driver.Row{ID: "t1", ServerVersion: 1, Scopes: driver.Scopes{"project": "p", "owner": "o"},
			Values: driver.Values{"id": "t1", "title": "x", "done": false, "project_id": "p", "owner_id": "o", "updated_at": int64(1)}}
		if err := tx.UpsertRow(ctx, "todos", row); err != nil {
			t.Fatal(err)
		}
		if err := conn.Close(); err != nil {
			t.Fatalf("%s: Close: %v", dsn, err)
		}
		if err := tx.UpsertRow(ctx, "todos", row); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("%s: UpsertRow after Close = %v; want closed (ERR-4)", dsn, err)
		}
		if err := tx.Commit(ctx); err == nil {
			t.Errorf("%s: Commit after Close succeeded", dsn)
		}
		if dsn == ":memory:" {
			continue
		}
		again, err := Driver{}.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := again.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			t.Fatal(err)
		}
		if _, found, err := again.GetRow(ctx, "p1", "todos", "t1"); err != nil || found {
			t.Errorf("%s: the Tx's row landed after Close (found=%v, err=%v)", dsn, found, err)
		}
		_ = again.Close()
	}
}

// A Conn whose table another process retired gets schema_newer, not an
// internal error: the stored schema moved past it (SCH-6, ERR-1).
func TestTableRetiredByAnotherProcessIsSchemaNewer(t *testing.T) {
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "s.db")
	a, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := conformance.TestSchema()
	if err := a.EnsureSchema(ctx, v1); err != nil {
		t.Fatal(err)
	}
	b, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v2 := driver.Schema{Version: 2}
	for _, tb := range v1.Tables {
		if tb.Name != "users" {
			v2.Tables = append(v2.Tables, tb)
		}
	}
	if err := b.EnsureSchema(ctx, v2); err != nil {
		t.Fatal(err)
	}
	_, err = a.ScanRows(ctx, "p1", driver.ScanQuery{Table: "users", Filter: driver.ScopeFilter{"org": {"o"}}, Limit: 10})
	if !errors.Is(err, driver.ErrSchemaNewer) {
		t.Fatalf("ScanRows on a retired table = %v; want schema_newer", err)
	}
}
