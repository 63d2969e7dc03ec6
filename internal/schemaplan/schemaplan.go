// Package schemaplan is EnsureSchema's decision every driver shares
// (SCH-3…SCH-6): given the stored schema's version and layout, create the
// tables, do nothing, fail, or migrate from the stored layout. How each
// engine creates and migrates stays in its driver.
package schemaplan

import (
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Action is what EnsureSchema does.
type Action int

const (
	// Create: no schema is stored (version 0); create every table.
	Create Action = iota
	// Keep: the stored schema is the given one (SCH-3; another process
	// may have ensured it first, SCH-7): nothing to do.
	Keep
	// Migrate: an older version is stored; migrate from its layout
	// (SCH-6; storelayout.CheckMigration says whether the change is allowed).
	Migrate
)

// Decide returns what EnsureSchema does for schema, whose encoded layout
// is layout, when version ver (0: none) with layout stored is stored, and
// for Migrate the stored layout decoded. Errors: a stored version newer
// than schema's → CodeSchemaNewer (SCH-5); the same version with another
// layout → CodeSchemaMismatch (SCH-4); a stored layout that does not
// decode (storelayout.DecodeLayout's error).
func Decide(ver int64, stored string, schema driver.Schema, layout string) (Action, storelayout.Layout, error) {
	switch {
	case ver == 0:
		return Create, storelayout.Layout{}, nil
	case ver > schema.Version:
		return 0, storelayout.Layout{}, driver.Errorf(driver.CodeSchemaNewer, "stored schema version %d is newer than %d (SCH-5)", ver, schema.Version)
	case ver == schema.Version:
		if stored == layout {
			return Keep, storelayout.Layout{}, nil
		}
		return 0, storelayout.Layout{}, driver.Errorf(driver.CodeSchemaMismatch, "schema version %d is stored with a different layout (SCH-4)", ver)
	}
	old, err := storelayout.DecodeLayout(stored)
	if err != nil {
		return 0, storelayout.Layout{}, err
	}
	return Migrate, old, nil
}

// Table returns tables[name], the SQL of a table of the ensured schema
// (tables is nil before EnsureSchema succeeded), or CodeUnknownTable
// (SCH-8).
func Table[T any](tables map[string]T, name string) (T, error) {
	if t, ok := tables[name]; ok {
		return t, nil
	}
	var zero T
	return zero, driver.Errorf(driver.CodeUnknownTable, "table %s is not in the ensured schema (SCH-8)", name)
}

// Ensured is a Conn's ensured schema: its encoded layout
// (storelayout.Layout.Encode), the SQL of its tables by name (T, the
// driver's table type) and what else the driver derives from the schema
// (X). It is replaced as a whole (State.Store), never mutated.
type Ensured[T, X any] struct {
	Layout string
	Tables map[string]T
	Extra  X
}

// NewEnsured returns the Ensured of schema, whose encoded layout is
// layout, with each table's SQL built by newTable.
func NewEnsured[T, X any](schema driver.Schema, layout string, newTable func(driver.Table) T, extra X) *Ensured[T, X] {
	e := &Ensured[T, X]{Layout: layout, Tables: make(map[string]T, len(schema.Tables)), Extra: extra}
	for _, t := range schema.Tables {
		e.Tables[t.Name] = newTable(t)
	}
	return e
}

// State is a Conn's ensured schema (nil until EnsureSchema succeeded)
// and the lock that serializes the Conn's EnsureSchema calls (other
// processes are serialized by each engine's own means, SCH-7). The zero
// value holds no schema.
type State[T, X any] struct {
	cur atomic.Pointer[Ensured[T, X]]
	mu  gosync.Mutex
}

// Load returns the ensured schema, nil before EnsureSchema succeeded.
func (s *State[T, X]) Load() *Ensured[T, X] { return s.cur.Load() }

// Store publishes e as the ensured schema.
func (s *State[T, X]) Store(e *Ensured[T, X]) { s.cur.Store(e) }

// Tables returns the ensured schema's tables by name (nil before
// EnsureSchema succeeded).
func (s *State[T, X]) Tables() map[string]T {
	if e := s.cur.Load(); e != nil {
		return e.Tables
	}
	return nil
}

// Table returns the SQL of the ensured table name, or CodeUnknownTable
// (SCH-8).
func (s *State[T, X]) Table(name string) (T, error) { return Table(s.Tables(), name) }

// Holds reports whether the ensured schema's encoded layout is layout.
func (s *State[T, X]) Holds(layout string) bool {
	e := s.cur.Load()
	return e != nil && e.Layout == layout
}

// Ensure is EnsureSchema's frame: unless check fails (the Conn is
// closed: its error), it runs ensure with schema's encoded layout, this
// Conn's EnsureSchema calls serialized, and returns ensure's error.
func (s *State[T, X]) Ensure(check func() error, schema driver.Schema, ensure func(layout string) error) error {
	if err := check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ensure(storelayout.LayoutOf(schema).Encode())
}

// Index returns the declared index q.Index of table t, checked against
// q in IXL-2's order after the table's own check (CodeUnknownTable):
// an undeclared index → CodeIndexNotFound; a value count other than the
// index's column count → CodeIndexValueCountMismatch.
func Index(t driver.Table, q driver.IndexQuery) (driver.Index, error) {
	ix, ok := t.Index(q.Index)
	if !ok {
		return driver.Index{}, driver.Errorf(driver.CodeIndexNotFound, "index %s is not declared on table %s (IXL-2)", q.Index, q.Table)
	}
	if len(q.Values) != len(ix.Columns) {
		return driver.Index{}, driver.Errorf(driver.CodeIndexValueCountMismatch, "index %s of table %s has %d columns, got %d values (IXL-2)",
			ix.Name, t.Name, len(ix.Columns), len(q.Values))
	}
	return ix, nil
}

// Dialect renders the statements of a migration (MigrationSQL) in one
// engine's SQL.
type Dialect struct {
	DropTable   func(table string) string
	CreateTable func(t driver.Table) []string
	// AddColumn appends column c (nullable) to table.
	AddColumn   func(table string, c driver.Column) string
	DropIndex   func(table, index string) string
	CreateIndex func(t driver.Table, ix driver.Index) string
}

// MigrationSQL returns the statements, in d's SQL, that take the stored
// layout old to schema s (SCH-6). Which changes are allowed is decided by
// storelayout.CheckMigration (its error is returned before any statement,
// so every engine rejects the same changes). The statements are the
// drops, then the creates: drop retired tables (old's order) and the
// declared indexes removed or changed (s's table order, old's index
// order); then per table of s, in order, create a new table whole, or
// append its new nullable columns and create its new or changed indexes.
func MigrationSQL(old storelayout.Layout, s driver.Schema, d Dialect) ([]string, error) {
	if err := storelayout.CheckMigration(old, s); err != nil {
		return nil, err
	}
	next := storelayout.LayoutOf(s)
	var drops, creates []string
	for _, ot := range old.Tables {
		if _, ok := next.Table(ot.Name); !ok {
			drops = append(drops, d.DropTable(ot.Name))
		}
	}
	for _, t := range s.Tables {
		ot, ok := old.Table(t.Name)
		if !ok {
			creates = append(creates, d.CreateTable(t)...)
			continue
		}
		nt, _ := next.Table(t.Name)
		for _, nc := range nt.Columns[len(ot.Columns):] {
			creates = append(creates, d.AddColumn(t.Name, driver.Column{Name: nc.Name, Type: nc.Type, Nullable: true}))
		}
		oldIx := map[string]storelayout.LayoutIndex{}
		for _, ix := range ot.Indexes {
			oldIx[ix.Name] = ix
		}
		newIx := map[string]storelayout.LayoutIndex{}
		for _, ix := range nt.Indexes {
			newIx[ix.Name] = ix
		}
		for _, ix := range ot.Indexes {
			if n, ok := newIx[ix.Name]; !ok || !sameIndex(ix, n) {
				drops = append(drops, d.DropIndex(t.Name, ix.Name))
			}
		}
		for _, ix := range nt.Indexes {
			if o, ok := oldIx[ix.Name]; !ok || !sameIndex(o, ix) {
				creates = append(creates, d.CreateIndex(t, driver.Index{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique}))
			}
		}
	}
	return append(drops, creates...), nil
}

func sameIndex(a, b storelayout.LayoutIndex) bool {
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
