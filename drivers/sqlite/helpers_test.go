package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// testSchema is the driver tests' schema: todos (two scopes, a declared
// index), kinds (one nullable column of every type), users (unique index).
func testSchema() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{
		{
			Name: "todos",
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "title", Type: driver.TypeString},
				{Name: "done", Type: driver.TypeBoolean},
				{Name: "project_id", Type: driver.TypeString},
				{Name: "owner_id", Type: driver.TypeString},
				{Name: "updated_at", Type: driver.TypeInteger},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "project", Column: "project_id"}, {Variable: "owner", Column: "owner_id"}},
			Indexes:    []driver.Index{{Name: "by_owner", Columns: []string{"owner_id"}}},
		},
		{
			Name: "kinds",
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "grp", Type: driver.TypeString},
				{Name: "s", Type: driver.TypeString, Nullable: true},
				{Name: "i", Type: driver.TypeInteger, Nullable: true},
				{Name: "f", Type: driver.TypeFloat, Nullable: true},
				{Name: "b", Type: driver.TypeBoolean, Nullable: true},
				{Name: "j", Type: driver.TypeJSON, Nullable: true},
				{Name: "x", Type: driver.TypeBytes, Nullable: true},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
		},
		{
			Name: "users",
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "org", Type: driver.TypeString},
				{Name: "email", Type: driver.TypeString},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "org", Column: "org"}},
			Indexes:    []driver.Index{{Name: "by_email", Columns: []string{"email"}, Unique: true}},
		},
	}}
}

// openDSN opens dsn, closing it at the end of the test.
func openDSN(t testing.TB, dsn string) *Conn {
	t.Helper()
	conn, err := Driver{}.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn.(*Conn)
}

// openTest opens a fresh file store with testSchema ensured.
func openTest(t testing.TB) (*Conn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	c := openDSN(t, path)
	if err := c.EnsureSchema(context.Background(), testSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return c, path
}

func todoRow(id, project, owner string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1,
		Scopes: driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{"id": id, "title": "t " + id, "done": false, "project_id": project, "owner_id": owner, "updated_at": int64(7)}}
}

// pushRows upserts rows of todos in one Tx with one commit and returns its seq.
func pushRows(t testing.TB, c *Conn, partition string, rows ...driver.Row) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var changes []driver.Change
	for _, r := range rows {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatalf("UpsertRow: %v", err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", CreatedAtMs: 1, Changes: changes})
	if err != nil {
		t.Fatalf("AppendCommit: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return seq
}
