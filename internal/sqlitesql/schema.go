package sqlitesql

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

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
// index go; the commit log is untouched). Any other change fails
// storelayout.CheckMigration (CodeSchemaMigrationUnsupported) before any
// statement is returned, so nothing changes. Run the statements in one
// transaction.
func MigrationSQL(old storelayout.Layout, s driver.Schema) ([]string, error) {
	if err := storelayout.CheckMigration(old, s); err != nil {
		return nil, err
	}
	next := storelayout.LayoutOf(s)
	var drops, creates []string
	for _, ot := range old.Tables {
		if _, ok := next.Table(ot.Name); !ok {
			drops = append(drops, "DROP TABLE "+Quote(ot.Name))
		}
	}
	for _, t := range s.Tables {
		ot, ok := old.Table(t.Name)
		if !ok {
			creates = append(creates, NewTable(t).CreateSQL()...)
			continue
		}
		nt, _ := next.Table(t.Name)
		for _, nc := range nt.Columns[len(ot.Columns):] {
			creates = append(creates, "ALTER TABLE "+Quote(t.Name)+" ADD COLUMN "+
				ColumnDef(driver.Column{Name: nc.Name, Type: nc.Type, Nullable: true}))
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
