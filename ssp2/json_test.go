package ssp2

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

var jsonSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e-7`, `-12.25E+3`, `"x"`, `""`, `[]`, `{}`, ` [1, {"a": [null]}] `,
	`{"a":1,"a":2}`, `"\u00e9\ud83d\ude00\n\\\"\/"`, `"\ud800"`, `01`, `1.`, `.5`, `-`, `+1`, `1e`, `[1,]`, `{"a"}`,
	`{"a":1,}`, `"\x"`, "\"\t\"", `nul`, `[`, `{"a":1} x`, `"\u12"`, `1 2`, "\u00a0 1",
}

// FuzzJSONValid holds the validator to encoding/json on UTF-8 input, and
// the tree parser to the validator.
func FuzzJSONValid(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		got, want := validJSON(b), json.Valid(b)
		if got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
		if _, ok := parseJSON(b); ok != got {
			t.Fatalf("parseJSON(%q) ok = %v, validJSON = %v", b, ok, got)
		}
	})
}

func TestJSONValidAgreesWithEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	deeper := "[" + deep + "]"
	for _, s := range append(jsonSeeds, deep, deeper) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid = %v", s, got, want)
		}
	}
}

func TestJSNumber(t *testing.T) {
	// What JavaScript's String(x) gives.
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-7, "-7"}, {0.125, "0.125"}, {3.5, "3.5"},
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {123456789012345680000, "123456789012345680000"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {1.5e-7, "1.5e-7"}, {2.5e-300, "2.5e-300"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"}, {9007199254740991, "9007199254740991"}, {0.30000000000000004, "0.30000000000000004"}, {-1.5, "-1.5"},
		{1234.5678, "1234.5678"}, {math.NaN(), "null"}, {math.Inf(-1), "null"},
	} {
		if got := string(appendJSNumber(nil, c.f)); got != c.want {
			t.Errorf("appendJSNumber(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

func TestJSString(t *testing.T) {
	in := "a\"b\\c\n\t\x01\x1f\x7f\u2028é😀</>&"
	if got, want := string(appendJSString(nil, in)), `"a\"b\\c\n\t\u0001\u001f`+"\x7f\u2028é😀</>&\""; got != want {
		t.Errorf("appendJSString = %s, want %s", got, want)
	}
	var back string
	if err := json.Unmarshal(appendJSString(nil, in), &back); err != nil || back != in {
		t.Errorf("round trip: %q, %v", back, err)
	}
}

func TestJSPropertyOrder(t *testing.T) {
	v, _ := parseJSON([]byte(`{"b":1,"10":2,"a":3,"2":4,"b":5,"01":6,"4294967295":7,"0":8}`))
	if got, want := string(appendJSValue(nil, &v)), `{"0":8,"2":4,"10":2,"b":5,"a":3,"01":6,"4294967295":7}`; got != want {
		t.Errorf("JS order: %s, want %s", got, want)
	}
	got, err := CanonicalJSON([]byte(` {"b":[2,1],"10":1e3,"9":0.5,"a":{"z":true,"y":null},"b":[3]} `))
	if err != nil || string(got) != `{"10":1000,"9":0.5,"a":{"y":null,"z":true},"b":[3]}` {
		t.Errorf("CanonicalJSON = %s, %v", got, err)
	}
}

// utf16Less is JavaScript's comparison, by encoding to UTF-16.
func utf16Less(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func TestCompareUTF16(t *testing.T) {
	runes := []rune{'a', 'b', 0x7F, 0xE9, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xF8FF, 0xFFFD, 0xFFFF, 0x10000, 0x1F4DD, 0x10FFFF}
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	for range 20000 {
		a, b := gen(), gen()
		sign := func(n int) int { return min(max(n, -1), 1) }
		if got, want := sign(compareUTF16(a, b)), utf16Less(a, b); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	// The case the SPEC calls out: U+FFFD sorts after U+1F4DD in UTF-16.
	if !lessUTF16("\U0001F4DD", "\uFFFD") || lessUTF16("\uFFFD", "\U0001F4DD") {
		t.Error("supplementary characters must sort before U+E000…U+FFFF")
	}
}

func TestScopeDigest(t *testing.T) {
	// The digest of the golden vectors' effective scopes {project: [p1]}.
	if got := ScopeDigest(map[string][]string{"project": {"p1"}}); got != "5a993aa4d503af6f5dc77acc12ad399ff2e9d933c393f4de6af5f6aef4fa2977" {
		t.Errorf("ScopeDigest = %s", got)
	}
	got := string(AppendCanonicalScopes(nil, map[string][]string{"team": {"t2", "t1", "t2"}, "a\"b": {}, "\uFFFD": {"\U0001F4DD", "\uFFFD"}, "\U0001F4DD": nil}))
	if want := `{"a\"b":[],"team":["t1","t2"],"` + "\U0001F4DD" + `":[],"` + "\uFFFD" + `":["` + "\U0001F4DD" + `","` + "\uFFFD" + `"]}`; got != want {
		t.Errorf("canonical scopes = %s, want %s", got, want)
	}
}

func TestRejectionDetails(t *testing.T) {
	long := strings.Repeat("a", 97)
	for _, ok := range []string{
		`{"reason":"outside_allowed_range"}`,
		`{"fieldPaths":["duration_minutes","a.b_c"],"reason":"x","requiredAction":"edit_fields","references":{"surgery_id":"surgery-1"}}`,
		` {"references":{"b":"2","a":"1 x"}} `,
	} {
		if err := checkRejectionDetails([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		`[]`, `{}`, `null`, `{"reason":"Show this arbitrary sentence"}`, `{"reason":"` + long + `"}`, `{"reason":"a__b"}`, `{"reason":"a-"}`,
		`{"reason":"x","extra":1}`, `{"reason":"x","reason":"y"}`, `{"fieldPaths":[]}`, `{"fieldPaths":["a","a"]}`, `{"fieldPaths":["1a"]}`,
		`{"fieldPaths":["a."]}`, `{"fieldPaths":[1]}`, `{"fieldPaths":null}`, `{"references":{}}`, `{"references":{"A":"x"}}`,
		`{"references":{"a":""}}`, `{"references":{"a":" x"}}`, `{"references":{"a":"x\u0085"}}`, `{"references":{"a":"x\u3000"}}`,
		`{"references":{"a":1}}`, `{"references":{"a":"x","a":"y"}}`,
		`{"references":{"a":"` + strings.Repeat("é", 129) + `"}}`,
	} {
		if err := checkRejectionDetails([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// The 4,096-byte bound applies to the normalized encoding.
	var refs []string
	for i := range 16 {
		refs = append(refs, `"k`+string(rune('a'+i))+`":"`+strings.Repeat("v", 250)+`"`)
	}
	paths := make([]string, 32)
	for i := range paths {
		paths[i] = `"p` + strings.Repeat("x", 150) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"`
	}
	big := `{"fieldPaths":[` + strings.Join(paths, ",") + `],"references":{` + strings.Join(refs, ",") + `}}`
	if err := checkRejectionDetails([]byte(big)); err == nil || !strings.Contains(err.Message, "4096") {
		t.Errorf("over 4096 bytes: %v", err)
	}
}
