package sync

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

// testSchema is a small valid schema: notes(id pk, proj scope, body,
// n nullable integer; index by_body).
func testSchema() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{{
		Name: "notes",
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "proj", Type: driver.TypeString},
			{Name: "body", Type: driver.TypeString},
			{Name: "n", Type: driver.TypeInteger, Nullable: true},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "project", Column: "proj"}},
		Indexes:    []driver.Index{{Name: "by_body", Columns: []string{"body", "n"}}},
	}}}
}

// editSchema returns testSchema with f applied to its only table.
func editSchema(f func(s *driver.Schema, t *driver.Table)) driver.Schema {
	s := testSchema()
	f(&s, &s.Tables[0])
	return s
}

func TestCompileSchemaRejects(t *testing.T) {
	long := strings.Repeat("a", 64)
	rename := func(name string) driver.Schema {
		return editSchema(func(_ *driver.Schema, t *driver.Table) { t.Name = name })
	}
	col := func(c driver.Column) driver.Schema {
		return editSchema(func(_ *driver.Schema, t *driver.Table) { t.Columns = append(t.Columns, c) })
	}
	index := func(ix driver.Index) driver.Schema {
		return editSchema(func(_ *driver.Schema, t *driver.Table) { t.Indexes = append(t.Indexes, ix) })
	}
	variable := func(v string) driver.Schema {
		return editSchema(func(_ *driver.Schema, t *driver.Table) { t.Scopes[0].Variable = v })
	}
	cases := []struct {
		name   string
		schema driver.Schema
	}{
		{"version 0", editSchema(func(s *driver.Schema, _ *driver.Table) { s.Version = 0 })},
		{"version -1", editSchema(func(s *driver.Schema, _ *driver.Table) { s.Version = -1 })},
		{"empty table name", rename("")},
		{"table name starts with digit", rename("1notes")},
		{"table name with dash", rename("no-tes")},
		{"table name with space", rename("no tes")},
		{"table name non-ASCII", rename("nötes")},
		{"table name with NUL", rename("no\x00tes")},
		{"table name 64 bytes", rename(long)},
		{"table prefix sync_", rename("sync_notes")},
		{"table prefix SYNC_", rename("SYNC_notes")},
		{"table prefix Sync_", rename("Sync_notes")},
		{"table prefix _sync", rename("_sync")},
		{"table prefix _sync_", rename("_sync_notes")},
		{"table prefix _SYNCx", rename("_SYNCx")},
		{"table named json_each", rename("json_each")},
		{"table named JSON_Each", rename("JSON_Each")},
		{"table named json_tree", rename("json_tree")},
		{"table prefix sqlite_", rename("sqlite_notes")},
		{"table prefix SQLite_", rename("SQLite_stat1")},
		{"table prefix _cf_", rename("_cf_KV")},
		{"table prefix _CF_", rename("_CF_notes")},
		{"table prefix pg_", rename("pg_class")},
		{"table prefix PG_", rename("PG_notes")},
		{"table prefix pragma_", rename("pragma_page_count")},
		{"duplicate table", editSchema(func(s *driver.Schema, t *driver.Table) { s.Tables = append(s.Tables, *t) })},
		{"duplicate table other case", editSchema(func(s *driver.Schema, t *driver.Table) {
			u := *t
			u.Name = "NOTES"
			s.Tables = append(s.Tables, u)
		})},
		{"no columns", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Columns = nil })},
		{"column bad identifier", col(driver.Column{Name: "a.b", Type: driver.TypeString, Nullable: true})},
		{"column 64 bytes", col(driver.Column{Name: long, Type: driver.TypeString, Nullable: true})},
		{"column prefix sync_", col(driver.Column{Name: "sync_x", Type: driver.TypeString, Nullable: true})},
		{"column prefix _Sync", col(driver.Column{Name: "_Sync_x", Type: driver.TypeString, Nullable: true})},
		{"duplicate column", col(driver.Column{Name: "body", Type: driver.TypeString})},
		{"duplicate column other case", col(driver.Column{Name: "BODY", Type: driver.TypeString})},
		{"unknown column type", col(driver.Column{Name: "t", Type: "text", Nullable: true})},
		{"empty column type", col(driver.Column{Name: "t", Nullable: true})},
		{"no primary key", editSchema(func(_ *driver.Schema, t *driver.Table) { t.PrimaryKey = "" })},
		{"unknown primary key", editSchema(func(_ *driver.Schema, t *driver.Table) { t.PrimaryKey = "nope" })},
		{"nullable primary key", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Columns[0].Nullable = true })},
		{"integer primary key", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Columns[0].Type = driver.TypeInteger })},
		{"no scope", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Scopes = nil })},
		{"scope on unknown column", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Scopes[0].Column = "nope" })},
		{"scope on integer column", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Scopes[0].Column = "n" })},
		{"scope on nullable string column", editSchema(func(_ *driver.Schema, t *driver.Table) { t.Columns[1].Nullable = true })},
		{"scope variable empty", variable("")},
		{"scope variable bad identifier", variable("pro-ject")},
		{"scope variable 64 bytes", variable(long)},
		{"scope variable prefix sync_", variable("sync_project")},
		{"scope variable prefix _sync", variable("_syncproject")},
		{"one variable on two columns", editSchema(func(_ *driver.Schema, t *driver.Table) {
			t.Scopes = append(t.Scopes, driver.Scope{Variable: "project", Column: "body"})
		})},
		{"index without name", index(driver.Index{Columns: []string{"body"}})},
		{"index bad identifier", index(driver.Index{Name: "by body", Columns: []string{"body"}})},
		{"index 64 bytes", index(driver.Index{Name: long, Columns: []string{"body"}})},
		{"index prefix sync_", index(driver.Index{Name: "sync_ix", Columns: []string{"body"}})},
		{"index prefix _SYNC", index(driver.Index{Name: "_SYNC_ix", Columns: []string{"body"}})},
		{"index prefix sqlite_", index(driver.Index{Name: "sqlite_ix", Columns: []string{"body"}})},
		{"index prefix _CF_", index(driver.Index{Name: "_CF_ix", Columns: []string{"body"}})},
		{"index prefix pg_", index(driver.Index{Name: "pg_ix", Columns: []string{"body"}})},
		{"index prefix Pragma_", index(driver.Index{Name: "Pragma_ix", Columns: []string{"body"}})},
		{"index named primary", index(driver.Index{Name: "primary", Columns: []string{"body"}})},
		{"index named PRIMARY", index(driver.Index{Name: "PRIMARY", Columns: []string{"body"}})},
		{"empty index", index(driver.Index{Name: "by_nothing"})},
		{"empty index non-nil", index(driver.Index{Name: "by_nothing", Columns: []string{}})},
		{"index on unknown column", index(driver.Index{Name: "by_nope", Columns: []string{"nope"}})},
		{"index repeats a column", index(driver.Index{Name: "by_twice", Columns: []string{"body", "body"}})},
		{"duplicate index", index(driver.Index{Name: "by_body", Columns: []string{"proj"}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CompileSchema(c.schema)
			if !errors.Is(err, driver.ErrSchemaInvalid) {
				t.Fatalf("CompileSchema = %v; want code %s", err, driver.CodeSchemaInvalid)
			}
			if got.Version != 0 || got.Tables != nil {
				t.Errorf("CompileSchema returned a schema with its error: %+v", got)
			}
			if !strings.Contains(err.Error(), "SCH-2") {
				t.Errorf("message %q does not cite SCH-2", err)
			}
		})
	}
}

