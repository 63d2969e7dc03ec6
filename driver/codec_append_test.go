package driver

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// referenceEncodeValues is EncodeValues as it was written before
// AppendValues: encoding/json over the map of tagged values. AppendValues
// must produce exactly its bytes (the stored change-log text, VAL-1).
func referenceEncodeValues(v Values) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	m := make(map[string]any, len(v))
	for k, x := range v {
		t, err := tagValue(x)
		if err != nil {
			return nil, err
		}
		m[k] = t
	}
	return json.Marshal(m)
}

var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "<tag> & amp", "ctl \x00\x01\x1f\x7f \b\f\n\r\t",
	"emoji 😀 combining e\u0301", "U+2028 \u2028 U+2029 \u2029", "bad utf8 \xff\xfe \xc3", "\ufffd",
	"é中文", "\xed\xa0\x80 surrogate", "{\"k\": [1, 2]}",
}

func TestAppendValuesMatchesEncodingJSON(t *testing.T) {
	cases := []Values{
		nil, {},
		{"i": int64(math.MinInt64), "j": int64(math.MaxInt64), "k": int64(1<<53 + 1), "z": int64(0)},
		{"f": 0.1, "g": math.Copysign(0, -1), "h": math.MaxFloat64, "m": math.SmallestNonzeroFloat64, "n": 1e21, "o": 123456789.0},
		{"b": true, "c": false, "n": nil},
		{"x": []byte{}, "y": []byte{0, 1, 2, 0xff}, "z": []byte("hello world!")},
		{"j": JSON(`{"a" : 1, "a": "\u0000<>&"}`), "k": JSON(" [ ] ")},
	}
	for _, s := range trickyStrings {
		cases = append(cases, Values{s: s, "j" + s: JSON(s)})
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 500; n++ {
		v := Values{}
		for k := rng.IntN(8); k > 0; k-- {
			key := trickyStrings[rng.IntN(len(trickyStrings))] + string(rune('a'+rng.IntN(26)))
			switch rng.IntN(6) {
			case 0:
				v[key] = trickyStrings[rng.IntN(len(trickyStrings))]
			case 1:
				v[key] = int64(rng.Uint64())
			case 2:
				v[key] = math.Float64frombits(rng.Uint64() &^ (0x7ff << 52)) // finite
			case 3:
				v[key] = rng.IntN(2) == 0
			case 4:
				b := make([]byte, rng.IntN(9))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				v[key] = b
			default:
				v[key] = JSON(trickyStrings[rng.IntN(len(trickyStrings))])
			}
		}
		cases = append(cases, v)
	}
	for _, v := range cases {
		want, err := referenceEncodeValues(v)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		got, err := AppendValues([]byte("prefix"), v)
		if err != nil || !strings.HasPrefix(string(got), "prefix") || string(got[6:]) != string(want) {
			t.Fatalf("AppendValues(%#v) = %q, %v; want %q", v, got, err, want)
		}
		enc, err := EncodeValues(v)
		if err != nil || string(enc) != string(want) {
			t.Fatalf("EncodeValues(%#v) = %q, %v; want %q", v, enc, err, want)
		}
	}
}

func TestAppendValuesRejectsAndLeavesDst(t *testing.T) {
	for _, bad := range []any{math.NaN(), math.Inf(1), []byte(nil), int(1), float32(1), struct{}{}} {
		got, err := AppendValues([]byte("keep"), Values{"a": "ok", "col": bad})
		if CodeOf(err) != CodeInvalidValue || string(got) != "keep" {
			t.Fatalf("AppendValues with %T: %q, %v; want dst unchanged and %s", bad, got, err, CodeInvalidValue)
		}
		var de *Error
		if e, ok := err.(*Error); ok {
			de = e
		}
		if de == nil || de.Column != "col" || strings.Contains(de.Message, "NaN") {
			t.Fatalf("error %v must name column col and not the value (V-10)", err)
		}
	}
}
