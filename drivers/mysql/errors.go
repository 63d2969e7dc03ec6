package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"net"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/errmap"
)

// Server error numbers the driver classifies.
const (
	erDupEntry        = 1062 // ER_DUP_ENTRY: a unique key collision
	erBadNull         = 1048 // ER_BAD_NULL_ERROR: bindClient's refusal (CR-7)
	erLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement was rolled back
	erLockDeadlock    = 1213 // ER_LOCK_DEADLOCK: the whole transaction was rolled back
	erDataTooLong     = 1406 // ER_DATA_TOO_LONG: a value longer than its column
	erQueryInterrupt  = 1317 // ER_QUERY_INTERRUPTED
	erLockAborted     = 1689 // ER_LOCK_ABORTED (MariaDB: a metadata lock wait was aborted)
	erDBAccessDenied  = 1044 // ER_DBACCESS_DENIED_ERROR: the user may not use the database
	erAccessDenied    = 1045 // ER_ACCESS_DENIED_ERROR: bad user or password
	erBadDB           = 1049 // ER_BAD_DB_ERROR: unknown database
	erNoPassword      = 1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
	erPacketTooLarge  = 1153 // ER_NET_PACKET_TOO_LARGE: a packet over max_allowed_packet
	erUnknownCom      = 1047 // ER_UNKNOWN_COM_ERROR; Galera: "WSREP has not yet prepared node for application use"
)

// connectErr classifies a failure of the first connection made with the
// host's DSN: a refused login or an unknown database is permanent
// (CodeInvalidArgument, with the server's reason, which names the user or
// database of the DSN and never a row value); anything else is mapErr's
// (an unreachable server is CodeUnavailable).
func connectErr(ctx context.Context, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erBadDB, erAccessDenied, erDBAccessDenied, erNoPassword:
			return driver.Wrap(driver.CodeInvalidArgument, err, "mysql: connect: the DSN's database or login is refused; retrying will not help")
		}
		return driver.Wrap(driver.CodeUnavailable, err, "mysql: connect")
	}
	return mapErr(ctx, err, "mysql: connect")
}

// errNumber returns the server error number of err, or 0.
func errNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// isLockRetry reports whether err is a deadlock or a lock-wait timeout:
// the work may succeed when retried.
func isLockRetry(err error) bool {
	n := errNumber(err)
	return n == erLockDeadlock || n == erLockWaitTimeout
}

// mapErr classifies an engine error as a *driver.Error (ERR-1); what names
// the operation, never a value or partition (V-10). The server's own
// message is kept only as the wrapped cause.
//
//	already a *driver.Error              unchanged
//	context ended                        CodeUnavailable
//	1062 duplicate key                   CodeConstraintViolation (SCH-10)
//	1406 data too long                   CodeInvalidValue (a key-length limit, docs/mysql.md)
//	1213 deadlock, Galera certification  CodeWriteConflict (the whole transaction was rolled back; TX-9)
//	1205 lock wait timeout               CodeUnavailable (retryable)
//	1792 read-only transaction           CodeInvalidArgument (a write on a replica, REP-1)
//	1047 Galera node not ready           CodeUnavailable (retryable: it is joining or lost quorum)
//	1153, ErrPktTooLarge                 CodeInvalidValue (over max_allowed_packet; permanent)
//	network, bad connection, closed      CodeUnavailable
//	anything else                        CodeInternal
func mapErr(ctx context.Context, err error, what string) error {
	if mapped, done := errmap.Common(ctx, err, what); done {
		return mapped
	}
	switch errNumber(err) {
	case 0:
	case erDupEntry:
		return &driver.Error{Code: driver.CodeConstraintViolation, OpIndex: -1,
			Message: what + ": unique index collision", Rule: "SCH-10"}
	case erDataTooLong:
		return &driver.Error{Code: driver.CodeInvalidValue, OpIndex: -1,
			Message: what + ": a value is longer than its column allows on MySQL (see docs/mysql.md)"}
	case erPacketTooLarge:
		return errPacket(what)
	case erReadOnlyTx:
		return errReplica(what)
	case erLockDeadlock:
		// InnoDB rolls the whole transaction back on a deadlock; Galera
		// reports a failed certification (at COMMIT) or a brute-force
		// abort by a replicated write set the same way. Nothing of the
		// transaction was written, and running it again may succeed:
		// exactly TX-9's write conflict, which sync.RunInTx retries.
		return driver.Wrap(driver.CodeWriteConflict, errors.New("deadlock or certification conflict"),
			"%s: another transaction of the partition won (deadlock, or a Galera certification conflict); nothing was written (TX-9)", what)
	case erUnknownCom:
		return driver.Wrap(driver.CodeUnavailable, err, "%s: the node is not ready (Galera: joining, or not in the primary component)", what)
	case erLockWaitTimeout, erQueryInterrupt, erLockAborted:
		return driver.Wrap(driver.CodeUnavailable, errors.New("lock conflict"), "%s: lock wait timeout or deadlock", what)
	default:
		// The server's message can quote a value (e.g. a failed CAST):
		// keep only the number.
		return &driver.Error{Code: driver.CodeInternal, OpIndex: -1,
			Message: what + ": server error " + itoa(int64(errNumber(err)))}
	}
	if errors.Is(err, mysql.ErrPktTooLarge) {
		return errPacket(what)
	}
	var ne net.Error
	if errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.As(err, &ne) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: connection lost", what)
	}
	return errmap.Rest(err, what)
}

// mapErr is mapErr that reports a closed store as such (CodeClosed,
// ERR-4), whatever its pool answered.
func (c *Conn) mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	if c.closed.Load() {
		return errClosed()
	}
	return mapErr(ctx, err, what)
}

// errClosed is returned by every operation after Close (ERR-4).
func errClosed() error { return driver.Errorf(driver.CodeClosed, "mysql: the store is closed") }

// errPacket is the error of a statement over the server's
// max_allowed_packet: permanent, the values must shrink (docs/mysql.md).
func errPacket(what string) error {
	return &driver.Error{Code: driver.CodeInvalidValue, OpIndex: -1,
		Message: what + ": the values are larger than the server's max_allowed_packet allows (docs/mysql.md); nothing was written"}
}
