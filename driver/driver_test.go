package driver_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

func TestErrorIsMatchesByCode(t *testing.T) {
	err := fmt.Errorf("context: %w", driver.Errorf(driver.CodeUnknownTable, "table not in schema"))
	if !errors.Is(err, driver.ErrUnknownTable) {
		t.Fatalf("errors.Is(%v, ErrUnknownTable) = false", err)
	}
	if errors.Is(err, driver.ErrTxFinished) {
		t.Fatalf("errors.Is matched a different code")
	}
	var e *driver.Error
	if !errors.As(err, &e) || e.Code != driver.CodeUnknownTable || e.OpIndex != -1 {
		t.Fatalf("errors.As: %#v", e)
	}
	if got := driver.CodeOf(err); got != driver.CodeUnknownTable {
		t.Fatalf("CodeOf = %q", got)
	}
	if driver.CodeOf(errors.New("plain")) != "" || driver.CodeOf(nil) != "" {
		t.Fatal("CodeOf of a non-*Error must be empty")
	}
}

func TestWrapKeepsInnerClassification(t *testing.T) {
	inner := driver.Errorf(driver.CodeConstraintViolation, "unique index")
	if got := driver.Wrap(driver.CodeInternal, fmt.Errorf("exec: %w", inner), "upsert"); driver.CodeOf(got) != driver.CodeConstraintViolation {
		t.Fatalf("Wrap overwrote the inner code: %v", got)
	}
	cause := errors.New("disk I/O error")
	got := driver.Wrap(driver.CodeInternal, cause, "upsert row")
	if driver.CodeOf(got) != driver.CodeInternal || !errors.Is(got, cause) {
		t.Fatalf("Wrap(cause) = %v", got)
	}
	if driver.Wrap(driver.CodeInternal, nil, "x") != nil {
		t.Fatal("Wrap(nil) must be nil")
	}
}

func TestRetryableCodes(t *testing.T) {
	retryable := map[driver.Code]bool{
		driver.CodeWriteConflict: true, driver.CodeIdempotencyCacheMiss: true, driver.CodeUnavailable: true,
		driver.CodeCommitOutcomeUnknown: true,
	}
	seen := map[driver.Code]bool{}
	for _, c := range driver.Codes() {
		if seen[c] {
			t.Errorf("Codes lists %s twice", c)
		}
		seen[c] = true
		if got := driver.Errorf(c, "x").Retryable(); got != retryable[c] {
			t.Errorf("%s.Retryable() = %v, want %v", c, got, retryable[c])
		}
	}
	// Every Code constant declared in errors.go is listed, and nothing else.
	declared := declaredCodes(t)
	for c := range declared {
		if !seen[c] {
			t.Errorf("Codes does not list %s", c)
		}
	}
	if len(seen) != len(declared) {
		t.Errorf("Codes lists %d codes, errors.go declares %d", len(seen), len(declared))
	}
}

