package postgres

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/syncstore/syncstore/driver"
)

// outcomeLookupTimeout bounds how long Commit and CommitRejected spend
// learning the outcome of a COMMIT whose answer was lost (TX-10), beyond
// the caller's context: a fresh connection, the transaction's status, and
// while it is still in progress, ending its backend and asking again.
const outcomeLookupTimeout = 2 * time.Second

// backend identifies the server process that ran a transaction, as the
// server itself reported it in the statement that returned the
// transaction's id (sqlLockPartition, sqlGuardSeq): pid is its
// pg_backend_pid() — never the pid of the connection's BackendKeyData,
// which behind a pooler is the pooler's — and start the postmaster's start
// time (pg_postmaster_start_time(), µs since the Unix epoch), so that a
// pid is only ever signalled on the server incarnation that ran the
// transaction: after a restart the same number may be an unrelated
// backend. The zero value is "unknown".
type backend struct {
	pid   int32
	start int64
}

// commitMark is a Tx's first commit in the log (partition, seq and its
// random tx_token): present iff the Tx committed. nil for a Tx that
// appended no commit (CommitRejected).
type commitMark struct {
	partition  string
	seq, token int64
}

// backendKey is the key under which a pool connection's PgConn.CustomData
// holds the backend the server last reported for it (rememberBackend).
const backendKey = "syncstore/postgres.backend"

// rememberBackend records on pc's connection the backend the server just
// reported running a statement of it.
func rememberBackend(pc *pgconn.PgConn, be backend) {
	if be != (backend{}) {
		pc.CustomData()[backendKey] = be
	}
}

// directBackend returns the backend pc is connected to when that is known
// and fixed for the connection's life: the server reported it on this
// connection before, and its pid is the connection's BackendKeyData pid
// (a direct connection: one backend per connection, for its life). Behind
// a pooler (the pids differ: the pooler's made-up pid, or a server backend
// that changes per transaction) or on a connection the server never
// answered yet, ok is false.
func directBackend(pc *pgconn.PgConn) (be backend, ok bool) {
	be, ok = pc.CustomData()[backendKey].(backend)
	return be, ok && be.pid != 0 && uint32(be.pid) == pc.PID()
}

