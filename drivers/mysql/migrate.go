package mysql

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// step is one DDL statement of a schema change. MySQL commits each DDL
// statement on its own, so done (when set) checks the catalog first: a
// step whose work is already there is skipped, and a plan interrupted at
// any point re-runs to completion (SCH-7).
type step struct {
	sql  string
	args []any // bound values (DML steps only)
	done func(ctx context.Context, conn *sql.Conn) (bool, error)
}

func (s step) run(ctx context.Context, conn *sql.Conn) error {
	if s.done != nil {
		ok, err := s.done(ctx, conn)
		if err != nil || ok {
			return err
		}
	}
	_, err := conn.ExecContext(ctx, s.sql, s.args...) // DDL has no arguments: it goes by the text protocol
	return err
}

// plan returns the steps from the stored layout old (no tables for a new
// store) to schema, whose change SCH-6 allows (checked by the caller):
// retire removed tables; per kept table drop removed or changed indexes,
// append columns, retype columns whose membership in a key changed
// (LONGTEXT ↔ VARCHAR(255), LONGBLOB ↔ VARBINARY(255)), create new or
// changed indexes (not one a twin serves: servingIndex); create new tables.
func (c *Conn) plan(old storelayout.Layout, schema driver.Schema) []step {
	oldTables := map[string]driver.Table{}
	for _, t := range old.Schema(0).Tables {
		oldTables[t.Name] = t
	}
	var steps []step
	for name := range oldTables {
		if _, keep := schema.Table(name); !keep {
			// The table's rows reference no blob any more (BLOB-1); both
			// steps are idempotent.
			steps = append(steps, step{sql: blobRefsClearTable, args: []any{name}},
				step{sql: "DROP TABLE IF EXISTS " + quoteIdent(name)})
		}
	}
	for _, t := range schema.Tables {
		ot, ok := oldTables[t.Name]
		if !ok {
			steps = append(steps, step{sql: newTable(t).createSQL(c.coll)})
			continue
		}
		steps = append(steps, c.alterSteps(ot, t)...)
	}
	return steps
}

// alterSteps returns the steps that take table ot to t.
func (c *Conn) alterSteps(ot, t driver.Table) []step {
	var steps []step
	tq := quoteIdent(t.Name)
	oldKeyed, newKeyed := keyedColumns(ot), keyedColumns(t)
	for _, ix := range ot.Indexes {
		nix, keep := t.Index(ix.Name)
		if keep && sameIndex(ix, nix) {
			continue
		}
		want := driver.Index{}
		if keep {
			want = nix
		}
		steps = append(steps, step{sql: "ALTER TABLE " + tq + " DROP INDEX " + quoteIdent(ix.Name),
			done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
				got, exists, err := indexDef(ctx, conn, t.Name, ix.Name)
				return !exists || (keep && sameIndex(got, want)), err
			}})
	}
	for _, col := range t.Columns {
		def := columnDef(col, newKeyed[col.Name], c.coll)
		if _, had := ot.Column(col.Name); !had {
			steps = append(steps, step{sql: "ALTER TABLE " + tq + " ADD COLUMN " + def,
				done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
					ty, err := columnDataType(ctx, conn, t.Name, col.Name)
					return ty != "", err
				}})
			continue
		}
		if oldKeyed[col.Name] == newKeyed[col.Name] || !variableWidth(col.Type) {
			continue
		}
		want := strings.ToLower(strings.Fields(columnType(col, newKeyed[col.Name], c.coll))[0])
		want, _, _ = strings.Cut(want, "(")
		steps = append(steps, step{sql: "ALTER TABLE " + tq + " MODIFY COLUMN " + def,
			done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
				ty, err := columnDataType(ctx, conn, t.Name, col.Name)
				return ty == want, err
			}})
	}
	for _, ix := range t.Indexes {
		oix, had := ot.Index(ix.Name)
		if had && sameIndex(oix, ix) || servingIndex(t, ix) != ix.Name {
			continue // unchanged, or served by its twin (servingIndex)
		}
		kw := "CREATE INDEX "
		if ix.Unique {
			kw = "CREATE UNIQUE INDEX "
		}
		steps = append(steps, step{sql: kw + quoteIdent(ix.Name) + " ON " + tq + " (" + indexColumns(ix) + ")",
			done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
				_, exists, err := indexDef(ctx, conn, t.Name, ix.Name)
				return exists, err
			}})
	}
	return steps
}

func variableWidth(t driver.ColumnType) bool {
	return t == driver.TypeString || t == driver.TypeJSON || t == driver.TypeBytes
}

func sameIndex(a, b driver.Index) bool {
	return a.Unique == b.Unique && slices.Equal(a.Columns, b.Columns)
}

// columnDataType returns the lower-case DATA_TYPE of a column, "" when the
// column does not exist. Names compare exactly (the catalog's collation
// is case-insensitive).
func columnDataType(ctx context.Context, conn *sql.Conn, tbl, col string) (string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, tbl, col)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var t, cn, ty string
		if err := rows.Scan(&t, &cn, &ty); err != nil {
			return "", err
		}
		if t == tbl && strings.EqualFold(cn, col) {
			return strings.ToLower(ty), nil
		}
	}
	return "", rows.Err()
}

// indexDef returns the declared-index shape of index name of tbl (the
// partition column left out) and whether it exists.
func indexDef(ctx context.Context, conn *sql.Conn, tbl, name string) (driver.Index, bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ? ORDER BY SEQ_IN_INDEX`, tbl, name)
	if err != nil {
		return driver.Index{}, false, err
	}
	defer rows.Close()
	ix := driver.Index{Name: name}
	exists := false
	for rows.Next() {
		var t, in, cn string
		var nonUnique int64
		if err := rows.Scan(&t, &in, &cn, &nonUnique); err != nil {
			return driver.Index{}, false, err
		}
		if t != tbl || in != name {
			continue
		}
		exists = true
		ix.Unique = nonUnique == 0
		if cn != partitionColumn {
			ix.Columns = append(ix.Columns, cn)
		}
	}
	return ix, exists, rows.Err()
}
