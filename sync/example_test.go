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

// A host opens a store by driver name and ensures its schema, then serves
// its clients with the engine: one client's commit goes in through Push,
// another client bootstraps it through Pull and then pulls incrementally
// from the cursor it was given. Bad input is a typed error and writes
// nothing.
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
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}

	// Alice's phone pushes a new note (base version 0: a create).
	push, err := store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "phone-1", ClientCommitID: "c-1", ActorID: "alice",
		Ops: []sync.PushOp{{Table: "notes", RowID: "n1", Op: sync.OpUpsert, BaseVersion: sync.Version(0),
			Values: sync.Values{"id": "n1", "proj": "p7", "body": "hello"}}}})
	fmt.Println("push:", push.Status, "at commit", push.CommitSeq, err)

	// Bob's laptop subscribes to project p7: a bootstrap, then a pull from its cursor.
	sub := sync.PullSubscription{ID: "p7", Table: "notes", Scopes: sync.ScopeFilter{"project": {"p7"}}, Cursor: sync.PullBootstrap}
	for range 2 {
		pull, err := store.Pull(ctx, "tenant-1", sync.PullRequest{ClientID: "laptop-2", ActorID: "bob",
			Subscriptions: []sync.PullSubscription{sub}})
		if err != nil {
			panic(err)
		}
		r := pull.Subscriptions[0]
		fmt.Println("pull: bootstrap", r.Bootstrap, "rows", len(r.Rows), "commits", len(r.Commits), "next cursor", r.NextCursor)
		sub.Cursor, sub.BootstrapToken = r.NextCursor, r.BootstrapToken
	}

	// An int, not an int64: rejected before anything is written (V-3).
	_, err = store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "phone-1", ClientCommitID: "c-2", ActorID: "alice",
		Ops: []sync.PushOp{{Table: "notes", RowID: "n2", Op: sync.OpUpsert,
			Values: sync.Values{"id": "n2", "proj": "p7", "body": 42}}}})
	var e *sync.Error
	if errors.Is(err, sync.ErrInvalidValue) && errors.As(err, &e) {
		fmt.Println("rejected column", e.Column)
	}
	// Output:
	// push: applied at commit 1 <nil>
	// pull: bootstrap true rows 1 commits 0 next cursor 1
	// pull: bootstrap false rows 0 commits 0 next cursor 1
	// rejected column body
}

// The primitives under the engine: a row and its commit written in one
// transaction, as Push does, for writes the engine does not make
// (hosts push client commits with Store.Push).
func Example_primitives() {
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
