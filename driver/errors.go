package driver

import (
	"errors"
	"fmt"
	"regexp"
)

// Code is the stable, machine-readable identity of an error (ERR-1). Codes
// never change meaning between releases; messages may.
type Code string

// The error codes of docs/contract.md. Each has a sentinel below for errors.Is.
const (
	// CodeInvalidArgument: an argument breaks a V rule (V-1, V-2, V-8, REG-1).
	CodeInvalidArgument Code = "sync.storage.invalid_argument"
	// CodeInvalidValue: a row value or scope does not fit its column (V-3, V-4).
	CodeInvalidValue Code = "sync.storage.invalid_value"
	// CodeInvalidLimit: a limit outside 1…10,000 (index lookup 1…1,000) (V-5).
	CodeInvalidLimit Code = "sync.storage.invalid_limit"
	// CodeScanRequiresScope: a scope filter with no keys (V-6).
	CodeScanRequiresScope Code = "sync.storage.scan_requires_scope"
	// CodeInvalidClientID: a client id with the reserved server-command prefix (V-7).
	CodeInvalidClientID Code = "sync.invalid_client_id"
	// CodeSchemaInvalid: a schema that does not compile (SCH-1, SCH-2).
	CodeSchemaInvalid Code = "sync.storage.schema_invalid"
	// CodeSchemaMismatch: same version, different stored layout (SCH-4).
	CodeSchemaMismatch Code = "sync.storage.schema_mismatch"
	// CodeSchemaNewer: the stored version is newer than the given one (SCH-5).
	CodeSchemaNewer Code = "sync.storage.schema_newer"
	// CodeSchemaMigrationUnsupported: a version change outside SCH-6's list.
	CodeSchemaMigrationUnsupported Code = "sync.storage.schema_migration_unsupported"
	// CodeUnknownTable: a table that is not in the ensured schema (SCH-8).
	CodeUnknownTable Code = "sync.storage.unknown_table"
	// CodeConstraintViolation: a unique-index collision in one partition (SCH-10).
	CodeConstraintViolation Code = "sync.storage.constraint_violation"
	// CodeTxFinished: an operation on a committed or rolled-back Tx (TX-5).
	CodeTxFinished Code = "sync.storage.tx_finished"
	// CodeWriteConflict: an optimistic engine lost a race; nothing was
	// written; retry the whole transaction (TX-9). Retryable.
	CodeWriteConflict Code = "sync.storage.write_conflict"
	// CodeIdempotencyCacheMiss: a stored push result cannot be decoded (PR-5). Retryable.
	CodeIdempotencyCacheMiss Code = "sync.idempotency_cache_miss"
	// CodeIdempotencyKeyReused: a push whose (client id, client commit
	// id) already has a stored result recorded for a different request
	// (other ops, values, base versions or actor): the key was reused,
	// and answering the stored result would lie about the new request
	// (PUSH-2). Nothing was written. Not retryable: push the new ops
	// under a new client commit id.
	CodeIdempotencyKeyReused Code = "sync.idempotency_key_reused"
	// CodePushTooLarge: a push over the engine's bounds on one commit
	// (sync.MaxPushOps operations, sync.MaxPushBytes bytes of values;
	// PUSH-8), or a row over the engine's own cap on one row (PUSH-17;
	// OpIndex names its op). Nothing was written. Not retryable: split
	// the commit, or make the row smaller.
	CodePushTooLarge Code = "sync.push_too_large"
	// CodeInvalidHorizon: a horizon or prune bound outside HZ-1/HZ-2.
	CodeInvalidHorizon Code = "sync.storage.invalid_horizon"
	// CodeUnavailable: the engine could not be reached or answered with a
	// transient failure. Retryable — with a live context: when the
	// caller's own context ended (cancelled, deadline), the error also
	// matches context.Canceled or context.DeadlineExceeded (errors.Is),
	// and a retry on that context cannot help; check ctx.Err() first.
	CodeUnavailable Code = "sync.storage.unavailable"
	// CodeUnsupported: the driver lacks the capability asked for (ERR-2).
	CodeUnsupported Code = "sync.storage.unsupported"
	// CodeDuplicateReactionKey: a reaction key already exists in the partition (RX-1).
	CodeDuplicateReactionKey Code = "sync.storage.duplicate_reaction_key"
	// CodeQueryInvalid: an authoritative query outside AQ-1/AQ-2.
	CodeQueryInvalid Code = "sync.storage.query_invalid"
	// CodeQueryLimit: an authoritative query hit one of its bounds
	// (QueryLimits: rows, result bytes, value size, time on the engine,
	// engine memory, rewrite cost; AQ-6). The error is (or wraps) a
	// *QueryLimitError naming the bound. Nothing was written; not
	// retryable: the same query fails the same way.
	CodeQueryLimit Code = "sync.storage.query_limit"
	// CodeIndexNotFound: an index lookup on an undeclared index (IXL-2).
	CodeIndexNotFound Code = "sync.storage.index_not_found"
	// CodeIndexValueCountMismatch: an index lookup with the wrong number of values (IXL-2).
	CodeIndexValueCountMismatch Code = "sync.storage.index_value_count_mismatch"
	// CodeCommitOutcomeUnknown: the engine's answer to Commit or
	// CommitRejected was lost (the context ended while the commit was in
	// flight, the connection dropped) and the driver could not learn
	// within its bounded look-up whether the Tx landed (TX-10). Something
	// may have been written: re-read what the Tx wrote (for a push, its
	// push result) before doing anything again; never re-apply blindly.
	// Retryable in that sense only. Every other error of Commit and
	// CommitRejected means nothing of the Tx was written.
	CodeCommitOutcomeUnknown Code = "sync.storage.commit_outcome_unknown"
	// CodeCursorExpired: a window read whose afterSeq is below the
	// partition's horizon (HZ-4): commits after the cursor were pruned,
	// so the client must bootstrap again. Decided in the snapshot of the
	// read; nothing is returned. Not retryable.
	CodeCursorExpired Code = "sync.cursor_expired"
	// CodeCursorAhead: a window read whose afterSeq is beyond the
	// partition's head (its MaxCommitSeq in the snapshot of the read,
	// WIN-8): a cursor this store never issued (a restored backup, a
	// replica behind the primary). Nothing is returned. Not retryable.
	CodeCursorAhead Code = "sync.cursor_ahead"
	// CodeClientActorMismatch: a pull or a push (sync.Store.Pull, Push)
	// names a client id whose stored record is bound to another actor id
	// (PULL-9, CR-7), or a Tx binds one (Tx.BindClient). Nothing is
	// written. Not retryable: a client id belongs to one actor.
	CodeClientActorMismatch Code = "sync.client_actor_mismatch"
	// CodeClosed: the Store or Conn was closed (ERR-4). Not retryable.
	CodeClosed Code = "sync.storage.closed"
	// CodeInternal: an engine failure the driver could not classify. Not
	// retryable; the message names the operation, never a value (V-10).
	CodeInternal Code = "sync.storage.internal"
)

