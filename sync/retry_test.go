package sync_test

import (
	"context"
	"errors"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// faultConn wraps a real SQLite Conn and makes Commit fail with
// CodeWriteConflict — after rolling the real Tx back, so nothing is
// written, as TX-9 says of an optimistic engine — while failures remain
// (always: every time). It counts Begins and Commits.
type faultConn struct {
	driver.Conn
	mu            gosync.Mutex
	failures      int
	always        bool
	lostAnswer    bool // Commit commits, then reports commit_outcome_unknown
	begins, calls int  // calls counts Commit calls
	onConflict    func()
}

func (c *faultConn) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.begins++
	c.mu.Unlock()
	return &faultTx{Tx: tx, c: c}, nil
}

func (c *faultConn) counts() (begins, commits int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.begins, c.calls
}

type faultTx struct {
	driver.Tx
	c *faultConn
}

func (t *faultTx) Commit(ctx context.Context) error {
	c := t.c
	c.mu.Lock()
	c.calls++
	fail := c.always || c.failures > 0
	if fail && !c.always {
		c.failures--
	}
	hook := c.onConflict
	lost := c.lostAnswer
	c.mu.Unlock()
	if lost {
		if err := t.Tx.Commit(ctx); err != nil {
			return err
		}
		return driver.Errorf(driver.CodeCommitOutcomeUnknown, "injected: the answer to COMMIT was lost (TX-10)")
	}
	if !fail {
		return t.Tx.Commit(ctx)
	}
	if err := t.Tx.Rollback(ctx); err != nil {
		return err
	}
	if hook != nil {
		hook()
	}
	return driver.Errorf(driver.CodeWriteConflict, "injected write conflict (TX-9)")
}

// faultStore returns a Store over a faulting real SQLite Conn with fast
// retries.
func faultStore(t *testing.T, fc *faultConn) *sync.Store {
	t.Helper()
	fc.Conn = openSQLite(t).Conn()
	s := ensured(t, fc)
	s.SetRetryPolicy(sync.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond})
	return s
}

func TestRunInTxRetriesWriteConflicts(t *testing.T) {
	fc := &faultConn{failures: 2}
	s := faultStore(t, fc)
	calls := 0
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return writeNote(ctx, tx, "n1")
	})
	if err != nil {
		t.Fatalf("RunInTx after 2 conflicts = %v", err)
	}
	if begins, commits := fc.counts(); calls != 3 || begins != 3 || commits != 3 {
		t.Errorf("fn ran %d times, %d Begins, %d Commits; want 3 each", calls, begins, commits)
	}
	expectMaxSeq(t, s, 1)
	expectRow(t, s, "n1", true)
}

func TestRunInTxRetriesConflictFromFn(t *testing.T) {
	s := faultStore(t, &faultConn{})
	calls := 0
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		if err := writeNote(ctx, tx, "n1"); err != nil {
			return err
		}
		if calls == 1 {
			return driver.Errorf(driver.CodeWriteConflict, "a read found the race lost")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("RunInTx = %v after %d calls; want nil after 2", err, calls)
	}
	expectMaxSeq(t, s, 1)
}

func TestRunInTxGivesUpAfterMaxAttempts(t *testing.T) {
	fc := &faultConn{always: true}
	s := faultStore(t, fc)
	calls := 0
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return writeNote(ctx, tx, "n1")
	})
	if !errors.Is(err, sync.ErrWriteConflict) || !driver.IsRetryable(err) {
		t.Fatalf("RunInTx always conflicting = %v; want the retryable write conflict", err)
	}
	if calls != 4 {
		t.Errorf("fn ran %d times; want MaxAttempts = 4", calls)
	}
	expectMaxSeq(t, s, 0)
	expectRow(t, s, "n1", false)
}

// TestZeroRetryPolicyRetriesUntilContextEnds: the zero policy (the
// default) sets no bound on the attempts (OUT-2); a transaction that
// always conflicts is retried until its context ends — here at the 50th
// conflict — and then answers unavailable, nothing written.
func TestZeroRetryPolicyRetriesUntilContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fc := &faultConn{always: true}
	s := faultStore(t, fc)
	s.SetRetryPolicy(sync.RetryPolicy{InitialInterval: time.Microsecond, MaxInterval: time.Microsecond})
	const conflicts = 50
	fc.onConflict = func() {
		if _, commits := fc.counts(); commits == conflicts {
			cancel()
		}
	}
	calls := 0
	err := s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return writeNote(ctx, tx, "n1")
	})
	if !errors.Is(err, sync.ErrUnavailable) {
		t.Fatalf("RunInTx always conflicting until ctx ends = %v; want unavailable", err)
	}
	if calls != conflicts {
		t.Errorf("fn ran %d times; want %d (until ctx ended)", calls, conflicts)
	}
	expectMaxSeq(t, s, 0)
	expectRow(t, s, "n1", false)
}

