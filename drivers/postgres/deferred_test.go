package postgres

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestDeferredBeginStaleMaxSeq: Conn A knows partition p's max seq from
// its last push; Conn B (another store on the same database) then pushes
// to p. A's next push, deferred on the max it knew, must not land with a
// seq B took: its Commit fails with write_conflict and writes nothing
// (TX-9), and the retry lands as the next seq — the log stays 1…N with
// every push once (SEQ-4). A Tx of A that reads first (a live Begin)
// learns the new max under the lock and never conflicts.
func TestDeferredBeginStaleMaxSeq(t *testing.T) {
	a, dsn := openTest(t)
	b := openDSN(t, dsn)
	ctx := t.Context()
	push := func(c *Conn, first int) (int64, error) { return pushTodos(ctx, c, "p", first, 3) }
	if seq, err := push(a, 0); err != nil || seq != 1 {
		t.Fatalf("A's first push: seq %d, %v; want 1", seq, err)
	}
	if seq, err := push(b, 10); err != nil || seq != 2 {
		t.Fatalf("B's push: seq %d, %v; want 2", seq, err)
	}
	seq, err := push(a, 20)
	if driver.CodeOf(err) != driver.CodeWriteConflict {
		t.Fatalf("A's push on a stale max seq: seq %d, %v; want write_conflict", seq, err)
	}
	if _, found, err := a.GetPushResult(ctx, "p", "c1", "cc20"); err != nil || found {
		t.Fatalf("the conflicting push left a result: %v, %v", found, err)
	}
	if seq, err := push(a, 20); err != nil || seq != 3 {
		t.Fatalf("A's retry: seq %d, %v; want 3", seq, err)
	}

	// B is stale now; a Tx of B that reads first locks the partition and
	// allocates from the max it reads there.
	tx, err := b.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, _, err := tx.GetRow(ctx, "todos", "r0000000"); err != nil {
		t.Fatal(err)
	}
	if seq, err := stageTodos(ctx, tx, 30, 3, "cc30"); err != nil || seq != 4 {
		t.Fatalf("B's push that read first: seq %d, %v; want 4", seq, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, ccid := range []string{"cc0", "cc10", "cc20", "cc30"} {
		r, found, err := a.GetPushResult(ctx, "p", "c1", ccid)
		if err != nil || !found || r.CommitSeq != int64(i+1) {
			t.Fatalf("push %s: result %+v, found %v, %v; want commit seq %d", ccid, r, found, err, i+1)
		}
	}
	if max, err := a.MaxCommitSeq(ctx, "p"); err != nil || max != 4 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 4", max, err)
	}
}
