package ssp2

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Schema is the schema IR (§2.4, §3.1) in the JSON shape of upstream's
// DriverSchema (packages/conformance/src/driver.ts):
//
//	{"version": 3, "tables": [{"name": "tasks",
//	  "columns": [{"name": "id", "type": "string", "nullable": false}, …],
//	  "primaryKey": "id",
//	  "scopes": [{"pattern": "project:{project_id}"},
//	             {"pattern": "owner:{owner}", "column": "owner_id"}]}]}
//
// Column types are named string, integer, float, boolean, json, bytes,
// blob_ref and crdt. A scope may also be written as the bare pattern
// string (upstream's server shorthand); it is written back as an object.
// Tables may carry "indexes" ([{"name","columns","unique"}]), which the
// engine creates (driver.Index).
type Schema struct {
	Version int64   `json:"version"`
	Tables  []Table `json:"tables"`
}

// Table is one synced table of the IR.
type Table struct {
	Name string `json:"name"`
	// Columns are in declaration order: the row codec's order.
	Columns []Column `json:"columns"`
	// PrimaryKey names the column whose value is the rowId.
	PrimaryKey string         `json:"primaryKey"`
	Scopes     []ScopePattern `json:"scopes"`
	Indexes    []Index        `json:"indexes,omitempty"`
}

// Index is a declared secondary index.
type Index struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique,omitempty"`
}

// ScopePattern is a table's scope pattern (§3.1): "prefix:{variable}",
// with the column the variable reads (default: the variable itself). A
// row's scope key for the pattern is prefix + ":" + value — the address
// presence uses (§8.6.1); effective scopes are keyed by variable.
type ScopePattern struct {
	Pattern string `json:"pattern"`
	Column  string `json:"column,omitempty"`
}

// UnmarshalJSON reads {"pattern": …, "column"?: …} or a bare pattern
// string.
func (p *ScopePattern) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		*p = ScopePattern{}
		return json.Unmarshal(t, &p.Pattern)
	}
	type plain ScopePattern
	var q plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return err
	}
	*p = ScopePattern(q)
	return nil
}

// Parse splits the pattern into its prefix and variable: the pattern must
// be prefix:{variable} with a non-empty prefix without braces and a
// non-empty variable without braces or colons (upstream's
// /^([^{}]+):\{([^{}:]+)\}$/).
func (p ScopePattern) Parse() (prefix, variable string, ok bool) {
	s := p.Pattern
	if !strings.HasSuffix(s, "}") {
		return "", "", false
	}
	open := strings.LastIndex(s, ":{")
	if open <= 0 {
		return "", "", false
	}
	prefix, variable = s[:open], s[open+2:len(s)-1]
	if variable == "" || strings.ContainsAny(variable, "{}:") || strings.ContainsAny(prefix, "{}") {
		return "", "", false
	}
	return prefix, variable, true
}

// Prefix returns the pattern's prefix ("" when malformed).
func (p ScopePattern) Prefix() string { prefix, _, _ := p.Parse(); return prefix }

// Variable returns the pattern's variable ("" when malformed).
func (p ScopePattern) Variable() string { _, v, _ := p.Parse(); return v }

// ColumnName returns the column the variable reads: Column, or the
// variable when Column is empty.
func (p ScopePattern) ColumnName() string {
	if p.Column != "" {
		return p.Column
	}
	return p.Variable()
}

// Key returns the scope key of value under the pattern: prefix:value.
func (p ScopePattern) Key(value string) string { return p.Prefix() + ":" + value }

