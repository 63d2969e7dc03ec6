package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// Commit outcomes on SQLite (TX-10, docs/reliability.md "Commit
// outcomes"). SQLite runs in the process, so no answer can be lost on the
// way back; what could make a Commit ambiguous is a COMMIT that is cut
// short: modernc interrupts a statement when the context given to BeginTx
// ends (Begin's), and a COMMIT can fail (busy, I/O error, a commit hook).
// These tests put each of those inside the COMMIT itself and check that
// Commit then tells the truth: a COMMIT that fails never committed, and
// one that commits returns nil.

// commitHooks installs fn as the commit hook of the store's writer
// connection (SQLite calls it inside COMMIT, before the commit is
// written; non-zero turns the COMMIT into a rollback).
func commitHooks(t *testing.T, c *Conn, fn msqlite.CommitHookFn) {
	t.Helper()
	sc, err := c.w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Raw(func(dc any) error {
		dc.(interface{ RegisterCommitHook(msqlite.CommitHookFn) }).RegisterCommitHook(fn)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// openOutcomeStore opens a file store with the suite's schema.
func openOutcomeStore(t *testing.T) *Conn {
	t.Helper()
	c := openDSN(t, filepath.Join(t.TempDir(), "store.db"))
	if err := c.EnsureSchema(context.Background(), conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectPushLanded checks that push i is there (landed) or absent.
func expectPushLanded(t *testing.T, c *Conn, i int, landed bool) {
	t.Helper()
	_, found, err := c.GetPushResult(context.Background(), "P", "f", faulttest.Key(i))
	if err != nil {
		t.Fatal(err)
	}
	_, rowFound, err := c.GetRow(context.Background(), "P", "todos", faulttest.Rows(i)[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if found != landed || rowFound != landed {
		t.Errorf("push %d: result stored %v, row there %v; want %v (TX-10)", i, found, rowFound, landed)
	}
}

// TestCommitInterruptedInsideCommit: Begin's context ends while the
// COMMIT runs (from the commit hook, which then waits for modernc's
// interrupt to be issued). The COMMIT completes anyway — SQLite checks
// for an interrupt between statement steps, not inside the commit — and
// Commit must say so: nil, and the push there. Then the same with the
// hook refusing: the COMMIT fails, SQLite rolls back, Commit says not
// written, and nothing is there.
func TestCommitInterruptedInsideCommit(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		name := map[bool]string{false: "commits", true: "hook-refuses"}[refuse]
		t.Run(name, func(t *testing.T) {
			c := openOutcomeStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The hook is installed while the writer is free, armed below.
			var armed, fired bool
			commitHooks(t, c, func() int32 {
				if !armed || fired {
					return 0
				}
				fired = true
				cancel()
				time.Sleep(20 * time.Millisecond) // modernc interrupts from another goroutine
				if refuse {
					return 1
				}
				return 0
			})
			tx, err := c.Begin(ctx, "P")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			if err := faulttest.StagePush(ctx, tx, 1); err != nil {
				t.Fatal(err)
			}
			armed = true
			err = tx.Commit(context.Background())
			if !fired {
				t.Fatalf("the commit hook did not run (Commit = %v)", err)
			}
			switch {
			case refuse && err == nil:
				t.Errorf("Commit = nil, but the commit hook turned the COMMIT into a rollback")
			case refuse && driver.CodeOf(err) == driver.CodeCommitOutcomeUnknown:
				t.Errorf("Commit = %v; a refused COMMIT is known not to have landed", err)
			case !refuse && err != nil:
				t.Errorf("Commit = %v; the COMMIT went through (TX-10)", err)
			}
			expectPushLanded(t, c, 1, !refuse)
			// The writer is free and out of any transaction.
			if err := faulttest.Push(context.Background(), c, "P", 2); err != nil {
				t.Fatalf("the next push: %v", err)
			}
		})
	}
}

// TestBusyCommitRollsBack pins the modernc behaviour the driver relies on
// when a COMMIT fails with the transaction still open: in rollback-journal
// mode (which SQLite falls back to where WAL is unavailable) a COMMIT
// waits for readers' SHARED locks and, after busy_timeout, fails with
// SQLITE_BUSY, leaving the transaction open; modernc's Tx.Commit then
// rolls it back, so the error means nothing was written and the
// connection can begin again.
func TestBusyCommitRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	dsn := "file:" + path + "?_pragma=journal_mode(DELETE)&_pragma=busy_timeout(50)"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if _, err := w.ExecContext(ctx, "CREATE TABLE t (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// A reader holds a SHARED lock: an open read transaction mid-query.
	rtx, err := r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rtx.QueryContext(ctx, "SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	wtx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wtx.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := wtx.Commit(); err == nil {
		t.Fatal("COMMIT succeeded while a reader held a SHARED lock in rollback-journal mode")
	}
	_ = rows.Close()
	_ = rtx.Rollback()
	var n int
	if err := w.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE v = 2").Scan(&n); err != nil {
		t.Fatalf("the writer after a busy COMMIT: %v", err)
	}
	if n != 0 {
		t.Fatalf("the busy COMMIT's row is there")
	}
	wtx, err = w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("the writer cannot begin after a busy COMMIT (left inside the transaction?): %v", err)
	}
	if _, err := wtx.ExecContext(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if err := wtx.Commit(); err != nil {
		t.Fatal(err)
	}
}
