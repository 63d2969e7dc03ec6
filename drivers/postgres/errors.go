package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/errmap"
)

// mapErr classifies an engine error as a *driver.Error (ERR-1); what names
// the operation and never a value or partition (V-10). The engine's own
// message is kept only as the wrapped cause.
//
//	already a *driver.Error                   unchanged
//	context ended                             CodeUnavailable
//	23505 on _sync_reactions_pkey             CodeDuplicateReactionKey (RX-1)
//	23505 unique_violation                    CodeConstraintViolation (SCH-10, GW-2)
//	22012 division by zero (a guard)          CodeWriteConflict (TX-9, GW-2)
//	22P02 naming bindConstraint (a guard)     CodeClientActorMismatch (CR-7)
//	40001, 40P01 serialization, deadlock      CodeUnavailable (retry)
//	08xxx, 57P0x, 53xxx connection, shutdown  CodeUnavailable
//	57014 query_canceled, 55P03 lock timeout  CodeUnavailable
//	3D000 unknown database, 28xxx bad login   CodeInvalidArgument (the DSN; permanent), with the server's reason
//	54xxx program limit exceeded              CodeInvalidValue (a value over an engine limit; permanent)
//	25006 read-only transaction               CodeInvalidArgument (a write on a standby, REP-1)
//	network errors, closed connection         CodeUnavailable
//	anything else                             CodeInternal
func mapErr(ctx context.Context, err error, what string) error {
	if mapped, done := errmap.Common(ctx, err, what); done {
		return mapped
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505" && pe.ConstraintName == reactionsPK:
			return &driver.Error{Code: driver.CodeDuplicateReactionKey, OpIndex: -1, Err: errors.New("duplicate reaction key"),
				Message: what + ": a reaction key already exists in the partition", Rule: "RX-1"}
		case pe.Code == "22P02" && strings.Contains(pe.Message, bindConstraint):
			return driver.Wrap(driver.CodeClientActorMismatch, errors.New("the client id is bound"),
				"%s: the client id is bound to another actor; nothing was written (CR-7)", what)
		case pe.Code == "22012":
			// Only a guard of this driver's divides (sqlGuardSeq, a
			// guarded update): the state it assumed has moved.
			return driver.Wrap(driver.CodeWriteConflict, errors.New("a guard failed"),
				"%s: the partition is not as the Tx assumed (another write came first); nothing was written, retry (TX-9, GW-2)", what)
		case pe.Code == "23505":
			return driver.Wrap(driver.CodeConstraintViolation, errors.New("unique index collision"), "%s: unique index collision (SCH-10)", what)
		case pe.Code == "40001", pe.Code == "40P01", pe.Code == "57014", pe.Code == "55P03":
			return driver.Wrap(driver.CodeUnavailable, err, "%s: transient engine failure", what)
		case pe.Code == "3D000", strings.HasPrefix(pe.Code, "28"):
			// The server's reason names the database or the role from
			// the DSN, never a row value: keep it.
			return driver.Wrap(driver.CodeInvalidArgument, errors.New(pe.Message+" (SQLSTATE "+pe.Code+")"),
				"%s: the DSN's database or login is refused; retrying will not help", what)
		case pe.Code == "25006":
			return errReplica(what) // read_only_sql_transaction: a write reached a standby
		case strings.HasPrefix(pe.Code, "54"):
			return driver.Wrap(driver.CodeInvalidValue, errors.New("SQLSTATE "+pe.Code),
				"%s: a value or statement is over an engine limit of PostgreSQL; nothing was written", what)
		case len(pe.Code) >= 2 && (pe.Code[:2] == "08" || pe.Code[:2] == "53" || pe.Code[:3] == "57P"):
			return driver.Wrap(driver.CodeUnavailable, err, "%s: engine unavailable", what)
		}
		// Keep only the SQLSTATE: a server message may quote a value.
		return driver.Wrap(driver.CodeInternal, errors.New("SQLSTATE "+pe.Code), "%s", what)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, pgx.ErrTxClosed) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: connection failed", what)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: cannot connect", what)
	}
	if isConnClosedErr(err) {
		return driver.Wrap(driver.CodeUnavailable, err, "%s: connection closed", what)
	}
	return driver.Wrap(driver.CodeInternal, err, "%s", what)
}

// isConnClosedErr reports pgx's "conn closed" / "conn busy" errors, which
// have no exported type.
func isConnClosedErr(err error) bool {
	s := err.Error()
	return s == "conn closed" || s == "closed pool" || s == "conn busy" ||
		containsAny(s, "conn closed", "closed pool", "connection reset", "broken pipe", "unexpected EOF")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
