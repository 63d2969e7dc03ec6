package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestBlobRefsPlans pins the plans of the blob-refs statements (BLOB-1;
// docs/performance.md: cost must not grow with the store): listings walk the primary
// key, replacing and clearing a row's set use the row index, and the rows
// of a blob join the application table on its primary key.
func TestBlobRefsPlans(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 30; i++ {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		pushRows(t, c, "P", todoRow(id, "p1", "o1"))
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.(*Tx).SetBlobRefs(ctx, "todos", id, []string{"b" + id, "shared"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	todos, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	checkPlans(t, c, []planCase{
		{name: "clear a row's set", query: sqlitesql.BlobRefsClearRow, args: []any{"P", "todos", "aa"},
			want:      []string{"SEARCH _sync_blob_refs USING COVERING INDEX _sync_blob_refs_by_row (partition=? AND tbl=? AND row_id=?)"},
			forbidden: []string{"SCAN _sync_blob_refs"}},
		{name: "distinct ids", query: sqlitesql.BlobRefsListIDs, args: []any{"P", "", 10},
			want:      []string{"SEARCH _sync_blob_refs USING PRIMARY KEY (partition=? AND blob_id>?)"},
			forbidden: []string{"SCAN _sync_blob_refs", "TEMP B-TREE"}},
		{name: "rows of a blob", query: todos.BlobRefsRowsSQL(), args: []any{"P", "shared", "todos", 10},
			want: []string{"SEARCH r USING PRIMARY KEY (partition=? AND blob_id=? AND tbl=?)",
				"SEARCH t USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id=?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
	})
}

// TestBlobRefsOfRetiredTable: retiring a table (SCH-6) clears the blob
// references of its rows, in the migration's transaction (BLOB-1: a row
// that no longer exists references nothing).
func TestBlobRefsOfRetiredTable(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "P", todoRow("t1", "p1", "o1"))
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	kind := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": "k1", "grp": "g", "s": nil, "i": nil, "f": nil, "b": nil, "j": nil, "x": nil}}
	for _, step := range []func() error{
		func() error { return tx.UpsertRow(ctx, "kinds", kind) },
		func() error { return tx.(*Tx).SetBlobRefs(ctx, "kinds", "k1", []string{"b-kind", "b-both"}) },
		func() error { return tx.(*Tx).SetBlobRefs(ctx, "todos", "t1", []string{"b-both", "b-todo"}) },
		func() error { return tx.Commit(ctx) },
	} {
		if err := step(); err != nil {
			_ = tx.Rollback(ctx)
			t.Fatal(err)
		}
	}
	s := testSchema()
	s.Version = 2
	s.Tables = []driver.Table{s.Tables[0], s.Tables[2]} // kinds retired
	if err := c.EnsureSchema(ctx, s); err != nil {
		t.Fatal(err)
	}
	ids, err := c.ListReferencedBlobIDs(ctx, "P", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[b-both b-todo]" {
		t.Errorf("referenced ids after retiring kinds = %v, want [b-both b-todo]", ids)
	}
	refs, err := c.ListRowsReferencingBlob(ctx, "P", "b-both", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Table != "todos" || refs[0].RowID != "t1" {
		t.Errorf("rows referencing b-both after retiring kinds = %+v, want todos/t1 only", refs)
	}
}
