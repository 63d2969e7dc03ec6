package conformance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// HostTable is a table of the host's own beside a store, written through
// the escape hatch of a Tx (driver.Aser, TX-11): a host writing its tables
// atomically with a push. A Harness supplies one per driver, since the
// handle types and the SQL are the engine's.
type HostTable interface {
	// Insert writes a row with primary key key through tx's engine handle
	// (driver.AsOf(tx, …)); it returns ErrNoHandle when tx's As gave none.
	Insert(ctx context.Context, tx driver.Tx, key string) error
	// Count returns the number of rows of the table, read through tx's
	// engine handle.
	Count(ctx context.Context, tx driver.Tx) (int, error)
}

// ErrNoHandle is what HostTable.Insert and Count return when the Tx's As
// handed out no engine handle.
var ErrNoHandle = errors.New("conformance: the Tx's As gave no engine handle")

func hostTable(t T, h Harness, conn driver.Conn) HostTable {
	t.Helper()
	if h.HostTable == nil {
		t.Skipf("TX-11 needs Harness.HostTable (a driver with an engine transaction handle)")
	}
	return h.HostTable(t, conn)
}

func expectNoHandle(t T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrNoHandle) {
		t.Errorf("%s: As gave a handle (Insert returned %v, want ErrNoHandle)", what, err)
	}
}

func hostCount(t T, conn driver.Conn, ht HostTable) int {
	t.Helper()
	tx := begin(t, conn, "p-host-read")
	defer func() { _ = tx.Rollback(context.Background()) }()
	n, err := ht.Count(t.Context(), tx)
	must(t, "TX-11: count the host table through a fresh Tx's handle", err)
	return n
}

// asTargets are targets no driver hands out: As must answer false for
// them, and for nil, without panicking.
func asTargets() []any {
	var s string
	var c driver.Conn
	return []any{nil, &s, s, &c, struct{}{}}
}

func init() {
	register(
		// Catches an As that panics on a target it does not know, or
		// answers true for one.
		Case{Name: "TX-11/as-unknown-targets-false", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(ctx) }()
			for i, target := range asTargets() {
				expectEqual(t, fmt.Sprintf("TX-11: Conn As(target %d of %T)", i, target), false, driver.AsOf(conn, target))
				expectEqual(t, fmt.Sprintf("TX-11: Tx As(target %d of %T)", i, target), false, driver.AsOf(tx, target))
			}
		}},
		// Catches a handle that runs outside the Tx's transaction (host
		// rows landing without the commit, or surviving its rollback or
		// CommitRejected), and a handle still given out after the Tx ended.
		Case{Name: "TX-11/host-writes-land-and-vanish-with-the-tx", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			ht := hostTable(t, h, conn)

			tx := begin(t, conn, "p1")
			stage(t, tx, tTodos, todo("t1", "p7", "o1"))
			must(t, "TX-11: Insert through the handle", ht.Insert(ctx, tx, "committed"))
			n, err := ht.Count(ctx, tx)
			must(t, "TX-11: Count through the handle", err)
			expectEqual(t, "TX-11: the Tx's handle sees its own host row", 1, n)
			commit(t, tx)
			expectNoHandle(t, "TX-11: after Commit the Tx's handle is gone", ht.Insert(ctx, tx, "late"))
			expectEqual(t, "TX-11: host rows after Commit", 1, hostCount(t, conn, ht))
			_, found, err := conn.GetRow(ctx, "p1", tTodos, "t1")
			must(t, "GetRow", err)
			expectEqual(t, "TX-11: the store's row landed with the host's", true, found)

			tx = begin(t, conn, "p1")
			stage(t, tx, tTodos, todo("t2", "p7", "o1"))
			must(t, "TX-11: Insert through the handle", ht.Insert(ctx, tx, "rolled-back"))
			must(t, "Rollback", tx.Rollback(ctx))
			expectNoHandle(t, "TX-11: after Rollback the Tx's handle is gone", ht.Insert(ctx, tx, "late"))
			expectEqual(t, "TX-11: host rows after a Rollback (the rolled-back one gone)", 1, hostCount(t, conn, ht))

			tx = begin(t, conn, "p1")
			stage(t, tx, tTodos, todo("t3", "p7", "o1"))
			must(t, "TX-11: Insert through the handle", ht.Insert(ctx, tx, "rejected"))
			must(t, "CommitRejected", tx.CommitRejected(ctx, "c1", "cc-rejected",
				driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1}))
			expectEqual(t, "TX-11: host rows after CommitRejected (TX-8 discards them too)", 1, hostCount(t, conn, ht))
		}},
		// Catches a handle that escapes the partition's serialization:
		// each Tx reads the host table's size through its handle and
		// inserts that number as the key; run at once on one partition,
		// two Txs overlapping would read the same size and collide.
		Case{Name: "TX-11/host-writes-serialized-by-partition", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			ht := hostTable(t, h, conn)
			const workers, each = 4, 5
			var wg gosync.WaitGroup
			errs := make(chan error, workers*each)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						errs <- hostCountAndInsert(ctx, conn, ht)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				must(t, "TX-11: a Tx that reads the host table's size and inserts it", err)
			}
			expectEqual(t, "TX-11: host rows after serialized Txs", workers*each, hostCount(t, conn, ht))
		}},
	)
}

// hostCountAndInsert is one Tx of the serialization case, retried on
// write_conflict (TX-9).
func hostCountAndInsert(ctx context.Context, conn driver.Conn, ht HostTable) error {
	for {
		tx, err := conn.Begin(ctx, "p1")
		if err != nil {
			return err
		}
		err = func() error {
			n, err := ht.Count(ctx, tx)
			if err != nil {
				return err
			}
			if err := ht.Insert(ctx, tx, fmt.Sprintf("k%d", n)); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}()
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
		if !errors.Is(err, driver.ErrWriteConflict) {
			return err
		}
	}
}

// SQLHostTable returns the HostTable of a driver whose escape hatch is
// database/sql's (a Tx's As takes **sql.Tx): a table host_notes (k, a
// text primary key), created by ddl — through the Conn's **sql.DB when its
// As gives one, else in a Tx of its own through the Tx's handle, then
// committed — and written and counted with ? placeholders.
func SQLHostTable(t T, conn driver.Conn, ddl string) HostTable {
	t.Helper()
	ctx := t.Context()
	var db *sql.DB
	if driver.AsOf(conn, &db) {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatalf("host table: %v", err)
		}
		return sqlHostTable{}
	}
	tx := begin(t, conn, "p-host-ddl")
	var stx *sql.Tx
	if !driver.AsOf(tx, &stx) {
		_ = tx.Rollback(ctx)
		t.Fatalf("host table: neither the Conn's As (**sql.DB) nor the Tx's (**sql.Tx) gave a handle")
	}
	if _, err := stx.ExecContext(ctx, ddl); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatalf("host table: %v", err)
	}
	commit(t, tx)
	return sqlHostTable{}
}

type sqlHostTable struct{}

func (sqlHostTable) Insert(ctx context.Context, tx driver.Tx, key string) error {
	var stx *sql.Tx
	if !driver.AsOf(tx, &stx) {
		return ErrNoHandle
	}
	_, err := stx.ExecContext(ctx, "INSERT INTO host_notes (k) VALUES (?)", key)
	return err
}

func (sqlHostTable) Count(ctx context.Context, tx driver.Tx) (n int, err error) {
	var stx *sql.Tx
	if !driver.AsOf(tx, &stx) {
		return 0, ErrNoHandle
	}
	err = stx.QueryRowContext(ctx, "SELECT COUNT(*) FROM host_notes").Scan(&n)
	return n, err
}
