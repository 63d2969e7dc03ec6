package querylang

import (
	"math"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// QueryArgRules are an engine's departures from the bind values a query
// takes as they come (AQ-1, AQ-3).
type QueryArgRules struct {
	// BoolAsInt binds a bool as int64 1 or 0 (engines without a boolean
	// type: SQLite, MySQL).
	BoolAsInt bool
	// RefuseNUL refuses a string holding a NUL byte (V-3: engines whose
	// text cannot hold one).
	RefuseNUL bool
}

// QueryArgs checks and converts a query's bind values: int64, float64
// (finite), string, []byte (nil binds NULL), bool, driver.JSON (bound as
// its text) and nil. Any other type, NaN or ±Inf, or what rules refuse →
// CodeQueryInvalid naming the value's position (1-based), never its
// content.
func QueryArgs(in []any, rules QueryArgRules) ([]any, error) {
	bad := func(format string, args ...any) ([]any, error) {
		return nil, driver.Errorf(driver.CodeQueryInvalid, format, args...)
	}
	out := make([]any, len(in))
	for i, v := range in {
		switch x := v.(type) {
		case nil, int64:
			out[i] = x
		case string:
			if rules.RefuseNUL && strings.IndexByte(x, 0) >= 0 {
				return bad("bind value %d holds a NUL byte (V-3)", i+1)
			}
			out[i] = x
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return bad("bind value %d is not a finite float (AQ-1)", i+1)
			}
			out[i] = x
		case bool:
			out[i] = x
			if rules.BoolAsInt {
				out[i] = int64(0)
				if x {
					out[i] = int64(1)
				}
			}
		case []byte:
			if x == nil {
				out[i] = nil
			} else {
				out[i] = x
			}
		case driver.JSON:
			out[i] = string(x)
		default:
			return bad("bind value %d is a %T; want int64, float64, string, []byte, bool or nil (AQ-1)", i+1, v)
		}
	}
	return out, nil
}
