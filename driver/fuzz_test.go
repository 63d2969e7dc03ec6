package driver_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Fuzz targets for the codec every driver may use to store values and push
// results in one text column (codec.go). What a store hands back is
// untrusted: a torn write, a manual edit, another version's format. The
// properties:
//
//   - decoding never panics;
//   - DecodePushResult fails only with the retryable
//     CodeIdempotencyCacheMiss (PR-5, ERR-1), never another error;
//   - what decodes is a value the contract allows (VAL-1, V-3: floats are
//     finite; PR-1: the statuses are known), so it encodes again, and
//     decode(encode(decoded)) equals decoded, bit for bit.
//
// Run one for longer with, e.g.:
//
//	go test ./driver -run '^$' -fuzz '^FuzzDecodePushResult$' -fuzztime 10m
//
// Seeds: the f.Add calls below and testdata/fuzz/<target>/.

func FuzzDecodePushResult(f *testing.F) {
	seeds := []driver.PushResult{
		{Status: driver.PushApplied, CommitSeq: 7, RecordedAtMs: 1700000000000, CacheIdentity: "ci",
			Ops: []driver.OpResult{{Status: driver.OpApplied}}},
		{Status: driver.PushRejected, RecordedAtMs: -1, Ops: []driver.OpResult{
			{Status: driver.OpConflict, Code: "app.conflict", Message: "m", ServerVersion: 3,
				ServerRow: driver.Values{"s": "é😀", "i": int64(math.MinInt64), "f": math.Copysign(0, -1), "b": true, "j": driver.JSON(` {"a": 1, "a": 2} `), "x": []byte{0, 1}, "e": []byte{}, "n": nil}},
			{Status: driver.OpError, Code: "app.err", Retryable: true, Details: driver.JSON(`{"k":[1,2]}`)},
		}},
	}
	for _, r := range seeds {
		b, err := driver.EncodePushResult(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"status":"unknown","ops":[]}`))
	f.Add([]byte(`{"status":"applied","ops":[{"status":"later"}]}`))
	f.Add([]byte(`{"status":"applied","commitSeq":1,"ops":[{"status":"conflict","serverRow":{"x":["q","1"]}}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := driver.DecodePushResult(data)
		if err != nil {
			var e *driver.Error
			if !errors.As(err, &e) || e.Code != driver.CodeIdempotencyCacheMiss || !driver.IsRetryable(err) {
				t.Fatalf("DecodePushResult error %v (code %q), want the retryable %s (PR-5)", err, driver.CodeOf(err), driver.CodeIdempotencyCacheMiss)
			}
			return
		}
		if r.Status != driver.PushApplied && r.Status != driver.PushRejected {
			t.Fatalf("decoded status %q, want applied or rejected (PR-5)", r.Status)
		}
		for i, op := range r.Ops {
			switch op.Status {
			case driver.OpApplied, driver.OpConflict, driver.OpError:
			default:
				t.Fatalf("op %d: decoded status %q (PR-5)", i, op.Status)
			}
			checkAllowed(t, op.ServerRow)
		}
		again, err := driver.EncodePushResult(r)
		if err != nil {
			t.Fatalf("a decoded result does not encode again: %v", err)
		}
		r2, err := driver.DecodePushResult(again)
		if err != nil {
			t.Fatalf("a re-encoded result does not decode: %v", err)
		}
		if !equalResults(r, r2) {
			t.Fatalf("round trip changed the result:\nfirst  %#v\nsecond %#v", r, r2)
		}
	})
}

func FuzzDecodeValues(f *testing.F) {
	for _, v := range []driver.Values{
		{"s": "", "i": int64(math.MaxInt64), "f": math.SmallestNonzeroFloat64, "b": false},
		{"j": driver.JSON(`"\u0000"`), "x": []byte{}, "n": nil, "f": float64(1 << 53)},
		nil,
	} {
		b, err := driver.EncodeValues(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"a":["i","9223372036854775808"]}`))
	f.Add([]byte(`{"a":["x","not base64"]}`))
	f.Add([]byte(`{"a":["b",1]}`))
	f.Add([]byte(`{"a":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := driver.DecodeValues(data)
		if err != nil {
			return // an error is the right answer for bad text; PushResult wraps it (PR-5)
		}
		checkAllowed(t, v)
		again, err := driver.EncodeValues(v)
		if err != nil {
			t.Fatalf("decoded values do not encode again: %v", err)
		}
		v2, err := driver.DecodeValues(again)
		if err != nil {
			t.Fatalf("re-encoded values do not decode: %v", err)
		}
		if !equalValues(v, v2) {
			t.Fatalf("round trip changed the values:\nfirst  %#v\nsecond %#v", v, v2)
		}
	})
}

// FuzzValuesRoundTrip builds values of every type from fuzzed parts and
// checks that they survive EncodeValues/DecodeValues exactly (VAL-1).
func FuzzValuesRoundTrip(f *testing.F) {
	f.Add("é😀\uFFFD", int64(math.MinInt64), math.Float64bits(math.Copysign(0, -1)), true, `{"a": 1, "a": [2]}`, []byte{0, 255})
	f.Add("", int64(1<<53+1), math.Float64bits(math.MaxFloat64), false, `"\u0000"`, []byte{})
	f.Fuzz(func(t *testing.T, s string, i int64, fbits uint64, b bool, j string, x []byte) {
		fl := math.Float64frombits(fbits)
		if math.IsNaN(fl) || math.IsInf(fl, 0) {
			fl = 0 // V-3: only finite floats are values
		}
		if x == nil {
			x = []byte{}
		}
		v := driver.Values{"s": s, "i": i, "f": fl, "b": b, "j": driver.JSON(j), "x": x, "n": nil}
		enc, err := driver.EncodeValues(v)
		if err != nil {
			t.Fatalf("EncodeValues: %v", err)
		}
		got, err := driver.DecodeValues(enc)
		if err != nil {
			t.Fatalf("DecodeValues of EncodeValues' output: %v", err)
		}
		// Invalid UTF-8 becomes U+FFFD in JSON text; sync rejects such
		// strings before any driver sees them (V-3).
		if utf8.ValidString(s) && utf8.ValidString(j) && !equalValues(v, got) {
			t.Fatalf("round trip changed the values (VAL-1):\nwant %#v\ngot  %#v", v, got)
		}
	})
}

// checkAllowed fails t when v holds a value no column can hold (V-3).
func checkAllowed(t *testing.T, v driver.Values) {
	t.Helper()
	for k, x := range v {
		switch y := x.(type) {
		case nil, string, int64, bool, driver.JSON:
		case float64:
			if math.IsNaN(y) || math.IsInf(y, 0) {
				t.Fatalf("column %q decoded to a non-finite float (V-3 allows none; PR-5: not a guess)", k)
			}
		case []byte:
			if y == nil {
				t.Fatalf("column %q decoded to []byte(nil), which is neither NULL nor empty", k)
			}
		default:
			t.Fatalf("column %q decoded to a %T", k, x)
		}
	}
}

// equalValues compares values exactly: floats by bits, bytes by content
// with nil ≠ empty.
func equalValues(a, b driver.Values) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		switch xv := x.(type) {
		case float64:
			yv, ok := y.(float64)
			if !ok || math.Float64bits(xv) != math.Float64bits(yv) {
				return false
			}
		case []byte:
			yv, ok := y.([]byte)
			if !ok || (xv == nil) != (yv == nil) || string(xv) != string(yv) {
				return false
			}
		default:
			if !reflect.DeepEqual(x, y) {
				return false
			}
		}
	}
	return true
}

func equalResults(a, b driver.PushResult) bool {
	if a.Status != b.Status || a.CommitSeq != b.CommitSeq || a.RecordedAtMs != b.RecordedAtMs ||
		a.CacheIdentity != b.CacheIdentity || len(a.Ops) != len(b.Ops) {
		return false
	}
	for i := range a.Ops {
		x, y := a.Ops[i], b.Ops[i]
		if !equalValues(x.ServerRow, y.ServerRow) {
			return false
		}
		if x.Status != y.Status || x.Code != y.Code || x.Message != y.Message || x.ServerVersion != y.ServerVersion ||
			x.Retryable != y.Retryable || x.Details != y.Details {
			return false
		}
	}
	return true
}