// settleCommit decides the outcome of transaction xid, run by backend be,
// whose COMMIT went out but whose answer was lost (cause), on a context
// detached from ctx and bounded by outcomeLookupTimeout (TX-10). It
// returns nil when the transaction committed, CodeUnavailable when it was
// rolled back (nothing written; ending its backend makes sure a held
// COMMIT never lands later), and CodeCommitOutcomeUnknown when the server
// could not tell within the bound.
//
// While the server is the incarnation that ran the transaction, its
// status is pg_xact_status(xid); a transaction still in progress has its
// backend ended — matched by be.pid, its transaction id and the
// incarnation, so nothing else is ever signalled — and is asked about
// again. When the server restarted since (be.start differs), every
// backend of the transaction's incarnation is gone, but its id may be
// another transaction's now (ids assigned after the last durable WAL
// record are handed out again after a crash), so the status cannot be
// trusted: the Tx's first commit (mark) is looked for in the log instead;
// without a mark only "aborted" is believed.
func (c *Conn) settleCommit(ctx context.Context, xid int64, be backend, mark *commitMark, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
	defer cancel()
	status, err := c.xactStatus(ctx, xid, be, mark)
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
// settleCommit does but without the id: it ends the backend that ran the
// pipeline (a commit already in its critical section still completes;
// anything else is rolled back, and a pipeline still held in the network
// never runs), waits until it is gone — or finds the server restarted,
// which ended it — then looks for the Tx's first commit in the log by
// mark: the token is the Tx's random mark (tx_token), so another store's
// commit at the same seq — server-made, or of the same client key — is
// never taken for this one's.
//
// The backend is conn's, identified for sure or not at all: be when
// known (directBackend: the server reported it on conn before, so its pid
// is signalled only on that incarnation); else, when the side connection
// shows that the pool's config reaches the server directly (its
// BackendKeyData pid is its pg_backend_pid() and the server sees its own
// TCP port), the backend whose pid is conn's BackendKeyData pid *and*
// whose client port is conn's local port. Otherwise — behind a pooler,
// whose connections' pids are not the server's and whose held pipeline
// could still run later — CodeCommitOutcomeUnknown, never a guess.
func (c *Conn) settleByCommit(ctx context.Context, conn *pgconn.PgConn, be backend, known bool, mark commitMark, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
	defer cancel()
	var landed bool
	err := c.onSideConn(ctx, func(side *pgx.Conn) error {
		var alive func() (int, error)
		var end func() error
		if known {
			alive = func() (int, error) {
				var n int
				var start int64
				err := side.QueryRow(ctx, sqlBackendAlive, be.pid).Scan(&n, &start)
				if start != be.start {
					n = 0 // restarted: the backend is gone
				}
				return n, err
			}
			end = func() error { _, err := side.Exec(ctx, sqlEndBackend, be.pid, be.start); return err }
		} else {
			port, ok := tcpPort(conn)
			if ok {
				ok, err := directConfig(ctx, side)
				if err != nil {
					return err
				}
				if !ok {
					port = 0
				}
			}
			if port == 0 {
				return errBackendUnknown
			}
			pid := int32(conn.PID())
			alive = func() (int, error) {
				var n int
				return n, side.QueryRow(ctx, sqlPortBackendAlive, pid, port).Scan(&n)
			}
			end = func() error { _, err := side.Exec(ctx, sqlEndPortBackend, pid, port); return err }
		}
		if err := endAndWait(ctx, func() (bool, error) {
			n, err := alive()
			return n == 0, err
		}, end); err != nil {
			return err
		}
		var err error
		landed, err = markInLog(ctx, side, mark)
		return err
	})
	switch {
	case err == errBackendUnknown:
		return outcomeUnknown(driver.Wrap(driver.CodeCommitOutcomeUnknown, cause,
			"postgres: commit: the answer was lost before the transaction's id arrived, and the connection's server backend cannot be identified (a pooler's connection)"))
	case err != nil:
		return outcomeUnknown(err)
	case landed:
		return nil
	}
	return rolledBack(cause)
}

// errBackendUnknown: settleByCommit cannot identify the backend.
var errBackendUnknown = errors.New("postgres: the connection's server backend is not known")

// tcpPort returns conn's local TCP port, if it is a TCP connection.
func tcpPort(conn *pgconn.PgConn) (int32, bool) {
	addr, ok := conn.Conn().LocalAddr().(*net.TCPAddr)
	if !ok || addr.Port <= 0 {
		return 0, false
	}
	return int32(addr.Port), true
}

// directConfig reports whether side, a connection made with the pool's
// config, reaches the server directly: the server's pid for it is its
// BackendKeyData pid and the server sees its own local TCP port (no
// pooler, no proxy in between).
func directConfig(ctx context.Context, side *pgx.Conn) (bool, error) {
	port, ok := tcpPort(side.PgConn())
	if !ok {
		return false, nil
	}
	var pid, sport int32
	if err := side.QueryRow(ctx, sqlSideBackend).Scan(&pid, &sport); err != nil {
		return false, err
	}
	return uint32(pid) == side.PgConn().PID() && sport == port, nil
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

// markInLog reports whether the commit mark is in the log.
func markInLog(ctx context.Context, conn *pgx.Conn, mark commitMark) (bool, error) {
	var n int
	err := conn.QueryRow(ctx, sqlCommitLanded, mark.partition, mark.seq, mark.token).Scan(&n)
	return n > 0, err
}

// xactStatus returns "committed" or "aborted" for transaction xid once it
// has ended, ending its backend while it is still in progress (see
// settleCommit for a restarted server).
func (c *Conn) xactStatus(ctx context.Context, xid int64, be backend, mark *commitMark) (status string, err error) {
	low := strconv.FormatUint(uint64(xid)&0xFFFFFFFF, 10)
	err = c.onSideConn(ctx, func(conn *pgx.Conn) error {
		return endAndWait(ctx, func() (bool, error) {
			var start int64
			var s *string
			if err := conn.QueryRow(ctx, sqlXactStatus, xid, be.start).Scan(&start, &s); err != nil {
				return false, err
			}
			if start != be.start { // restarted: no backend of the transaction is left
				status, err = restartedStatus(ctx, conn, xid, mark)
				return true, err
			}
			if s == nil {
				return false, driver.Errorf(driver.CodeInternal, "postgres: the transaction's status is no longer kept")
			}
			status = *s
			return status != "in progress", nil
		}, func() error {
			_, err := conn.Exec(ctx, sqlEndXactBackend, be.pid, low, be.start)
			return err
		})
	})
	if err != nil {
		return "", err
	}
	return status, nil
}

// restartedStatus is xactStatus's answer once the server restarted after
// transaction xid was read: by the Tx's first commit in the log when it
// appended one (mark), else "aborted" only when pg_xact_status says so
// (a reused id cannot make a committed transaction look aborted), else ""
// (not known).
func restartedStatus(ctx context.Context, conn *pgx.Conn, xid int64, mark *commitMark) (string, error) {
	if mark != nil {
		landed, err := markInLog(ctx, conn, *mark)
		if err != nil || !landed {
			return "aborted", err
		}
		return "committed", nil
	}
	var s *string
	if err := conn.QueryRow(ctx, sqlXactStatusOnly, xid).Scan(&s); err != nil || s == nil || *s != "aborted" {
		return "", driver.Errorf(driver.CodeCommitOutcomeUnknown, "postgres: the server restarted after the transaction began, and its id may have been handed out again")
	}
	return "aborted", nil
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
