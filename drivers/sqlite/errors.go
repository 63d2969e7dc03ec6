package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
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
//	anything else                    CodeInternal
func mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		(ctx != nil && ctx.Err() != nil) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: context ended", what)
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
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY:
			return driver.Wrap(driver.CodeUnavailable, err, "%s", what)
		}
		if se.Code() == sqlite3.SQLITE_ERROR && strings.Contains(se.Error(), "no such table") {
			// Another process migrated the store and retired a table this
			// Conn's schema still has (SCH-6): the stored schema is newer.
			return driver.Wrap(driver.CodeSchemaNewer, err, "%s: the stored schema changed under this store (another process migrated it); call EnsureSchema again", what)
		}
	}
	if errors.Is(err, sql.ErrTxDone) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: the transaction was rolled back (its context ended)", what)
	}
	if errors.Is(err, sql.ErrConnDone) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: connection closed", what)
	}
	return driver.Wrap(driver.CodeInternal, err, "%s", what)
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
