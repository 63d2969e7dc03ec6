package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

var _ driver.Backuper = Driver{}

// maintenanceDB is the database the backup statements run from: a
// database is copied, dropped and created only from a session on another.
const maintenanceDB = "postgres"

// Backup copies the whole store at dsn (driver.Backuper, test support):
// CREATE DATABASE "syncstore_b_<16 hex>" TEMPLATE <the store's database>,
// run from the server's "postgres" database. restore drops the store's
// database (WITH (FORCE)) and creates it again from the copy, as a
// template in turn; drop removes the copy. PostgreSQL copies a database
// only while no other session is connected to it, so no Conn to dsn may
// be open during Backup or restore (CodeUnavailable otherwise).
func (Driver) Backup(ctx context.Context, dsn string) (restore, drop func(context.Context) error, err error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: malformed DSN")
	}
	store := cfg.Database
	if store == "" || store == maintenanceDB {
		return nil, nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: Backup needs a DSN naming the store's own database")
	}
	admin, err := withDatabase(dsn, maintenanceDB)
	if err != nil {
		return nil, nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	copyName := "syncstore_b_" + hex.EncodeToString(b[:])
	drop = func(ctx context.Context) error {
		return adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+quote(copyName)+" WITH (FORCE)")
	}
	if err := adminExec(ctx, admin, "CREATE DATABASE "+quote(copyName)+" TEMPLATE "+quote(store)); err != nil {
		// As Provision: the server may have made the copy although the
		// client gave up.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = drop(dctx)
		cancel()
		return nil, nil, err
	}
	restore = func(ctx context.Context) error {
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+quote(store)+" WITH (FORCE)"); err != nil {
			return err
		}
		return adminExec(ctx, admin, "CREATE DATABASE "+quote(store)+" TEMPLATE "+quote(copyName))
	}
	return restore, drop, nil
}
