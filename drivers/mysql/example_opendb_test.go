package mysql_test

import (
	"context"
	"database/sql"
	"log"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/drivers/mysql"
	"github.com/syncstore/syncstore/sync"
)

// A host opens the store over its own *sql.DB; the DSN carries what the
// store needs (OpenDB names any missing parameter).
func ExampleOpenDB() {
	ctx := context.Background()
	cfg, err := gomysql.ParseDSN("app:secret@tcp(db:3306)/app?clientFoundRows=true" +
		"&collation=utf8mb4_nopad_bin&sql_mode=%27STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION%27" +
		"&tx_isolation=%27READ-COMMITTED%27")
	if err != nil {
		log.Fatal(err)
	}
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector) // the host's pool
	defer db.Close()            // after the store: the store never closes it
	conn, err := mysql.OpenDB(ctx, db, cfg)
	if err != nil {
		log.Fatal(err) // e.g. invalid_argument: "… needs clientFoundRows=true …"
	}
	store := sync.OpenConn(conn)
	defer store.Close()

	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		var stx *sql.Tx
		if !tx.As(&stx) {
			return nil
		}
		_, err := stx.ExecContext(ctx, "INSERT INTO audit (what) VALUES (?)", "pushed")
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
