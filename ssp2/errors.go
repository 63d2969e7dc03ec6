package ssp2

import (
	"errors"
	"fmt"
)

// Error is a decode error (SPEC §1.7): the input is not a well-formed SSP2
// message, rows segment, row payload or realtime control message. Code is
// the §10 code the SPEC names for the violation — CodeInvalidRequest
// unless a rule names another (CodeEmptyCommit for a PUSH_COMMIT without
// operations). Message says what and where (frame, field, byte offset)
// and never quotes a value taken from the input, so it is safe to log and
// to return to the client.
type Error struct {
	Code    Code
	Message string
}

// Error implements error.
func (e *Error) Error() string { return "ssp2: " + string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same Code, so
// errors.Is(err, &ssp2.Error{Code: ssp2.CodeEmptyCommit}) tests the code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Body returns the §10.1 error body for e: its code's catalog metadata and
// e.Message.
func (e *Error) Body() ErrorBody { return NewErrorBody(e.Code, e.Message) }

// CodeOf returns the Code of the *Error in err's chain, or "" when there is
// none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// ErrEncode is wrapped by every error an encoder returns for a value it
// must not encode (a string that is not UTF-8, an i64 outside
// ±(2^53−1), a frame out of grammar order, an upsert without a row, …):
// a programming error of the caller, never a fault of the peer. Nothing
// of the refused value is written.
var ErrEncode = errors.New("ssp2: cannot encode")

func encodeErrorf(format string, args ...any) error { return wrapf(ErrEncode, format, args...) }

func wrapf(base error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{base}, args...)...)
}
