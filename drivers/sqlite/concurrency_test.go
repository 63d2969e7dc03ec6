package sqlite

import (
	"context"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// TestTwoProcessesSerialize: two Conns on one file (as two processes) push
// to one partition at once; BEGIN IMMEDIATE serializes them, so the
// sequence is dense and no update is lost (TX-1, SEQ-4).
func TestTwoProcessesSerialize(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openDSN(t, path)
	if err := b.EnsureSchema(ctx, testSchema()); err != nil {
		t.Fatal(err)
	}
	const perConn = 20
	var wg gosync.WaitGroup
	errs := make(chan error, 2*perConn)
	for _, c := range []*Conn{a, b} {
		wg.Add(1)
		go func(c *Conn) {
			defer wg.Done()
			for i := 0; i < perConn; i++ {
				errs <- incrementCounter(ctx, c)
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	row, ok, err := a.GetRow(ctx, "P", "todos", "counter")
	if err != nil || !ok {
		t.Fatalf("counter: %v %v", ok, err)
	}
	if got := row.Values["updated_at"]; got != int64(2*perConn) {
		t.Errorf("counter = %v, want %d (lost updates)", got, 2*perConn)
	}
	if m, _ := b.MaxCommitSeq(ctx, "P"); m != 2*perConn {
		t.Errorf("MaxCommitSeq = %d, want %d", m, 2*perConn)
	}
	win, err := a.ReadCommitWindow(ctx, "P", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1000, LimitChanges: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range win {
		if c.Seq != int64(i+1) {
			t.Fatalf("commit %d has seq %d: sequence not dense", i, c.Seq)
		}
	}
}

// incrementCounter reads the counter row, adds one and commits.
func incrementCounter(ctx context.Context, c *Conn) error {
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	row, ok, err := tx.GetRow(ctx, "todos", "counter")
	if err != nil {
		return err
	}
	if !ok {
		row = todoRow("counter", "p", "o")
		row.Values["updated_at"] = int64(0)
	}
	row.Values["updated_at"] = row.Values["updated_at"].(int64) + 1
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		return err
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{Changes: []driver.Change{{Table: "todos", RowID: "counter", Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// TestConstraintKeepsTxUsable: a unique collision fails one statement with
// CodeConstraintViolation, changes nothing, and the Tx goes on: its other
// writes commit, or CommitRejected discards them (SCH-10, TX-8).
func TestConstraintKeepsTxUsable(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	user := func(id, email string) driver.Row {
		return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"org": "o"}, Values: driver.Values{"id": id, "org": "o", "email": email}}
	}
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "users", user("u1", "a@x")); err != nil {
		t.Fatal(err)
	}
	err = tx.UpsertRow(ctx, "users", user("u2", "a@x"))
	wantCode(t, "collision", err, driver.CodeConstraintViolation)
	if _, ok, _ := tx.GetRow(ctx, "users", "u2"); ok {
		t.Errorf("colliding row was written")
	}
	if err := tx.UpsertRow(ctx, "users", user("u3", "b@x")); err != nil {
		t.Fatalf("Tx unusable after a collision: %v", err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{}); err != nil {
		t.Fatal(err)
	}
	rej := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5, Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.dup"}}}
	if err := tx.CommitRejected(ctx, "c", "k", rej); err != nil {
		t.Fatalf("CommitRejected after a collision: %v", err)
	}
	for _, id := range []string{"u1", "u3"} {
		if _, ok, _ := c.GetRow(ctx, "P", "users", id); ok {
			t.Errorf("CommitRejected kept staged row %s", id)
		}
	}
	if m, _ := c.MaxCommitSeq(ctx, "P"); m != 0 {
		t.Errorf("CommitRejected consumed seq %d", m)
	}
	if r, ok, err := c.GetPushResult(ctx, "P", "c", "k"); !ok || err != nil || r.Status != driver.PushRejected {
		t.Errorf("rejected result: %+v %v %v", r, ok, err)
	}
	err = tx.UpsertRow(ctx, "users", user("u4", "c@x"))
	wantCode(t, "after CommitRejected", err, driver.CodeTxFinished)
}

// TestReadersNotBlockedByWriter: reads outside a Tx answer while a Tx
// holds the writer (the reader pool, TX-4), promptly.
func TestReadersNotBlockedByWriter(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "P", todoRow("a", "p", "o"))
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.UpsertRow(ctx, "todos", todoRow("b", "p", "o")); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := c.ScanRows(rctx, "P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != "a" {
		t.Errorf("reader saw %v, want only the committed row a", rowIDs(rows))
	}
}
