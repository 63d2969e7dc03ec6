package yjs

import "fmt"

// Code is the stable code of an Error.
type Code string

const (
	// CodeMalformed: the input is not a Yjs update (format v1): a
	// truncated or over-long value, an unknown struct or content kind, a
	// string that is not UTF-8, a JSON value that is not JSON, a client
	// listed twice, a zero-length item, a clock beyond 2^53 − 1, bytes
	// after the delete set.
	CodeMalformed Code = "yjs.malformed"
	// CodeTooLarge: an input or the merged update is over a bound
	// (MaxUpdateBytes, MaxStructs, MaxDeleteRanges).
	CodeTooLarge Code = "yjs.too_large"
)

// Error is what Decode and Merge return for input they refuse. Its
// message names the problem and the byte offset, never the input's
// content.
type Error struct {
	Code Code
	// Input is the index of the offending input of Merge (0 for Decode),
	// Offset the byte offset in it (−1 when not about one place).
	Input, Offset int
	Message       string
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("yjs: %s: input %d: %s", e.Code, e.Input, e.Message)
	}
	return fmt.Sprintf("yjs: %s: input %d at byte %d: %s", e.Code, e.Input, e.Offset, e.Message)
}

func malformed(at int, msg string) *Error {
	return &Error{Code: CodeMalformed, Offset: at, Message: msg}
}

func tooLarge(msg string) *Error {
	return &Error{Code: CodeTooLarge, Offset: -1, Message: msg}
}
