// Package txstate is the lifecycle every driver's Tx shares: open, aborted
// (TX-6), finished (TX-5), with the lock that serializes the Tx's calls.
// What ends or aborts the engine transaction stays in the driver, which
// says so through an Engine built per call.
//
// The rules it implements (docs/contract.md):
//   - TX-5: every operation on a finished Tx (Commit, CommitRejected or
//     Rollback was called) fails with CodeTxFinished; a second Commit too.
//   - TX-6: an operation that failed with an engine error or an ended
//     context aborts the Tx: every later operation fails with
//     CodeUnavailable (retryable) and Commit writes nothing.
//   - ERR-4: once the Tx's Conn is closed (which rolled the Tx back),
//     every operation fails with the driver's CodeClosed error first.
package txstate

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// State is the lifecycle of one Tx and its lock. The zero value is an
// open Tx, unlocked. The driver guards the rest of its Tx (buffered
// writes, connections) with the same lock: Do and its own methods that
// end the Tx hold it; a context watcher takes it with Lock.
type State struct {
	mu       gosync.Mutex
	finished bool
	aborted  bool
}

// Engine is what the driver knows that State does not. Build it per call
// (a value of method values; nothing of it is kept).
type Engine struct {
	// Closed returns the driver's CodeClosed error once the Tx's Conn is
	// closed (ERR-4), else nil. Checked first. Nil: never closed.
	Closed func() error
	// IsAbort reports whether err, returned by an operation run under
	// ctx, may have ended the engine transaction (TX-6). Nil: no error
	// aborts the Tx. IsAbort (below) is the common classifier.
	IsAbort func(ctx context.Context, err error) bool
	// OnAbort, if set, runs with the lock held when an operation of Do
	// aborted the Tx (postgres rolls the engine transaction back at once).
	OnAbort func()
}

// Lock takes the Tx's lock (Do and End hold it already).
func (s *State) Lock() { s.mu.Lock() }

// Unlock releases the Tx's lock.
func (s *State) Unlock() { s.mu.Unlock() }

// Finished reports whether the Tx was ended (TX-5). The caller holds the lock.
func (s *State) Finished() bool { return s.finished }

// Aborted reports whether the Tx was aborted (TX-6). The caller holds the lock.
func (s *State) Aborted() bool { return s.aborted }

// Usable reports whether the Tx is neither finished nor aborted: an
// operation may run. The caller holds the lock.
func (s *State) Usable() bool { return !s.finished && !s.aborted }

// Abort marks the Tx aborted: every later operation fails with ErrAborted
// and ending it writes nothing (TX-6). The caller holds the lock.
func (s *State) Abort() { s.aborted = true }

// Finish marks the Tx finished and reports whether it already was
// (Rollback: a second call is a no-op, TX-5). The caller holds the lock.
func (s *State) Finish() (already bool) {
	already = s.finished
	s.finished = true
	return already
}

// Do runs fn with the lock held, unless the Conn is closed (e.Closed's
// error), the Tx is finished (ErrFinished, TX-5) or aborted (ErrAborted,
// TX-6). When fn fails with an error e.IsAbort classifies as ending the
// engine transaction, the Tx is aborted (and e.OnAbort runs). It returns
// fn's error unchanged.
func (s *State) Do(ctx context.Context, e Engine, fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Closed != nil {
		if err := e.Closed(); err != nil {
			return err
		}
	}
	if s.finished {
		return ErrFinished()
	}
	if s.aborted {
		return ErrAborted()
	}
	err := fn()
	if err != nil && e.IsAbort != nil && e.IsAbort(ctx, err) {
		s.aborted = true
		if e.OnAbort != nil {
			e.OnAbort()
		}
	}
	return err
}

// End starts ending the Tx (Commit, CommitRejected) with the lock held by
// the caller, and marks it finished. It fails when the Conn is closed
// (e.Closed's error; rollback runs unless the Tx was finished already,
// ERR-4), when the Tx was finished already (ErrFinished, TX-5), and when
// it was aborted or one of live has ended (rollback runs; ErrAborted,
// TX-6). On nil the driver writes and commits. rollback may be nil.
func (s *State) End(e Engine, rollback func(), live ...context.Context) error {
	if e.Closed != nil {
		if err := e.Closed(); err != nil {
			if !s.Finish() && rollback != nil {
				rollback()
			}
			return err
		}
	}
	if s.Finish() {
		return ErrFinished()
	}
	ended := s.aborted
	for _, ctx := range live {
		ended = ended || ctx.Err() != nil
	}
	if ended {
		if rollback != nil {
			rollback()
		}
		return ErrAborted()
	}
	return nil
}

