package sync_test

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/sync"
)

// A host serves a client's pull loop: the client bootstraps a
// subscription in pages (sending back each page's BootstrapToken), then
// pulls incrementally from the NextCursor it was given. A reset means:
// drop the subscription's rows and bootstrap again.
func ExampleStore_Pull() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	schema := notesSchema()
	if err := store.EnsureSchema(ctx, schema); err != nil {
		panic(err)
	}
	table, _ := schema.Table("notes")
	write := func(id, proj string) { // a commit written with the primitives (hosts use Push)
		values := sync.Values{"id": id, "proj": proj, "body": "body " + id}
		row := sync.Row{ID: id, ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}
		err := store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
			if err := tx.UpsertRow(ctx, "notes", row); err != nil {
				return err
			}
			_, err := tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1700000000000, Changes: []sync.Change{{
				Table: "notes", RowID: id, Op: sync.OpUpsert, Scopes: row.Scopes, Values: values, RowVersion: 1}}})
			return err
		})
		if err != nil {
			panic(err)
		}
	}
	write("n1", "p7")
	write("n2", "p7")
	write("n3", "p8")

	// The host authorizes the scopes for the actor, then pulls for it.
	sub := sync.PullSubscription{ID: "my-notes", Table: "notes", Scopes: sync.ScopeFilter{"project": {"p7"}},
		Cursor: sync.PullBootstrap, LimitRows: 1}
	for range 4 {
		resp, err := store.Pull(ctx, "tenant-1", sync.PullRequest{ClientID: "phone-1", ActorID: "user-1",
			Subscriptions: []sync.PullSubscription{sub}})
		if err != nil {
			panic(err)
		}
		r := resp.Subscriptions[0]
		switch {
		case r.Status == sync.PullReset:
			fmt.Println("reset:", r.Reason)
		case r.Bootstrap:
			fmt.Printf("bootstrap page as of %d: %v, more: %v\n", r.AsOfCommitSeq, rowIDs(r.Rows), r.BootstrapToken != "")
		default:
			fmt.Printf("%d commits, next cursor %d\n", len(r.Commits), r.NextCursor)
		}
		sub.Cursor, sub.BootstrapToken = r.NextCursor, r.BootstrapToken
		if r.Bootstrap && r.BootstrapToken == "" {
			write("n4", "p7") // a change after the bootstrap's pin
		}
	}
	// Output:
	// bootstrap page as of 3: [n1], more: true
	// bootstrap page as of 3: [n2], more: false
	// 1 commits, next cursor 4
	// 0 commits, next cursor 4
}

func rowIDs(rows []sync.Row) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}
