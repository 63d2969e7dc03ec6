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

// lineSink prints a streamed pull, one line per call — where a protocol
// layer would encode its frames and flush them — and takes at most
// budget pages of a bootstrap per pull (SSP2's maxSnapshotPages).
type lineSink struct{ budget, pages int }

func (l *lineSink) Start(_ context.Context, r sync.PullResult) error {
	l.pages = 0
	fmt.Printf("start %s: %s, bootstrap %v, fresh %v, as of %d\n", r.ID, r.Status, r.Bootstrap, r.Fresh, r.AsOfCommitSeq)
	return nil
}

func (l *lineSink) Page(_ context.Context, p sync.PullPage) (bool, error) {
	l.pages++
	fmt.Printf("  page after %q: %v, more: %v\n", p.AfterRowID, rowIDs(p.Rows), p.More)
	return l.pages < l.budget, nil // the next page in this pull?
}

func (l *lineSink) Commits(_ context.Context, commits []sync.Commit) error {
	for _, c := range commits {
		fmt.Printf("  commit %d: %d change(s)\n", c.Seq, len(c.Changes))
	}
	return nil
}

func (l *lineSink) End(_ context.Context, r sync.PullResult) error {
	fmt.Printf("end %s: next cursor %d, token: %v\n", r.ID, r.NextCursor, r.BootstrapToken != "")
	return nil
}

// A protocol layer streams a pull with PullTo: each subscription in
// request order, a bootstrap's pages as they are read (two per pull
// here), and the cursors and token at each subscription's end, holding
// one page at a time however large the bootstrap. The next pull resumes
// the bootstrap with the token.
func ExampleStore_PullTo() {
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
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		var changes []sync.Change // one commit, written with the primitives (hosts use Push)
		for i, proj := range []string{"p7", "p7", "p7", "p7", "p7", "p8"} {
			values := sync.Values{"id": fmt.Sprintf("n%d", i+1), "proj": proj, "body": "…"}
			row := sync.Row{ID: values["id"].(string), ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(table, values)}
			if err := tx.UpsertRow(ctx, "notes", row); err != nil {
				return err
			}
			changes = append(changes, sync.Change{Table: "notes", RowID: row.ID, Op: sync.OpUpsert, Scopes: row.Scopes,
				Values: values, RowVersion: 1})
		}
		_, err := tx.AppendCommit(ctx, sync.CommitInput{CreatedAtMs: 1700000000000, Changes: changes})
		return err
	})
	if err != nil {
		panic(err)
	}

	mine := sync.PullSubscription{ID: "mine", Table: "notes", Scopes: sync.ScopeFilter{"project": {"p7"}},
		Cursor: sync.PullBootstrap, LimitRows: 2}
	other := sync.PullSubscription{ID: "other", Table: "notes", Scopes: sync.ScopeFilter{"project": {"p8"}}}
	req := sync.PullRequest{ClientID: "phone-1", ActorID: "user-1", RestartBootstraps: true,
		Subscriptions: []sync.PullSubscription{mine, other}}
	resp, err := store.PullTo(ctx, "tenant-1", req, &lineSink{budget: 2})
	if err != nil {
		panic(err)
	}
	// The client keeps what each End gave it and sends it back.
	mine.Cursor, mine.BootstrapToken = resp.Subscriptions[0].NextCursor, resp.Subscriptions[0].BootstrapToken
	req.Subscriptions = []sync.PullSubscription{mine}
	if _, err := store.PullTo(ctx, "tenant-1", req, &lineSink{budget: 2}); err != nil {
		panic(err)
	}
	// Output:
	// start mine: active, bootstrap true, fresh true, as of 1
	//   page after "": [n1 n2], more: true
	//   page after "n2": [n3 n4], more: true
	// end mine: next cursor 1, token: true
	// start other: active, bootstrap false, fresh false, as of 0
	//   commit 1: 1 change(s)
	// end other: next cursor 1, token: false
	// start mine: active, bootstrap true, fresh false, as of 1
	//   page after "n4": [n5], more: false
	// end mine: next cursor 1, token: false
}
