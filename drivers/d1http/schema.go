package d1http

import (
	"context"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// upserts are the ensured tables' multi-row upsert texts (Tx.UpsertRow),
// by table name: the d1http part of the ensured schema.
type upserts = map[string]*d1sql.D1Upserts

// schemaState is the ensured schema of a Conn with the SQL of its tables.
type schemaState = schemaplan.Ensured[*sqlitesql.Table, upserts]

// tableUpserts returns the SQL of an ensured table and its multi-row
// upsert texts, from one schema state; or CodeUnknownTable (SCH-8).
func (c *Conn) tableUpserts(name string) (*sqlitesql.Table, *d1sql.D1Upserts, error) {
	if st := c.state.Load(); st != nil {
		if t, ok := st.Tables[name]; ok {
			return t, st.Extra[name], nil
		}
	}
	return nil, nil, driver.Errorf(driver.CodeUnknownTable, "table %s is not in the ensured schema (SCH-8)", name)
}

// schemaAttempts bounds EnsureSchema's own retries after another process
// changed the stored schema between its read and its batch.
const schemaAttempts = 5

// EnsureSchema is driver.Conn.EnsureSchema (SCH-3…SCH-7). It reads the stored version and layout, then sends the
// DDL and the new version and layout as one all-or-nothing batch that
// starts with a guard: if another process changed the stored layout in
// between, the batch fails as a whole and EnsureSchema decides again
// (SCH-7), up to 5 times, then CodeWriteConflict. Errors as
// driver.Conn.EnsureSchema, and CodeSchemaInvalid for a table of more
// than 98 columns (D1 holds 100, the driver adds two), before anything is
// sent; on any error nothing changes.
func (c *Conn) EnsureSchema(ctx context.Context, schema driver.Schema) error {
	for _, t := range schema.Tables {
		// D1 refuses a table of more than d1MaxColumns columns; the driver adds two.
		if n := len(t.Columns) + 2; n > d1MaxColumns {
			return driver.Errorf(driver.CodeSchemaInvalid, "d1http: table %s has %d columns with the driver's two (%s, %s), over D1's %d per table",
				t.Name, n, sqlitesql.PartitionColumn, sqlitesql.VersionColumn, d1MaxColumns)
		}
	}
	return c.state.Ensure(c.check, schema, func(layout string) error {
		var err error
		for range schemaAttempts {
			if err = c.ensureOnce(ctx, schema, layout); driver.CodeOf(err) != driver.CodeWriteConflict {
				break
			}
		}
		if err != nil {
			return err
		}
		st := schemaplan.NewEnsured(schema, layout, sqlitesql.NewTable, make(upserts, len(schema.Tables)))
		for name, x := range st.Tables {
			st.Extra[name] = d1sql.NewD1Upserts(x)
		}
		c.state.Store(st)
		return nil
	})
}

func (c *Conn) ensureOnce(ctx context.Context, schema driver.Schema, layout string) error {
	res, err := c.cl.read(ctx, "d1http: read the stored schema",
		st(sqlitesql.SelectMeta, sqlitesql.MetaSchemaVersion), st(sqlitesql.SelectMeta, sqlitesql.MetaSchemaLayout))
	if err != nil {
		return err
	}
	var ver int64
	var stored string
	if rows := res[0].Results.Rows; len(rows) == 1 {
		vs, _ := rawString(rows[0][0])
		if ver, err = strconv.ParseInt(vs, 10, 64); err != nil {
			return driver.Errorf(driver.CodeInternal, "d1http: stored schema version is not a number")
		}
		lr := res[1].Results.Rows
		if len(lr) != 1 {
			return driver.Errorf(driver.CodeInternal, "d1http: stored schema has a version but no layout")
		}
		stored, _ = rawString(lr[0][0])
	}
	action, old, err := schemaplan.Decide(ver, stored, schema, layout)
	if err != nil || action == schemaplan.Keep { // Keep: SCH-3
		return err
	}
	var ddl []string
	if action == schemaplan.Create {
		ddl = sqlitesql.CreateSchemaSQL(schema)
	} else if ddl, err = sqlitesql.MigrationSQL(old, schema, false); err != nil { // no cover rebuild: D1 ends a request after 30 s
		return err
	}
	stmts := []stmt{st(d1sql.D1SchemaGuard, stored)}
	for _, q := range ddl {
		stmts = append(stmts, st(q))
	}
	stmts = append(stmts, st(sqlitesql.UpsertMeta, sqlitesql.MetaSchemaVersion, strconv.FormatInt(schema.Version, 10)),
		st(sqlitesql.UpsertMeta, sqlitesql.MetaSchemaLayout, layout))
	_, err = c.write(ctx, "d1http: ensure schema", stmts...)
	return err
}
