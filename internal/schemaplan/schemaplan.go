// Package schemaplan is EnsureSchema's decision every driver shares
// (SCH-3…SCH-6): given the stored schema's version and layout, create the
// tables, do nothing, fail, or migrate from the stored layout. How each
// engine creates and migrates stays in its driver.
package schemaplan

import (
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
