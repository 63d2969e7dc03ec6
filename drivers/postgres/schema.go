package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// EnsureSchema is driver.Conn.EnsureSchema (SCH-3…SCH-7), decided by
// schemaplan over the engine-neutral layout (storelayout), so every engine
// accepts and rejects the same schema changes; an equal layout costs one
// read. Changes run in one
// transaction under an advisory lock on the schema key: DDL is
// transactional, so an interrupted migration changes nothing and two
// processes migrating at once serialize, the second finding the first's
// result (SCH-7). On any error nothing changes.
func (c *Conn) EnsureSchema(ctx context.Context, schema driver.Schema) error {
	return c.state.Ensure(c.check, schema, func(layout string) error {
		ver, stored, err := c.storedSchema(ctx, c.pool)
		if err != nil {
			return err
		}
		if (ver != schema.Version || stored != layout) && c.replica {
			if ver > schema.Version {
				return driver.Errorf(driver.CodeSchemaNewer, "postgres: the standby's stored schema is version %d, newer than %d", ver, schema.Version)
			}
			return driver.Errorf(driver.CodeUnavailable,
				"postgres: the standby has not replayed schema version %d yet (it holds %d): ensure it on the primary, then retry", schema.Version, ver)
		}
		if ver != schema.Version || stored != layout {
			if err := c.migrate(ctx, schema, layout); err != nil {
				return err
			}
		}
		have, err := c.validIndexes(ctx, schema.Tables)
		if err != nil {
			return err
		}
		c.state.Store(schemaplan.NewEnsured(schema, layout, func(t driver.Table) *table { return newTableWith(t, have) }, struct{}{}))
		return nil
	})
}

// storedSchema reads the stored schema version (0 = none) and layout.
func (c *Conn) storedSchema(ctx context.Context, r querier) (int64, string, error) {
	var vs, layout string
	err := c.queryRow(ctx, r, sqlSelectMeta, []any{metaSchemaVersion}, &vs)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	if err := c.queryRow(ctx, r, sqlSelectMeta, []any{metaSchemaLayout}, &layout); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, "", driver.Errorf(driver.CodeInternal, "postgres: stored schema has a version but no layout")
		}
		return 0, "", err
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, "", driver.Errorf(driver.CodeInternal, "postgres: stored schema version is not a number")
	}
	return v, layout, nil
}

func (c *Conn) migrate(ctx context.Context, schema driver.Schema, layout string) error {
	return c.inTx(ctx, "postgres: ensure schema", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKeySchema); err != nil {
			return err
		}
		ver, stored, err := c.storedSchema(ctx, tx)
		if err != nil {
			return err
		}
		action, old, err := schemaplan.Decide(ver, stored, schema, layout)
		if err != nil || action == schemaplan.Keep { // Keep: another process got here first (SCH-7)
			return err
		}
		var ddl, retired []string
		if action == schemaplan.Create {
			for _, t := range schema.Tables {
				ddl = append(ddl, newTable(t).createSQL()...)
			}
		} else {
			if ddl, err = migrationSQL(old, schema); err != nil {
				return err
			}
			retired = storelayout.RetiredTables(old, schema)
		}
		if len(ddl) > 0 {
			if _, err := tx.Exec(ctx, strings.Join(ddl, ";\n"), pgx.QueryExecModeSimpleProtocol); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		for _, name := range retired {
			b.Queue(sqlBlobRefsClearTable, name) // a retired table's rows reference nothing (BLOB-1)
		}
		b.Queue(sqlUpsertMeta, metaSchemaVersion, strconv.FormatInt(schema.Version, 10))
		b.Queue(sqlUpsertMeta, metaSchemaLayout, layout)
		return tx.SendBatch(ctx, b).Close()
	})
}

// migrationSQL returns the PostgreSQL statements that take the stored
// layout old to schema s (SCH-6). Which changes are allowed is decided by
// storelayout.CheckMigration (its error, if any, is returned, so every
// engine rejects the same changes); the statements are
// this dialect's: drop retired tables, add tables, append nullable
// columns, drop and re-create changed indexes.
func migrationSQL(old storelayout.Layout, s driver.Schema) ([]string, error) {
	ddl, err := schemaplan.MigrationSQL(old, s, schemaplan.Dialect{
		DropTable:   func(table string) string { return "DROP TABLE " + quote(table) },
		CreateTable: func(t driver.Table) []string { return newTable(t).createSQL() },
		AddColumn: func(table string, c driver.Column) string {
			return "ALTER TABLE " + quote(table) + " ADD COLUMN " + columnDef(c)
		},
		DropIndex:   func(table, index string) string { return "DROP INDEX " + quote(declaredIndexName(table, index)) },
		CreateIndex: func(t driver.Table, ix driver.Index) string { return createIndexSQL(t.Name, ix) },
	})
	if err != nil {
		return nil, err
	}
	// A table whose columns changed gets the index pairs of its new
	// columns in place of its old ones (scanlayout.go): the old pair's
	// cover lacks the new columns and its predicate no longer matches the
	// scan's, so no scan would use it.
	for _, t := range s.Tables {
		ot, ok := old.Table(t.Name)
		if !ok || len(ot.Columns) == len(t.Columns) {
			continue
		}
		for _, n := range coverNames([]driver.Table{tableOfLayout(ot)}) {
			ddl = append(ddl, "DROP INDEX IF EXISTS "+quote(n))
		}
		ddl = append(ddl, coverSQL(t, "IF NOT EXISTS ")...)
	}
	return ddl, nil
}
