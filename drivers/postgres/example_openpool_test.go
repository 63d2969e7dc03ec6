package postgres_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/sync"
)

// A host opens the store over the pool it already runs, and writes its own
// audit table in the same transaction as a push (TX-11).
func ExampleOpenPool() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db:5432/app") // the host's pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close() // after the store: the store never closes it
	conn, err := postgres.OpenPool(ctx, pool, postgres.Options{
		ListenerDSN: "postgres://app@db-direct:5432/app", // LISTEN bypasses a transaction-mode pooler
	})
	if err != nil {
		log.Fatal(err)
	}
	store := sync.OpenConn(conn)
	defer store.Close()

	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		// … the push's rows, commit and result …
		var ptx pgx.Tx
		if !tx.As(&ptx) {
			return nil
		}
		_, err := ptx.Exec(ctx, "INSERT INTO audit (what) VALUES ($1)", "pushed")
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
