package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
)

// Helpers of faults_test.go: a store with an admin connection that kills
// and inspects, the pushes the fault tests make, and the checks that every
// push is whole or absent.

// faultStore is a fresh store plus an admin connection to the same
// database (one connection, autocommit) used to kill and to inspect.
type faultStore struct {
	c     *Conn
	admin *sql.DB
	db    string // the database's name
}

func openFaultStore(t *testing.T) *faultStore {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := sql.OpenDB(connector)
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = admin.Close() })
	return &faultStore{c: conn.(*Conn), admin: admin, db: cfg.DBName}
}

// kill ends server connection id (KILL CONNECTION). An id that is already
// gone is not an error.
func (f *faultStore) kill(ctx context.Context, id int64) error {
	_, err := f.admin.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
	var me *mysql.MySQLError
	if err != nil && asMySQL(err, &me) && me.Number == 1094 { // unknown thread id
		return nil
	}
	return err
}

// sessions returns the ids of the store's server connections (not the
// admin's own).
func (f *faultStore) sessions(ctx context.Context) ([]int64, error) {
	rows, err := f.admin.QueryContext(ctx,
		"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", f.db)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// expectNoOpenTx waits (at most 20 s: the server rolls back a killed or
// abandoned session asynchronously, and database/sql releases a cancelled
// Tx's connection from a watcher goroutine) until no InnoDB transaction
// belongs to a session of the store's database and the pool has no
// connection in use (TX-6).
func (f *faultStore) expectNoOpenTx(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const q = `SELECT COUNT(*) FROM information_schema.INNODB_TRX x
		JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id
		WHERE p.DB = ? AND p.ID <> CONNECTION_ID()`
	var n, inUse int
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := f.admin.QueryRowContext(ctx, q, f.db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		inUse = f.c.db.Stats().InUse
		if (n == 0 && inUse == 0) || time.Now().After(end) {
			break
		}
	}
	if n != 0 {
		t.Errorf("%d transactions of the store are still open on the server (TX-6)", n)
	}
	if inUse != 0 {
		t.Errorf("%d pool connections still in use 20 s after every call returned (TX-6: a leaked connection)", inUse)
	}
}

// faultPush pushes i as a host would: inside one Tx it returns early when
// i's push result is already stored (a retry), else writes its rows, one
// commit, a reaction and the push result, and commits. hook, if set, runs
// after each step with the Tx. It reports whether this call landed i.
func faultPush(ctx context.Context, c *Conn, partition string, i int, hook func(step string, tx *Tx)) (bool, error) {
	if hook == nil {
		hook = func(string, *Tx) {}
	}
	dtx, err := c.Begin(ctx, partition)
	if err != nil {
		return false, err
	}
	tx := dtx.(*Tx)
	defer func() { _ = tx.Rollback(context.Background()) }()
	hook("begun", tx)
	if _, ok, err := tx.GetPushResult(ctx, "f", faulttest.Key(i)); err != nil || ok {
		return false, err
	}
	for _, r := range faulttest.Rows(i) {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return false, err
		}
	}
	hook("upserted", tx)
	want := faulttest.Commit(i, 0)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: want.ClientID, ClientCommitID: want.ClientCommitID,
		CreatedAtMs: want.CreatedAtMs, Changes: want.Changes})
	if err != nil {
		return false, err
	}
	err = tx.EnqueueReactions(ctx, seq, []driver.ReactionInput{{Key: "rx-" + faulttest.Key(i), Type: "t",
		Payload: driver.JSON(fmt.Sprintf(`{"i":%d}`, i)), MaxAttempts: 1000, CreatedAtMs: int64(i)}})
	if err != nil {
		return false, err
	}
	hook("appended", tx)
	if err := tx.PutPushResult(ctx, "f", faulttest.Key(i), faulttest.Result(i, seq)); err != nil {
		return false, err
	}
	hook("resulted", tx)
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

func asMySQL(err error, target **mysql.MySQLError) bool { return errors.As(err, target) }
