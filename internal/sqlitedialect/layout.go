package sqlitedialect

import (
	"encoding/json"
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// Layout is the canonical storage layout of a schema, stored as JSON in
// _sync_meta (MetaSchemaLayout) and compared on every EnsureSchema
// (SCH-3, SCH-4). It is canonical: tables are sorted by name, scopes by
// variable, indexes by name, because none of those orders changes what is
// stored. Column order does matter and is kept.
type Layout struct {
	Tables []LayoutTable `json:"tables"`
}

// LayoutTable is one table of a Layout.
type LayoutTable struct {
	Name       string         `json:"name"`
	Columns    []LayoutColumn `json:"columns"`
	PrimaryKey string         `json:"primaryKey"`
	Scopes     []LayoutScope  `json:"scopes"`
	Indexes    []LayoutIndex  `json:"indexes"`
}

// LayoutColumn is one column of a LayoutTable.
type LayoutColumn struct {
	Name     string            `json:"name"`
	Type     driver.ColumnType `json:"type"`
	Nullable bool              `json:"nullable"`
}

// LayoutScope is one scope of a LayoutTable.
type LayoutScope struct {
	Variable string `json:"variable"`
	Column   string `json:"column"`
}

// LayoutIndex is one declared index of a LayoutTable.
type LayoutIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique"`
}

// LayoutOf returns the canonical layout of s.
func LayoutOf(s driver.Schema) Layout {
	l := Layout{Tables: make([]LayoutTable, 0, len(s.Tables))}
	for _, t := range s.Tables {
		lt := LayoutTable{Name: t.Name, PrimaryKey: t.PrimaryKey,
			Columns: []LayoutColumn{}, Scopes: []LayoutScope{}, Indexes: []LayoutIndex{}}
		for _, c := range t.Columns {
			lt.Columns = append(lt.Columns, LayoutColumn{Name: c.Name, Type: c.Type, Nullable: c.Nullable})
		}
		for _, sc := range t.Scopes {
			lt.Scopes = append(lt.Scopes, LayoutScope{Variable: sc.Variable, Column: sc.Column})
		}
		for _, ix := range t.Indexes {
			lt.Indexes = append(lt.Indexes, LayoutIndex{Name: ix.Name, Columns: append([]string{}, ix.Columns...), Unique: ix.Unique})
		}
		sort.Slice(lt.Scopes, func(i, j int) bool { return lt.Scopes[i].Variable < lt.Scopes[j].Variable })
		sort.Slice(lt.Indexes, func(i, j int) bool { return lt.Indexes[i].Name < lt.Indexes[j].Name })
		l.Tables = append(l.Tables, lt)
	}
	sort.Slice(l.Tables, func(i, j int) bool { return l.Tables[i].Name < l.Tables[j].Name })
	return l
}

// Encode returns the layout's canonical JSON text.
func (l Layout) Encode() string {
	b, _ := json.Marshal(l) // plain structs of strings and bools: cannot fail
	return string(b)
}

// DecodeLayout parses what Encode wrote.
func DecodeLayout(text string) (Layout, error) {
	var l Layout
	if err := json.Unmarshal([]byte(text), &l); err != nil {
		return Layout{}, driver.Wrap(driver.CodeInternal, err, "decode the stored schema layout")
	}
	return l, nil
}

