package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

func wantCode(t *testing.T, what string, err error, code driver.Code) {
	t.Helper()
	if got := driver.CodeOf(err); got != code {
		t.Errorf("%s: got %v (code %q), want code %q", what, err, got, code)
	}
}

// TestDSNForms opens a store through each DSN form, writes, closes,
// reopens (file forms) and reads the data back.
func TestDSNForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spaced := filepath.Join(dir, "with space #1?.db") // '?' would start parameters in a plain path…
	forms := []struct{ name, dsn, file string }{
		{"path", filepath.Join(dir, "plain.db"), filepath.Join(dir, "plain.db")},
		{"path with parameters", filepath.Join(dir, "params.db") + "?_pragma=cache_size(-4096)", filepath.Join(dir, "params.db")},
		{"file URI", "file:" + filepath.Join(dir, "uri.db") + "?mode=rwc", filepath.Join(dir, "uri.db")},
		{"file URI, escaped", fileURI(spaced), spaced}, // …but not once escaped in a URI
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			c := openDSN(t, f.dsn)
			if err := c.EnsureSchema(ctx, testSchema()); err != nil {
				t.Fatal(err)
			}
			pushRows(t, c, "P", todoRow("a", "p", "o"))
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(f.file); err != nil {
				t.Fatalf("database file %s: %v", f.file, err)
			}
			c2 := openDSN(t, f.dsn)
			// Before its own EnsureSchema a new Conn knows no table (SCH-8)…
			_, _, err := c2.GetRow(ctx, "P", "todos", "a")
			wantCode(t, "GetRow before EnsureSchema", err, driver.CodeUnknownTable)
			// …and afterwards it picks up the stored schema and data.
			if err := c2.EnsureSchema(ctx, testSchema()); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := c2.GetRow(ctx, "P", "todos", "a"); !ok || err != nil {
				t.Errorf("reopened store lost the row: %v %v", ok, err)
			}
			if m, err := c2.MaxCommitSeq(ctx, "P"); m != 1 || err != nil {
				t.Errorf("reopened MaxCommitSeq = %d, %v; want 1", m, err)
			}
		})
	}
}