// Retryable reports whether an operation that failed with c may succeed
// when retried unchanged (ERR-1).
func (c Code) Retryable() bool {
	switch c {
	case CodeWriteConflict, CodeIdempotencyCacheMiss, CodeUnavailable, CodeCommitOutcomeUnknown:
		return true
	}
	return false
}

// Error is the one error type of syncstore (ERR-1). Every error a Store or a
// conforming driver returns is an *Error or wraps one.
//
// errors.Is(err, ErrXxx) matches any *Error with the same Code, so callers
// test codes with the sentinels below; errors.As gives the details.
// Messages never contain row values, scope values or partition names (V-10).
type Error struct {
	// Code is the stable identity of the error.
	Code Code
	// Message is a human-readable explanation for the caller; not
	// stable. It names no rule: that is Rule.
	Message string
	// Rule names the rule(s) of docs/contract.md the error enforces —
	// "PULL-9", "AQ-1, AQ-2", "WIN-1…WIN-5" — or "" when none is named.
	// Stable for a given check; for logs and tests, not for branching
	// (branch on Code).
	Rule string
	// Column names the offending column for CodeInvalidValue, else "".
	Column string
	// Capability names the missing capability for CodeUnsupported, else "".
	Capability Capability
	// OpIndex is the index of the failing operation inside a push when the
	// caller knows it (CodeConstraintViolation, SCH-10), else -1.
	OpIndex int
	// Err is the underlying cause, if any (an engine error). It is returned
	// by Unwrap but never printed in Error's text beyond its own message.
	Err error
}

// Errorf returns an *Error with the given code, a formatted message and
// OpIndex -1. A formatted message that ends in a parenthesis of rule IDs
// only — " (PULL-9)", " (AQ-1, AQ-2)", " (WIN-1…WIN-5)" — has it moved
// to Rule (SplitRule). Never pass row values, scope values or partition
// names as arguments (V-10).
func Errorf(code Code, format string, args ...any) *Error {
	msg, rule := SplitRule(fmt.Sprintf(format, args...))
	return &Error{Code: code, Message: msg, Rule: rule, OpIndex: -1}
}

// ruleSuffix matches a message's trailing parenthesis of rule IDs.
var ruleSuffix = regexp.MustCompile(`\s*\(((?:[A-Z]+-[0-9]+)(?:(?:, |…)[A-Z]+-[0-9]+)*)\)$`)

// SplitRule splits a message that ends in a parenthesis of rule IDs
// only ("the cursor is ahead (WIN-8)", "… (AQ-1, AQ-2)") into the
// message without it and the IDs; any other message is returned whole
// with rule "". A driver building an *Error literal sets Rule itself.
func SplitRule(msg string) (message, rule string) {
	m := ruleSuffix.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg, ""
	}
	return msg[:m[0]], msg[m[2]:m[3]]
}

// Wrap returns an *Error with the given code and message that wraps cause.
// If cause already is (or wraps) an *Error, cause is returned unchanged, so
// an inner classification is never overwritten.
func Wrap(code Code, cause error, format string, args ...any) error {
	if cause == nil {
		return nil
	}
	var e *Error
	if errors.As(cause, &e) {
		return cause
	}
	msg, rule := SplitRule(fmt.Sprintf(format, args...))
	return &Error{Code: code, Message: msg, Rule: rule, OpIndex: -1, Err: cause}
}