// TestRunInTxNeverRetriesUnknownOutcome: a Commit whose outcome is unknown
// (TX-10) may have landed, so RunInTx returns the error as it is and never
// runs fn again; here the Tx did land, exactly once.
func TestRunInTxNeverRetriesUnknownOutcome(t *testing.T) {
	fc := &faultConn{lostAnswer: true}
	s := faultStore(t, fc)
	calls := 0
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return writeNote(ctx, tx, "n1")
	})
	if !errors.Is(err, sync.ErrCommitOutcomeUnknown) {
		t.Fatalf("RunInTx after a lost COMMIT answer = %v; want commit_outcome_unknown", err)
	}
	if begins, commits := fc.counts(); calls != 1 || begins != 1 || commits != 1 {
		t.Errorf("fn ran %d times, %d Begins, %d Commits; want 1 each (never a second apply)", calls, begins, commits)
	}
	expectMaxSeq(t, s, 1)
	expectRow(t, s, "n1", true)
}

func TestRunInTxReturnsOtherErrorsUnchanged(t *testing.T) {
	fc := &faultConn{}
	s := faultStore(t, fc)
	mine := errors.New("application failure")
	calls := 0
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		if err := writeNote(ctx, tx, "n1"); err != nil {
			return err
		}
		return mine
	})
	if err != mine || calls != 1 {
		t.Fatalf("RunInTx = %v after %d calls; want the fn's own error after 1", err, calls)
	}
	if _, commits := fc.counts(); commits != 0 {
		t.Errorf("Commit called %d times after fn failed", commits)
	}
	expectRow(t, s, "n1", false)
	// The Tx was rolled back: the writer is free.
	if err := s.RunInTx(deadline(t), "p1", func(ctx context.Context, tx *sync.Tx) error { return writeNote(ctx, tx, "n2") }); err != nil {
		t.Fatalf("RunInTx after a failed one: %v", err)
	}
	expectMaxSeq(t, s, 1)

	// Unchanged on the last allowed attempt too.
	s.SetRetryPolicy(sync.RetryPolicy{MaxAttempts: 1})
	if err := s.RunInTx(t.Context(), "p1", func(context.Context, *sync.Tx) error { return mine }); err != mine {
		t.Errorf("RunInTx with MaxAttempts 1 = %#v; want the fn's own error", err)
	}

	// A validation error is not retried either.
	calls = 0
	err = s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return tx.UpsertRow(ctx, "notes", driver.Row{ID: "x"})
	})
	if !errors.Is(err, sync.ErrInvalidValue) || calls != 1 {
		t.Errorf("RunInTx with a bad row = %v after %d calls; want invalid_value after 1", err, calls)
	}
	if err := s.RunInTx(t.Context(), "", func(context.Context, *sync.Tx) error { return nil }); !errors.Is(err, sync.ErrInvalidArgument) {
		t.Errorf("RunInTx(partition \"\") = %v; want invalid_argument", err)
	}
	if err := s.RunInTx(t.Context(), "p1", nil); !errors.Is(err, sync.ErrInvalidArgument) {
		t.Errorf("RunInTx(nil fn) = %v; want invalid_argument", err)
	}
}

func TestRunInTxPanicRollsBack(t *testing.T) {
	s := faultStore(t, &faultConn{})
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v; want the fn's panic value", r)
			}
		}()
		_ = s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
			if err := writeNote(ctx, tx, "n1"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	expectRow(t, s, "n1", false)
	if err := s.RunInTx(deadline(t), "p1", func(ctx context.Context, tx *sync.Tx) error { return writeNote(ctx, tx, "n2") }); err != nil {
		t.Fatalf("RunInTx after a panicking one: %v", err)
	}
	expectMaxSeq(t, s, 1)
}

func TestRunInTxCommitRejectedFinishes(t *testing.T) {
	fc := &faultConn{}
	s := faultStore(t, fc)
	res := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5, Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.no"}}}
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		if err := writeNote(ctx, tx, "n1"); err != nil {
			return err
		}
		return tx.CommitRejected(ctx, "c", "k", res)
	})
	if err != nil {
		t.Fatalf("RunInTx with CommitRejected = %v", err)
	}
	if _, commits := fc.counts(); commits != 0 {
		t.Errorf("RunInTx committed %d times after CommitRejected finished the Tx", commits)
	}
	got, ok, err := s.GetPushResult(t.Context(), "p1", "c", "k")
	if err != nil || !ok || got.Status != driver.PushRejected || got.RecordedAtMs != 5 {
		t.Errorf("stored result = %+v, %v, %v; want the rejected result", got, ok, err)
	}
	expectMaxSeq(t, s, 0)
	expectRow(t, s, "n1", false)
}

func TestRunInTxFnEndsTxThroughDriver(t *testing.T) {
	s := faultStore(t, &faultConn{})
	err := s.RunInTx(t.Context(), "p1", func(ctx context.Context, tx *sync.Tx) error {
		if err := writeNote(ctx, tx, "n1"); err != nil {
			return err
		}
		return tx.Driver().Commit(ctx)
	})
	if err != nil {
		t.Fatalf("RunInTx whose fn committed through Driver() = %v", err)
	}
	expectMaxSeq(t, s, 1)
}

func TestRunInTxContextEndsWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fc := &faultConn{always: true, onConflict: cancel}
	s := faultStore(t, fc)
	s.SetRetryPolicy(sync.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Hour, MaxInterval: time.Hour})
	calls := 0
	err := s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
		calls++
		return writeNote(ctx, tx, "n1")
	})
	if !errors.Is(err, sync.ErrUnavailable) || !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("RunInTx cancelled while waiting = %v after %d calls; want unavailable wrapping context.Canceled after 1", err, calls)
	}
}
