package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// EnsureSchema is driver.Conn.EnsureSchema (SCH-3…SCH-7); an equal layout
// costs one read, and CodeSchemaMigrationUnsupported is decided before any
// DDL. A declared index over MySQL's key-length limit → CodeSchemaInvalid
// (docs/mysql.md).
//
// MySQL commits every DDL statement implicitly, so a migration is a list
// of steps, each of which first checks the catalog (information_schema)
// and does nothing when its work is already there; the schema version
// and layout are stored after the last step. A migration interrupted at
// any point therefore re-runs to completion, and GET_LOCK serializes
// EnsureSchema across processes (SCH-7): the second finds the first's
// result.
func (c *Conn) EnsureSchema(ctx context.Context, schema driver.Schema) error {
	return c.state.Ensure(c.check, schema, func(layout string) error {
		for _, t := range schema.Tables {
			if err := checkKeyLengths(t); err != nil {
				return err
			}
		}
		ver, stored, err := c.storedSchema(ctx)
		if err != nil {
			return err
		}
		if ver == schema.Version && stored == layout {
			c.install(schema, layout)
			return nil
		}
		if c.replica {
			if ver > schema.Version {
				return driver.Errorf(driver.CodeSchemaNewer, "mysql: the replica's stored schema is version %d, newer than %d", ver, schema.Version)
			}
			return driver.Errorf(driver.CodeUnavailable,
				"mysql: the replica has not applied schema version %d yet (it holds %d): ensure it on the primary, then retry", schema.Version, ver)
		}
		if err := c.migrate(ctx, schema, layout); err != nil {
			return err
		}
		c.install(schema, layout)
		return nil
	})
}

// storedSchema reads the stored schema version (0 = none) and layout.
func (c *Conn) storedSchema(ctx context.Context) (int64, string, error) {
	var vs, layout []byte
	err := c.queryRow(ctx, nil, selectMeta, []any{metaSchemaVersion}, &vs)
	if err == sql.ErrNoRows {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	if err := c.queryRow(ctx, nil, selectMeta, []any{metaSchemaLayout}, &layout); err != nil && err != sql.ErrNoRows {
		return 0, "", err
	}
	v, err := strconv.ParseInt(string(vs), 10, 64)
	if err != nil {
		return 0, "", driver.Errorf(driver.CodeInternal, "mysql: stored schema version is not a number")
	}
	return v, string(layout), nil
}

// migrate runs under the store's schema lock: it re-reads the stored
// schema and creates or migrates.
func (c *Conn) migrate(ctx context.Context, schema driver.Schema, layout string) error {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return c.mapErr(ctx, err, "mysql: ensure schema")
	}
	defer conn.Close()
	release, err := c.schemaLock(ctx, conn)
	if err != nil {
		return err
	}
	defer release()
	ver, stored, err := c.storedSchema(ctx)
	if err != nil {
		return err
	}
	action, old, err := schemaplan.Decide(ver, stored, schema, layout)
	if err != nil || action == schemaplan.Keep { // Keep: another process got here first (SCH-7)
		return err
	}
	if action == schemaplan.Migrate {
		if err := storelayout.CheckMigration(old, schema); err != nil { // SCH-6
			return err
		}
	}
	steps := c.plan(old, schema)
	for _, s := range steps {
		if err := s.run(ctx, conn); err != nil {
			return c.mapErr(ctx, err, "mysql: ensure schema")
		}
	}
	return c.writeTx(ctx, "mysql: ensure schema", func(tx *sql.Tx) error {
		if _, err := c.exec(ctx, tx, upsertMeta, metaSchemaLayout, layout); err != nil {
			return err
		}
		_, err := c.exec(ctx, tx, upsertMeta, metaSchemaVersion, strconv.FormatInt(schema.Version, 10))
		return err
	})
}

// schemaLock takes the store's schema lock (GET_LOCK, named after the
// database) on conn, waiting until ctx ends, and returns its release.
func (c *Conn) schemaLock(ctx context.Context, conn *sql.Conn) (func(), error) {
	sum := sha256.Sum256([]byte(c.cfg.DBName))
	name := "syncstore.schema." + hex.EncodeToString(sum[:16])
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 1)", name).Scan(&got); err != nil {
			return nil, c.mapErr(ctx, err, "mysql: take the schema lock")
		}
		if got.Valid && got.Int64 == 1 {
			return func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_, _ = conn.ExecContext(rctx, "DO RELEASE_LOCK(?)", name)
			}, nil
		}
		if ctx.Err() != nil {
			return nil, driver.Wrap(driver.CodeUnavailable, ctx.Err(), "mysql: take the schema lock")
		}
	}
}

// install builds the SQL of schema's tables and publishes it.
func (c *Conn) install(schema driver.Schema, layout string) {
	if !c.state.Holds(layout) {
		c.state.Store(schemaplan.NewEnsured(schema, layout, newTable, struct{}{}))
	}
}
