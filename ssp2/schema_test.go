package ssp2_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// A schema in upstream's DriverSchema JSON shape (conformance/src/driver.ts),
// every column type included.
const schemaJSON = `{
  "version": 3,
  "tables": [
    {
      "name": "tasks",
      "columns": [
        {"name": "id", "type": "string", "nullable": false},
        {"name": "project_id", "type": "string", "nullable": false},
        {"name": "owner", "type": "string", "nullable": false},
        {"name": "n", "type": "integer", "nullable": true},
        {"name": "f", "type": "float", "nullable": true},
        {"name": "b", "type": "boolean", "nullable": false},
        {"name": "j", "type": "json", "nullable": true},
        {"name": "x", "type": "bytes", "nullable": true},
        {"name": "att", "type": "blob_ref", "nullable": true},
        {"name": "doc", "type": "crdt", "nullable": true, "crdtType": "yjs-doc"},
        {"name": "secret", "type": "bytes", "nullable": true, "encrypted": true, "declaredType": "string"}
      ],
      "primaryKey": "id",
      "scopes": [
        {"pattern": "project:{project_id}"},
        {"pattern": "user:{owner_id}", "column": "owner"},
        "proj:{project_id}"
      ],
      "indexes": [{"name": "by_owner", "columns": ["owner"], "unique": false}]
    }
  ]
}`

func TestSchemaIR(t *testing.T) {
	s, err := ssp2.ParseSchema([]byte(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Tables[0]
	if got := []string{tb.Scopes[0].Prefix(), tb.Scopes[0].Variable(), tb.Scopes[0].ColumnName(), tb.Scopes[1].Prefix(), tb.Scopes[1].Variable(), tb.Scopes[1].ColumnName(), tb.Scopes[1].Key("u1")}; !cmp.Equal(got, []string{"project", "project_id", "project_id", "user", "owner_id", "owner", "user:u1"}) {
		t.Errorf("scope patterns parse to %q", got)
	}
	ds, err := s.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := driver.Schema{Version: 3, Tables: []driver.Table{{
		Name: "tasks", PrimaryKey: "id",
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString}, {Name: "project_id", Type: driver.TypeString}, {Name: "owner", Type: driver.TypeString},
			{Name: "n", Type: driver.TypeInteger, Nullable: true}, {Name: "f", Type: driver.TypeFloat, Nullable: true},
			{Name: "b", Type: driver.TypeBoolean}, {Name: "j", Type: driver.TypeJSON, Nullable: true},
			{Name: "x", Type: driver.TypeBytes, Nullable: true}, {Name: "att", Type: driver.TypeJSON, Nullable: true},
			{Name: "doc", Type: driver.TypeBytes, Nullable: true}, {Name: "secret", Type: driver.TypeBytes, Nullable: true},
		},
		Scopes:  []driver.Scope{{Variable: "project_id", Column: "project_id"}, {Variable: "owner_id", Column: "owner"}},
		Indexes: []driver.Index{{Name: "by_owner", Columns: []string{"owner"}}},
	}}}
	if d := cmp.Diff(want, ds); d != "" {
		t.Errorf("DriverSchema (-want +got):\n%s", d)
	}
	// Marshal writes the object shape; it parses back to the same IR.
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `{"pattern":"proj:{project_id}"}`) || !strings.Contains(string(out), `"type":"blob_ref"`) {
		t.Errorf("marshal: %s", out)
	}
	back, err := ssp2.ParseSchema(out)
	if err != nil || !cmp.Equal(back, s) {
		t.Errorf("round trip: %v\n%s", err, cmp.Diff(s, back))
	}
	c, err := ssp2.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	ct, ok := c.Table("tasks")
	if !ok || ct.Codec.Len() != 11 || ct.PrimaryKeyIndex != 0 || ct.Patterns[1] != (ssp2.CompiledPattern{Prefix: "user", Variable: "owner_id", Column: "owner", ColumnIndex: 2}) {
		t.Errorf("compiled table: %+v", ct)
	}
}

func TestSchemaIRRefusals(t *testing.T) {
	base := func() *ssp2.Schema {
		s, err := ssp2.ParseSchema([]byte(schemaJSON))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, mutate := range map[string]func(s *ssp2.Schema){
		"version 0":              func(s *ssp2.Schema) { s.Version = 0 },
		"duplicate table":        func(s *ssp2.Schema) { s.Tables = append(s.Tables, s.Tables[0]) },
		"no columns":             func(s *ssp2.Schema) { s.Tables[0].Columns = nil },
		"duplicate column":       func(s *ssp2.Schema) { s.Tables[0].Columns[1].Name = "id" },
		"unknown type":           func(s *ssp2.Schema) { s.Tables[0].Columns[1].Type = 9 },
		"primary key not column": func(s *ssp2.Schema) { s.Tables[0].PrimaryKey = "nope" },
		"no scope pattern":       func(s *ssp2.Schema) { s.Tables[0].Scopes = nil },
		"two variables":          func(s *ssp2.Schema) { s.Tables[0].Scopes[0].Pattern = "p:{a}:{b}" },
		"no variable":            func(s *ssp2.Schema) { s.Tables[0].Scopes[0].Pattern = "project" },
		"empty prefix":           func(s *ssp2.Schema) { s.Tables[0].Scopes[0].Pattern = ":{project_id}" },
		"text after variable":    func(s *ssp2.Schema) { s.Tables[0].Scopes[0].Pattern = "p:{project_id}x" },
		"unknown scope column":   func(s *ssp2.Schema) { s.Tables[0].Scopes[1].Column = "nope" },
		"variable on two columns": func(s *ssp2.Schema) {
			s.Tables[0].Scopes[1] = ssp2.ScopePattern{Pattern: "x:{project_id}", Column: "owner"}
		},
		"encrypted not bytes": func(s *ssp2.Schema) { s.Tables[0].Columns[10].Type = ssp2.TypeString },
		"declaredType unencrypted": func(s *ssp2.Schema) {
			s.Tables[0].Columns[3].DeclaredType = ssp2.TypeString
		},
		"index on unknown column": func(s *ssp2.Schema) { s.Tables[0].Indexes[0].Columns = []string{"nope"} },
	} {
		t.Run(name, func(t *testing.T) {
			s := base()
			mutate(s)
			if err := s.Validate(); !errors.Is(err, ssp2.ErrSchema) {
				t.Fatalf("Validate: %v, want ErrSchema", err)
			}
			if _, err := s.DriverSchema(); !errors.Is(err, ssp2.ErrSchema) {
				t.Fatalf("DriverSchema: %v", err)
			}
			if _, err := ssp2.Compile(s); !errors.Is(err, ssp2.ErrSchema) {
				t.Fatalf("Compile: %v", err)
			}
		})
	}
	for _, bad := range []string{`{"version":1,"tables":[],"extra":1}`, `{"version":1,"tables":[{"name":"t","columns":[{"name":"id","type":"text","nullable":false}],"primaryKey":"id","scopes":["a:{id}"]}]}`, `[]`} {
		if _, err := ssp2.ParseSchema([]byte(bad)); !errors.Is(err, ssp2.ErrSchema) {
			t.Errorf("ParseSchema(%s): %v", bad, err)
		}
	}
}
