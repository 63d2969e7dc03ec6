package sqlitesql

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
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
//
// With rebuildCovers, a table that gains columns has its scope indexes
// dropped and created again, last, so each covers the whole row
// (Table.CreateSQL; a store created before the covers gets them then).
// That reads the table and writes each index whole: a migration appending
// a column costs about one write of the table per scope column, inside
// its transaction. Without it (D1: a migration is one request, which D1
// ends after 30 s, and a migration that cannot finish would fail on every
// retry) the scope indexes stay as they were: scans stay correct, and
// read the appended columns, so each row, from the table.
func MigrationSQL(old storelayout.Layout, s driver.Schema, rebuildCovers bool) ([]string, error) {
	ddl, err := schemaplan.MigrationSQL(old, s, schemaplan.Dialect{
		DropTable:   func(table string) string { return "DROP TABLE " + Quote(table) },
		CreateTable: func(t driver.Table) []string { return NewTable(t).CreateSQL() },
		AddColumn: func(table string, c driver.Column) string {
			return "ALTER TABLE " + Quote(table) + " ADD COLUMN " + ColumnDef(c)
		},
		DropIndex:   DropIndexSQL,
		CreateIndex: func(t driver.Table, ix driver.Index) string { return CreateIndexSQL(t.Name, t.PrimaryKey, ix) },
	})
	if err != nil {
		return nil, err
	}
	for _, t := range s.Tables {
		if ot, ok := old.Table(t.Name); ok && rebuildCovers && len(ot.Columns) < len(t.Columns) {
			x := NewTable(t)
			ddl = append(append(ddl, x.DropScopeIndexSQL()...), x.ScopeIndexSQL()...)
		}
	}
	return ddl, nil
}
