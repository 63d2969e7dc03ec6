package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/errmap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// mapErr classifies an engine error as a *driver.Error (ERR-1): what names
// the operation and never a value or partition (V-10).
//
//	already a *driver.Error          unchanged
//	context ended, SQLITE_INTERRUPT  CodeUnavailable
//	SQLITE_BUSY                      CodeUnavailable (the write lock held past _busy_timeout)
//	SQLITE_LOCKED                    CodeUnavailable
//	transaction already rolled back  CodeUnavailable (its context ended, TX-6)
//	unique constraint                CodeConstraintViolation (SCH-10)
//	no such table                    CodeSchemaNewer (another process retired it)
//	SQLITE_NOTADB                    CodeInvalidArgument (the DSN names a file that is not a database)
//	anything else                    CodeInternal
//
// Opening a path that cannot be a database (a missing directory, a
// directory, no permission) is refused by openErr, not here.
func mapErr(ctx context.Context, err error, what string) error {
	if mapped, done := errmap.Common(ctx, err, what); done {
		return mapped
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return driver.Wrap(driver.CodeConstraintViolation, err, "%s: unique index collision (SCH-10)", what)
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY:
			return driver.Wrap(driver.CodeUnavailable, err,
				"%s: the store is busy: another connection or process holds its write lock (waited the DSN's _busy_timeout); retry later", what)
		case sqlite3.SQLITE_LOCKED:
			return driver.Wrap(driver.CodeUnavailable, err, "%s: database is locked", what)
		case sqlite3.SQLITE_INTERRUPT:
			return driver.Wrap(driver.CodeUnavailable, err, "%s: interrupted", what)
		case sqlite3.SQLITE_NOTADB:
			return driver.Wrap(driver.CodeInvalidArgument, err, "%s: the DSN names a file that is not an SQLite database", what)
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY:
			return driver.Wrap(driver.CodeUnavailable, err, "%s", what)
		}
		if se.Code() == sqlite3.SQLITE_ERROR && strings.Contains(se.Error(), "no such table") {
			// Another process migrated the store and retired a table this
			// Conn's schema still has (SCH-6): the stored schema is newer.
			return driver.Wrap(driver.CodeSchemaNewer, err, "%s: the stored schema changed under this store (another process migrated it); call EnsureSchema again", what)
		}
	}
	if errors.Is(err, sql.ErrConnDone) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: connection closed", what)
	}
	return errmap.Rest(err, what)
}

// mapErr is mapErr that reports a closed store as such (CodeClosed,
// ERR-4), whatever its pools answered.
func (c *Conn) mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	if c.closed.Load() {
		return errClosed()
	}
	return mapErr(ctx, err, what)
}

// openErr classifies a failure to open the database file at path (""
// when the DSN is a file: URI without an absolute path): a path that can
// never be opened as it stands — its directory is missing, it is a
// directory, or the process may not read or create it — is
// CodeInvalidArgument with the operating system's reason, so a host does
// not retry what only an operator can fix; anything else is mapErr's.
func openErr(ctx context.Context, err error, path, what string) error {
	var se *sqlite.Error
	if path == "" || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_CANTOPEN {
		return mapErr(ctx, err, what)
	}
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		return driver.Errorf(driver.CodeInvalidArgument, "%s: the DSN names a directory, not a database file", what)
	}
	dir := filepath.Dir(path)
	if fi, serr := os.Stat(dir); serr != nil {
		if errors.Is(serr, fs.ErrNotExist) {
			return driver.Errorf(driver.CodeInvalidArgument, "%s: the database file's directory does not exist (SQLite does not create directories)", what)
		}
		return driver.Wrap(driver.CodeInvalidArgument, serr, "%s: the database file's directory cannot be read", what)
	} else if !fi.IsDir() {
		return driver.Errorf(driver.CodeInvalidArgument, "%s: the database file's parent is not a directory", what)
	}
	// No permission: to write the file when it exists, else to create
	// one in its directory (a probe file, removed at once).
	var perr error
	if f, oerr := os.OpenFile(path, os.O_RDWR, 0); oerr == nil {
		_ = f.Close()
	} else if errors.Is(oerr, fs.ErrNotExist) {
		if f, cerr := os.CreateTemp(dir, ".syncstore-probe-*"); cerr == nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		} else {
			perr = cerr
		}
	} else {
		perr = oerr
	}
	if errors.Is(perr, fs.ErrPermission) {
		return driver.Wrap(driver.CodeInvalidArgument, perr, "%s: no permission to open or create the database file", what)
	}
	return mapErr(ctx, err, what)
}
