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
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	wakes, err := store.SubscribeCommits(ctx)
	if err != nil {
		panic(err)
	}
	_, err = store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "phone-1", ClientCommitID: "c-1", ActorID: "alice",
		Ops: []sync.PushOp{{Table: "notes", RowID: "n1", Op: sync.OpUpsert, BaseVersion: sync.Version(0),
			Values: sync.Values{"id": "n1", "proj": "p7", "body": "hello"}}}})
	if err != nil {
		panic(err)
	}
	w := <-wakes // pull tenant-1 from your cursor now
	fmt.Println(w.Partition, w.CommitSeq)
	// Output: tenant-1 1
}
