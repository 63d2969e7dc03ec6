package conformance

import (
	"context"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// SCH-2 cases: schemas that do not compile are rejected by sync before a
// driver sees them, and every identifier that does compile (63 bytes,
// SQL keywords, mixed case, names near the reserved prefixes) works on the
// driver end to end.

// schBadSchemas returns schemas that break SCH-1/SCH-2, each derived from
// base (at version v) with exactly one defect.
func schBadSchemas(base driver.Schema, v int64) []struct {
	name   string
	schema driver.Schema
} {
	col := func(table string, c driver.Column) driver.Schema {
		return schEdit(base, v, table, func(tb *driver.Table) { tb.Columns = append(tb.Columns, c) })
	}
	nullable := func(name string) driver.Column {
		return driver.Column{Name: name, Type: driver.TypeString, Nullable: true}
	}
	rename := func(name string) driver.Schema {
		return schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Name = name })
	}
	index := func(ix driver.Index) driver.Schema {
		return schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Indexes = append(tb.Indexes, ix) })
	}
	long := strings.Repeat("a", 64)
	out := []struct {
		name   string
		schema driver.Schema
	}{
		{"version 0", func() driver.Schema { s := schClone(base); s.Version = 0; return s }()},
		{"table name starts with a digit", rename("1users")},
		{"table name with a dash", rename("us-ers")},
		{"empty table name", rename("")},
		{"table name of 64 bytes", rename(long)},
		{"non-ASCII table name", rename("usérs")},
		{"table name with prefix sync_", rename("sync_users")},
		{"table name with prefix SYNC_", rename("SYNC_users")},
		{"table name with prefix _sync", rename("_sync_users")},
		{"table name with prefix _Sync", rename("_Syncusers")},
		{"duplicate table", func() driver.Schema {
			s := schClone(base)
			s.Version = v
			s.Tables = append(s.Tables, s.Tables[0])
			return s
		}()},
		{"column name with a space", col(tTodos, nullable("bad name"))},
		{"column name of 64 bytes", col(tTodos, nullable(long))},
		{"column name with prefix _sync", col(tTodos, nullable("_sync_partition"))},
		{"column name with prefix sync_", col(tTodos, nullable("sync_version"))},
		{"duplicate column", col(tTodos, nullable("title"))},
		{"unknown column type", col(tTodos, driver.Column{Name: "t", Type: "text", Nullable: true})},
		{"unknown primary-key column", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.PrimaryKey = "nope" })},
		{"no primary key", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.PrimaryKey = "" })},
		{"nullable primary key", schEdit(base, v, tTodos, func(tb *driver.Table) { tb.Columns[0].Nullable = true })},
		{"integer primary key", schEdit(base, v, tTodos, func(tb *driver.Table) { tb.Columns[0].Type = driver.TypeInteger })},
		{"no scope", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Scopes = nil })},
		{"scope on an unknown column", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Scopes[0].Column = "nope" })},
		{"scope variable with a dash", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Scopes[0].Variable = "o-rg" })},
		{"scope variable with prefix sync_", schEdit(base, v, tUsers, func(tb *driver.Table) { tb.Scopes[0].Variable = "sync_org" })},
		{"scope on an integer column", schEdit(base, v, tTodos, func(tb *driver.Table) { tb.Scopes[1].Column = "updated_at" })},
		{"one variable on two columns", schEdit(base, v, tTodos, func(tb *driver.Table) { tb.Scopes[1].Variable = "project" })},
		{"index without columns", index(driver.Index{Name: "by_nothing"})},
		{"index on an unknown column", index(driver.Index{Name: "by_nope", Columns: []string{"nope"}})},
		{"duplicate index name", schEdit(base, v, tUsers, func(tb *driver.Table) {
			tb.Indexes = append(tb.Indexes, driver.Index{Name: tb.Indexes[0].Name, Columns: []string{"org"}})
		})},
		{"index name with a space", index(driver.Index{Name: "by org", Columns: []string{"org"}})},
		{"index name with prefix _sync", index(driver.Index{Name: "_sync_ix", Columns: []string{"org"}})},
		{"index name of 64 bytes", index(driver.Index{Name: long, Columns: []string{"org"}})},
	}
	return out
}

