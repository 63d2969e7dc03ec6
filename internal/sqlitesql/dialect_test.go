package sqlitesql

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

func schemaV1() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{{
		Name: "todos",
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "project_id", Type: driver.TypeString},
			{Name: "title", Type: driver.TypeString, Nullable: true},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "project", Column: "project_id"}},
		Indexes:    []driver.Index{{Name: "by_title", Columns: []string{"title"}}},
	}}}
}

func TestQuoteAndNames(t *testing.T) {
	if got := Quote(`a"b`); got != `"a""b"` {
		t.Errorf("Quote = %s", got)
	}
	// The length prefix keeps names of different (table, index) pairs apart.
	if DeclaredIndexName("a_b", "c") == DeclaredIndexName("a", "b_c") {
		t.Errorf("index names collide across tables")
	}
	if ScopeIndexName("a_b", "c") == ScopeIndexName("a", "b_c") {
		t.Errorf("scope index names collide across tables")
	}
	for _, ok := range []string{"a", "_x", "A9_", strings.Repeat("a", 63)} {
		if !ValidIdent(ok) {
			t.Errorf("ValidIdent(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "9a", "a-b", `a"`, "é", strings.Repeat("a", 64)} {
		if ValidIdent(bad) {
			t.Errorf("ValidIdent(%q) = true", bad)
		}
	}
}

func TestMigrationSQL(t *testing.T) {
	old := storelayout.LayoutOf(schemaV1())
	next := schemaV1()
	next.Version = 2
	next.Tables[0].Columns = append(next.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeJSON, Nullable: true})
	next.Tables[0].Indexes = []driver.Index{{Name: "by_title", Columns: []string{"title"}, Unique: true}}
	next.Tables = append(next.Tables, driver.Table{Name: "more", Columns: []driver.Column{{Name: "id", Type: driver.TypeString}},
		PrimaryKey: "id", Scopes: []driver.Scope{{Variable: "v", Column: "id"}}})
	got, err := MigrationSQL(old, next, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`DROP INDEX "_sync_ix_5_todos_by_title"`,
		`ALTER TABLE "todos" ADD COLUMN "note" TEXT`,
		`CREATE UNIQUE INDEX "_sync_ix_5_todos_by_title" ON "todos" ("_sync_partition", "title")`,
		"CREATE TABLE \"more\" (\n\t\"_sync_partition\" TEXT NOT NULL,\n\t\"_sync_version\" INTEGER NOT NULL,\n\t\"id\" TEXT NOT NULL,\n\tPRIMARY KEY (\"_sync_partition\", \"id\")\n)",
		`CREATE INDEX "_sync_sx_4_more_id" ON "more" ("_sync_partition", "id", "_sync_version")`,
		// todos gained a column: its scope index covers the new row.
		`DROP INDEX IF EXISTS "_sync_sx_5_todos_project_id"`,
		`CREATE INDEX "_sync_sx_5_todos_project_id" ON "todos" ("_sync_partition", "project_id", "id", "_sync_version", "title", "note")`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("migration (-want +got):\n%s", d)
	}

	// No column appended: the scope indexes stay.
	onlyIx := schemaV1()
	onlyIx.Version = 2
	onlyIx.Tables[0].Indexes = nil
	got, err = MigrationSQL(old, onlyIx, true)
	if d := cmp.Diff([]string{`DROP INDEX "_sync_ix_5_todos_by_title"`}, got); err != nil || d != "" {
		t.Errorf("index-only migration: %v (-want +got):\n%s", err, d)
	}

	retire := driver.Schema{Version: 2, Tables: []driver.Table{next.Tables[1]}}
	got, err = MigrationSQL(old, retire, true)
	if err != nil || len(got) == 0 || got[0] != `DROP TABLE "todos"` {
		t.Errorf("retire: %v %q", err, got)
	}

	bad := map[string]func(s *driver.Schema){
		"drop column":     func(s *driver.Schema) { s.Tables[0].Columns = s.Tables[0].Columns[:2] },
		"retype column":   func(s *driver.Schema) { s.Tables[0].Columns[2].Type = driver.TypeInteger },
		"nullability":     func(s *driver.Schema) { s.Tables[0].Columns[2].Nullable = false },
		"reorder columns": func(s *driver.Schema) { c := s.Tables[0].Columns; c[1], c[2] = c[2], c[1] },
		"append non-null": func(s *driver.Schema) {
			s.Tables[0].Columns = append(s.Tables[0].Columns, driver.Column{Name: "n", Type: driver.TypeString})
		},
		"change pk":     func(s *driver.Schema) { s.Tables[0].PrimaryKey = "project_id" },
		"change scopes": func(s *driver.Schema) { s.Tables[0].Scopes[0].Variable = "proj" },
		"add scope": func(s *driver.Schema) {
			s.Tables[0].Scopes = append(s.Tables[0].Scopes, driver.Scope{Variable: "x", Column: "id"})
		},
		"rename column": func(s *driver.Schema) { s.Tables[0].Columns[2].Name = "label" },
	}
	for name, mutate := range bad {
		s := schemaV1()
		s.Version = 2
		mutate(&s)
		if got, err := MigrationSQL(old, s, true); driver.CodeOf(err) != driver.CodeSchemaMigrationUnsupported || got != nil {
			t.Errorf("%s: got %q, %v; want CodeSchemaMigrationUnsupported and no SQL", name, got, err)
		}
	}
}

func TestValueConversion(t *testing.T) {
	negZero := math.Copysign(0, -1)
	cases := []struct {
		t driver.ColumnType
		v any
	}{
		{driver.TypeString, "é😀"}, {driver.TypeInteger, int64(math.MinInt64)}, {driver.TypeFloat, negZero},
		{driver.TypeFloat, 5e-324}, {driver.TypeBoolean, true}, {driver.TypeBoolean, false},
		{driver.TypeJSON, driver.JSON(`{"a":1, "a":2}`)}, {driver.TypeBytes, []byte{0, 255}}, {driver.TypeBytes, []byte{}},
	}
	for _, c := range cases {
		sv, err := ToSQL("c", c.t, c.v)
		if err != nil {
			t.Fatalf("ToSQL(%s): %v", c.t, err)
		}
		// Empty blobs come back from the engine as nil bytes.
		if b, ok := sv.([]byte); ok && len(b) == 0 {
			sv = []byte(nil)
		}
		back, err := FromSQL("c", c.t, sv, false)
		if err != nil {
			t.Fatalf("FromSQL(%s): %v", c.t, err)
		}
		if f, ok := c.v.(float64); ok {
			if math.Float64bits(back.(float64)) != math.Float64bits(f) {
				t.Errorf("float %v came back as %v", f, back)
			}
			continue
		}
		if d := cmp.Diff(c.v, back); d != "" {
			t.Errorf("%s round trip (-want +got):\n%s", c.t, d)
		}
		if b, ok := back.([]byte); ok && b == nil {
			t.Errorf("bytes came back nil, want non-nil")
		}
	}
	if v, err := FromSQL("c", driver.TypeBytes, nil, true); v != nil || err != nil {
		t.Errorf("NULL bytes = %#v, %v", v, err)
	}
	_, err := ToSQL("col", driver.TypeInteger, "12")
	var de *driver.Error
	if driver.CodeOf(err) != driver.CodeInvalidValue || !asErr(err, &de) || de.Column != "col" || strings.Contains(err.Error(), "12") {
		t.Errorf("wrong type: %v", err)
	}
}

func asErr(err error, target **driver.Error) bool {
	e, ok := err.(*driver.Error)
	*target = e
	return ok
}

func TestScanSQLArguments(t *testing.T) {
	x := NewTable(driver.Table{Name: "t", Columns: []driver.Column{{Name: "id", Type: driver.TypeString},
		{Name: "a", Type: driver.TypeString}, {Name: "b", Type: driver.TypeString}}, PrimaryKey: "id",
		Scopes: []driver.Scope{{Variable: "va", Column: "a"}, {Variable: "vb", Column: "b"}}})
	p, err := x.ScanSQL("P", driver.ScanQuery{Filter: driver.ScopeFilter{"va": {"1", "2"}, "vb": {"x"}}, AfterRowID: "k", Limit: 5})
	if err != nil || p.None {
		t.Fatal(p.None, err)
	}
	if !strings.Contains(p.Query, `INDEXED BY "_sync_sx_1_t_b"`) || !strings.Contains(p.Query, `"b" = ?2`) || p.Bound != "" {
		t.Errorf("scan is not driven by the key with fewest values:\n%s", p.Query)
	}
	if d := cmp.Diff([]any{"P", "x", "k", `["1","2"]`, int64(5)}, p.Args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	p, err = x.ScanSQL("P", driver.ScanQuery{Filter: driver.ScopeFilter{"va": {"1", "2"}}, Limit: 7})
	if err != nil || p.Bound == "" || !strings.Contains(p.Query, `"a" IN (SELECT _sync_j.value FROM json_each(?2) AS _sync_j)`) {
		t.Fatalf("multi-value scan plan: %+v %v", p, err)
	}
	if d := cmp.Diff([]any{"P", `["1","2"]`, "", nil, int64(7)}, p.BoundArgs); d != "" {
		t.Errorf("bound args (-want +got):\n%s", d)
	}
	if p, _ := x.ScanSQL("P", driver.ScanQuery{Filter: driver.ScopeFilter{"nope": {"1"}}, Limit: 5}); !p.None {
		t.Errorf("an unknown variable must match nothing")
	}
	if p, _ := x.ScanSQL("P", driver.ScanQuery{Filter: driver.ScopeFilter{"va": {}}, Limit: 5}); !p.None {
		t.Errorf("an empty value list must match nothing")
	}
	if _, err := x.ScanSQL("P", driver.ScanQuery{Filter: driver.ScopeFilter{}, Limit: 5}); driver.CodeOf(err) != driver.CodeScanRequiresScope {
		t.Errorf("empty filter: %v", err)
	}
}

func TestChangesJSON(t *testing.T) {
	got, err := ChangesJSON([]driver.Change{
		{Table: "t", RowID: "a", Op: driver.OpUpsert, Scopes: driver.Scopes{"v": "x"}, Values: driver.Values{"id": "a", "n": int64(-1)}, RowVersion: 7},
		{Table: "t", RowID: "b", Op: driver.OpDelete, Scopes: driver.Scopes{"v": "y"}, Values: driver.Values{"id": "b"}, RowVersion: 9},
		{Table: "t", RowID: "c", Op: driver.OpDelete},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[["t","a","upsert",{"v":"x"},"{\"id\":[\"s\",\"a\"],\"n\":[\"i\",\"-1\"]}",7],` +
		`["t","b","delete",{"v":"y"},null,0],["t","c","delete",{},null,0]]`
	if got != want {
		t.Errorf("ChangesJSON =\n%s\nwant\n%s", got, want)
	}
	_, err = ChangesJSON([]driver.Change{{Op: driver.OpUpsert, Values: driver.Values{"f": math.NaN()}}})
	if driver.CodeOf(err) != driver.CodeInvalidValue {
		t.Errorf("NaN: %v", err)
	}
}

func TestLayoutIsCanonical(t *testing.T) {
	a := schemaV1()
	a.Tables = append(a.Tables, driver.Table{Name: "alpha", Columns: []driver.Column{{Name: "id", Type: driver.TypeString}},
		PrimaryKey: "id", Scopes: []driver.Scope{{Variable: "v", Column: "id"}}})
	b := a
	b.Tables = []driver.Table{a.Tables[1], a.Tables[0]}
	if storelayout.LayoutOf(a).Encode() != storelayout.LayoutOf(b).Encode() {
		t.Errorf("table order changes the layout")
	}
	c := schemaV1()
	c.Tables[0].Columns[1], c.Tables[0].Columns[2] = c.Tables[0].Columns[2], c.Tables[0].Columns[1]
	if storelayout.LayoutOf(c).Encode() == storelayout.LayoutOf(schemaV1()).Encode() {
		t.Errorf("column order does not change the layout")
	}
	l, err := storelayout.DecodeLayout(storelayout.LayoutOf(a).Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(storelayout.LayoutOf(a), l); d != "" {
		t.Errorf("layout round trip (-want +got):\n%s", d)
	}
}