// ParseSchema decodes the IR's JSON (unknown fields refused) and checks it
// with Validate.
func ParseSchema(b []byte) (*Schema, error) {
	var s Schema
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, schemaErrf("schema IR is not valid JSON of the DriverSchema shape: %v", err)
	}
	if dec.More() {
		return nil, schemaErrf("schema IR has data after the document")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// ErrSchema is wrapped by every error of Validate, ParseSchema and
// Compile.
var ErrSchema = errors.New("ssp2: invalid schema IR")

func schemaErrf(format string, args ...any) error {
	return wrapf(ErrSchema, format, args...)
}

// Validate checks the rules of §2.4 and §3.1 the IR itself carries:
// version ≥ 1; table names non-empty and unique; each table with ≥ 1
// column, column names non-empty and unique, types known, an encrypted
// column typed bytes with a known declaredType (and a declaredType only
// on an encrypted column); a primaryKey naming a column; ≥ 1 scope
// pattern, each prefix:{variable} with its column (explicit or the
// variable) naming a column, a variable never bound to two different
// columns; index names unique, each index naming ≥ 1 column of the table.
// Engine rules (identifier syntax, reserved names, key and scope columns
// non-nullable strings) are sync.CompileSchema's, on DriverSchema's
// result. Failures wrap ErrSchema and name the table and element.
func (s *Schema) Validate() error {
	if s.Version < 1 {
		return schemaErrf("version must be ≥ 1")
	}
	seen := map[string]bool{}
	for ti := range s.Tables {
		t := &s.Tables[ti]
		if t.Name == "" {
			return schemaErrf("table #%d has no name", ti)
		}
		if seen[t.Name] {
			return schemaErrf("table %q is declared twice", t.Name)
		}
		seen[t.Name] = true
		if err := t.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (t *Table) validate() error {
	if len(t.Columns) == 0 {
		return schemaErrf("table %q has no columns", t.Name)
	}
	cols := map[string]bool{}
	for i, c := range t.Columns {
		switch {
		case c.Name == "":
			return schemaErrf("table %q: column #%d has no name", t.Name, i)
		case cols[c.Name]:
			return schemaErrf("table %q: column %q is declared twice", t.Name, c.Name)
		case !c.Type.Valid():
			return schemaErrf("table %q: column %q has no known type", t.Name, c.Name)
		case c.Encrypted && (c.Type != TypeBytes || !c.DeclaredType.Valid()):
			return schemaErrf("table %q: encrypted column %q must have type bytes and a known declaredType", t.Name, c.Name)
		case !c.Encrypted && c.DeclaredType != 0:
			return schemaErrf("table %q: column %q has a declaredType and is not encrypted", t.Name, c.Name)
		}
		cols[c.Name] = true
	}
	if !cols[t.PrimaryKey] {
		return schemaErrf("table %q: primary key %q is not a column", t.Name, t.PrimaryKey)
	}
	if len(t.Scopes) == 0 {
		return schemaErrf("table %q declares no scope pattern (every synced table declares at least one, §3.1)", t.Name)
	}
	bound := map[string]string{} // variable → column
	for _, p := range t.Scopes {
		_, v, ok := p.Parse()
		if !ok {
			return schemaErrf("table %q: scope pattern %q is not prefix:{variable} with exactly one variable", t.Name, p.Pattern)
		}
		col := p.ColumnName()
		if !cols[col] {
			return schemaErrf("table %q: scope pattern %q names unknown column %q", t.Name, p.Pattern, col)
		}
		if prev, ok := bound[v]; ok && prev != col {
			return schemaErrf("table %q: scope variable %q is bound to two columns, %q and %q", t.Name, v, prev, col)
		}
		bound[v] = col
	}
	idx := map[string]bool{}
	for _, ix := range t.Indexes {
		if ix.Name == "" || idx[ix.Name] {
			return schemaErrf("table %q: index %q is unnamed or declared twice", t.Name, ix.Name)
		}
		idx[ix.Name] = true
		if len(ix.Columns) == 0 {
			return schemaErrf("table %q: index %q names no column", t.Name, ix.Name)
		}
		for _, c := range ix.Columns {
			if !cols[c] {
				return schemaErrf("table %q: index %q names unknown column %q", t.Name, ix.Name, c)
			}
		}
	}
	return nil
}

// DriverSchema converts the IR to the engine's schema: each column typed
// by ColumnType.DriverType (blob_ref → json, crdt → bytes), each scope
// variable bound to its column (one driver.Scope per variable, in first
// declaration order), indexes as declared. It checks Validate first; the
// engine's own rules are checked by sync.CompileSchema or EnsureSchema.
func (s *Schema) DriverSchema() (driver.Schema, error) {
	if err := s.Validate(); err != nil {
		return driver.Schema{}, err
	}
	out := driver.Schema{Version: s.Version, Tables: make([]driver.Table, len(s.Tables))}
	for i, t := range s.Tables {
		dt := driver.Table{Name: t.Name, PrimaryKey: t.PrimaryKey}
		for _, c := range t.Columns {
			dt.Columns = append(dt.Columns, driver.Column{Name: c.Name, Type: c.Type.DriverType(), Nullable: c.Nullable})
		}
		seen := map[string]bool{}
		for _, p := range t.Scopes {
			if v := p.Variable(); !seen[v] {
				seen[v] = true
				dt.Scopes = append(dt.Scopes, driver.Scope{Variable: v, Column: p.ColumnName()})
			}
		}
		for _, ix := range t.Indexes {
			dt.Indexes = append(dt.Indexes, driver.Index{Name: ix.Name, Columns: append([]string(nil), ix.Columns...), Unique: ix.Unique})
		}
		out.Tables[i] = dt
	}
	return out, nil
}

// Compiled is a validated schema with each table's row codec, built once
// per schema version and shared (read-only, safe for concurrent use).
type Compiled struct {
	Version int64
	tables  map[string]*CompiledTable
	order   []*CompiledTable
}

// CompiledTable is one table of a Compiled schema.
type CompiledTable struct {
	Table
	// Codec is the table's row codec.
	Codec *RowCodec
	// PrimaryKeyIndex is the primary-key column's position.
	PrimaryKeyIndex int
	// Patterns are the scope patterns, parsed.
	Patterns []CompiledPattern
}

// CompiledPattern is a parsed scope pattern.
type CompiledPattern struct {
	Prefix, Variable, Column string
	// ColumnIndex is Column's position in the table.
	ColumnIndex int
}

// Compile validates s and builds its tables' row codecs.
func Compile(s *Schema) (*Compiled, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &Compiled{Version: s.Version, tables: make(map[string]*CompiledTable, len(s.Tables))}
	for _, t := range s.Tables {
		codec, err := NewRowCodec(t.Columns)
		if err != nil {
			return nil, schemaErrf("table %q: %v", t.Name, err)
		}
		ct := &CompiledTable{Table: t, Codec: codec, PrimaryKeyIndex: codec.index[t.PrimaryKey]}
		for _, p := range t.Scopes {
			prefix, v, _ := p.Parse()
			ct.Patterns = append(ct.Patterns, CompiledPattern{Prefix: prefix, Variable: v, Column: p.ColumnName(), ColumnIndex: codec.index[p.ColumnName()]})
		}
		c.tables[t.Name] = ct
		c.order = append(c.order, ct)
	}
	return c, nil
}

// Table returns the compiled table named name.
func (c *Compiled) Table(name string) (*CompiledTable, bool) {
	t, ok := c.tables[name]
	return t, ok
}

// Tables returns the compiled tables in declaration order.
func (c *Compiled) Tables() []*CompiledTable { return append([]*CompiledTable(nil), c.order...) }
