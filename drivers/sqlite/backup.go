package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	msqlite "modernc.org/sqlite"

	"github.com/syncstore/syncstore/driver"
)

var _ driver.Backuper = Driver{}

// Backup copies the whole store at dsn (driver.Backuper, test support):
// VACUUM INTO a file beside the database ("<db>.backup-<16 hex>"), a
// consistent copy even of a store in WAL mode. restore copies it back
// with SQLite's online backup API (every page of the database replaced,
// the WAL included); drop removes the copy. dsn must name a database
// file (a path or an absolute file: URI): a :memory: store has no place
// beside it → CodeInvalidArgument. No Conn to dsn may be open.
func (Driver) Backup(ctx context.Context, dsn string) (restore, drop func(context.Context) error, err error) {
	t, err := parseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	if t.tmpDir != "" {
		_ = os.RemoveAll(t.tmpDir)
	}
	if t.path == "" || t.tmpDir != "" {
		return nil, nil, driver.Errorf(driver.CodeInvalidArgument, "sqlite: Backup needs a database file's path")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	copyPath := t.path + ".backup-" + hex.EncodeToString(b[:])
	drop = func(context.Context) error {
		if err := os.Remove(copyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return driver.Wrap(driver.CodeInternal, err, "sqlite: remove a backup")
		}
		return nil
	}
	db, err := openDB(t.dsnFor(true), 1)
	if err != nil {
		return nil, nil, driver.Wrap(driver.CodeUnavailable, err, "sqlite: open the store to back it up")
	}
	defer db.Close()
	// VACUUM INTO takes an expression: the path is bound, not spliced.
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", copyPath); err != nil {
		_ = drop(ctx)
		return nil, nil, driver.Wrap(driver.CodeUnavailable, err, "sqlite: back up the store")
	}
	restore = func(ctx context.Context) error { return restoreFile(ctx, t, copyPath) }
	return restore, drop, nil
}

// restoreFile replaces the database of t with the file at copyPath
// through the online backup API on one connection of the store.
func restoreFile(ctx context.Context, t target, copyPath string) error {
	if _, err := os.Stat(copyPath); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "sqlite: the backup is gone")
	}
	db, err := openDB(t.dsnFor(true), 1)
	if err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "sqlite: open the store to restore it")
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "sqlite: open the store to restore it")
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(string) (*msqlite.Backup, error)
		})
		if !ok {
			return errors.New("the SQLite connection has no backup API")
		}
		bk, err := r.NewRestore(fileURI(copyPath) + "?mode=ro")
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(-1) // true: pages remain
			if err != nil {
				_ = bk.Finish()
				return err
			}
			if !more {
				return bk.Finish()
			}
		}
	})
	if err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "sqlite: restore the store")
	}
	// Fold the restored pages into the database file, so the store reads
	// the same whichever way it is opened next.
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "sqlite: checkpoint the restored store")
	}
	return nil
}
