package d1sql

import (
	"math"
	"testing"
)

// TestFloatParts checks that every float's [m, e] encoding is exact:
// m × 2^e gives back the same bits, with |m| < 2^53 (so m is an exact
// JSON and SQLite integer) and e ≥ -1074.
func TestFloatParts(t *testing.T) {
	for _, f := range []float64{1, -1, 0.1, 1.0 / 3, 1e-300, -1e-300, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 2.225073858507201e-308, 1 << 53, 1<<53 + 2, 123456789.123456789} {
		m, e := floatParts(f)
		if m >= 1<<53 || m <= -(1<<53) || e < -1074 {
			t.Errorf("%v: m %d, e %d out of range", f, m, e)
		}
		if got := float64(m) * math.Pow(2, float64(e)); math.Float64bits(got) != math.Float64bits(f) {
			t.Errorf("%v: %d × 2^%d = %v (bits %x), want bits %x", f, m, e, got, math.Float64bits(got), math.Float64bits(f))
		}
	}
}
