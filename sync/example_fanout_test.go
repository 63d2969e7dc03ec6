package sync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncstore/syncstore/sync"
)

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
	values := sync.Values{"id": "n1", "proj": "p7", "body": "hello"}
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.UpsertRow(ctx, "notes", sync.Row{ID: "n1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}); err != nil {
			return err
		}
		_, err := tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1700000000000, Changes: []sync.Change{{
			Table: "notes", RowID: "n1", Op: sync.OpUpsert, Scopes: sync.ScopesOf(table, values), Values: values, RowVersion: 1}}})
		return err
	})
	if err != nil {
		panic(err)
	}
	w := <-wakes // pull tenant-1 from your cursor now
	fmt.Println(w.Partition, w.CommitSeq)
	// Output: tenant-1 1
}
