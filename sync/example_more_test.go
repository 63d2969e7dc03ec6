package sync_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncstore/syncstore/sync"
)

// A host opens a store by the name its driver registered under (the
// driver's package is imported for its side effect) and a DSN; the store
// is safe for concurrent use and closed once.
func ExampleOpen() {
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	fmt.Println(store.DriverName(), store.Supports(sync.CapReactions))

	_, err = sync.Open("nosuchdriver", "")
	fmt.Println(sync.CodeOf(err))
	// Output:
	// sqlite true
	// sync.storage.invalid_argument
}

// EnsureSchema is idempotent for the same schema; a new version may add
// tables and nullable columns (SCH-4), and the store then reports it.
func ExampleStore_EnsureSchema() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	v1 := notesSchema()
	fmt.Println(store.EnsureSchema(ctx, v1), store.EnsureSchema(ctx, v1))

	v2 := notesSchema()
	v2.Version = 2
	v2.Tables[0].Columns = append(v2.Tables[0].Columns, sync.Column{Name: "pinned", Type: sync.TypeBoolean, Nullable: true})
	err = store.EnsureSchema(ctx, v2)
	current, _ := store.Schema()
	fmt.Println(err, "version", current.Version)

	// An older version than the store's is refused, nothing changed.
	fmt.Println(sync.CodeOf(store.EnsureSchema(ctx, v1)))
	// Output:
	// <nil> <nil>
	// <nil> version 2
	// sync.storage.schema_newer
}

// RunInTx commits when fn returns nil and rolls back when it returns an
// error (nothing is written); a write conflict is retried with a fresh Tx.
func ExampleStore_RunInTx() {
	store, done := exampleStore() // three notes, commits 1…3
	defer done()
	ctx := context.Background()

	errNotAllowed := errors.New("not allowed")
	err := store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.DeleteRow(ctx, "notes", "n1"); err != nil {
			return err
		}
		return errNotAllowed // the delete is rolled back
	})
	_, found, _ := store.GetRow(ctx, "tenant-1", "notes", "n1")
	fmt.Println(errors.Is(err, errNotAllowed), "n1 still there:", found)

	var seq int64
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.DeleteRow(ctx, "notes", "n1"); err != nil {
			return err
		}
		seq, err = tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1_700_000_000_000,
			Changes: []sync.Change{{Table: "notes", RowID: "n1", Op: sync.OpDelete, Scopes: note("n1").Scopes}}})
		return err
	})
	_, found, _ = store.GetRow(ctx, "tenant-1", "notes", "n1")
	fmt.Println(err, "commit", seq, "n1 still there:", found)
	// Output:
	// true n1 still there: true
	// <nil> commit 4 n1 still there: false
}

// Blob references (capability blob-refs): a row's set of blob ids is
// replaced in the row's Tx, and a blob store's garbage collector asks
// which rows still reference a blob (BLOB-1).
func ExampleStore_ListRowsReferencingBlob() {
	store, done := exampleStore()
	defer done()
	ctx := context.Background()
	err := store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if err := tx.SetBlobRefs(ctx, "notes", "n1", []string{"blob-a", "blob-b"}); err != nil {
			return err
		}
		return tx.SetBlobRefs(ctx, "notes", "n2", []string{"blob-b"})
	})
	if err != nil {
		panic(err)
	}
	refs, err := store.ListRowsReferencingBlob(ctx, "tenant-1", "blob-b", 10)
	if err != nil {
		panic(err)
	}
	for _, r := range refs {
		fmt.Println(r.Table, r.RowID)
	}
	ids, err := store.ListReferencedBlobIDs(ctx, "tenant-1", "", 10)
	fmt.Println(ids, err)
	// Output:
	// notes n1
	// notes n2
	// [blob-a blob-b] <nil>
}

// The admin capability pages through a partition's client records, e.g.
// for an operator's console: here the record a client's first pull wrote.
func ExampleStore_ListClientRecords() {
	store, done := exampleStore()
	defer done()
	ctx := context.Background()
	_, err := store.Pull(ctx, "tenant-1", sync.PullRequest{ClientID: "phone-1", ActorID: "alice",
		Subscriptions: []sync.PullSubscription{{ID: "s1", Table: "notes",
			Scopes: sync.ScopeFilter{"project": {"p7"}}, Cursor: sync.PullBootstrap}}})
	if err != nil {
		panic(err)
	}
	recs, err := store.ListClientRecords(ctx, "tenant-1", sync.ClientRecordQuery{Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.ClientID, r.ActorID, len(r.Subscriptions), "subscription")
	}
	// Output: phone-1 alice 1 subscription
}
