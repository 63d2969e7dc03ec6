package sync

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// RetryPolicy shapes how RunInTx and Push retry a transaction that lost a
// race (CodeWriteConflict, TX-9, OUT-2): capped exponential backoff with
// jitter, until ctx ends or MaxAttempts attempts were made. Its zero value
// is DefaultRetryPolicy: zero fields take DefaultRetryPolicy's values.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts, the first included; 0 (the
	// default): no bound, retried until ctx ends.
	MaxAttempts int
	// InitialInterval is the first wait (0: 5 ms); each next wait
	// doubles, up to MaxInterval (0: 500 ms). Every wait is jittered by
	// ±50%.
	InitialInterval time.Duration
	MaxInterval     time.Duration
}

// DefaultRetryPolicy is the policy of RunInTx and Push unless
// SetRetryPolicy changes it: no bound on the attempts (retried until ctx
// ends), waits from 5 ms doubling up to 500 ms (±50% jitter).
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 0, InitialInterval: 5 * time.Millisecond, MaxInterval: 500 * time.Millisecond}

func (s *Store) SetRetryPolicy(p RetryPolicy) {
	d := DefaultRetryPolicy
	d.MaxAttempts = max(p.MaxAttempts, 0)
	if p.InitialInterval > 0 {
		d.InitialInterval = p.InitialInterval
	}
	if p.MaxInterval > 0 {
		d.MaxInterval = p.MaxInterval
	}
	if d.MaxInterval < d.InitialInterval {
		d.MaxInterval = d.InitialInterval
	}
	s.retry.Store(&d)
}

func (s *Store) retryPolicy() RetryPolicy {
	if p := s.retry.Load(); p != nil {
		return *p
	}
	return DefaultRetryPolicy
}

// RunInTx is a primitive (TX): hosts write client commits with
// [Store.Push]; RunInTx is for writes the engine does not make.
//
// RunInTx runs fn in a transaction on partition: Begin, fn, Commit. When
// fn returns an error or panics, the Tx is rolled back and the error
// returned (the panic re-raised). When fn ends the Tx itself (Commit,
// Rollback or CommitRejected, on the Tx or on its Driver()) and returns
// nil, RunInTx does not commit again and returns nil.
//
// When any step fails with CodeWriteConflict (an optimistic engine lost a
// race; nothing was written, TX-9), the whole transaction — Begin, fn,
// Commit — is retried, with capped exponential backoff and jitter, until
// ctx ends or, when the Store's RetryPolicy sets MaxAttempts, that many
// attempts were made in all (default: no bound, OUT-2); fn must therefore
// be safe to run again. If the attempts run out, the last write-conflict
// error is returned. If ctx ends while waiting to retry, the error is
// CodeUnavailable wrapping ctx's cause. Every other error is returned
// unchanged, without retry. A nil fn or invalid partition (V-1) →
// CodeInvalidArgument.
//
// CodeCommitOutcomeUnknown (TX-10: the engine's answer to Commit was lost
// and the driver could not learn whether the Tx landed) is returned as it
// is and never retried, although it is retryable: the Tx may have landed,
// and running fn again could apply it twice. The caller re-reads what the
// Tx wrote (for a push, its push result) to learn the outcome. Every
// other error of Commit means nothing of the Tx was written.
func (s *Store) RunInTx(ctx context.Context, partition string, fn func(ctx context.Context, tx *Tx) error) (err error) {
	defer s.observe(&ctx, "Store.RunInTx", partition).done(&err)
	const op = "RunInTx"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if fn == nil {
		return argErr(op, "TX-1", "fn is nil")
	}
	if err := idPartition.check(op, partition); err != nil {
		return err
	}
	return s.runInTx(ctx, partition, nil, fn)
}

// runInTx is RunInTx on a valid partition with begin (nil: Store.begin)
// starting each attempt's Tx.
func (s *Store) runInTx(ctx context.Context, partition string, begin func(ctx context.Context) (*Tx, error),
	fn func(ctx context.Context, tx *Tx) error) error {
	if begin == nil {
		begin = func(ctx context.Context) (*Tx, error) { return s.begin(ctx, partition) }
	}
	pol := s.retryPolicy()
	b := &backoff.ExponentialBackOff{
		InitialInterval:     pol.InitialInterval,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         pol.MaxInterval,
	}
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := s.runOnce(ctx, begin, fn)
		if err == nil {
			return struct{}{}, nil
		}
		if CodeOf(err) != CodeWriteConflict {
			// Never commit_outcome_unknown either: the Tx may have
			// landed (TX-10).
			return struct{}{}, backoff.Permanent(err)
		}
		last = err
		return struct{}{}, err
	}, backoff.WithBackOff(b), backoff.WithMaxTries(uint(pol.MaxAttempts)), backoff.WithMaxElapsedTime(0))
	if p, ok := err.(*backoff.PermanentError); ok {
		// On the last attempt Retry returns the wrapper itself.
		return p.Err
	}
	if err != nil && last != nil && err != last && CodeOf(err) == "" && ctx.Err() != nil {
		// backoff.Retry returns ctx's cause when ctx ends between attempts.
		return &Error{Code: CodeUnavailable, OpIndex: -1, Err: err,
			Message: "RunInTx: the context ended while retrying after a write conflict", Rule: "TX-9"}
	}
	return err
}

// runOnce is one attempt of RunInTx.
func (s *Store) runOnce(ctx context.Context, begin func(ctx context.Context) (*Tx, error), fn func(ctx context.Context, tx *Tx) error) (err error) {
	tx, err := begin(ctx)
	if err != nil {
		return err
	}
	// Rolling back must work even when ctx has ended.
	cleanup := context.WithoutCancel(ctx)
	finished := false
	defer func() {
		if !finished {
			_ = tx.rollback(cleanup)
		}
	}()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if tx.ended.Load() {
		finished = true
		return nil
	}
	if err := tx.commit(ctx); err != nil {
		if CodeOf(err) == CodeTxFinished {
			// fn ended the Tx through Driver(); it returned nil, so that
			// was its intent (TX-5).
			finished = true
			return nil
		}
		return err // the deferred Rollback releases the Tx (a no-op if finished)
	}
	finished = true
	return nil
}