func TestCompileSchemaAcceptsEdges(t *testing.T) {
	edge := strings.Repeat("b", 63)
	s := editSchema(func(s *driver.Schema, t *driver.Table) {
		t.Name = edge
		t.Columns = append(t.Columns,
			driver.Column{Name: "sync", Type: driver.TypeJSON, Nullable: true},
			driver.Column{Name: "syncx_", Type: driver.TypeBytes, Nullable: true},
			driver.Column{Name: "x_sync_", Type: driver.TypeFloat, Nullable: true},
			driver.Column{Name: "_sy", Type: driver.TypeBoolean},
			driver.Column{Name: "Z9", Type: driver.TypeString},
			// Engine-reserved names are reserved for tables and indexes
			// only: no engine refuses them as columns or variables.
			driver.Column{Name: "json_each", Type: driver.TypeString, Nullable: true},
			driver.Column{Name: "sqlite_x", Type: driver.TypeString, Nullable: true},
			driver.Column{Name: "_cf_x", Type: driver.TypeString, Nullable: true},
			driver.Column{Name: "pg_x", Type: driver.TypeString, Nullable: true},
			driver.Column{Name: "primary", Type: driver.TypeString, Nullable: true},
		)
		t.Scopes = append(t.Scopes, driver.Scope{Variable: "_", Column: "Z9"}, driver.Scope{Variable: "again", Column: "proj"},
			driver.Scope{Variable: "sqlite_v", Column: "Z9"}, driver.Scope{Variable: "pragma_v", Column: "proj"})
		t.Indexes = append(t.Indexes, driver.Index{Name: "u", Columns: []string{"Z9"}, Unique: true},
			driver.Index{Name: "json_each", Columns: []string{"json_each"}}, driver.Index{Name: "primary_key", Columns: []string{"primary"}},
			driver.Index{Name: "sqlite", Columns: []string{"sqlite_x"}})
		u := testSchema().Tables[0]
		u.Name = "other"
		s.Tables = append(s.Tables, u) // same index name in another table (SCH-9)
		for _, name := range []string{"json_eachx", "json", "sqlite", "pgx", "pragma", "primary", "_cfx"} {
			v := testSchema().Tables[0]
			v.Name = name
			s.Tables = append(s.Tables, v)
		}
		s.Version = 7
	})
	got, err := CompileSchema(s)
	if err != nil {
		t.Fatalf("CompileSchema(edges) = %v", err)
	}
	if d := cmp.Diff(s, got); d != "" {
		t.Errorf("compiled schema differs (-given +compiled):\n%s", d)
	}
	if _, err := CompileSchema(driver.Schema{Version: 1}); err != nil {
		t.Errorf("CompileSchema(no tables) = %v; want nil", err)
	}
}

