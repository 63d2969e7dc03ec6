package driver

import (
	"fmt"
	"time"
)

// QueryLimits bounds one authoritative query (AQ-6). The host sets them on
// Query.Limits; the zero value of each field means its default, so the
// zero QueryLimits is the safe default set:
//
//	MaxRows         10,000 rows       (at most 1,000,000)
//	MaxResultBytes  16 MiB            (at most 1 GiB)
//	MaxValueBytes   1 MiB             (at most 256 MiB)
//	Timeout         5 s               (at most 10 min)
//
// A negative value, or one above its maximum, is refused with
// CodeInvalidLimit (V-5) before the driver runs anything. Hitting a bound
// ends the query with a *QueryLimitError (code CodeQueryLimit) naming it;
// no row past the bound is kept in memory, nothing is written, and the
// error is not retryable (the same query fails the same way).
type QueryLimits struct {
	// MaxRows bounds the rows of the result. Bound "rows".
	MaxRows int
	// MaxResultBytes bounds the size of the result in bytes: the length of
	// every string and []byte value plus 8 bytes for every other value
	// (int64, float64, bool, nil). Bound "bytes".
	MaxResultBytes int64
	// MaxValueBytes bounds, in bytes, any single string or blob the query
	// builds (printf, replace, concatenation, group_concat, …) or returns,
	// where the engine lets a driver bound it (see docs/authoritative-query.md
	// per driver); every returned value is checked against it. Bound
	// "value_bytes".
	MaxValueBytes int64
	// Timeout bounds the wall time of the query's statement on the engine
	// (statement_timeout, max_statement_time, an interrupt), besides the
	// caller's ctx; rounded up to whole milliseconds. Bound "time".
	Timeout time.Duration
}

// The defaults and maxima of QueryLimits (AQ-6).
const (
	DefaultQueryMaxRows        = 10_000
	DefaultQueryMaxResultBytes = 16 << 20
	DefaultQueryMaxValueBytes  = 1 << 20
	DefaultQueryTimeout        = 5 * time.Second

	MaxQueryMaxRows        = 1_000_000
	MaxQueryMaxResultBytes = 1 << 30
	MaxQueryMaxValueBytes  = 256 << 20
	MaxQueryTimeout        = 10 * time.Minute
)

// WithDefaults returns l with every zero field set to its default. It does
// not check l (see Check).
func (l QueryLimits) WithDefaults() QueryLimits {
	if l.MaxRows == 0 {
		l.MaxRows = DefaultQueryMaxRows
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = DefaultQueryMaxResultBytes
	}
	if l.MaxValueBytes == 0 {
		l.MaxValueBytes = DefaultQueryMaxValueBytes
	}
	if l.Timeout == 0 {
		l.Timeout = DefaultQueryTimeout
	}
	return l
}

// Check returns a CodeInvalidLimit error naming the first field of l that
// is negative or above its maximum, else nil (V-5, AQ-6).
func (l QueryLimits) Check() error {
	bad := func(field string, v, max any) error {
		return Errorf(CodeInvalidLimit, "query limit %s is %v; want 0 (the default) or 1…%v (V-5, AQ-6)", field, v, max)
	}
	switch {
	case l.MaxRows < 0 || l.MaxRows > MaxQueryMaxRows:
		return bad("MaxRows", l.MaxRows, MaxQueryMaxRows)
	case l.MaxResultBytes < 0 || l.MaxResultBytes > MaxQueryMaxResultBytes:
		return bad("MaxResultBytes", l.MaxResultBytes, int64(MaxQueryMaxResultBytes))
	case l.MaxValueBytes < 0 || l.MaxValueBytes > MaxQueryMaxValueBytes:
		return bad("MaxValueBytes", l.MaxValueBytes, int64(MaxQueryMaxValueBytes))
	case l.Timeout < 0 || l.Timeout > MaxQueryTimeout:
		return bad("Timeout", l.Timeout, MaxQueryTimeout)
	}
	return nil
}

// TimeoutMillis returns the Timeout of l (its default when zero) in whole
// milliseconds, rounded up.
func (l QueryLimits) TimeoutMillis() int64 {
	t := l.WithDefaults().Timeout
	return int64((t + time.Millisecond - 1) / time.Millisecond)
}

// QueryBound names the bound a query hit (AQ-6).
type QueryBound string

// The bounds of AQ-6.
const (
	// BoundRows: the result reached QueryLimits.MaxRows.
	BoundRows QueryBound = "rows"
	// BoundBytes: the result reached QueryLimits.MaxResultBytes.
	BoundBytes QueryBound = "bytes"
	// BoundValueBytes: a string or blob built, bound or returned exceeded
	// QueryLimits.MaxValueBytes.
	BoundValueBytes QueryBound = "value_bytes"
	// BoundTime: the statement ran past QueryLimits.Timeout on the engine.
	BoundTime QueryBound = "time"
	// BoundMemory: the engine ran out of memory or another resource for
	// the statement (PostgreSQL class 53/XX, MariaDB out of memory).
	BoundMemory QueryBound = "memory"
	// BoundRewrite: the query text's static cost is over a bound, checked
	// before any engine sees it: parentheses nested deeper than 100 levels
	// (Limit 100), a value that can grow more than 1,024-fold through the
	// query's nested SELECTs, CTEs and value-building calls (Limit 1,024;
	// docs/authoritative-query.md, "Static growth"), search patterns that
	// are not literals and bind values or are over 256 bytes in all
	// (Limit 256), or row work over the Timeout's budget (Limit the
	// budget in bytes, at least 16 MiB; "Row work").
	BoundRewrite QueryBound = "rewrite"
)

