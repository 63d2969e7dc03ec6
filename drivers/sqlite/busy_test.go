package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// The write-lock wait (_busy_timeout, package doc). Waits are bounded by
// the configured timeout alone (no ctx deadline), so only the busy error
// can end them; nothing here measures time.

// A write of a second Conn that meets the write lock held by another Conn
// waits the DSN's _busy_timeout, then fails with a retryable
// CodeUnavailable naming the busy write lock; nothing of it was written,
// and once the lock is free the same write succeeds.
func TestBusyWriteLockWaitsTheDSNsTimeout(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openDSN(t, path+"?_busy_timeout=20")
	if err := b.EnsureSchema(ctx, testSchema()); err != nil {
		t.Fatal(err)
	}
	holder, err := a.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.UpsertRow(ctx, "todos", todoRow("t1", "p", "o")); err != nil {
		t.Fatal(err)
	}

	busy := func(what string, err error) {
		t.Helper()
		if driver.CodeOf(err) != driver.CodeUnavailable || !driver.IsRetryable(err) {
			t.Errorf("%s while another Conn holds the write lock = %v; want a retryable %s", what, err, driver.CodeUnavailable)
			return
		}
		if msg := err.Error(); !strings.Contains(msg, "the store is busy") || !strings.Contains(msg, "write lock") ||
			!strings.Contains(msg, "_busy_timeout") {
			t.Errorf("%s: message %q does not say the store is busy (its write lock held) and name _busy_timeout", what, msg)
		}
	}
	tx, err := b.Begin(ctx, "p2")
	if tx != nil {
		_ = tx.Rollback(ctx)
	}
	busy("Begin", err)
	busy("PutClientRecord", b.PutClientRecord(ctx, "p2", driver.ClientRecord{ClientID: "c1", Cursor: 1, UpdatedAtMs: 1}))
	busy("TouchPartition", func() error { _, err := b.TouchPartition(ctx, "p2", 1, "e1"); return err }())

	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, found, err := b.GetClientRecord(ctx, "p2", "c1"); err != nil || found {
		t.Errorf("GetClientRecord after the busy PutClientRecord: found=%v err=%v; want nothing written", found, err)
	}
	if err := b.PutClientRecord(ctx, "p2", driver.ClientRecord{ClientID: "c1", Cursor: 1, UpdatedAtMs: 1}); err != nil {
		t.Errorf("PutClientRecord once the lock is free: %v", err)
	}
	pushRows(t, b, "p2", todoRow("t2", "p", "o"))
}

// The DSN's wait reaches the writer and the readers as SQLite's
// busy_timeout; a bad value, or a second way to set it, is refused.
func TestBusyTimeoutDSN(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	for dsn, want := range map[string]int{path: defaultBusyTimeoutMs, path + "?_busy_timeout=0": 0,
		path + "?_busy_timeout=250": 250, path + "?_timeout=1500": 1500, "file:" + path + "?mode=rwc&_busy_timeout=7": 7} {
		c := openDSN(t, dsn)
		for what, q := range map[string]func() (int, error){
			"writer": func() (n int, err error) { err = c.w.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&n); return },
			"reader": func() (n int, err error) { err = c.r.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&n); return },
		} {
			if got, err := q(); err != nil || got != want {
				t.Errorf("%s: %s busy_timeout = %d (%v), want %d", dsn, what, got, err, want)
			}
		}
		_ = c.Close()
	}
	for _, dsn := range []string{"?_busy_timeout=-1", "?_busy_timeout=soon", "?_busy_timeout=1s", "?_busy_timeout=2147483648",
		"?_busy_timeout=1&_busy_timeout=2", "?_busy_timeout=1&_timeout=1", "?_pragma=busy_timeout(5)"} {
		c, err := Driver{}.Open(ctx, path+dsn)
		if err == nil {
			_ = c.Close()
		}
		if driver.CodeOf(err) != driver.CodeInvalidArgument {
			t.Errorf("Open(%q) = %v; want %s", dsn, err, driver.CodeInvalidArgument)
		}
	}
}
