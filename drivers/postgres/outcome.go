package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// outcomeLookupTimeout bounds how long Commit and CommitRejected spend
// learning the outcome of a COMMIT whose answer was lost (TX-10), beyond
// the caller's context: a fresh connection, the transaction's status, and
// while it is still in progress, ending its backend and asking again.
const outcomeLookupTimeout = 2 * time.Second

// settleCommit decides the outcome of transaction xid, run by backend
// pid, whose COMMIT went out but whose answer was lost (cause), on a
// context detached from ctx and bounded by outcomeLookupTimeout (TX-10).
// It returns nil when the transaction committed, CodeUnavailable when it
// was rolled back (nothing written; ending its backend makes sure a held
// COMMIT never lands later), and CodeCommitOutcomeUnknown when the server
// could not tell within the bound.
func (c *Conn) settleCommit(ctx context.Context, xid int64, pid uint32, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
	defer cancel()
	status, err := c.xactStatus(ctx, xid, pid)
	switch {
	case status == "committed":
		return nil
	case status == "aborted":
		return rolledBack(cause)
	}
	if err == nil {
		err = cause
	}
	return outcomeUnknown(err)
}

// settleByCommit decides the outcome of a deferred Tx's Commit pipeline
// whose answer was lost before the transaction's id arrived (cause), as
// settleCommit does but without the id: it ends the backend pid ran the
// pipeline on (a commit already in its critical section still completes;
// anything else is rolled back, and a pipeline still held in the network
// never runs), waits until it is gone, then looks for the Tx's first
// commit in the log by (partition, seq, token): the token is the Tx's
// random mark (tx_token), so another store's commit at the same seq —
// server-made, or of the same client key — is never taken for this one's.
func (c *Conn) settleByCommit(ctx context.Context, pid uint32, partition string, seq, token int64, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
	defer cancel()
	landed, err := c.commitLanded(ctx, pid, partition, seq, token)
	switch {
	case err != nil:
		return outcomeUnknown(err)
	case landed:
		return nil
	}
	return rolledBack(cause)
}

// rolledBack is settled's answer when the Tx did not land: nothing was
// written, a retry can help (CodeUnavailable, TX-10).
func rolledBack(cause error) error {
	return driver.Wrap(driver.CodeUnavailable, cause,
		"postgres: commit: the engine's answer was lost; the transaction was rolled back and nothing was written (TX-10)")
}

// outcomeUnknown is the answer when the outcome could not be learnt within
// outcomeLookupTimeout (CodeCommitOutcomeUnknown, TX-10).
func outcomeUnknown(err error) error {
	return &driver.Error{Code: driver.CodeCommitOutcomeUnknown, OpIndex: -1, Err: err,
		Message: "postgres: commit: the engine's answer was lost and the outcome could not be learnt within " +
			outcomeLookupTimeout.String() + "; re-read what the transaction wrote (its push result) before anything else", Rule: "TX-10"}
}

// commitLanded ends backend pid, waits until it is gone, then reports
// whether the commit is in the log.
func (c *Conn) commitLanded(ctx context.Context, pid uint32, partition string, seq, token int64) (landed bool, err error) {
	err = c.onSideConn(ctx, func(conn *pgx.Conn) error {
		if err := endAndWait(ctx, func() (bool, error) {
			var n int
			err := conn.QueryRow(ctx, sqlBackendAlive, pid).Scan(&n)
			return n == 0, err
		}, func() error {
			_, err := conn.Exec(ctx, sqlEndBackend, pid)
			return err
		}); err != nil {
			return err
		}
		var n int
		err := conn.QueryRow(ctx, sqlCommitLanded, partition, seq, token).Scan(&n)
		landed = n > 0
		return err
	})
	return landed, err
}

// xactStatus returns "committed" or "aborted" for transaction xid once it
// has ended, ending its backend while it is still in progress.
func (c *Conn) xactStatus(ctx context.Context, xid int64, pid uint32) (status string, err error) {
	low := strconv.FormatUint(uint64(xid)&0xFFFFFFFF, 10)
	err = c.onSideConn(ctx, func(conn *pgx.Conn) error {
		return endAndWait(ctx, func() (bool, error) {
			var s *string
			if err := conn.QueryRow(ctx, sqlXactStatus, xid).Scan(&s); err != nil {
				return false, err
			}
			if s == nil {
				return false, driver.Errorf(driver.CodeInternal, "postgres: the transaction's status is no longer kept")
			}
			status = *s
			return status != "in progress", nil
		}, func() error {
			_, err := conn.Exec(ctx, sqlEndXactBackend, pid, low)
			return err
		})
	})
	if err != nil {
		return "", err
	}
	return status, nil
}

// onSideConn runs fn on a connection of its own, outside the pool: the
// pool may be full of callers waiting for the partition the unsettled
// transaction still holds.
func (c *Conn) onSideConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := pgx.ConnectConfig(ctx, c.pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	return fn(conn)
}

// endAndWait asks ended until it reports true, calling end (which ends
// the backend) between asks and waiting 1 ms, doubling to at most 50 ms;
// bounded by ctx. A commit in its critical section completes before the
// backend acts on the signal; anything else is rolled back.
func endAndWait(ctx context.Context, ended func() (bool, error), end func() error) error {
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		done, err := ended()
		if err != nil || done {
			return err
		}
		if err := end(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
