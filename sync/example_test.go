package sync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/sync"
)

// A host opens a store by driver name, ensures its schema, writes a row
// and its commit in one transaction, and tests errors by code.
func Example() {
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

	table, _ := schema.Table("notes")
	values := driver.Values{"id": "n1", "proj": "p7", "body": "hello"}
	row := driver.Row{ID: "n1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}
	var seq int64
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.UpsertRow(ctx, "notes", row); err != nil {
			return err
		}
		seq, err = tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1700000000000, Changes: []driver.Change{{
			Table: "notes", RowID: row.ID, Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
		return err
	})
	fmt.Println("commit", seq, err)

	values["body"] = 42 // an int, not an int64: rejected, never coerced (V-3)
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		return tx.UpsertRow(ctx, "notes", row)
	})
	var e *sync.Error
	if errors.Is(err, sync.ErrInvalidValue) && errors.As(err, &e) {
		fmt.Println("rejected column", e.Column)
	}
	// Output:
	// commit 1 <nil>
	// rejected column body
}

// A host wakes its waiting pullers when a commit lands — in this process
// or any other instance of the store (FAN-1).
func ExampleStore_SubscribeCommits() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
	wakes, err := store.SubscribeCommits(ctx)
	if err != nil {
		panic(err)
	}
	table, _ := schema.Table("notes")
	values := driver.Values{"id": "n1", "proj": "p7", "body": "hello"}
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.UpsertRow(ctx, "notes", driver.Row{ID: "n1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}); err != nil {
			return err
		}
		_, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1700000000000, Changes: []driver.Change{{
			Table: "notes", RowID: "n1", Op: driver.OpUpsert, Scopes: sync.ScopesOf(table, values), Values: values, RowVersion: 1}}})
		return err
	})
	if err != nil {
		panic(err)
	}
	w := <-wakes // pull tenant-1 from your cursor now
	fmt.Println(w.Partition, w.CommitSeq)
	// Output: tenant-1 1
}
