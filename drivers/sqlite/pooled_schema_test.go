package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestPooledPushReadsAcrossSchemaChanges: a push's reads of rows and
// tombstones by id list, once pooled on the writer, stay right across
// schema changes between pushes — an index added (by another Conn of the
// file while this one still holds the old schema, then by this one), the
// table retired and added again (the same text, now over another table:
// SQLite prepares a statement again when the schema changed under it),
// a column appended (a new text) — each push reading what a Conn opened
// afresh, with nothing pooled, reads.
func TestPooledPushReadsAcrossSchemaChanges(t *testing.T) {
	ctx := context.Background()
	c, path := openTest(t)
	other := openDSN(t, path) // another process on the file
	keys := []driver.RowKey{{Table: "todos", ID: "a"}, {Table: "todos", ID: "c"}, {Table: "todos", ID: "z"}}
	n := 0
	read := func(c *Conn) driver.PushRead {
		t.Helper()
		n++
		tx, pr, err := c.BeginPush(ctx, "P", "client", fmt.Sprint("commit-", n), keys)
		if err != nil {
			t.Fatalf("BeginPush: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		return pr
	}
	// write stores a, b, c (version v) and deletes c: a found, c a
	// tombstone, z missing.
	write := func(v int64) {
		t.Helper()
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b", "c"} {
			r := todoRow(id, "p", "o")
			r.ServerVersion = v
			if err := tx.UpsertRow(ctx, "todos", r); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.DeleteRow(ctx, "todos", "c"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// check compares c's read with a fresh Conn's at schema s.
	check := func(what string, s driver.Schema) {
		t.Helper()
		fresh := openDSN(t, path)
		if err := fresh.EnsureSchema(ctx, s); err != nil {
			t.Fatal(err)
		}
		want := read(fresh)
		_ = fresh.Close()
		got := read(c)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the pooled reads differ from a fresh Conn's (-fresh +pooled):\n%s", what, diff)
		}
		if !got.Found[0] || got.Found[1] || got.Found[2] || got.Tombstones[1] == 0 {
			t.Errorf("%s: read %+v; want a found, c's tombstone, z missing", what, got)
		}
	}
	pooled := func(what string, s driver.Schema) {
		t.Helper()
		read(c) // its Begin prepares on the pool what the last read's Tx prepared for itself
		x, err := c.state.Table("todos")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{x.GetIn(3), sqlitesql.TombstonesIn(2)} {
			if c.wr.Peek(q) == nil {
				t.Fatalf("%s: not pooled: %.70s", what, q)
			}
		}
		check(what, s)
	}

	v1 := testSchema()
	write(1)
	read(c)
	pooled("v1", v1)

	v2 := testSchema()
	v2.Version = 2
	v2.Tables[0].Indexes = append(v2.Tables[0].Indexes, driver.Index{Name: "by_title", Columns: []string{"title"}})
	if err := other.EnsureSchema(ctx, v2); err != nil {
		t.Fatal(err)
	}
	check("v2 ensured by another Conn", v2)
	if err := c.EnsureSchema(ctx, v2); err != nil {
		t.Fatal(err)
	}
	pooled("v2", v2)

	v3 := testSchema() // todos retired
	v3.Version = 3
	v3.Tables = v3.Tables[1:]
	if err := c.EnsureSchema(ctx, v3); err != nil {
		t.Fatal(err)
	}
	v4 := testSchema() // todos added again, the same table
	v4.Version = 4
	if err := c.EnsureSchema(ctx, v4); err != nil {
		t.Fatal(err)
	}
	write(2)
	check("v4: todos retired and added again", v4)
	pooled("v4", v4)

	v5 := testSchema() // a column appended
	v5.Version = 5
	v5.Tables[0].Columns = append(v5.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
	if err := other.EnsureSchema(ctx, v5); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureSchema(ctx, v5); err != nil {
		t.Fatal(err)
	}
	write(3)
	read(c)
	pooled("v5", v5)
}
