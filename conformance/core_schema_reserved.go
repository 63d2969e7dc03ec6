package conformance

import (
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// SCH-2 engine-reserved names: identifiers of the portable syntax that
// some engine refuses or shadows as a table or index name. A schema that
// uses one is refused by sync on every driver (schema_invalid, nothing
// written), so a schema valid on one driver is valid on all.

// schEngineReservedSchemas returns schemas derived from base (at version
// v) that add one table, or one index of users, under a name an engine
// reserves: SQLite's table-valued functions (a table named json_each
// shadows json_each(…) in the driver's own statements), SQLite's sqlite_
// objects, D1's _cf_ objects, PostgreSQL's pg_ catalog (searched before
// the store's schema) and MySQL's PRIMARY index.
func schEngineReservedSchemas(base driver.Schema, v int64) []struct {
	name   string
	schema driver.Schema
} {
	users, _ := base.Table(tUsers)
	addTable := func(name string) driver.Schema {
		s := schClone(base)
		s.Version = v
		tb := schClone(driver.Schema{Tables: []driver.Table{users}}).Tables[0]
		tb.Name = name
		s.Tables = append(s.Tables, tb)
		return s
	}
	addIndex := func(name string) driver.Schema {
		return schEdit(base, v, tUsers, func(tb *driver.Table) {
			tb.Indexes = append(tb.Indexes, driver.Index{Name: name, Columns: []string{"org"}})
		})
	}
	var out []struct {
		name   string
		schema driver.Schema
	}
	for _, n := range []string{"json_each", "JSON_Each", "json_tree", "pragma_page_count", "Pragma_Module_List",
		"sqlite_users", "SQLITE_STAT1", "_cf_KV", "_CF_users", "pg_class", "PG_Tables"} {
		out = append(out, struct {
			name   string
			schema driver.Schema
		}{"table named " + n, addTable(n)})
	}
	for _, n := range []string{"sqlite_by_org", "_cf_by_org", "pg_by_org", "pragma_by_org", "primary", "PRIMARY"} {
		out = append(out, struct {
			name   string
			schema driver.Schema
		}{"index named " + n, addIndex(n)})
	}
	return out
}

func init() {
	register(
		// Catches a sync layer that admits a name an engine reserves, so
		// that EnsureSchema fails on that engine with an internal error
		// (SQLite: "'json_each' is not a function", "object name reserved
		// for internal use"; MySQL: "Incorrect index name"), succeeds on
		// another, or leaves part of the schema behind.
		Case{Name: "SCH-2/engine-reserved-names-are-refused", Run: func(t T, h Harness) {
			ctx := t.Context()
			// Each refused schema on a store of its own: nothing of it
			// may be left behind to fail the valid schema ensured after.
			for _, bad := range schEngineReservedSchemas(TestSchema(), 1) {
				conn := h.Open(t)
				store := syncstore.OpenConn(conn)
				expectCode(t, "SCH-2: EnsureSchema on a fresh store with a "+bad.name, store.EnsureSchema(ctx, bad.schema), driver.CodeSchemaInvalid)
				if s, ok := store.Schema(); ok {
					t.Errorf("SCH-2: %s: Store.Schema() after the refused schema = version %d, true; want false", bad.name, s.Version)
				}
				added := bad.schema.Tables[len(bad.schema.Tables)-1].Name
				for _, table := range []string{tTodos, added} {
					_, _, err := conn.GetRow(ctx, "p1", table, "x")
					expectCode(t, "SCH-2: "+bad.name+": driver table "+table+" after the refused schema", err, driver.CodeUnknownTable)
				}
				if err := store.EnsureSchema(ctx, TestSchema()); err != nil {
					t.Errorf("SCH-2: %s: EnsureSchema(TestSchema) after the refused schema: %v; want nil", bad.name, err)
					continue
				}
				td := todo("t1", "p", "o")
				push(t, conn, "p1", tTodos, td)
				schExpectRow(t, "SCH-2: "+bad.name+": todos row pushed after the refused schema", conn, "p1", tTodos, td)
			}
			conn := h.Open(t)
			store := syncstore.OpenConn(conn)
			must(t, "SCH-2: EnsureSchema(TestSchema)", store.EnsureSchema(ctx, TestSchema()))
			td := todo("t1", "p", "o")
			push(t, conn, "p1", tTodos, td)
			for _, bad := range schEngineReservedSchemas(TestSchema(), 2) {
				expectCode(t, "SCH-2: EnsureSchema(version 2) with a "+bad.name, store.EnsureSchema(ctx, bad.schema), driver.CodeSchemaInvalid)
			}
			schExpectKept(t, "SCH-2: Store.Schema() after refused schemas", store, TestSchema())
			// The store still works: a push after the refused schemas lands.
			td2 := todo("t2", "p", "o")
			push(t, conn, "p1", tTodos, td2)
			schExpectRow(t, "SCH-2: todos row pushed before the refused schemas", conn, "p1", tTodos, td)
			schExpectRow(t, "SCH-2: todos row pushed after the refused schemas", conn, "p1", tTodos, td2)
			schExpectV1Layout(t, conn, "SCH-2")
		}},
	)
}
