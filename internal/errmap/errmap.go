// Package errmap is the engine-free start of every SQL driver's error
// mapping (ERR-1…ERR-4): what every engine maps the same way before its
// own error codes are looked at, and the closed-store rule of a Conn.
package errmap

import (
	"context"
	"database/sql"
	"errors"

	"github.com/syncstore/syncstore/driver"
)

// Common maps what every engine maps alike, and reports whether it did:
// nil stays nil; a *driver.Error (already mapped) is returned unchanged;
// an ended context (err is context.Canceled or DeadlineExceeded, or ctx,
// which may be nil, has ended) → CodeUnavailable "<what>: context ended".
// When done is false the driver maps err by its engine's codes.
func Common(ctx context.Context, err error, what string) (mapped error, done bool) {
	if err == nil {
		return nil, true
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err, true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		(ctx != nil && ctx.Err() != nil) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: context ended", what), true
	}
	return nil, false
}

// Rest maps what a database/sql driver's engine codes left: sql.ErrTxDone
// (database/sql rolled the transaction back when its context ended) →
// CodeUnavailable; anything else → CodeInternal wrapping err.
func Rest(err error, what string) error {
	if errors.Is(err, sql.ErrTxDone) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: the transaction was rolled back (its context ended)", what)
	}
	return driver.Wrap(driver.CodeInternal, err, "%s", what)
}
