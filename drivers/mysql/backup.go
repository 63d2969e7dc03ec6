package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
)

var _ driver.Backuper = Driver{}

// maxBackupTables bounds the tables Backup copies: a store holds the
// driver's infrastructure tables plus one per synced table and index
// side table; more is not a store of this driver.
const maxBackupTables = 10_000

// Backup copies the whole store at dsn (driver.Backuper, test support).
// MySQL has no database template, so it copies table by table into a new
// database "syncstore_b_<16 hex>" on the same server: every base table
// the store's database holds (information_schema.TABLES, the schema name
// bound) is made again with CREATE TABLE … LIKE (columns, generated
// columns, indexes) and filled with INSERT … SELECT of its stored
// columns (generated ones are computed again). restore empties the
// store's database the same way in reverse: its tables are dropped and
// copied back from the backup. drop removes the backup database. An
// AUTO_INCREMENT counter restarts past the highest id copied. No Conn to
// dsn may be open.
func (Driver) Backup(ctx context.Context, dsn string) (restore, drop func(context.Context) error, err error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	store := cfg.DBName
	if store == "" {
		return nil, nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: Backup needs a DSN naming the store's database")
	}
	admin := cfg.Clone()
	admin.DBName = ""
	var b [8]byte
	_, _ = rand.Read(b[:])
	copyName := "syncstore_b_" + hex.EncodeToString(b[:])
	drop = func(ctx context.Context) error {
		return adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+quoteIdent(copyName))
	}
	if err := adminExec(ctx, admin, "CREATE DATABASE "+quoteIdent(copyName)+" CHARACTER SET utf8mb4"); err != nil {
		return nil, nil, err
	}
	if err := copySchema(ctx, admin, store, copyName, false); err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = drop(dctx)
		cancel()
		return nil, nil, err
	}
	restore = func(ctx context.Context) error { return copySchema(ctx, admin, copyName, store, true) }
	return restore, drop, nil
}

// copySchema makes every base table of database from in database to,
// with its rows; replace first drops to's own base tables. It runs on one
// session with foreign key checks off, so table order does not matter.
func copySchema(ctx context.Context, admin *mysql.Config, from, to string, replace bool) error {
	conn, err := mysql.NewConnector(admin)
	if err != nil {
		return driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return mapErr(ctx, err, "mysql: backup")
	}
	defer c.Close()
	exec := func(q string, args ...any) error {
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			return mapErr(ctx, err, "mysql: backup")
		}
		return nil
	}
	if err := exec("SET SESSION foreign_key_checks = 0"); err != nil {
		return err
	}
	if replace {
		old, err := baseTables(ctx, c, to)
		if err != nil {
			return err
		}
		for _, t := range old {
			if err := exec("DROP TABLE " + quoteIdent(to) + "." + quoteIdent(t)); err != nil {
				return err
			}
		}
	}
	tables, err := baseTables(ctx, c, from)
	if err != nil {
		return err
	}
	for _, t := range tables {
		src, dst := quoteIdent(from)+"."+quoteIdent(t), quoteIdent(to)+"."+quoteIdent(t)
		if err := exec("CREATE TABLE " + dst + " LIKE " + src); err != nil {
			return err
		}
		cols, err := storedColumns(ctx, c, from, t)
		if err != nil {
			return err
		}
		list := make([]string, len(cols))
		for i, col := range cols {
			list[i] = quoteIdent(col)
		}
		l := strings.Join(list, ", ")
		if err := exec("INSERT INTO " + dst + " (" + l + ") SELECT " + l + " FROM " + src); err != nil {
			return err
		}
	}
	return nil
}

// baseTables lists the base tables of database schema.
func baseTables(ctx context.Context, c *sql.Conn, schema string) ([]string, error) {
	return stringsOf(ctx, c, `SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME`, schema)
}

// storedColumns lists the columns of schema.table an INSERT may set: all
// but generated ones (MySQL answers an empty GENERATION_EXPRESSION for an
// ordinary column, MariaDB NULL).
func storedColumns(ctx context.Context, c *sql.Conn, schema, table string) ([]string, error) {
	return stringsOf(ctx, c, `SELECT COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COALESCE(GENERATION_EXPRESSION, '') = ''
		ORDER BY ORDINAL_POSITION`, schema, table)
}

func stringsOf(ctx context.Context, c *sql.Conn, q string, args ...any) ([]string, error) {
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, mapErr(ctx, err, "mysql: backup")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, mapErr(ctx, err, "mysql: backup")
		}
		if len(out) >= maxBackupTables {
			return nil, driver.Errorf(driver.CodeUnavailable, "mysql: backup: more than %d tables or columns", maxBackupTables)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(ctx, err, "mysql: backup")
	}
	return out, nil
}