// schEdgeSchema returns a schema whose identifiers sit on every edge
// SCH-2 allows: 63-byte names that differ only in their last byte (an
// engine that truncates or derives longer names from them collides), the
// same index names in two tables (SCH-9), SQL keywords, mixed case, and
// names that merely start like the reserved prefixes ("synced", "_syn").
func schEdgeSchema() (driver.Schema, [4]string) {
	long := func(prefix string, last byte) string {
		return prefix + strings.Repeat("x", 62-len(prefix)) + string(last)
	}
	tA, tB := long("t", 'a'), long("t", 'b')
	cA, cB, vr := long("c", 'a'), long("c", 'b'), long("v", 'a')
	ixA, ixB := long("i", 'a'), long("i", 'b')
	longTable := func(name string) driver.Table {
		return driver.Table{Name: name,
			Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: cA, Type: driver.TypeString},
				{Name: cB, Type: driver.TypeInteger, Nullable: true}},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: vr, Column: cA}},
			Indexes: []driver.Index{{Name: ixA, Columns: []string{cA, cB}, Unique: true},
				{Name: ixB, Columns: []string{cB}}},
		}
	}
	keywords := driver.Table{Name: "order",
		Columns: []driver.Column{{Name: "select", Type: driver.TypeString}, {Name: "from", Type: driver.TypeString},
			{Name: "group", Type: driver.TypeString}, {Name: "CamelCase", Type: driver.TypeInteger, Nullable: true}},
		PrimaryKey: "select",
		Scopes:     []driver.Scope{{Variable: "where", Column: "group"}, {Variable: "Limit", Column: "from"}},
		Indexes:    []driver.Index{{Name: "index", Columns: []string{"from"}, Unique: true}},
	}
	prefixy := driver.Table{Name: "synced",
		Columns:    []driver.Column{{Name: "_id", Type: driver.TypeString}, {Name: "syncx", Type: driver.TypeString}},
		PrimaryKey: "_id",
		Scopes:     []driver.Scope{{Variable: "_syn", Column: "syncx"}},
	}
	s := driver.Schema{Version: 1, Tables: []driver.Table{longTable(tA), longTable(tB), keywords, prefixy}}
	return s, [4]string{tA, tB, cA, cB}
}