func TestCompileSchemaDeepCopies(t *testing.T) {
	s := testSchema()
	got, err := CompileSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	want := testSchema()
	s.Tables[0].Name = "changed"
	s.Tables[0].Columns[0].Name = "changed"
	s.Tables[0].Scopes[0].Variable = "changed"
	s.Tables[0].Indexes[0].Columns[0] = "changed"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changing the input changed the compiled schema (-want +got):\n%s", d)
	}
}

func TestScopesOf(t *testing.T) {
	tb := testSchema().Tables[0]
	tb.Scopes = append(tb.Scopes, driver.Scope{Variable: "b", Column: "body"})
	got := ScopesOf(tb, driver.Values{"id": "1", "proj": "p7", "body": "x", "n": nil})
	if d := cmp.Diff(driver.Scopes{"project": "p7", "b": "x"}, got); d != "" {
		t.Errorf("ScopesOf (-want +got):\n%s", d)
	}
	got = ScopesOf(tb, driver.Values{"proj": int64(1)})
	if got == nil || len(got) != 0 {
		t.Errorf("ScopesOf(non-string, missing) = %#v; want an empty, non-nil map", got)
	}
}

// An engine-reserved name is refused with a message that names the rule,
// the identifier, and why an engine reserves it.
func TestCompileSchemaEngineReservedMessage(t *testing.T) {
	for _, c := range []struct {
		table, index string
		want         []string
	}{
		{"json_each", "", []string{`"json_each"`, "engine-reserved", "json_each", "SCH-2"}},
		{"SQLite_x", "", []string{`"SQLite_x"`, `engine-reserved prefix "sqlite_"`, "SQLite", "SCH-2"}},
		{"_cf_KV", "", []string{`"_cf_KV"`, `engine-reserved prefix "_cf_"`, "D1", "SCH-2"}},
		{"notes", "PRIMARY", []string{`index name "PRIMARY"`, "engine-reserved", "MySQL", "SCH-2"}},
	} {
		s := editSchema(func(_ *driver.Schema, t *driver.Table) {
			t.Name = c.table
			if c.index != "" {
				t.Indexes = append(t.Indexes, driver.Index{Name: c.index, Columns: []string{"body"}})
			}
		})
		_, err := CompileSchema(s)
		if driver.CodeOf(err) != driver.CodeSchemaInvalid {
			t.Fatalf("CompileSchema(table %q, index %q) = %v; want %s", c.table, c.index, err, driver.CodeSchemaInvalid)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("message %q does not contain %q", err, w)
			}
		}
	}
}