// ErrFinished is the error of an operation on a finished Tx:
// CodeTxFinished, not retryable (TX-5).
func ErrFinished() error {
	return driver.Errorf(driver.CodeTxFinished, "transaction already finished (TX-5)")
}

// ErrAborted is the error of an operation on an aborted Tx, and of its
// Commit: CodeUnavailable, retryable; nothing was written (TX-6).
func ErrAborted() error {
	return driver.Errorf(driver.CodeUnavailable, "transaction aborted (an engine error, or its context ended); nothing was written (TX-6)")
}

// IsAbort is the classifier the SQL drivers share: err may have ended the
// engine transaction when ctx has ended, when database/sql reports the
// transaction done (sql.ErrTxDone), or when its code is CodeInternal,
// CodeUnavailable, none (an unmapped error), or one of also (the
// engine's own: e.g. a write conflict that rolled the whole transaction
// back). Logical errors (unknown table, invalid value, a unique collision
// the engine rolls back alone) leave the Tx usable.
func IsAbort(ctx context.Context, err error, also ...driver.Code) bool {
	if ctx.Err() != nil || errors.Is(err, sql.ErrTxDone) {
		return true
	}
	switch code := driver.CodeOf(err); code {
	case driver.CodeInternal, driver.CodeUnavailable, "":
		return true
	default:
		return slices.Contains(also, code)
	}
}

// Value runs fn as one operation of a Tx through op (the driver's Tx.op:
// TX-5, TX-6) and returns what fn computed: the zero T and the error when
// the operation failed.
func Value[T any](ctx context.Context, op func(context.Context, func() error) error, fn func() (T, error)) (T, error) {
	var v T
	err := op(ctx, func() (err error) {
		v, err = fn()
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// PutPushResult is the frame of a Tx's PutPushResult (PR-3): r encoded
// (driver.EncodePushResult; its error is returned before the Tx is
// touched), then put of the encoding as one operation of the Tx through
// op (the driver's Tx.op, TX-5, TX-6), whose error is returned.
func PutPushResult(ctx context.Context, r driver.PushResult, op func(context.Context, func() error) error, put func(text []byte) error) error {
	text, err := driver.EncodePushResult(r)
	if err != nil {
		return err
	}
	return op(ctx, func() error { return put(text) })
}

// ErrBeginEnded is the error of a Tx whose Begin context ended, so that
// database/sql rolled its engine transaction back (err: sql.ErrTxDone,
// or what reported it): CodeUnavailable, retryable; nothing was written
// (TX-6). engine prefixes the message ("sqlite").
func ErrBeginEnded(engine string, err error) error {
	return driver.Wrap(driver.CodeUnavailable, err, "%s: transaction aborted: its context ended; nothing was written (TX-6)", engine)
}

// HandOut is the body of a database/sql driver's Tx.As (driver.Aser) for a
// **sql.Tx target: with the lock held, unless the Tx is finished or
// aborted or closed reports the Conn closed, it runs prepare (writing the
// upserts the Tx staged, TX-3; a failure aborts the Tx in the driver) and
// on success sets *target to tx. It reports whether it did; any other
// target: false.
func (s *State) HandOut(target any, tx *sql.Tx, closed func() bool, prepare func() error) bool {
	p, ok := target.(**sql.Tx)
	if !ok || p == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.Usable() || closed() {
		return false
	}
	if err := prepare(); err != nil {
		return false
	}
	*p = tx
	return true
}

// Guarded is a driver's BeginGuarded made of its Begin, whose Txs are
// driver.GuardedTxs: it returns Begin's Tx as one, or Begin's error.
func Guarded(tx driver.Tx, err error) (driver.GuardedTx, error) {
	if err != nil {
		return nil, err
	}
	return tx.(driver.GuardedTx), nil
}
