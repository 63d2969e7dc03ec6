// Command host is the smallest syncstore host: it opens an SQLite store,
// pushes one commit idempotently and pulls it back. README.md shows this
// file verbatim; main_test.go keeps the two identical and runs it.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/sync"
)

func main() {
	ctx, now := context.Background(), time.Now().UnixMilli()
	store, err := sync.Open("sqlite", "app.db") // a path, a file: URI, or :memory:
	check(err)
	defer store.Close()
	check(store.EnsureSchema(ctx, driver.Schema{Version: 1, Tables: []driver.Table{{Name: "todos", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "project_id", Type: driver.TypeString}},
		Scopes:  []driver.Scope{{Variable: "project", Column: "project_id"}}}}}))

	// Push: the rows, the commit that logs them and the push result, in one transaction.
	row := driver.Row{ID: "t1", ServerVersion: 1, Scopes: driver.Scopes{"project": "p7"},
		Values: driver.Values{"id": "t1", "project_id": "p7"}}
	check(store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		if _, seen, err := tx.GetPushResult(ctx, "client-1", "commit-1"); err != nil || seen {
			return err // a retried push: the stored result is the answer
		}
		if err := tx.UpsertRow(ctx, "todos", row); err != nil {
			return err
		}
		seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "client-1", ClientCommitID: "commit-1",
			ActorID: "user-1", CreatedAtMs: now, Changes: []driver.Change{{Table: "todos", RowID: row.ID,
				Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: row.ServerVersion}}})
		if err != nil {
			return err
		}
		return tx.PutPushResult(ctx, "client-1", "commit-1", driver.PushResult{Status: driver.PushApplied,
			CommitSeq: seq, RecordedAtMs: now, Ops: []driver.OpResult{{Status: driver.OpApplied}}})
	}))

	// Pull: the commits after cursor 0 that touch project p7's todos.
	through, err := store.MaxCommitSeq(ctx, "tenant-1")
	check(err)
	commits, err := store.ReadCommitWindow(ctx, "tenant-1", driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p7"}}, AfterSeq: 0, ThroughSeq: through, LimitChanges: 100})
	check(err)
	for _, c := range commits {
		fmt.Printf("commit %d from %s: %s %s\n", c.Seq, c.ClientID, c.Changes[0].Op, c.Changes[0].RowID)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
