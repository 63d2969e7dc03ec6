package postgres

import "testing"

// TestUpsertRunsKeepOrder: adjacent upserts of a table are buffered as
// one multi-row statement (W1's 10 rows: one), a repeated id or anything
// buffered in between starts a new one, and the Tx leaves the state the
// single-row statements would: the last write of an id wins, a row
// deleted then upserted again exists.
func TestUpsertRunsKeepOrder(t *testing.T) {
	c, _ := openTest(t)
	ctx := t.Context()
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	up := func(id, title string) {
		t.Helper()
		r := todoRow(id, "pr", "o")
		r.Values["title"] = title
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		up(id, "1")
	}
	if n := len(tx.(*Tx).pending); n != 1 {
		t.Fatalf("3 upserts of distinct ids buffered as %d statements, want 1", n)
	}
	up("a", "2") // a repeated id: a new statement
	up("d", "1")
	if n := len(tx.(*Tx).pending); n != 2 {
		t.Fatalf("after a repeated id: %d statements, want 2", n)
	}
	if err := tx.DeleteRow(ctx, "todos", "b"); err != nil {
		t.Fatal(err)
	}
	up("b", "3")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"a": "2", "b": "3", "c": "1", "d": "1"} {
		row, found, err := c.GetRow(ctx, "p", "todos", id)
		if err != nil || !found || row.Values["title"] != want {
			t.Fatalf("row %s: %v, found %v, %v; want title %q", id, row.Values, found, err, want)
		}
	}
	if _, found, _ := c.GetRow(ctx, "p", "todos", "e"); found {
		t.Fatal("row e exists")
	}
}