// TestMemoryDSN: ":memory:" is a private store (a temporary file) that
// works with a writer and readers and vanishes on Close.
func TestMemoryDSN(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{":memory:", "file::memory:", "file:x?mode=memory&cache=shared"} {
		c := openDSN(t, dsn)
		if c.tmpDir == "" {
			t.Fatalf("%s: no private directory", dsn)
		}
		if err := c.EnsureSchema(ctx, testSchema()); err != nil {
			t.Fatal(err)
		}
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.UpsertRow(ctx, "todos", todoRow("a", "p", "o")); err != nil {
			t.Fatal(err)
		}
		// A reader does not block on, nor see, the open Tx (TX-4).
		if _, ok, err := c.GetRow(ctx, "P", "todos", "a"); ok || err != nil {
			t.Errorf("%s: uncommitted row visible outside the Tx: %v %v", dsn, ok, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := c.GetRow(ctx, "P", "todos", "a"); !ok || err != nil {
			t.Errorf("%s: committed row not visible: %v %v", dsn, ok, err)
		}
		// Two :memory: stores are distinct.
		other := openDSN(t, dsn)
		if other.tmpDir == c.tmpDir {
			t.Errorf("%s: two stores share a directory", dsn)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.tmpDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: private directory survives Close: %v", dsn, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Driver{}.Open(ctx, "")
	wantCode(t, "empty DSN", err, driver.CodeInvalidArgument)
	_, err = Driver{}.Open(ctx, filepath.Join(t.TempDir(), "missing-dir", "x.db"))
	// A missing directory can never open: permanent (open_errors_test.go
	// has the other cases).
	wantCode(t, "uncreatable file", err, driver.CodeInvalidArgument)
}

// TestProvision checks driver.Provisioner: fresh stores in a new directory
// under the base (or os.TempDir), removed with their -wal/-shm by drop.
func TestProvision(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	for _, b := range []string{base, ""} {
		dsn, drop, err := Driver{}.Provision(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if b != "" && !strings.HasPrefix(dsn, base) {
			t.Errorf("store %s is not inside %s", dsn, base)
		}
		c := openDSN(t, dsn)
		if err := c.EnsureSchema(ctx, testSchema()); err != nil {
			t.Fatal(err)
		}
		pushRows(t, c, "P", todoRow("a", "p", "o"))
		if _, err := os.Stat(dsn + "-wal"); err != nil {
			t.Errorf("no WAL file: %v", err)
		}
		dsn2, drop2, err := Driver{}.Provision(ctx, b)
		if err != nil || dsn2 == dsn {
			t.Fatalf("second store %q (first %q): %v", dsn2, dsn, err)
		}
		_ = drop2(ctx)
		_ = c.Close()
		if err := drop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(dsn)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("drop left %s behind: %v", filepath.Dir(dsn), err)
		}
	}
	file := filepath.Join(base, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{file, filepath.Join(base, "nope")} {
		_, _, err := Driver{}.Provision(ctx, bad)
		wantCode(t, "Provision("+filepath.Base(bad)+")", err, driver.CodeInvalidArgument)
	}
}

// TestClosed: every operation after Close fails with CodeClosed (ERR-4);
// a second Close is a no-op.
func TestClosed(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err = c.Begin(ctx, "P")
	wantCode(t, "Begin after Close", err, driver.CodeClosed)
	_, err = c.MaxCommitSeq(ctx, "P")
	wantCode(t, "MaxCommitSeq after Close", err, driver.CodeClosed)
	_, _, err = c.GetRow(ctx, "P", "todos", "a")
	wantCode(t, "GetRow after Close", err, driver.CodeClosed)
	err = c.PutClientRecord(ctx, "P", driver.ClientRecord{ClientID: "c"})
	wantCode(t, "PutClientRecord after Close", err, driver.CodeClosed)
	err = c.EnsureSchema(ctx, testSchema())
	wantCode(t, "EnsureSchema after Close", err, driver.CodeClosed)
}

// TestCorruptPushResult: a stored result that cannot be decoded, or has
// an unknown status, is CodeIdempotencyCacheMiss, retryable, never a guess
// (PR-5) — from the Conn and inside a Tx.
func TestCorruptPushResult(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"garbage", "status", "opstatus", "good"} {
		if err := tx.PutPushResult(ctx, "c", k, driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1,
			Ops: []driver.OpResult{{Status: driver.OpError, Code: "x"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	corrupt := map[string]string{
		"garbage":  `{"status": "applied", "ops": [`,
		"status":   `{"status":"maybe","recordedAtMs":1,"ops":[]}`,
		"opstatus": `{"status":"rejected","recordedAtMs":1,"ops":[{"status":"perhaps"}]}`,
	}
	for k, text := range corrupt {
		if _, err := c.w.ExecContext(ctx, `UPDATE _sync_push_results SET result = ? WHERE partition = 'P' AND client_id = 'c' AND client_commit_id = ?`, text, k); err != nil {
			t.Fatal(err)
		}
	}
	tx2, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx2.Rollback(ctx) }()
	for k := range corrupt {
		_, found, err := c.GetPushResult(ctx, "P", "c", k)
		wantCode(t, "Conn.GetPushResult("+k+")", err, driver.CodeIdempotencyCacheMiss)
		if found || !driver.IsRetryable(err) {
			t.Errorf("%s: found=%v retryable=%v", k, found, driver.IsRetryable(err))
		}
		_, _, err = tx2.GetPushResult(ctx, "c", k)
		wantCode(t, "Tx.GetPushResult("+k+")", err, driver.CodeIdempotencyCacheMiss)
	}
	if r, found, err := c.GetPushResult(ctx, "P", "c", "good"); err != nil || !found || r.Status != driver.PushRejected {
		t.Errorf("intact result: %+v %v %v", r, found, err)
	}
}

// TestCancelledTxFreesWriter: cancelling a Tx's context rolls it back,
// writes nothing and frees the writer at once (TX-6).
func TestCancelledTxFreesWriter(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	cctx, cancel := context.WithCancel(ctx)
	tx, err := c.Begin(cctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(cctx, "todos", todoRow("a", "p", "o")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AppendCommit(cctx, driver.CommitInput{Changes: []driver.Change{{Table: "todos", RowID: "a", Op: driver.OpDelete}}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	// database/sql rolls the transaction back when its context ends; the
	// writer must be free again well within the busy timeout.
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	defer bcancel()
	tx2, err := c.Begin(bctx, "P")
	if err != nil {
		t.Fatalf("Begin after a cancelled Tx: %v", err)
	}
	if seq := pushInTx(t, tx2, todoRow("b", "p", "o")); seq != 1 {
		t.Errorf("seq after a cancelled Tx = %d, want 1 (SEQ-2)", seq)
	}
	err = tx.UpsertRow(ctx, "todos", todoRow("c", "p", "o"))
	if err == nil {
		t.Errorf("UpsertRow on a cancelled Tx succeeded")
	}
	if err := tx.Commit(ctx); err == nil || driver.CodeOf(err) == "" {
		t.Errorf("Commit of a cancelled Tx: %v, want a typed error", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Errorf("Rollback of a cancelled Tx: %v", err)
	}
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "a"); ok {
		t.Errorf("the cancelled Tx's row was written")
	}
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "b"); !ok {
		t.Errorf("the next Tx's row is missing")
	}

	// A context cancelled during one operation aborts the Tx as well.
	octx, ocancel := context.WithCancel(ctx)
	tx3, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	ocancel()
	if err := tx3.UpsertRow(octx, "todos", todoRow("d", "p", "o")); err == nil {
		t.Errorf("UpsertRow with a cancelled context succeeded")
	}
	if err := tx3.Commit(ctx); err == nil {
		t.Errorf("Commit after a cancelled operation succeeded")
	}
	pushRows(t, c, "P", todoRow("e", "p", "o"))
	if m, _ := c.MaxCommitSeq(ctx, "P"); m != 2 {
		t.Errorf("MaxCommitSeq = %d, want 2", m)
	}
}

// pushInTx upserts row in tx with one commit, commits, returns the seq.
func pushInTx(t *testing.T, tx driver.Tx, row driver.Row) int64 {
	t.Helper()
	ctx := context.Background()
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		t.Fatal(err)
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{Changes: []driver.Change{{Table: "todos", RowID: row.ID, Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestPruneRemovesIndexEntries: pruning deletes the change-scope entries
// of the pruned changes (HZ-2), not only the changes, so the index does not
// keep growing with pruned history; other partitions keep theirs.
func TestPruneRemovesIndexEntries(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 5; i++ {
		pushRows(t, c, "P", todoRow("a", "p", "o"), todoRow("b", "q", "o"))
		pushRows(t, c, "Q", todoRow("a", "p", "o"))
	}
	count := func(table, partition string) int {
		var n int
		if err := c.r.QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE partition = ?", partition).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 2 changes × 2 variables per commit in P, 1 × 2 in Q.
	if n := count("_sync_change_scopes", "P"); n != 20 {
		t.Fatalf("P has %d change-scope entries, want 20", n)
	}
	if err := c.SetHorizonSeq(ctx, "P", 3); err != nil {
		t.Fatal(err)
	}
	n, err := c.PruneCommitsThrough(ctx, "P", 3)
	if err != nil || n != 3 {
		t.Fatalf("PruneCommitsThrough = %d, %v; want 3", n, err)
	}
	for table, want := range map[string]int{"_sync_change_scopes": 8, "_sync_changes": 4, "_sync_commits": 2} {
		if got := count(table, "P"); got != want {
			t.Errorf("%s has %d rows of P after pruning, want %d", table, got, want)
		}
	}
	if got := count("_sync_change_scopes", "Q"); got != 10 {
		t.Errorf("Q lost change-scope entries: %d, want 10", got)
	}
	_, err = c.PruneCommitsThrough(ctx, "P", 4)
	wantCode(t, "prune past the horizon", err, driver.CodeInvalidHorizon)
	if got := count("_sync_commits", "P"); got != 2 {
		t.Errorf("a rejected prune deleted commits: %d left, want 2", got)
	}
}

// TestCommitWithCancelledContext: Commit with an ended context writes
// nothing and finishes the Tx (TX-6).
func TestCommitWithCancelledContext(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("a", "p", "o")); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = tx.Commit(cctx)
	wantCode(t, "Commit with a cancelled context", err, driver.CodeUnavailable)
	wantCode(t, "Commit again", tx.Commit(ctx), driver.CodeTxFinished)
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "a"); ok {
		t.Errorf("Commit with a cancelled context wrote the row")
	}
	pushRows(t, c, "P", todoRow("b", "p", "o")) // the writer is free
}

// TestEngineErrorAbortsTx: after an engine error inside a Tx (here a table
// dropped behind the Conn's back), the Tx accepts nothing more and Commit
// writes nothing — SQLite may have ended the transaction itself, and later
// statements must never run in autocommit mode.
func TestEngineErrorAbortsTx(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	if _, err := c.w.ExecContext(ctx, `DROP TABLE "users"`); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("a", "p", "o")); err != nil {
		t.Fatal(err)
	}
	err = tx.UpsertRow(ctx, "users", driver.Row{ID: "u", Scopes: driver.Scopes{"org": "o"}, Values: driver.Values{"id": "u", "org": "o", "email": "e"}})
	wantCode(t, "upsert into a dropped table", err, driver.CodeSchemaNewer)
	err = tx.UpsertRow(ctx, "todos", todoRow("b", "p", "o"))
	wantCode(t, "upsert after an engine error", err, driver.CodeUnavailable)
	wantCode(t, "Commit after an engine error", tx.Commit(ctx), driver.CodeUnavailable)
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "a"); ok {
		t.Errorf("an aborted Tx wrote its rows")
	}
	pushRows(t, c, "P", todoRow("c", "p", "o"))
}
