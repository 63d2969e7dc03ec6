package stmtcache

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

func TestCache(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c := New(db)
	const q = "SELECT 1"
	if c.Peek(q) != nil {
		t.Fatal("Peek of an empty Cache found a statement")
	}
	st, err := c.Get(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Get(ctx, q); again != st || c.Peek(q) != st {
		t.Fatal("a second Get prepared again")
	}
	if _, err := c.Get(ctx, "SELEC nonsense"); err == nil {
		t.Fatal("Get of a bad statement succeeded")
	}
	const w = "SELECT 2"
	c.Warm(w)
	for deadline := time.Now().Add(10 * time.Second); c.Peek(w) == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Warm never prepared the statement")
		}
	}
	c.Close()
	if c.Peek(q) != nil {
		t.Fatal("Close kept a statement")
	}
	c.Warm("SELECT 3")
	if c.Peek("SELECT 3") != nil {
		t.Fatal("Warm after Close prepared")
	}
	var one int
	if err := st.QueryRow().Scan(&one); err == nil {
		t.Fatal("a statement Close closed still runs")
	}
}
