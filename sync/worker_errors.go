package sync

import (
	"errors"
)

// How a reaction handler reports failure to the Worker. A handler returns
// nil (the reaction is completed) or an error. Only a code and bounded JSON
// details are ever stored with the reaction (RX-6); the error's text is for
// logs and WorkerEvent.Err, never persisted.

// The failure codes the Worker itself records. They use the "reaction."
// namespace, which V-8 reserves for syncstore, so an application code can
// never be mistaken for one.
const (
	// CodeHandlerError: the handler returned an error without a code.
	CodeHandlerError = "reaction.handler_error"
	// CodeHandlerPanic: the handler panicked; the panic was recovered.
	CodeHandlerPanic = "reaction.handler_panic"
	// CodeInvalidFailureCode: the handler's code broke V-8 (syntax or a
	// reserved prefix); it was replaced by this one.
	CodeInvalidFailureCode = "reaction.invalid_failure_code"
	// CodeShutdown: the Worker stopped before the handler finished, past
	// its shutdown grace; the reaction was released for another attempt.
	CodeShutdown = "reaction.shutdown"
	// CodeAttemptsExhausted: recorded by the store when a claim finds a
	// reaction at its attempts cap after its lease expired (RX-4).
	CodeAttemptsExhausted = "reaction.attempts_exhausted"
)

// ErrLeaseLost is the cause (context.Cause) of a handler context cancelled
// because its reaction's lease was lost: a heartbeat found the reaction no
// longer leased to this worker (RX-5). Whatever the handler returns then
// is discarded.
var ErrLeaseLost = errors.New("sync: the reaction's lease was lost to another claim (RX-5)")

// ErrWorkerShutdown is the cause of a handler context cancelled because
// the Worker's shutdown grace ran out; the reaction has been released.
var ErrWorkerShutdown = errors.New("sync: the worker shut down before the handler finished")

// HandlerError is a handler failure with the code and details to record
// (RX-6). Code must be an application code (V-8: a letter, then letters,
// digits or "._:-", ≤ 128 bytes, no reserved prefix); an invalid one is
// recorded as CodeInvalidFailureCode. Details is "" or a JSON document of
// ≤ 8 KiB; other details are dropped. Permanent dead-letters the reaction
// at once instead of retrying. Err is the cause, for logs only.
type HandlerError struct {
	Code      string
	Details   JSON
	Permanent bool
	Err       error
}

// Error returns the code and the cause's text.
func (e *HandlerError) Error() string {
	msg := "reaction handler failed"
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Permanent {
		msg += " (permanent)"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *HandlerError) Unwrap() error { return e.Err }

// FailWith returns a retryable handler failure recorded with code and
// details (see HandlerError); cause is kept for logs only.
func FailWith(code string, details JSON, cause error) error {
	return &HandlerError{Code: code, Details: details, Err: cause}
}

// Permanent marks err as permanent: the Worker dead-letters the reaction
// without further attempts. If err is or wraps a *HandlerError, its code
// and details are kept; otherwise the code is CodeHandlerError. Permanent
// of nil is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	var he *HandlerError
	if errors.As(err, &he) {
		cp := &HandlerError{Code: he.Code, Details: he.Details, Permanent: true, Err: err}
		if top, ok := err.(*HandlerError); ok {
			cp.Err = top.Err
		}
		return cp
	}
	return &HandlerError{Permanent: true, Err: err}
}
