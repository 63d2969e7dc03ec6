package sync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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
	values := sync.Values{"id": "n1", "proj": "p7", "body": "hello"}
	row := sync.Row{ID: "n1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}
	var seq int64
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.UpsertRow(ctx, "notes", row); err != nil {
			return err
		}
		seq, err = tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1700000000000, Changes: []sync.Change{{
			Table: "notes", RowID: row.ID, Op: sync.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
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

// A host pushes a client's commit through the engine: the first push
// applies it, a retry of the same commit replays the stored result, and
// an edit based on a stale version is rejected with the server's row.
func ExampleStore_Push() {
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
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	store.SetPushOptions(sync.PushOptions{Now: func() time.Time { return time.UnixMilli(1700000000000) }})

	create := sync.PushRequest{ClientID: "phone-1", ClientCommitID: "commit-1", ActorID: "alice", Ops: []sync.PushOp{{
		Table: "notes", RowID: "n1", Op: sync.OpUpsert, BaseVersion: sync.Version(0), // 0: a new row
		Values: sync.Values{"id": "n1", "proj": "p7", "body": "hello"},
	}}}
	resp, err := store.Push(ctx, "tenant-1", create)
	fmt.Println(resp.Status, resp.CommitSeq, "version", resp.Ops[0].ServerVersion, "replayed", resp.Replayed, err)

	// The client did not get the answer and sends the same commit again.
	resp, err = store.Push(ctx, "tenant-1", create)
	fmt.Println(resp.Status, resp.CommitSeq, "replayed", resp.Replayed, err)

	// Another client edits the note from version 0: it has not seen n1.
	stale := sync.PushRequest{ClientID: "laptop-2", ClientCommitID: "commit-1", ActorID: "bob", Ops: []sync.PushOp{{
		Table: "notes", RowID: "n1", Op: sync.OpUpsert, BaseVersion: sync.Version(0),
		Values: sync.Values{"id": "n1", "proj": "p7", "body": "hi"},
	}}}
	resp, err = store.Push(ctx, "tenant-1", stale)
	c := resp.Ops[0]
	fmt.Println(resp.Status, c.Status, c.Code, "server version", c.ServerVersion, "server body", c.ServerRow["body"], err)
	// Output:
	// applied 1 version 1 replayed false <nil>
	// applied 1 replayed true <nil>
	// rejected conflict sync.version_conflict server version 1 server body hello <nil>
}