// QueryLimitError is the error of a query that hit a bound (AQ-6). It
// wraps an *Error with CodeQueryLimit, so errors.Is(err, ErrQueryLimit)
// and errors.As(err, **Error) both hold; errors.As(err, **QueryLimitError)
// gives the bound. Its text names the bound and the limit, never a value
// of the query (V-10).
type QueryLimitError struct {
	// Bound names the bound hit.
	Bound QueryBound
	// Limit is the bound's value in its unit: rows (BoundRows), bytes
	// (BoundBytes, BoundValueBytes), milliseconds (BoundTime), nesting
	// depth, growth factor, pattern bytes or row-work bytes (BoundRewrite,
	// above); 0 when the engine does not say (BoundMemory).
	Limit int64
	err   *Error
}

// NewQueryLimitError returns a *QueryLimitError for bound and limit whose
// *Error wraps cause (may be nil; an engine error whose text must not
// quote data — pass a sanitised cause). what says where, e.g.
// "postgres: authoritative query".
func NewQueryLimitError(bound QueryBound, limit int64, cause error, what string) *QueryLimitError {
	msg := fmt.Sprintf("%s hit its %s bound", what, bound)
	if u := bound.unit(); limit > 0 && u != "" {
		msg += fmt.Sprintf(" (%d %s)", limit, u)
	} else if limit > 0 {
		msg += fmt.Sprintf(" (%d)", limit)
	}
	msg += "; nothing was written; not retryable"
	return &QueryLimitError{Bound: bound, Limit: limit, err: &Error{Code: CodeQueryLimit, Message: msg, Rule: "AQ-6", OpIndex: -1, Err: cause}}
}

func (b QueryBound) unit() string {
	switch b {
	case BoundRows:
		return "rows"
	case BoundBytes, BoundValueBytes:
		return "bytes"
	case BoundTime:
		return "ms"
	}
	return ""
}

// Error implements error: the wrapped *Error's text.
func (e *QueryLimitError) Error() string { return e.err.Error() }

// Unwrap returns the *Error with CodeQueryLimit.
func (e *QueryLimitError) Unwrap() error { return e.err }

// QueryMeter counts a query result against its QueryLimits while the
// driver streams it, so a driver stops reading at the bound instead of
// buffering past it (AQ-6). Use one per query; not safe for concurrent use.
// The zero QueryMeter is not usable: call QueryLimits.Meter.
type QueryMeter struct {
	limits QueryLimits
	rows   int
	bytes  int64
	what   string
}

// Meter returns a QueryMeter for l (its defaults filled in); what names
// the operation in errors ("sqlite: authoritative query").
func (l QueryLimits) Meter(what string) *QueryMeter {
	return &QueryMeter{limits: l.WithDefaults(), what: what}
}

// Row counts one more row; past MaxRows → a BoundRows *QueryLimitError.
// Call it before reading the row's values.
func (m *QueryMeter) Row() error {
	m.rows++
	if m.rows > m.limits.MaxRows {
		return NewQueryLimitError(BoundRows, int64(m.limits.MaxRows), nil, m.what)
	}
	return nil
}

// Value counts one value of n bytes (a string's or blob's length; pass 8
// for any other value): over MaxValueBytes → BoundValueBytes; the running
// total over MaxResultBytes → BoundBytes. A driver holding the value calls
// ValueOf, which never holds a number against MaxValueBytes.
func (m *QueryMeter) Value(n int64) error {
	if n > m.limits.MaxValueBytes {
		return NewQueryLimitError(BoundValueBytes, m.limits.MaxValueBytes, nil, m.what)
	}
	return m.count(n)
}

// ValueOf counts one result value v (int64 | float64 | string | []byte |
// bool | nil): a string or []byte longer than MaxValueBytes →
// BoundValueBytes — any other value is never over it, whatever
// MaxValueBytes is (AQ-6) —; the running total of QueryValueSize over
// MaxResultBytes → BoundBytes.
func (m *QueryMeter) ValueOf(v any) error {
	n := QueryValueSize(v)
	switch v.(type) {
	case string, []byte:
		if n > m.limits.MaxValueBytes {
			return NewQueryLimitError(BoundValueBytes, m.limits.MaxValueBytes, nil, m.what)
		}
	}
	return m.count(n)
}

func (m *QueryMeter) count(n int64) error {
	m.bytes += n
	if m.bytes > m.limits.MaxResultBytes {
		return NewQueryLimitError(BoundBytes, m.limits.MaxResultBytes, nil, m.what)
	}
	return nil
}

// QueryValueSize is the size Value counts for a result value v: the length
// of a string or []byte, else 8.
func QueryValueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	}
	return 8
}

// Limits returns the limits the meter enforces (defaults filled in).
func (m *QueryMeter) Limits() QueryLimits { return m.limits }