// Error implements error: "code: message (rule): cause", each part
// present when set.
func (e *Error) Error() string {
	msg := string(e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Rule != "" {
		msg += " (" + e.Rule + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Retryable reports whether the failed operation may succeed when retried.
func (e *Error) Retryable() bool { return e.Code.Retryable() }

// CodeOf returns the Code of the first *Error in err's chain, or "" when
// there is none (err == nil included).
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsRetryable reports whether err carries a retryable code.
func IsRetryable(err error) bool { return CodeOf(err).Retryable() }

// Sentinels for errors.Is; one per Code. Never returned themselves with
// extra detail: return a fresh *Error (Errorf) carrying the same Code.
var (
	ErrInvalidArgument            = &Error{Code: CodeInvalidArgument, OpIndex: -1}
	ErrInvalidValue               = &Error{Code: CodeInvalidValue, OpIndex: -1}
	ErrInvalidLimit               = &Error{Code: CodeInvalidLimit, OpIndex: -1}
	ErrScanRequiresScope          = &Error{Code: CodeScanRequiresScope, OpIndex: -1}
	ErrInvalidClientID            = &Error{Code: CodeInvalidClientID, OpIndex: -1}
	ErrSchemaInvalid              = &Error{Code: CodeSchemaInvalid, OpIndex: -1}
	ErrSchemaMismatch             = &Error{Code: CodeSchemaMismatch, OpIndex: -1}
	ErrSchemaNewer                = &Error{Code: CodeSchemaNewer, OpIndex: -1}
	ErrSchemaMigrationUnsupported = &Error{Code: CodeSchemaMigrationUnsupported, OpIndex: -1}
	ErrUnknownTable               = &Error{Code: CodeUnknownTable, OpIndex: -1}
	ErrConstraintViolation        = &Error{Code: CodeConstraintViolation, OpIndex: -1}
	ErrTxFinished                 = &Error{Code: CodeTxFinished, OpIndex: -1}
	ErrWriteConflict              = &Error{Code: CodeWriteConflict, OpIndex: -1}
	ErrIdempotencyCacheMiss       = &Error{Code: CodeIdempotencyCacheMiss, OpIndex: -1}
	ErrIdempotencyKeyReused       = &Error{Code: CodeIdempotencyKeyReused, OpIndex: -1}
	ErrPushTooLarge               = &Error{Code: CodePushTooLarge, OpIndex: -1}
	ErrInvalidHorizon             = &Error{Code: CodeInvalidHorizon, OpIndex: -1}
	ErrUnavailable                = &Error{Code: CodeUnavailable, OpIndex: -1}
	ErrUnsupported                = &Error{Code: CodeUnsupported, OpIndex: -1}
	ErrDuplicateReactionKey       = &Error{Code: CodeDuplicateReactionKey, OpIndex: -1}
	ErrQueryInvalid               = &Error{Code: CodeQueryInvalid, OpIndex: -1}
	ErrQueryLimit                 = &Error{Code: CodeQueryLimit, OpIndex: -1}
	ErrIndexNotFound              = &Error{Code: CodeIndexNotFound, OpIndex: -1}
	ErrIndexValueCountMismatch    = &Error{Code: CodeIndexValueCountMismatch, OpIndex: -1}
	ErrCommitOutcomeUnknown       = &Error{Code: CodeCommitOutcomeUnknown, OpIndex: -1}
	ErrCursorExpired              = &Error{Code: CodeCursorExpired, OpIndex: -1}
	ErrCursorAhead                = &Error{Code: CodeCursorAhead, OpIndex: -1}
	ErrClientActorMismatch        = &Error{Code: CodeClientActorMismatch, OpIndex: -1}
	ErrClosed                     = &Error{Code: CodeClosed, OpIndex: -1}
	ErrInternal                   = &Error{Code: CodeInternal, OpIndex: -1}
)

// Codes lists every Code of this package, in the order they are declared.
func Codes() []Code {
	return []Code{CodeInvalidArgument, CodeInvalidValue, CodeInvalidLimit, CodeScanRequiresScope,
		CodeInvalidClientID, CodeSchemaInvalid, CodeSchemaMismatch, CodeSchemaNewer,
		CodeSchemaMigrationUnsupported, CodeUnknownTable, CodeConstraintViolation, CodeTxFinished,
		CodeWriteConflict, CodeIdempotencyCacheMiss, CodeIdempotencyKeyReused, CodePushTooLarge, CodeInvalidHorizon, CodeUnavailable, CodeUnsupported,
		CodeDuplicateReactionKey, CodeQueryInvalid, CodeQueryLimit, CodeIndexNotFound, CodeIndexValueCountMismatch,
		CodeCommitOutcomeUnknown, CodeCursorExpired, CodeCursorAhead, CodeClientActorMismatch, CodeClosed,
		CodeInternal}
}
