package mysql

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestGuardedFailureSurfacedByRead: a guarded write is kept (guarded.go),
// so a guard that does not hold may fail the Tx's next operation that
// reaches the engine, a read, rather than the guarded call or Commit.
// The read fails with the guard's write_conflict, and so does Commit —
// not the aborted Tx's unavailable (GW-2) — and nothing is written.
func TestGuardedFailureSurfacedByRead(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	pushRows(t, c, "p", todoRow("t1", "p7", "o1"))
	for _, base := range []int64{0, 2} { // a create over t1; an update at another version
		tx, err := c.BeginGuarded(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		row := todoRow("t1", "p7", "o1")
		row.ServerVersion, row.Values["title"] = base+1, "guarded"
		if err := tx.UpsertRowGuarded(ctx, "todos", row, base); err != nil {
			t.Fatalf("base %d: UpsertRowGuarded: %v (the write is kept: no error yet)", base, err)
		}
		if err := tx.UpsertRow(ctx, "todos", todoRow("t2", "p7", "o1")); err != nil {
			t.Fatalf("base %d: UpsertRow: %v", base, err)
		}
		_, _, err = tx.GetRow(ctx, "todos", "t2")
		if code := driver.CodeOf(err); code != driver.CodeWriteConflict {
			t.Errorf("base %d: GetRow after a failed guard: %v (code %q), want %q", base, err, code, driver.CodeWriteConflict)
		}
		err = tx.Commit(ctx)
		if code := driver.CodeOf(err); code != driver.CodeWriteConflict {
			t.Errorf("base %d: Commit after a failed guard: %v (code %q), want %q", base, err, code, driver.CodeWriteConflict)
		}
		got, _, err := c.GetRow(ctx, "p", "todos", "t1")
		if err != nil || got.ServerVersion != 1 || got.Values["title"] != "title t1" {
			t.Errorf("base %d: t1 after a failed guard: %+v, %v; want it unchanged", base, got, err)
		}
		if _, found, err := c.GetRow(ctx, "p", "todos", "t2"); err != nil || found {
			t.Errorf("base %d: t2 after a failed guard: found %v, %v; want nothing written", base, found, err)
		}
		if max, err := c.MaxCommitSeq(ctx, "p"); err != nil || max != 1 {
			t.Errorf("base %d: max seq %d, %v; want 1", base, max, err)
		}
	}
}