// Schema returns the layout as a schema of the given version, in the
// layout's (canonical) table order.
func (l Layout) Schema(version int64) driver.Schema {
	s := driver.Schema{Version: version}
	for _, lt := range l.Tables {
		t := driver.Table{Name: lt.Name, PrimaryKey: lt.PrimaryKey}
		for _, c := range lt.Columns {
			t.Columns = append(t.Columns, driver.Column{Name: c.Name, Type: c.Type, Nullable: c.Nullable})
		}
		for _, sc := range lt.Scopes {
			t.Scopes = append(t.Scopes, driver.Scope{Variable: sc.Variable, Column: sc.Column})
		}
		for _, ix := range lt.Indexes {
			t.Indexes = append(t.Indexes, driver.Index{Name: ix.Name, Columns: append([]string(nil), ix.Columns...), Unique: ix.Unique})
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

func (l Layout) table(name string) (LayoutTable, bool) {
	for _, t := range l.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return LayoutTable{}, false
}

// CreateSchemaSQL returns the statements that create every table of s.
func CreateSchemaSQL(s driver.Schema) []string {
	var out []string
	for _, t := range s.Tables {
		out = append(out, NewTable(t).CreateSQL()...)
	}
	return out
}

// MigrationSQL returns the statements that take a store from the stored
// layout old to schema s (a newer version), per SCH-6: add tables, append
// nullable columns, add/drop declared indexes (a changed index is dropped
// and re-created), retire removed tables (DROP TABLE: its rows and scope
// index go; the commit log is untouched). Anything else — drop, retype or
// reorder a column, append a non-nullable one, change the primary key or
// the scopes — fails with CodeSchemaMigrationUnsupported before any
// statement is returned, so nothing changes. Run the statements in one
// transaction.
func MigrationSQL(old Layout, s driver.Schema) ([]string, error) {
	next := LayoutOf(s)
	unsupported := func(format string, args ...any) ([]string, error) {
		return nil, driver.Errorf(driver.CodeSchemaMigrationUnsupported, format+" (SCH-6)", args...)
	}
	var drops, creates []string
	for _, ot := range old.Tables {
		if _, ok := next.table(ot.Name); !ok {
			drops = append(drops, "DROP TABLE "+Quote(ot.Name))
		}
	}
	for _, t := range s.Tables {
		ot, ok := old.table(t.Name)
		if !ok {
			creates = append(creates, NewTable(t).CreateSQL()...)
			continue
		}
		nt, _ := next.table(t.Name)
		if nt.PrimaryKey != ot.PrimaryKey {
			return unsupported("table %s: the primary key cannot change", t.Name)
		}
		if !sameScopes(ot.Scopes, nt.Scopes) {
			return unsupported("table %s: scopes cannot change", t.Name)
		}
		if len(nt.Columns) < len(ot.Columns) {
			return unsupported("table %s: columns cannot be dropped", t.Name)
		}
		for i, oc := range ot.Columns {
			if nt.Columns[i] != oc {
				return unsupported("table %s: column %s cannot be dropped, retyped or reordered", t.Name, oc.Name)
			}
		}
		for _, nc := range nt.Columns[len(ot.Columns):] {
			if !nc.Nullable {
				return unsupported("table %s: appended column %s must be nullable", t.Name, nc.Name)
			}
			creates = append(creates, "ALTER TABLE "+Quote(t.Name)+" ADD COLUMN "+
				ColumnDef(driver.Column{Name: nc.Name, Type: nc.Type, Nullable: true}))
		}
		oldIx := map[string]LayoutIndex{}
		for _, ix := range ot.Indexes {
			oldIx[ix.Name] = ix
		}
		newIx := map[string]LayoutIndex{}
		for _, ix := range nt.Indexes {
			newIx[ix.Name] = ix
		}
		for _, ix := range ot.Indexes {
			if n, ok := newIx[ix.Name]; !ok || !sameIndex(ix, n) {
				drops = append(drops, DropIndexSQL(t.Name, ix.Name))
			}
		}
		for _, ix := range nt.Indexes {
			if o, ok := oldIx[ix.Name]; !ok || !sameIndex(o, ix) {
				creates = append(creates, CreateIndexSQL(t.Name, t.PrimaryKey, driver.Index{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique}))
			}
		}
	}
	return append(drops, creates...), nil
}

func sameScopes(a, b []LayoutScope) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameIndex(a, b LayoutIndex) bool {
	if a.Unique != b.Unique || len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		if a.Columns[i] != b.Columns[i] {
			return false
		}
	}
	return true
}
