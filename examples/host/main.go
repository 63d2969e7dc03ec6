// Command host is the smallest syncstore host: it opens an SQLite store,
// pushes one commit idempotently and pulls it back. README.md shows this
// file verbatim; main_test.go keeps the two identical and runs it.
package main

import (
	"context"
	"fmt"
	"log"

	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/sync"
)

func main() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", "app.db") // a path, a file: URI, or :memory:
	check(err)
	defer store.Close()
	check(store.EnsureSchema(ctx, sync.Schema{Version: 1, Tables: []sync.Table{{Name: "todos", PrimaryKey: "id",
		Columns: []sync.Column{{Name: "id", Type: sync.TypeString}, {Name: "project_id", Type: sync.TypeString}},
		Scopes:  []sync.Scope{{Variable: "project", Column: "project_id"}}}}}))

	// Push: one client commit, all or nothing. Sent again (a retry), it
	// answers the stored result and writes nothing.
	res, err := store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "client-1", ClientCommitID: "commit-1",
		ActorID: "user-1", Ops: []sync.PushOp{{Table: "todos", RowID: "t1", Op: sync.OpUpsert,
			Values: sync.Values{"id": "t1", "project_id": "p7"}, BaseVersion: sync.Version(0)}}}) // 0: a create
	check(err)
	fmt.Printf("push: %s at commit %d (replayed %v)\n", res.Status, res.CommitSeq, res.Replayed)

	// Pull: another client bootstraps project p7's todos, then follows
	// the log from the cursor it was given.
	sub := sync.PullSubscription{ID: "p7", Table: "todos", Scopes: sync.ScopeFilter{"project": {"p7"}},
		Cursor: sync.PullBootstrap}
	pull, err := store.Pull(ctx, "tenant-1", sync.PullRequest{ClientID: "client-2", ActorID: "user-2",
		Subscriptions: []sync.PullSubscription{sub}})
	check(err)
	for _, row := range pull.Subscriptions[0].Rows {
		fmt.Printf("pull: %s version %d, next cursor %d\n", row.ID, row.ServerVersion, pull.Subscriptions[0].NextCursor)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
