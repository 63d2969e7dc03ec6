package sync_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncstore/syncstore/sync"
)

// A host writes a table of its own in the same transaction as a commit,
// through the escape hatch (TX-11): the audit row lands with the commit,
// or not at all. On SQLite and MySQL the handle is a *sql.Tx; on
// PostgreSQL a pgx.Tx (var ptx pgx.Tx; tx.As(&ptx)).
func ExampleTx_As() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "syncstore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sync.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	schema := notesSchema()
	if err := store.EnsureSchema(ctx, schema); err != nil {
		panic(err)
	}
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		var stx *sql.Tx
		if !tx.As(&stx) {
			return fmt.Errorf("the driver has no *sql.Tx")
		}
		_, err := stx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS audit (note_id TEXT, what TEXT)")
		return err
	})
	if err != nil {
		panic(err)
	}

	table, _ := schema.Table("notes")
	values := sync.Values{"id": "n1", "proj": "p7", "body": "hello"}
	row := sync.Row{ID: "n1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}
	var kept *sql.Tx
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.UpsertRow(ctx, "notes", row); err != nil {
			return err
		}
		if _, err := tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1700000000000, Changes: []sync.Change{{
			Table: "notes", RowID: row.ID, Op: sync.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}}); err != nil {
			return err
		}
		var stx *sql.Tx
		if !tx.As(&stx) {
			return fmt.Errorf("the driver has no *sql.Tx")
		}
		kept = stx
		_, err := stx.ExecContext(ctx, "INSERT INTO audit (note_id, what) VALUES (?, ?)", row.ID, "created")
		return err
	})
	fmt.Println("pushed:", err)

	// After the commit the handle is dead, and the Tx hands out no other.
	_, err = kept.ExecContext(ctx, "INSERT INTO audit (note_id, what) VALUES ('n1', 'late')")
	fmt.Println("handle after commit:", err)
	// Output:
	// pushed: <nil>
	// handle after commit: sql: transaction has already been committed or rolled back
}
