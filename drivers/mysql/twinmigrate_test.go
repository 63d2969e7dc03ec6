package mysql

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
	"github.com/syncstore/syncstore/internal/testdb"
)

// twinSchema is a table "items" scoped by grp, with the declared indexes
// given, at version v.
func twinSchema(v int64, indexes ...driver.Index) driver.Schema {
	return driver.Schema{Version: v, Tables: []driver.Table{{
		Name: "items",
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "grp", Type: driver.TypeString},
			{Name: "tag", Type: driver.TypeString, Nullable: true},
			{Name: "n", Type: driver.TypeInteger, Nullable: true},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
		Indexes:    indexes,
	}}}
}

// openTwinStore opens a fresh store with s ensured.
func openTwinStore(t *testing.T, s driver.Schema) *Conn {
	t.Helper()
	conn, err := Driver{}.Open(context.Background(), testdb.NewMySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return conn.(*Conn)
}

// physicalShapes returns every engine index of table: name → its key
// (the partition column left out) and uniqueness.
func physicalShapes(t *testing.T, c *Conn, table string) map[string]driver.Index {
	t.Helper()
	ctx := context.Background()
	sc, err := c.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	out := map[string]driver.Index{}
	for _, name := range physicalIndexes(t, c, table) {
		ix, _, err := indexDef(ctx, sc, table, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = ix
	}
	return out
}

func pushItems(t *testing.T, c *Conn, partition string, rows ...driver.Row) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, r := range rows {
		if err := tx.UpsertRow(ctx, "items", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func item(id, grp string, tag any, n any) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": grp},
		Values: driver.Values{"id": id, "grp": grp, "tag": tag, "n": n}}
}

// lookupIDs returns the ids of a lookup through index ix, all pages of
// size limit.
func lookupIDs(t *testing.T, c *Conn, partition, ix string, limit int, values ...any) []string {
	t.Helper()
	var ids []string
	after := ""
	for {
		rows, err := c.ScanRowsByIndex(context.Background(), partition,
			driver.IndexQuery{Table: "items", Index: ix, Values: values, AfterRowID: after, Limit: limit})
		if err != nil {
			t.Fatalf("lookup %s %v: %v", ix, values, err)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if len(rows) < limit {
			return ids
		}
		after = rows[len(rows)-1].ID
	}
}

// TestTwinIndexShapes: each shape a twin serves — a scope column, a scope
// column and the id, the id alone — is not built, and its lookups
// (paged, in id order, other partitions and values excluded) run through
// the twin: the scope index or the primary key, without a filesort.
// Shapes with a key of their own (a unique index on the scope column, an
// index on another column) are built.
func TestTwinIndexShapes(t *testing.T) {
	s := twinSchema(1,
		driver.Index{Name: "by_grp", Columns: []string{"grp"}},
		driver.Index{Name: "by_grp_id", Columns: []string{"grp", "id"}},
		driver.Index{Name: "by_id", Columns: []string{"id"}},
		driver.Index{Name: "by_tag", Columns: []string{"tag"}},
		driver.Index{Name: "by_id_grp", Columns: []string{"id", "grp"}},
	)
	c := openTwinStore(t, s)
	scope := scopeIndexName(s.Tables[0], "grp")
	got := slices.Sorted(maps.Keys(physicalShapes(t, c, "items")))
	if want := []string{"PRIMARY", scope, "by_id_grp", "by_tag"}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("items' indexes: %v, want %v", got, want)
	}
	var rows []driver.Row
	for i := range 9 {
		var tag any
		if i%3 != 0 {
			tag = fmt.Sprint("t", i%2)
		}
		rows = append(rows, item(fmt.Sprintf("i%d", 9-i), fmt.Sprint("g", i%2), tag, int64(i)))
	}
	pushItems(t, c, "P", rows...)
	pushItems(t, c, "Q", item("i5", "g1", nil, nil), item("i0", "g1", nil, nil))
	for _, tc := range []struct {
		ix     string
		values []any
		want   []string
	}{
		{"by_grp", []any{"g0"}, []string{"i1", "i3", "i5", "i7", "i9"}},
		{"by_grp", []any{"g1"}, []string{"i2", "i4", "i6", "i8"}},
		{"by_grp", []any{"g2"}, nil},
		{"by_grp_id", []any{"g0", "i5"}, []string{"i5"}},
		{"by_grp_id", []any{"g1", "i5"}, nil},
		{"by_id", []any{"i4"}, []string{"i4"}},
		{"by_id", []any{"i0"}, nil},
		{"by_tag", []any{nil}, []string{"i3", "i6", "i9"}},
		{"by_id_grp", []any{"i7", "g0"}, []string{"i7"}},
	} {
		for _, limit := range []int{1, 2, 100} {
			if got := lookupIDs(t, c, "P", tc.ix, limit, tc.values...); !slices.Equal(got, tc.want) {
				t.Errorf("lookup %s %v (limit %d) = %v, want %v", tc.ix, tc.values, limit, got, tc.want)
			}
		}
	}
	x, err := c.state.Table("items")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.Exec("ANALYZE TABLE items"); err != nil {
		t.Fatal(err)
	}
	// by_grp_id: one row at most (the id is unique in the partition),
	// read through the whole key (ref on three parts), as by its own
	// index of the same key: the filesort sorts that row.
	for _, p := range []struct {
		ix, key string
		values  []any
		sorted  bool
	}{
		{"by_grp", scope, []any{"g0"}, false},
		{"by_grp_id", scope, []any{"g0", "i5"}, true},
		{"by_id", "PRIMARY", []any{"i4"}, false},
		{"by_tag", "by_tag", []any{nil}, false},
	} {
		ix, _ := x.def.Index(p.ix)
		q, args, err := x.indexLookup("P", ix, driver.IndexQuery{Table: "items", Index: p.ix, Values: p.values, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		expectPlan(t, "lookup "+p.ix, explain(t, c, q, args...), map[string]string{"items": p.key}, p.sorted)
	}
}

// TestTwinIndexMigrations: a schema change into or out of a twin's key,
// on a store built by this driver or by one that built the twin's copy,
// interrupted after any of its steps and re-run, ends with the indexes a
// store created at the new version has (except the copy an older store
// keeps while the index is unchanged), and lookups answer as before.
func TestTwinIndexMigrations(t *testing.T) {
	ctx := context.Background()
	ownKey := driver.Index{Name: "by_grp", Columns: []string{"grp", "tag"}}
	ownN := driver.Index{Name: "by_grp", Columns: []string{"grp", "n"}}
	twin := driver.Index{Name: "by_grp", Columns: []string{"grp"}}
	twinID := driver.Index{Name: "by_grp", Columns: []string{"grp", "id"}}
	unique := driver.Index{Name: "by_grp", Columns: []string{"grp"}, Unique: true}
	for _, tc := range []struct {
		name     string
		from, to []driver.Index
		copyOf   bool // the store at from has by_grp built although a twin serves it (an older store)
	}{
		{"own key to twin", []driver.Index{ownN}, []driver.Index{twin}, false},
		{"own string key to twin", []driver.Index{ownKey}, []driver.Index{twinID}, false},
		{"twin to own key", []driver.Index{twin}, []driver.Index{ownKey}, false},
		{"twin to twin", []driver.Index{twin}, []driver.Index{twinID}, false},
		{"twin to unique", []driver.Index{twin}, []driver.Index{unique}, false},
		{"unique to twin", []driver.Index{unique}, []driver.Index{twin}, false},
		{"twin dropped", []driver.Index{twin}, nil, false},
		{"older copy to twin", []driver.Index{twin}, []driver.Index{twinID}, true},
		{"older copy to own key", []driver.Index{twin}, []driver.Index{ownKey}, true},
		{"older copy dropped", []driver.Index{twin}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := twinSchema(1, tc.from...), twinSchema(2, tc.to...)
			fresh := physicalShapes(t, openTwinStore(t, to), "items")
			c := openTwinStore(t, from)
			steps := c.plan(storelayout.LayoutOf(from), to)
			for k := 0; k <= len(steps); k++ {
				if k > 0 {
					c = openTwinStore(t, from)
				}
				if tc.copyOf {
					if _, err := c.db.Exec("CREATE INDEX by_grp ON items (" + partitionColumn + ", grp)"); err != nil {
						t.Fatal(err)
					}
				}
				// One row per group: a unique index on grp may be created.
				pushItems(t, c, "P", item("a", "g1", "x", int64(1)), item("b", "g2", "x", int64(2)), item("c", "g3", "y", int64(3)))
				sc, err := c.db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range steps[:k] { // interrupted after k steps
					if err := s.run(ctx, sc); err != nil {
						t.Fatalf("step %q: %v", s.sql, err)
					}
				}
				_ = sc.Close()
				if err := c.EnsureSchema(ctx, to); err != nil {
					t.Fatalf("after %d of %d steps: EnsureSchema: %v", k, len(steps), err)
				}
				got := physicalShapes(t, c, "items")
				if !maps.EqualFunc(got, fresh, func(a, b driver.Index) bool { return sameIndex(a, b) }) {
					t.Errorf("after %d of %d steps: indexes %v, want %v (a store created at the new version)", k, len(steps), got, fresh)
				}
				if len(tc.to) > 0 {
					ix := tc.to[0]
					vals := []any{"g3"}
					switch {
					case slices.Equal(ix.Columns, []string{"grp", "tag"}):
						vals = []any{"g3", "y"}
					case slices.Equal(ix.Columns, []string{"grp", "id"}):
						vals = []any{"g3", "c"}
					}
					want := []string{"c"}
					if got := lookupIDs(t, c, "P", "by_grp", 1, vals...); !slices.Equal(got, want) {
						t.Errorf("after %d of %d steps: lookup %v = %v, want %v", k, len(steps), vals, got, want)
					}
				}
			}
		})
	}
}
