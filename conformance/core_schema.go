package conformance

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/driver"
)

// Schema cases (SCH-3, SCH-4, SCH-5, SCH-8) and the schema variants every
// SCH case derives from TestSchema. SCH-2 lives in core_schema_identifiers.go,
// SCH-6 and SCH-7 in core_schema_migrate.go, SCH-9 and SCH-10 in
// core_schema_unique.go.

const tTags = "tags"

// schClone returns a deep copy of s, so variants never share slices with
// TestSchema or with each other.
func schClone(s driver.Schema) driver.Schema {
	out := driver.Schema{Version: s.Version, Tables: make([]driver.Table, len(s.Tables))}
	for i, tb := range s.Tables {
		nt := tb
		nt.Columns = append([]driver.Column(nil), tb.Columns...)
		nt.Scopes = append([]driver.Scope(nil), tb.Scopes...)
		nt.Indexes = nil
		for _, ix := range tb.Indexes {
			nt.Indexes = append(nt.Indexes, driver.Index{Name: ix.Name, Columns: append([]string(nil), ix.Columns...), Unique: ix.Unique})
		}
		out.Tables[i] = nt
	}
	return out
}

// schEdit returns a deep copy of s at version v with edit applied to the
// table named name. It panics when s has no such table (a bug in the case).
func schEdit(s driver.Schema, v int64, name string, edit func(tb *driver.Table)) driver.Schema {
	out := schClone(s)
	out.Version = v
	for i := range out.Tables {
		if out.Tables[i].Name == name {
			edit(&out.Tables[i])
			return out
		}
	}
	panic("conformance: schEdit: no table " + name)
}

// schWithout returns a deep copy of s at version v without the named table.
func schWithout(s driver.Schema, v int64, name string) driver.Schema {
	out := schClone(s)
	out.Version = v
	kept := out.Tables[:0]
	for _, tb := range out.Tables {
		if tb.Name != name {
			kept = append(kept, tb)
		}
	}
	out.Tables = kept
	return out
}

// schTagsTable is the table the migration cases add: id, grp (scope grp),
// label, weight (nullable integer).
func schTagsTable() driver.Table {
	return driver.Table{
		Name: tTags,
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "grp", Type: driver.TypeString},
			{Name: "label", Type: driver.TypeString},
			{Name: "weight", Type: driver.TypeInteger, Nullable: true},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
	}
}

// schTag returns a tags row.
func schTag(id, grp, label string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": grp},
		Values: driver.Values{"id": id, "grp": grp, "label": label, "weight": int64(len(label))}}
}