func TestValuesRoundTrip(t *testing.T) {
	v := driver.Values{
		"imin": int64(math.MinInt64), "imax": int64(math.MaxInt64), "i53": int64(1<<53 + 1),
		"negzero": math.Copysign(0, -1), "tiny": 5e-324, "big": math.MaxFloat64, "tenth": 0.1,
		"s": "emoji 😀 e\u0301 \ufffd <&>", "empty": "", "t": true, "f": false,
		"j": driver.JSON(`{"b":1,  "a":[2,"\u0000"], "a":3}`), "x": []byte{0, 1, 255}, "xe": []byte{}, "null": nil,
	}
	data, err := driver.EncodeValues(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := driver.DecodeValues(data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(v, got, cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	if b, ok := got["xe"].([]byte); !ok || b == nil {
		t.Fatalf("empty bytes must decode as non-nil []byte{}, got %#v", got["xe"])
	}
}

func TestDecodeValuesRejectsNonFiniteFloats(t *testing.T) {
	for _, text := range []string{"NaN", "Inf", "-Inf", "+Inf", "1e999"} {
		if _, err := driver.DecodeValues([]byte(`{"c":["f","` + text + `"]}`)); err == nil {
			t.Errorf("DecodeValues accepted float %q; stored values are finite (V-3)", text)
		}
	}
}

func TestEncodeValuesRejectsWhatItCannotKeep(t *testing.T) {
	for name, x := range map[string]any{"nan": math.NaN(), "inf": math.Inf(1), "int": 1, "nilbytes": []byte(nil)} {
		_, err := driver.EncodeValues(driver.Values{"c": x})
		var e *driver.Error
		if !errors.As(err, &e) || e.Code != driver.CodeInvalidValue || e.Column != "c" {
			t.Errorf("%s: got %v, want invalid_value naming column c", name, err)
		}
	}
}

func TestPushResultRoundTripAndCacheMiss(t *testing.T) {
	r := driver.PushResult{Status: driver.PushApplied, CommitSeq: 7, RecordedAtMs: 1700000000123, CacheIdentity: "ci",
		Ops: []driver.OpResult{
			{Status: driver.OpApplied},
			{Status: driver.OpConflict, Code: "row.version", Message: "stale", ServerVersion: 3,
				ServerRow: driver.Values{"x": []byte{0}, "n": int64(math.MaxInt64)}},
			{Status: driver.OpError, Code: "app.fail", Message: "m", Retryable: true, Details: driver.JSON(`{"k": 1}`)},
		}}
	data, err := driver.EncodePushResult(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := driver.DecodePushResult(data)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	for _, bad := range []string{``, `{`, `{"status":"maybe","recordedAtMs":1,"ops":[]}`,
		`{"status":"applied","recordedAtMs":1,"ops":[{"status":"weird"}]}`,
		`{"status":"applied","recordedAtMs":1,"ops":[{"status":"conflict","serverRow":{"a":["q","1"]}}]}`,
		`{"status":"applied","recordedAtMs":1,"ops":[{"status":"conflict","serverRow":{"a":["f","NaN"]}}]}`,
		`{"status":"applied","recordedAtMs":1,"ops":[]}`, `{"status":"rejected","commitSeq":3,"recordedAtMs":1,"ops":[]}`,
		`{"status":"applied","commitSeq":1,"recordedAtMs":1,"ops":[{"status":"conflict","serverRow":{"a":["b",null]}}]}`,
		`{"status":"applied","commitSeq":1,"recordedAtMs":1,"ops":[{"status":"conflict","serverRow":{"a":["s","x","extra"]}}]}`} {
		_, err := driver.DecodePushResult([]byte(bad))
		if !errors.Is(err, driver.ErrIdempotencyCacheMiss) || !driver.IsRetryable(err) {
			t.Errorf("DecodePushResult(%q) = %v, want retryable idempotency_cache_miss (PR-5)", bad, err)
		}
	}
}

func TestCapabilityDetection(t *testing.T) {
	for _, c := range driver.AllCapabilities {
		if driver.ConnHas(nil, c) {
			t.Errorf("a nil Conn declares %s", c)
		}
	}
	want := map[driver.Capability]bool{driver.CapReactions: true, driver.CapIndexLookup: true, driver.CapBlobRefs: true}
	for _, c := range driver.AllCapabilities {
		if c.HasTxHalf() != want[c] {
			t.Errorf("%s.HasTxHalf() = %v", c, c.HasTxHalf())
		}
	}
}

// TestCheckWindowCursor: below the horizon → cursor_expired (HZ-4), beyond
// the head → cursor_ahead (WIN-8), both bounds themselves served.
func TestCheckWindowCursor(t *testing.T) {
	for _, c := range []struct {
		after, horizon, max int64
		want                driver.Code
	}{
		{0, 0, 0, ""}, {0, 0, 5, ""}, {3, 3, 5, ""}, {5, 3, 5, ""}, {5, 5, 5, ""},
		{2, 3, 5, driver.CodeCursorExpired}, {0, 1, 1, driver.CodeCursorExpired},
		{6, 3, 5, driver.CodeCursorAhead}, {1, 0, 0, driver.CodeCursorAhead}, {math.MaxInt64, 0, 7, driver.CodeCursorAhead},
	} {
		err := driver.CheckWindowCursor(c.after, c.horizon, c.max)
		if got := driver.CodeOf(err); got != c.want || (err == nil) != (c.want == "") {
			t.Errorf("CheckWindowCursor(after %d, horizon %d, max %d) = %v; want code %q", c.after, c.horizon, c.max, err, c.want)
		}
		if driver.IsRetryable(err) {
			t.Errorf("CheckWindowCursor(after %d, horizon %d, max %d): %v is retryable", c.after, c.horizon, c.max, err)
		}
	}
}

// TestClientRecordQueryNext: the next page starts after the last record.
func TestClientRecordQueryNext(t *testing.T) {
	q := driver.ClientRecordQuery{Limit: 7}
	got := q.Next(driver.ClientRecord{ClientID: "c9", UpdatedAtMs: 42, Cursor: 3})
	if want := (driver.ClientRecordQuery{AfterUpdatedAtMs: 42, AfterClientID: "c9", Limit: 7}); got != want {
		t.Errorf("Next = %+v, want %+v", got, want)
	}
}

// declaredCodes returns the values of the Code constants errors.go
// declares (parsed, so a new code cannot be left out of Codes).
func declaredCodes(t *testing.T) map[driver.Code]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[driver.Code]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[driver.Code(s)] = true
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d Code constants in errors.go: the parse missed them", len(out))
	}
	return out
}

// handleTx is a Tx-shaped value with As: it hands out "tx handle" to a
// *string target and refuses every other.
type handleTx struct{}

func (handleTx) As(target any) bool {
	p, ok := target.(*string)
	if ok {
		*p = "tx handle"
	}
	return ok
}

// AsOf reaches an Aser's As, and answers false for a target it does not
// know, for a value without As, and for nil.
func TestAsOf(t *testing.T) {
	var got string
	if !driver.AsOf(handleTx{}, &got) || got != "tx handle" {
		t.Fatalf("AsOf(an Aser, *string) = %q, want %q", got, "tx handle")
	}
	var n int
	if driver.AsOf(handleTx{}, &n) {
		t.Fatal("AsOf with a target the Aser does not know returned true")
	}
	if driver.AsOf(struct{}{}, &got) {
		t.Fatal("AsOf on a value without As returned true")
	}
	if driver.AsOf(nil, &got) {
		t.Fatal("AsOf(nil) returned true")
	}
}
