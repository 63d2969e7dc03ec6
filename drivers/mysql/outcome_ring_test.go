package mysql

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// The outcomes ring (outcome.go) and the engine behaviour settling relies
// on, checked on the real engine.

// TestOutcomeRingCoverage: the outcomes ring settles a Tx whose entry is
// still in it (landed), one that rolled back while the ring still covers
// it (not landed), and says "unknown" once more Txs committed after it
// than the ring keeps (outcome.go).
func TestOutcomeRingCoverage(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	begin := func() *Tx {
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		return tx.(*Tx)
	}
	landed := begin()
	pushRowsTx(t, landed, 0)
	if err := landed.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	lost := begin()
	pushRowsTx(t, lost, 1)
	_ = lost.Rollback(ctx)
	for _, tc := range []struct {
		name    string
		tx      *Tx
		landed  bool
		unknown bool
	}{{"landed", landed, true, false}, {"rolled-back", lost, false, false}} {
		got, err := c.lookUpCommit(ctx, "P", tc.tx.token, tc.tx.baseSeq)
		if err != nil || got != tc.landed {
			t.Errorf("%s: look-up = %v, %v; want %v", tc.name, got, err, tc.landed)
		}
	}
	// outcomeRingEntries more Txs: the landed one drops out of the ring,
	// which no longer covers either.
	for i := range outcomeRingEntries {
		tx := begin()
		pushRowsTx(t, tx, 2+i)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tx := range []*Tx{landed, lost} {
		if got, err := c.lookUpCommit(ctx, "P", tx.token, tx.baseSeq); err != errRingMoved {
			t.Errorf("look-up after the ring moved on = %v, %v; want errRingMoved", got, err)
		}
	}
	// A Tx with no commit of its own keeps max_seq: Txs after it begin
	// on the same max_seq, so its entry is covered only while the ring
	// is not full.
	last := begin()
	_ = last.Rollback(ctx)
	if got, err := c.lookUpCommit(ctx, "P", last.token, last.baseSeq); err != nil || got {
		t.Errorf("rolled-back Tx after a full ring: look-up = %v, %v; want false, nil", got, err)
	}
}

// pushRowsTx stages push i (a row, a commit) in tx.
func pushRowsTx(t *testing.T, tx *Tx, i int) {
	t.Helper()
	ctx := context.Background()
	r := todoRow(fmt.Sprintf("r%d", i), "p", "o")
	if err := tx.UpsertRow(ctx, "todos", r); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: fmt.Sprintf("k%d", i), CreatedAtMs: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestKilledSessionGoneMeansFinal pins the engine behaviour settling
// relies on (outcome.go): a session with an open transaction that is
// killed leaves the process list only after its transaction was rolled
// back — its writes are gone and its row locks free (a NOWAIT locking
// read succeeds at once) — and a dirty read sees an open transaction's
// uncommitted write of the partition row.
func TestKilledSessionGoneMeansFinal(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	pushRows(t, c, "P", todoRow("base", "p", "o"))
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	mt := tx.(*Tx)
	db, err := c.outcomeDB()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	dirty, err := readOutcomes(ctx, sc, "P", true)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := findOutcome(dirty, mt.token)
	if !ok {
		t.Fatalf("a READ UNCOMMITTED read does not see the open Tx's outcome entry")
	}
	committed, err := readOutcomes(ctx, sc, "P", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := findOutcome(committed, mt.token); ok {
		t.Fatalf("a committed read sees the open Tx's outcome entry")
	}
	if err := endSession(ctx, sc, e.session); err != nil {
		t.Fatalf("end the session: %v", err)
	}
	var got int64
	if err := sc.QueryRowContext(ctx, "SELECT max_seq FROM _sync_partitions WHERE p = ? FOR UPDATE NOWAIT", "P").Scan(&got); err != nil {
		t.Fatalf("the killed session's row lock is still held once it left the process list: %v", err)
	}
	if got != 1 {
		t.Fatalf("max_seq = %d once the killed session left the process list; want 1 (its reservation rolled back)", got)
	}
}
