package sqlite

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// EnsureSchema is driver.Conn.EnsureSchema (SCH-3…SCH-7), run in one
// BEGIN IMMEDIATE transaction: SQLite DDL is transactional, so an
// interrupted migration leaves nothing half-done and two processes
// migrating at once serialize (the second finds the first's result). An
// equal layout is checked on a reader first, so it is cheap; a migration
// runs sqlitesql.MigrationSQL. On success the Conn uses schema's tables
// and their prepared statements.
func (c *Conn) EnsureSchema(ctx context.Context, schema driver.Schema) error {
	return c.state.Ensure(c.check, schema, func(layout string) error {
		// Fast path (SCH-3): the stored schema already is this one.
		ver, stored, err := c.storedSchema(ctx, c.reader())
		if err != nil {
			return err
		}
		if ver == schema.Version && stored == layout {
			if c.state.Holds(layout) {
				return nil
			}
			return c.install(ctx, schema, layout)
		}
		if err := c.migrate(ctx, schema, layout); err != nil {
			return err
		}
		return c.install(ctx, schema, layout)
	})
}

// storedSchema reads the stored schema version (0 = none) and layout.
func (c *Conn) storedSchema(ctx context.Context, r runner) (int64, string, error) {
	var vs, layout string
	err := c.queryRow(ctx, r, sqlitesql.SelectMeta, []any{sqlitesql.MetaSchemaVersion}, &vs)
	if err == sql.ErrNoRows {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	if err := c.queryRow(ctx, r, sqlitesql.SelectMeta, []any{sqlitesql.MetaSchemaLayout}, &layout); err != nil {
		if err == sql.ErrNoRows {
			return 0, "", driver.Errorf(driver.CodeInternal, "sqlite: stored schema has a version but no layout")
		}
		return 0, "", err
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, "", driver.Errorf(driver.CodeInternal, "sqlite: stored schema version is not a number")
	}
	return v, layout, nil
}

// migrate compares and changes the stored schema inside one write
// transaction.
func (c *Conn) migrate(ctx context.Context, schema driver.Schema, layout string) error {
	return c.writeTx(ctx, "sqlite: ensure schema", func(t *txStmts) error {
		ver, stored, err := c.storedSchema(ctx, t)
		if err != nil {
			return err
		}
		action, old, err := schemaplan.Decide(ver, stored, schema, layout)
		if err != nil || action == schemaplan.Keep { // Keep: another process got here first (SCH-7)
			return err
		}
		var ddl, retired []string
		if action == schemaplan.Create {
			ddl = sqlitesql.CreateSchemaSQL(schema)
		} else {
			if ddl, err = sqlitesql.MigrationSQL(old, schema, true); err != nil {
				return err
			}
			retired = storelayout.RetiredTables(old, schema)
		}
		for _, q := range ddl {
			if _, err := t.tx.ExecContext(ctx, q); err != nil {
				return mapErr(ctx, err, "sqlite: ensure schema")
			}
		}
		for _, name := range retired { // BLOB-1: a retired table's rows reference nothing (blobrefs.go)
			if err := t.exec(ctx, sqlitesql.BlobRefsClearTable, name); err != nil {
				return err
			}
		}
		if err := t.exec(ctx, sqlitesql.UpsertMeta, sqlitesql.MetaSchemaVersion, strconv.FormatInt(schema.Version, 10)); err != nil {
			return err
		}
		return t.exec(ctx, sqlitesql.UpsertMeta, sqlitesql.MetaSchemaLayout, layout)
	})
}

// install builds the SQL of schema's tables, prepares their statements on
// the writer and the readers (no lock is held meanwhile: a Tx of another
// goroutine may hold the writer), and publishes them.
func (c *Conn) install(ctx context.Context, schema driver.Schema, layout string) error {
	st := schemaplan.NewEnsured(schema, layout, sqlitesql.NewTable, struct{}{})
	for _, x := range st.Tables {
		qs := append([]string{x.Get, x.Upsert, x.Delete, x.KeepTombstone, x.Tombstone}, x.ScanStatements()...)
		for _, q := range qs {
			if _, err := c.wr.Get(ctx, q); err != nil {
				return c.mapErr(ctx, err, "sqlite: prepare table statements")
			}
		}
		for _, q := range append([]string{x.Get}, x.ScanStatements()...) {
			if _, err := c.rd.Get(ctx, q); err != nil {
				return c.mapErr(ctx, err, "sqlite: prepare table statements")
			}
		}
	}
	c.state.Store(st)
	return nil
}