func init() {
	register(
		// Catches a sync layer that hands an uncompilable schema to the
		// driver (which then creates tables), or a driver/sync pair that
		// stores part of it.
		Case{Name: "SCH-2/invalid-schema-on-fresh-store", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := h.Open(t)
			store := syncstore.OpenConn(conn)
			for _, bad := range schBadSchemas(TestSchema(), 1) {
				err := store.EnsureSchema(ctx, bad.schema)
				expectCode(t, "SCH-2: EnsureSchema with "+bad.name, err, driver.CodeSchemaInvalid)
				if !errors.Is(err, driver.ErrSchemaInvalid) {
					t.Errorf("SCH-2: %s: errors.Is(err, ErrSchemaInvalid) = false for %v", bad.name, err)
				}
			}
			if s, ok := store.Schema(); ok {
				t.Errorf("SCH-2: Store.Schema() after only invalid schemas = version %d, true; want false", s.Version)
			}
			for _, table := range []string{tTodos, tKinds, tUsers} {
				_, _, err := conn.GetRow(ctx, "p1", table, "x")
				expectCode(t, "SCH-2: driver table "+table+" after only invalid schemas", err, driver.CodeUnknownTable)
			}
			must(t, "SCH-2: EnsureSchema(TestSchema) after the invalid ones", store.EnsureSchema(ctx, TestSchema()))
			schExpectV1Layout(t, conn, "SCH-2")
		}},
		// Catches a store that applies an invalid migration, or forgets
		// its valid schema after a rejected one.
		Case{Name: "SCH-2/invalid-schema-keeps-ensured-one", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			store := syncstore.OpenConn(conn)
			must(t, "SCH-2: Store.EnsureSchema(TestSchema)", store.EnsureSchema(ctx, TestSchema()))
			k1 := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{
				"id": "k1", "grp": "g", "s": nil, "i": int64(1), "f": nil, "b": nil, "j": nil, "x": nil}}
			push(t, conn, "p1", tKinds, k1)
			for _, bad := range schBadSchemas(schV2(), 2) {
				expectCode(t, "SCH-2: EnsureSchema(version 2) with "+bad.name, store.EnsureSchema(ctx, bad.schema), driver.CodeSchemaInvalid)
			}
			schExpectKept(t, "SCH-2: Store.Schema() after rejected schemas", store, TestSchema())
			schExpectRow(t, "SCH-2: kinds row (version 2 would retire kinds)", conn, "p1", tKinds, k1)
			schExpectV1Layout(t, conn, "SCH-2")
		}},
		// Catches a driver that truncates long identifiers (or derives
		// engine names longer than the engine allows), fails to quote
		// keywords, folds case, or lets same-named indexes of two tables
		// collide.
		Case{Name: "SCH-2/valid-identifier-edges-work", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := h.Open(t)
			schema, names := schEdgeSchema()
			tA, tB, cA, cB := names[0], names[1], names[2], names[3]
			must(t, "SCH-2: Store.EnsureSchema of 63-byte, keyword and mixed-case identifiers",
				syncstore.OpenConn(conn).EnsureSchema(ctx, schema))
			vr := schema.Tables[0].Scopes[0].Variable
			longRow := func(id, a string, b any) driver.Row {
				return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{vr: a}, Values: driver.Values{"id": id, cA: a, cB: b}}
			}
			kw := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"where": "g1", "Limit": "f1"},
				Values: driver.Values{"select": "k1", "from": "f1", "group": "g1", "CamelCase": int64(7)}}
			px := driver.Row{ID: "x1", ServerVersion: 1, Scopes: driver.Scopes{"_syn": "s"}, Values: driver.Values{"_id": "x1", "syncx": "s"}}
			rows := []struct {
				table string
				row   driver.Row
			}{{tA, longRow("a1", "same", int64(1))}, {tB, longRow("a1", "same", int64(1))}, {"order", kw}, {"synced", px}}
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			var changes []driver.Change
			for _, r := range rows {
				must(t, "SCH-2: UpsertRow into "+r.table, tx.UpsertRow(ctx, r.table, r.row))
				changes = append(changes, upsertChange(r.table, r.row))
			}
			// The unique index of tA holds within tA only (SCH-9, SCH-10).
			expectCode(t, "SCH-2: unique 63-byte index of the first table",
				tx.UpsertRow(ctx, tA, longRow("a2", "same", int64(1))), driver.CodeConstraintViolation)
			must(t, "SCH-2: non-colliding row in the first table", tx.UpsertRow(ctx, tA, longRow("a3", "same", int64(2))))
			expectCode(t, "SCH-2: unique index named \"index\" on column \"from\"",
				tx.UpsertRow(ctx, "order", driver.Row{ID: "k2", ServerVersion: 1, Scopes: driver.Scopes{"where": "g1", "Limit": "f1"},
					Values: driver.Values{"select": "k2", "from": "f1", "group": "g1", "CamelCase": nil}}), driver.CodeConstraintViolation)
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc1", CreatedAtMs: 1, Changes: changes})
			must(t, "SCH-2: AppendCommit", err)
			commit(t, tx)
			for _, r := range rows {
				schExpectRow(t, "SCH-2: row of "+r.table, conn, "p1", r.table, r.row)
				filter := driver.ScopeFilter{}
				for k, v := range r.row.Scopes {
					filter[k] = []string{v}
				}
				want := []driver.Row{r.row}
				if r.table == tA {
					want = append(want, longRow("a3", "same", int64(2)))
				}
				got, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: r.table, Filter: filter, Limit: 10})
				must(t, "SCH-2: ScanRows of "+r.table, err)
				expectEqual(t, "SCH-2: ScanRows of "+r.table, want, rowsByID(got))
				win, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: r.table, Filter: filter, ThroughSeq: 1, LimitChanges: 10})
				must(t, "SCH-2: ReadCommitWindow of "+r.table, err)
				if len(win) != 1 {
					t.Errorf("SCH-2: ReadCommitWindow of %s returned %d commits; want 1", r.table, len(win))
					continue
				}
				expectEqual(t, "SCH-2: window changes of "+r.table, []driver.Change{upsertChange(r.table, r.row)}, win[0].Changes)
			}
		}},
	)
}

// schExpectKept checks that store still reports want as its schema after
// schemas it refused.
func schExpectKept(t T, what string, store *syncstore.Store, want driver.Schema) {
	t.Helper()
	got, ok := store.Schema()
	if !ok {
		t.Errorf("%s = false; want version %d", what, want.Version)
		return
	}
	expectEqual(t, what, want, got)
}
