package storelayout

import (
	"encoding/json"
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// Layout is the canonical storage layout of a schema, stored as JSON in
// each engine's _sync_meta (key "schema_layout") and compared on every
// EnsureSchema (SCH-3, SCH-4). It is canonical: tables are sorted by name, scopes by
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

// Table returns the table of the layout named name, and whether there is one.
func (l Layout) Table(name string) (LayoutTable, bool) {
	for _, t := range l.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return LayoutTable{}, false
}

// RetiredTables returns the tables of the stored layout old that schema s
// no longer has (SCH-6 retires them): their rows' blob references are
// cleared (sqlitesql.BlobRefsClearTable on SQLite and D1).
func RetiredTables(old Layout, s driver.Schema) []string {
	var out []string
	for _, t := range old.Tables {
		if _, ok := s.Table(t.Name); !ok {
			out = append(out, t.Name)
		}
	}
	return out
}
