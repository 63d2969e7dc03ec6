package mysql

import (
	"context"
	"slices"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// physicalIndexes returns the names of table's engine indexes.
func physicalIndexes(t *testing.T, c *Conn, table string) []string {
	t.Helper()
	rows, err := c.db.Query(`SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// TestServingIndex: a declared index whose key is a scope index's or the
// primary key's is served by that twin; any other by itself.
func TestServingIndex(t *testing.T) {
	tbl := driver.Table{Name: "t", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "a", Type: driver.TypeString},
			{Name: "b", Type: driver.TypeString}},
		Scopes: []driver.Scope{{Variable: "a", Column: "a"}}}
	for _, tc := range []struct {
		ix   driver.Index
		want string
	}{
		{driver.Index{Name: "x", Columns: []string{"a"}}, "_sync_s1"},
		{driver.Index{Name: "x", Columns: []string{"a", "id"}}, "_sync_s1"},
		{driver.Index{Name: "x", Columns: []string{"id"}}, "PRIMARY"},
		{driver.Index{Name: "x", Columns: []string{"a"}, Unique: true}, "x"},
		{driver.Index{Name: "x", Columns: []string{"b"}}, "x"},
		{driver.Index{Name: "x", Columns: []string{"a", "b"}}, "x"},
		{driver.Index{Name: "x", Columns: []string{"id", "a"}}, "x"},
	} {
		if got := servingIndex(tbl, tc.ix); got != tc.want {
			t.Errorf("servingIndex(%v) = %s, want %s", tc.ix, got, tc.want)
		}
	}
}

// TestTwinIndexNotCreated: todos' by_owner (owner_id) has the owner
// scope index's key, so the store does not build and write a second tree
// for it; a lookup through it is served by the twin, and a schema change
// that gives it a key of its own creates it (and back, drops it).
func TestTwinIndexNotCreated(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := conn.(*Conn)
	s := conformance.TestSchema()
	if err := c.EnsureSchema(ctx, s); err != nil {
		t.Fatal(err)
	}
	scope := scopeIndexName(s.Tables[0], "owner_id")
	if got := physicalIndexes(t, c, "todos"); slices.Contains(got, "by_owner") || !slices.Contains(got, scope) {
		t.Fatalf("todos' indexes: %v; want %s and no by_owner", got, scope)
	}
	if got := physicalIndexes(t, c, "users"); !slices.Contains(got, "by_email") {
		t.Fatalf("users' indexes: %v; want by_email (unique: no twin)", got)
	}
	pushRows(t, c, "p", todoRow("a", "p1", "o1"), todoRow("b", "p1", "o2"), todoRow("c", "p2", "o1"))
	lookup := func() []string {
		t.Helper()
		rows, err := c.ScanRowsByIndex(ctx, "p", driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o1"}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := lookup(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("lookup o1 = %v, want [a c]", got)
	}

	// by_owner gets a key of its own: it is created.
	s2 := conformance.TestSchema()
	s2.Version = 2
	s2.Tables[0].Indexes = []driver.Index{{Name: "by_owner", Columns: []string{"owner_id", "title"}}}
	if err := c.EnsureSchema(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if got := physicalIndexes(t, c, "todos"); !slices.Contains(got, "by_owner") {
		t.Fatalf("todos' indexes after v2: %v; want by_owner", got)
	}
	// Back to the twin's key: dropped, and lookups still served.
	s3 := conformance.TestSchema()
	s3.Version = 3
	if err := c.EnsureSchema(ctx, s3); err != nil {
		t.Fatal(err)
	}
	if got := physicalIndexes(t, c, "todos"); slices.Contains(got, "by_owner") {
		t.Fatalf("todos' indexes after v3: %v; want no by_owner", got)
	}
	if got := lookup(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("lookup o1 after v3 = %v, want [a c]", got)
	}
}

// TestTwinIndexOfAnOlderStore: a store created before kept by_owner as
// an index of its own; it keeps working (the index is written, lookups
// read the twin) and a schema change still handles it.
func TestTwinIndexOfAnOlderStore(t *testing.T) {
	ctx := context.Background()
	c := openStore(t)
	if _, err := c.db.Exec("CREATE INDEX by_owner ON todos (" + partitionColumn + ", owner_id)"); err != nil {
		t.Fatal(err)
	}
	pushRows(t, c, "p", todoRow("a", "p1", "o1"), todoRow("b", "p1", "o2"))
	rows, err := c.ScanRowsByIndex(ctx, "p", driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o2"}, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].ID != "b" {
		t.Fatalf("lookup o2 = %v, %v; want [b]", rows, err)
	}
	s2 := conformance.TestSchema()
	s2.Version = 2
	s2.Tables[0].Indexes = []driver.Index{{Name: "by_owner", Columns: []string{"owner_id", "title"}}}
	if err := c.EnsureSchema(ctx, s2); err != nil {
		t.Fatal(err)
	}
	sc, err := c.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	got, exists, err := indexDef(ctx, sc, "todos", "by_owner")
	if err != nil || !exists || !slices.Equal(got.Columns, []string{"owner_id", "title"}) {
		t.Fatalf("by_owner after v2: %v %v %v; want (owner_id, title)", got, exists, err)
	}
}
