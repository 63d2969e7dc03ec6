package txstate

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func engine(closed *bool, aborts *int) Engine {
	return Engine{
		Closed: func() error {
			if *closed {
				return driver.Errorf(driver.CodeClosed, "closed")
			}
			return nil
		},
		IsAbort: func(ctx context.Context, err error) bool { return IsAbort(ctx, err, driver.CodeWriteConflict) },
		OnAbort: func() { *aborts++ },
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	var closed bool
	var aborts int
	var s State
	e := engine(&closed, &aborts)
	ran := 0
	// A logical error leaves the Tx usable.
	if err := s.Do(ctx, e, func() error { ran++; return driver.Errorf(driver.CodeUnknownTable, "x") }); driver.CodeOf(err) != driver.CodeUnknownTable {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	if !s.Usable() || aborts != 0 {
		t.Fatalf("a logical error aborted the Tx")
	}
	// An engine's own aborting code aborts it, once.
	if err := s.Do(ctx, e, func() error { ran++; return driver.Errorf(driver.CodeWriteConflict, "x") }); driver.CodeOf(err) != driver.CodeWriteConflict {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	if !s.Aborted() || aborts != 1 {
		t.Fatalf("aborted=%v OnAbort ran %d times, want true, 1", s.Aborted(), aborts)
	}
	err := s.Do(ctx, e, func() error { ran++; return nil })
	if driver.CodeOf(err) != driver.CodeUnavailable || !driver.IsRetryable(err) || ran != 2 {
		t.Fatalf("Do on an aborted Tx = %v (ran %d), want retryable unavailable and fn not run", err, ran)
	}
	// Closed is checked first.
	closed = true
	if err := s.Do(ctx, e, func() error { ran++; return nil }); driver.CodeOf(err) != driver.CodeClosed || ran != 2 {
		t.Fatalf("Do on a closed Conn = %v, want closed", err)
	}
}

func TestEnd(t *testing.T) {
	ctx := context.Background()
	var closed bool
	var aborts int
	e := engine(&closed, &aborts)
	rollbacks := 0
	rollback := func() { rollbacks++ }

	var s State
	if err := s.End(e, rollback, ctx); err != nil || rollbacks != 0 || !s.Finished() {
		t.Fatalf("End = %v, rollbacks %d, finished %v; want nil, 0, true", err, rollbacks, s.Finished())
	}
	err := s.End(e, rollback, ctx)
	if driver.CodeOf(err) != driver.CodeTxFinished || driver.IsRetryable(err) || err.Error() == "" {
		t.Fatalf("second End = %v, want tx_finished", err)
	}
	if err := s.Do(ctx, e, func() error { return nil }); driver.CodeOf(err) != driver.CodeTxFinished {
		t.Fatalf("Do after End = %v, want tx_finished", err)
	}
	if !s.Finish() {
		t.Fatal("Finish on a finished Tx reported it was not")
	}

	// An aborted Tx, or one whose context ended, rolls back.
	var a State
	a.Abort()
	if err := a.End(e, rollback, ctx); driver.CodeOf(err) != driver.CodeUnavailable || rollbacks != 1 {
		t.Fatalf("End of an aborted Tx = %v, rollbacks %d", err, rollbacks)
	}
	var c State
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.End(e, rollback, ctx, ended); driver.CodeOf(err) != driver.CodeUnavailable || rollbacks != 2 {
		t.Fatalf("End with an ended context = %v, rollbacks %d", err, rollbacks)
	}
	var d State
	if err := d.End(e, rollback); err != nil {
		t.Fatalf("End with no context to check = %v", err)
	}

	// A closed Conn: rolled back unless already finished.
	closed = true
	var f State
	if err := f.End(e, rollback, ctx); driver.CodeOf(err) != driver.CodeClosed || rollbacks != 3 || !f.Finished() {
		t.Fatalf("End on a closed Conn = %v, rollbacks %d", err, rollbacks)
	}
	if err := f.End(e, rollback, ctx); driver.CodeOf(err) != driver.CodeClosed || rollbacks != 3 {
		t.Fatalf("second End on a closed Conn = %v, rollbacks %d (want no second rollback)", err, rollbacks)
	}
}

func TestIsAbort(t *testing.T) {
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		also []driver.Code
		want bool
	}{
		{ctx, errors.New("unmapped"), nil, true},
		{ctx, sql.ErrTxDone, nil, true},
		{ctx, driver.Errorf(driver.CodeInternal, "x"), nil, true},
		{ctx, driver.Errorf(driver.CodeUnavailable, "x"), nil, true},
		{ctx, driver.Errorf(driver.CodeConstraintViolation, "x"), nil, false},
		{ended, driver.Errorf(driver.CodeConstraintViolation, "x"), nil, true},
		{ctx, driver.Errorf(driver.CodeWriteConflict, "x"), nil, false},
		{ctx, driver.Errorf(driver.CodeWriteConflict, "x"), []driver.Code{driver.CodeWriteConflict}, true},
	} {
		if got := IsAbort(c.ctx, c.err, c.also...); got != c.want {
			t.Errorf("IsAbort(%v, also %v) = %v, want %v", c.err, c.also, got, c.want)
		}
	}
}

func TestErrBeginEnded(t *testing.T) {
	err := ErrBeginEnded("sqlite", sql.ErrTxDone)
	if !errors.Is(err, sql.ErrTxDone) || driver.CodeOf(err) != driver.CodeUnavailable {
		t.Fatalf("ErrBeginEnded = %v, want unavailable wrapping sql.ErrTxDone", err)
	}
	var de *driver.Error
	if !errors.As(err, &de) || de.Message != "sqlite: transaction aborted: its context ended; nothing was written" || de.Rule != "TX-6" {
		t.Fatalf("message = %q, rule %q", de.Message, de.Rule)
	}
}