// schV2 is the additive migration of TestSchema (SCH-6): todos appends the
// nullable string column note and swaps its index by_owner for the unique
// index by_title; users swaps its unique by_email for a plain index;
// kinds is retired; tags is added.
func schV2() driver.Schema {
	s := schEdit(TestSchema(), 2, tTodos, func(tb *driver.Table) {
		tb.Columns = append(tb.Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
		tb.Indexes = []driver.Index{{Name: "by_title", Columns: []string{"title"}, Unique: true}}
	})
	s = schEdit(s, 2, tUsers, func(tb *driver.Table) {
		tb.Indexes = []driver.Index{{Name: "by_org_email", Columns: []string{"org", "email"}}}
	})
	s = schWithout(s, 2, tKinds)
	s.Tables = append(s.Tables, schTagsTable())
	return s
}

// schV3 is schV2 with kinds added back (a retired table re-added starts empty).
func schV3() driver.Schema {
	s := schClone(schV2())
	s.Version = 3
	kinds, _ := TestSchema().Table(tKinds)
	s.Tables = append(s.Tables, schClone(driver.Schema{Tables: []driver.Table{kinds}}).Tables[0])
	return s
}

// schTodoV2 returns a todos row of schV2 (with the note column).
func schTodoV2(id, project, owner string, note any) driver.Row {
	r := todo(id, project, owner)
	r.Values["note"] = note
	return r
}

// schProbe returns a fresh partition name for the layout checks.
func schProbe() string { return fmt.Sprintf("probe-%d", nextID()) }

// schExpectRow fails the case unless conn reads row from table in partition.
func schExpectRow(t T, what string, conn driver.Conn, partition, table string, want driver.Row) {
	t.Helper()
	got, found, err := conn.GetRow(t.Context(), partition, table, want.ID)
	if err != nil || !found {
		t.Errorf("%s: GetRow(%s, %q) = found %v, err %v; want the row", what, table, want.ID, found, err)
		return
	}
	expectEqual(t, what+": GetRow("+table+")", want, got)
}

// schExpectV1Layout checks that TestSchema (version 1) is the layout in
// force on conn: ensuring it again is a no-op, todos/kinds/users take
// rows of their v1 shape, the unique index by_email holds, and tags is
// unknown.
func schExpectV1Layout(t T, conn driver.Conn, rule string) {
	t.Helper()
	ctx := t.Context()
	if err := conn.EnsureSchema(ctx, TestSchema()); err != nil {
		t.Errorf("%s: EnsureSchema(version 1) after the failed call: %v; want nil (version 1 still stored)", rule, err)
		return
	}
	p := schProbe()
	td, us := todo("probe-t", "pp", "po"), user("probe-u", "org", "probe@example.com")
	kd := driver.Row{ID: "probe-k", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{
		"id": "probe-k", "grp": "g", "s": "s", "i": int64(1), "f": 1.5, "b": true, "j": driver.JSON(`{}`), "x": []byte{1}}}
	tx := begin(t, conn, p)
	defer tx.Rollback(context.Background())
	for _, w := range []struct {
		table string
		row   driver.Row
	}{{tTodos, td}, {tUsers, us}, {tKinds, kd}} {
		if err := tx.UpsertRow(ctx, w.table, w.row); err != nil {
			t.Errorf("%s: UpsertRow(%s) of a version-1 row: %v; want nil (version-1 layout in force)", rule, w.table, err)
			return
		}
	}
	err := tx.UpsertRow(ctx, tUsers, user("probe-u2", "org", "probe@example.com"))
	expectCode(t, rule+": unique index by_email of version 1 must still hold", err, driver.CodeConstraintViolation)
	commit(t, tx)
	schExpectRow(t, rule+": version-1 todos row", conn, p, tTodos, td)
	schExpectRow(t, rule+": version-1 kinds row", conn, p, tKinds, kd)
	schExpectRow(t, rule+": version-1 users row", conn, p, tUsers, us)
	_, _, err = conn.GetRow(ctx, p, tTags, "x")
	expectCode(t, rule+": table tags (not in version 1) must be unknown", err, driver.CodeUnknownTable)
}

// schExpectV2Layout checks that schV2 is the layout in force on conn.
func schExpectV2Layout(t T, conn driver.Conn, rule string) {
	t.Helper()
	ctx := t.Context()
	if err := conn.EnsureSchema(ctx, schV2()); err != nil {
		t.Errorf("%s: EnsureSchema(version 2) again: %v; want nil (no-op)", rule, err)
		return
	}
	p := schProbe()
	td, tg := schTodoV2("probe-t", "pp", "po", "a note"), schTag("probe-g", "g", "label")
	tx := begin(t, conn, p)
	defer tx.Rollback(context.Background())
	if err := tx.UpsertRow(ctx, tTodos, td); err != nil {
		t.Errorf("%s: UpsertRow(todos) with the appended column note: %v", rule, err)
		return
	}
	if err := tx.UpsertRow(ctx, tTags, tg); err != nil {
		t.Errorf("%s: UpsertRow(tags) in the added table: %v", rule, err)
		return
	}
	commit(t, tx)
	schExpectRow(t, rule+": version-2 todos row", conn, p, tTodos, td)
	schExpectRow(t, rule+": version-2 tags row", conn, p, tTags, tg)
	_, _, err := conn.GetRow(ctx, p, tKinds, "x")
	expectCode(t, rule+": retired table kinds must be unknown", err, driver.CodeUnknownTable)
}

// schUnknownTables are table names no TestSchema variant declares: a
// plain unknown name, a different case of a known one, internal and
// catalog-looking names, and text that would be SQL if interpolated.
var schUnknownTables = []string{"nope", "TODOS", "Todos", "_sync_commits", "sqlite_master", "pg_class",
	"information_schema.tables", `todos"; DROP TABLE todos; --`, "todos "}

// schExpectUnknownEverywhere calls every core method that takes a table
// with table and expects CodeUnknownTable from each (SCH-8).
func schExpectUnknownEverywhere(t T, conn driver.Conn, table string) {
	t.Helper()
	ctx := t.Context()
	const p = "p1"
	what := func(m string) string { return fmt.Sprintf("SCH-8: %s on table %q", m, table) }
	filter := driver.ScopeFilter{"project": {"p1"}}
	_, _, err := conn.GetRow(ctx, p, table, "t1")
	expectCode(t, what("Conn.GetRow"), err, driver.CodeUnknownTable)
	_, err = conn.ScanRows(ctx, p, driver.ScanQuery{Table: table, Filter: filter, Limit: 10})
	expectCode(t, what("Conn.ScanRows"), err, driver.CodeUnknownTable)
	_, err = conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: table, Filter: filter, ThroughSeq: 1 << 40, LimitChanges: 10})
	expectCode(t, what("Conn.ReadCommitWindow"), err, driver.CodeUnknownTable)
	// Index lookup is exercised only when both halves are declared: a
	// half-declared capability is ERR-3's failure, not this rule's.
	probe := begin(t, conn, p)
	_, wholeIXL := probe.(driver.IndexLookupTx)
	_ = probe.Rollback(context.Background())
	ix, connIXL := conn.(driver.IndexLookupConn)
	wholeIXL = wholeIXL && connIXL
	if wholeIXL {
		_, err = ix.ScanRowsByIndex(ctx, p, driver.IndexQuery{Table: table, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
		expectCode(t, what("Conn.ScanRowsByIndex"), err, driver.CodeUnknownTable)
	}
	txOps := []struct {
		name string
		run  func(tx driver.Tx) error
	}{
		{"Tx.GetRow", func(tx driver.Tx) error { _, _, err := tx.GetRow(ctx, table, "t1"); return err }},
		{"Tx.ScanRows", func(tx driver.Tx) error {
			_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: table, Filter: filter, Limit: 10})
			return err
		}},
		{"Tx.UpsertRow", func(tx driver.Tx) error { return tx.UpsertRow(ctx, table, todo("t1", "p1", "o1")) }},
		{"Tx.DeleteRow", func(tx driver.Tx) error { return tx.DeleteRow(ctx, table, "t1") }},
		{"Tx.ScanRowsByIndex", func(tx driver.Tx) error {
			_, err := tx.(driver.IndexLookupTx).ScanRowsByIndex(ctx, driver.IndexQuery{Table: table, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
			return err
		}},
	}
	for _, op := range txOps {
		if op.name == "Tx.ScanRowsByIndex" && !wholeIXL {
			continue
		}
		tx := begin(t, conn, p)
		err := op.run(tx)
		_ = tx.Rollback(context.Background())
		expectCode(t, what(op.name), err, driver.CodeUnknownTable)
	}
}

func init() {
	register(
		// Catches a driver that recreates (and so empties) its tables, or
		// resets the commit counter, whenever EnsureSchema is called.
		Case{Name: "SCH-3/ensure-twice-keeps-data", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			must(t, "SCH-3: EnsureSchema(TestSchema) a second time", conn.EnsureSchema(ctx, TestSchema()))
			must(t, "SCH-3: EnsureSchema(deep copy of TestSchema)", conn.EnsureSchema(ctx, schClone(TestSchema())))
			schExpectRow(t, "SCH-3: row written before the second EnsureSchema", conn, "p1", tTodos, t1)
			expectEqual(t, "SCH-3: seq of the next commit (the counter survives)", int64(2), push(t, conn, "p1", tTodos, todo("t2", "p1", "o1")))
			schExpectV1Layout(t, conn, "SCH-3")
		}},
		// Catches a driver whose second instance (another process)
		// rebuilds the store or cannot read what the first one wrote.
		Case{Name: "SCH-3/second-conn-ensures-same-schema", Run: func(t T, h Harness) {
			if h.Reopen == nil {
				t.Skipf("SCH-3: needs Harness.Reopen")
			}
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			conn2 := h.Reopen(t, conn)
			must(t, "SCH-3: EnsureSchema(TestSchema) on a second Conn", conn2.EnsureSchema(t.Context(), TestSchema()))
			schExpectRow(t, "SCH-3: second Conn reads the first Conn's row", conn2, "p1", tTodos, t1)
			schExpectRow(t, "SCH-3: first Conn still reads its row", conn, "p1", tTodos, t1)
			schExpectV1Layout(t, conn2, "SCH-3")
		}},
		// Catches a driver that compares only the version (or only tables
		// and columns) and so accepts a different layout at the same
		// version, or applies part of it before failing.
		Case{Name: "SCH-4/same-version-different-layout", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			u1 := user("u1", "org", "a@example.com")
			push(t, conn, "p1", tUsers, u1)
			v1 := TestSchema()
			variants := []struct {
				name   string
				schema driver.Schema
			}{
				{"nullable column appended", schEdit(v1, 1, tTodos, func(tb *driver.Table) {
					tb.Columns = append(tb.Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
				})},
				{"table added", func() driver.Schema { s := schClone(v1); s.Tables = append(s.Tables, schTagsTable()); return s }()},
				{"table removed", schWithout(v1, 1, tKinds)},
				{"column retyped", schEdit(v1, 1, tKinds, func(tb *driver.Table) { tb.Columns[3].Type = driver.TypeString })},
				{"column renamed", schEdit(v1, 1, tKinds, func(tb *driver.Table) { tb.Columns[2].Name = "s2" })},
				{"index dropped", schEdit(v1, 1, tUsers, func(tb *driver.Table) { tb.Indexes = nil })},
				{"index made non-unique", schEdit(v1, 1, tUsers, func(tb *driver.Table) { tb.Indexes[0].Unique = false })},
				{"index added", schEdit(v1, 1, tTodos, func(tb *driver.Table) {
					tb.Indexes = append(tb.Indexes, driver.Index{Name: "by_title", Columns: []string{"title"}})
				})},
			}
			for _, v := range variants {
				err := conn.EnsureSchema(ctx, v.schema)
				expectCode(t, "SCH-4: EnsureSchema with version 1 and "+v.name, err, driver.CodeSchemaMismatch)
			}
			schExpectRow(t, "SCH-4: row written before the mismatching calls", conn, "p1", tUsers, u1)
			schExpectV1Layout(t, conn, "SCH-4")
		}},
		// Catches a driver that downgrades (or re-creates) the store when
		// given an older schema.
		Case{Name: "SCH-5/stored-newer-is-rejected", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			must(t, "SCH-5: EnsureSchema(version 2)", conn.EnsureSchema(ctx, schV2()))
			expectCode(t, "SCH-5: EnsureSchema(version 1) after version 2", conn.EnsureSchema(ctx, TestSchema()), driver.CodeSchemaNewer)
			expectCode(t, "SCH-5: EnsureSchema(version 1 with version 2's layout)", conn.EnsureSchema(ctx, func() driver.Schema {
				s := schV2()
				s.Version = 1
				return s
			}()), driver.CodeSchemaNewer)
			t1.Values["note"] = nil
			schExpectRow(t, "SCH-5: row after the rejected downgrade", conn, "p1", tTodos, t1)
			schExpectV2Layout(t, conn, "SCH-5")
		}},
		// Catches a driver that decides "newer" from its in-memory cache
		// instead of the stored version, so an instance that ensured
		// version 1 would accept it again after another instance migrated.
		Case{Name: "SCH-5/stored-newer-seen-by-every-conn", Run: func(t T, h Harness) {
			if h.Reopen == nil {
				t.Skipf("SCH-5: needs Harness.Reopen")
			}
			ctx := t.Context()
			conn := openStore(t, h)
			conn2 := h.Reopen(t, conn)
			must(t, "SCH-5: EnsureSchema(version 1) on the second Conn", conn2.EnsureSchema(ctx, TestSchema()))
			must(t, "SCH-5: EnsureSchema(version 2) on the first Conn", conn.EnsureSchema(ctx, schV2()))
			expectCode(t, "SCH-5: EnsureSchema(version 1) on a Conn that ensured version 1 before the migration",
				conn2.EnsureSchema(ctx, TestSchema()), driver.CodeSchemaNewer)
			conn3 := h.Reopen(t, conn)
			expectCode(t, "SCH-5: EnsureSchema(version 1) on a new Conn", conn3.EnsureSchema(ctx, TestSchema()), driver.CodeSchemaNewer)
			schExpectV2Layout(t, conn, "SCH-5")
		}},
		// Catches a driver that passes the table name to the engine (case
		// folding, internal tables, catalogs, SQL text) instead of checking
		// it against the ensured schema.
		Case{Name: "SCH-8/unknown-table-every-method", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			for _, name := range schUnknownTables {
				schExpectUnknownEverywhere(t, conn, name)
			}
			schExpectRow(t, "SCH-8: todos after the unknown-table calls", conn, "p1", tTodos, t1)
		}},
		// Catches a driver that knows tables before EnsureSchema (e.g. from
		// a stale cache or by creating them lazily on first write).
		Case{Name: "SCH-8/unknown-before-ensure-schema", Run: func(t T, h Harness) {
			conn := h.Open(t)
			for _, name := range []string{tTodos, tKinds, tUsers, "nope"} {
				schExpectUnknownEverywhere(t, conn, name)
			}
			must(t, "SCH-8: EnsureSchema after the unknown-table calls", conn.EnsureSchema(t.Context(), TestSchema()))
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			schExpectRow(t, "SCH-8: todos after EnsureSchema", conn, "p1", tTodos, t1)
		}},
	)
}
