package memdriver

import (
	"cmp"
	"context"
	"reflect"
	"slices"

	"github.com/syncstore/syncstore/driver"
)

// EnsureSchema makes the store's tables match schema (SCH-3…SCH-7): no
// stored schema → install it; same version → nothing to do when the
// layout is the same, else CodeSchemaMismatch (SCH-4); stored newer →
// CodeSchemaNewer (SCH-5); given newer → migrate per SCH-6 or fail with
// CodeSchemaMigrationUnsupported. Every check runs before any change, and
// the change is one assignment, so on error nothing changed and a
// migration cannot stop half-way (SCH-7). One EnsureSchema runs at a time
// per store.
func (c *Conn) EnsureSchema(ctx context.Context, schema driver.Schema) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	s := c.s
	s.ensureMu.Lock()
	defer s.ensureMu.Unlock()
	stored := s.currentSchema()
	switch {
	case stored.Version == 0:
	case stored.Version > schema.Version:
		return driver.Errorf(driver.CodeSchemaNewer, "memory: stored schema version %d is newer than %d (SCH-5)", stored.Version, schema.Version)
	case stored.Version == schema.Version:
		if reflect.DeepEqual(layout(stored), layout(schema)) {
			return nil
		}
		return driver.Errorf(driver.CodeSchemaMismatch, "memory: schema version %d is stored with a different layout (SCH-4)", stored.Version)
	default:
		if err := checkMigration(stored, schema); err != nil {
			return err
		}
	}
	s.install(layout(schema))
	return nil
}

// install makes schema the store's schema and drops the rows of every
// table it retires, in every partition (SCH-6: the commit log is kept).
func (s *store) install(schema driver.Schema) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.schema
	s.schema = schema
	for _, t := range old.Tables {
		if _, kept := schema.Table(t.Name); kept {
			continue
		}
		for p, st := range s.parts {
			if _, has := st.rows[t.Name]; has {
				d := newDraft(st)
				d.ownRows()
				delete(d.p.rows, t.Name)
				next := d.p
				s.parts[p] = &next
			}
		}
	}
}

// checkMigration allows what SCH-6 allows from old to next: new tables,
// appended nullable columns, any change of declared indexes, retired
// tables. Anything else is CodeSchemaMigrationUnsupported.
func checkMigration(old, next driver.Schema) error {
	unsupported := func(format string, args ...any) error {
		return driver.Errorf(driver.CodeSchemaMigrationUnsupported, "memory: "+format+" (SCH-6)", args...)
	}
	old, next = layout(old), layout(next)
	for _, nt := range next.Tables {
		ot, ok := old.Table(nt.Name)
		if !ok {
			continue // a new table
		}
		if nt.PrimaryKey != ot.PrimaryKey || !reflect.DeepEqual(nt.Scopes, ot.Scopes) {
			return unsupported("table %s: the primary key and scopes cannot change", nt.Name)
		}
		if len(nt.Columns) < len(ot.Columns) || !slices.Equal(nt.Columns[:len(ot.Columns)], ot.Columns) {
			return unsupported("table %s: columns cannot be dropped, retyped or reordered", nt.Name)
		}
		for _, col := range nt.Columns[len(ot.Columns):] {
			if !col.Nullable {
				return unsupported("table %s: appended column %s must be nullable", nt.Name, col.Name)
			}
		}
	}
	return nil
}

// layout returns a deep copy of s in canonical form: tables sorted by
// name, scopes by variable, indexes by name (none of those orders changes
// what is stored; column order does), and no nil slices, so two layouts
// compare with reflect.DeepEqual.
func layout(s driver.Schema) driver.Schema {
	out := driver.Schema{Version: s.Version, Tables: []driver.Table{}}
	for _, t := range s.Tables {
		ct := driver.Table{Name: t.Name, PrimaryKey: t.PrimaryKey,
			Columns: append([]driver.Column{}, t.Columns...),
			Scopes:  append([]driver.Scope{}, t.Scopes...),
			Indexes: []driver.Index{}}
		for _, ix := range t.Indexes {
			ct.Indexes = append(ct.Indexes, driver.Index{Name: ix.Name, Unique: ix.Unique, Columns: append([]string{}, ix.Columns...)})
		}
		slices.SortFunc(ct.Scopes, func(a, b driver.Scope) int { return cmp.Compare(a.Variable, b.Variable) })
		slices.SortFunc(ct.Indexes, func(a, b driver.Index) int { return cmp.Compare(a.Name, b.Name) })
		out.Tables = append(out.Tables, ct)
	}
	slices.SortFunc(out.Tables, func(a, b driver.Table) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
