package storelayout

import "github.com/syncstore/syncstore/driver"

// CheckMigration checks that a store may go from the stored layout old to
// schema s (a newer version) per SCH-6: tables may be added or retired,
// nullable columns appended, declared indexes added, dropped or changed.
// Anything else — drop, retype or reorder a column, append a non-nullable
// one, change the primary key or the scopes of a kept table — fails with
// CodeSchemaMigrationUnsupported, naming the first such table (in s's
// order) and change. Every engine checks with it before it changes
// anything, so the same schema change is refused on every engine.
func CheckMigration(old Layout, s driver.Schema) error {
	next := LayoutOf(s)
	unsupported := func(format string, args ...any) error {
		return driver.Errorf(driver.CodeSchemaMigrationUnsupported, format+" (SCH-6)", args...)
	}
	for _, t := range s.Tables {
		ot, ok := old.Table(t.Name)
		if !ok {
			continue
		}
		nt, _ := next.Table(t.Name)
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
		}
	}
	return nil
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
