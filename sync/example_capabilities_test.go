package sync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncstore/syncstore/sync"
)

// exampleStore opens an SQLite store in a temporary directory with the
// notes schema and three notes in partition tenant-1 (commits 1…3); done
// closes and removes it.
func exampleStore() (store *sync.Store, done func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "syncstore-example")
	if err != nil {
		panic(err)
	}
	store, err = sync.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		row := note(id)
		err := store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
			if err := tx.UpsertRow(ctx, "notes", row); err != nil {
				return err
			}
			_, err := tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1_700_000_000_000, Changes: []sync.Change{{
				Table: "notes", RowID: id, Op: sync.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
			return err
		})
		if err != nil {
			panic(err)
		}
	}
	return store, func() { store.Close(); os.RemoveAll(dir) }
}

// An authoritative query: portable SQL over the declared tables, confined
// to one partition, with the commit seq of the snapshot it read (AQ-1…AQ-5).
func ExampleStore_AuthoritativeQuery() {
	store, done := exampleStore()
	defer done()
	res, err := store.AuthoritativeQuery(context.Background(), "tenant-1", sync.Query{
		SQL: `SELECT id, body FROM notes WHERE id > ? ORDER BY id`, Args: []any{"n1"}, Tables: []string{"notes"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Columns, res.Rows, "as of commit", res.MaxCommitSeq)
	// Output: [id body] [[n2 body n2] [n3 body n3]] as of commit 3
}

// An index lookup: the rows whose declared index columns equal the values
// (IXL-1).
func ExampleStore_ScanRowsByIndex() {
	store, done := exampleStore()
	defer done()
	rows, err := store.ScanRowsByIndex(context.Background(), "tenant-1", sync.IndexQuery{
		Table: "notes", Index: "by_body", Values: []any{"body n2"}, Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Println(r.ID, r.ServerVersion)
	}
	// Output: n2 1
}

// A push plans a reaction, which is enqueued with its commit and runs
// once on a Worker, which claims it under a lease and records the
// outcome (RX).
func ExampleWorker() {
	store, done := exampleStore()
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store.SetPushOptions(sync.PushOptions{
		PlanReactions: func(ctx context.Context, tx *sync.Tx, c sync.AppliedCommit) ([]sync.ReactionInput, error) {
			// The planner's key names the work within the commit; the
			// stored key is derived from the commit (PUSH-16).
			return []sync.ReactionInput{{Key: "email", Type: "email",
				Payload: sync.JSON(`{"to":"a@example.com"}`), MaxAttempts: 5, CreatedAtMs: 1_700_000_000_000}}, nil
		},
	})
	_, err := store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "phone-1", ClientCommitID: "c-4", ActorID: "alice",
		Ops: []sync.PushOp{{Table: "notes", RowID: "n4", Op: sync.OpUpsert, BaseVersion: sync.Version(0),
			Values: note("n4").Values}}})
	if err != nil {
		panic(err)
	}
	w, err := sync.NewWorker(store, sync.WorkerConfig{Partitions: sync.StaticPartitions("tenant-1"), Owner: "worker-1"})
	if err != nil {
		panic(err)
	}
	ran := make(chan string, 1)
	if err := w.Handle("email", func(ctx context.Context, partition string, r sync.Reaction) error {
		ran <- fmt.Sprintf("%s %s after commit %d: %s", partition, r.Key, r.SourceCommitSeq, r.Payload)
		cancel() // one is enough for the example
		return nil
	}); err != nil {
		panic(err)
	}
	go func() { _ = w.Run(ctx) }()
	fmt.Println(<-ran)
	// Output: tenant-1 ["phone-1","c-4","email"] after commit 4: {"to":"a@example.com"}
}
