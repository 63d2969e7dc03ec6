package sync

import (
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// FuzzPullToken feeds arbitrary text to the bootstrap-token decoder: it
// never panics, and a token it accepts is exactly the one encoding of
// what it decoded (no second spelling of a token passes the check) and
// bound to the subscription it was decoded for (PULL-4).
func FuzzPullToken(f *testing.F) {
	binding := pullBinding("p", "notes", driver.ScopeFilter{"project": {"p7"}})
	f.Add(encodePullToken(binding, pullToken{asOf: 42, lastRowID: "n1"}))
	f.Add(encodePullToken(binding, pullToken{asOf: 1<<63 - 1, lastRowID: "é😀"}))
	f.Add(encodePullToken(pullBinding("q", "notes", driver.ScopeFilter{"project": {"p7"}}), pullToken{asOf: 1, lastRowID: "x"}))
	f.Add("")
	f.Add("AQ")
	// base64's decoder skips line breaks: this was accepted once.
	f.Add("ASr\nJWLYi_IJ0MAJuMU74Uuhf0u9N")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := decodePullToken("Pull", s, binding)
		if err != nil {
			if driver.CodeOf(err) != driver.CodeInvalidArgument {
				t.Fatalf("code %q: %v", driver.CodeOf(err), err)
			}
			return
		}
		if again := encodePullToken(binding, tok); again != s {
			t.Fatalf("accepted %q, which re-encodes as %q", s, again)
		}
		if tok.asOf < 0 || tok.lastRowID == "" {
			t.Fatalf("accepted %q as %+v", s, tok)
		}
	})
}

// TestPullBindingIsTheFilterAsASet pins the canonical filter: value order
// and repeats do not change the binding; keys, values, table and
// partition do, and a string boundary cannot be moved between fields.
func TestPullBindingIsTheFilterAsASet(t *testing.T) {
	b := func(p, table string, f driver.ScopeFilter) string { return string(pullBinding(p, table, f)) }
	base := b("p", "t", driver.ScopeFilter{"a": {"x", "y"}, "b": {"z"}})
	if got := b("p", "t", driver.ScopeFilter{"b": {"z", "z"}, "a": {"y", "x", "y"}}); got != base {
		t.Error("reordered or repeated values changed the binding")
	}
	for name, other := range map[string]string{
		"partition":    b("q", "t", driver.ScopeFilter{"a": {"x", "y"}, "b": {"z"}}),
		"table":        b("p", "u", driver.ScopeFilter{"a": {"x", "y"}, "b": {"z"}}),
		"value":        b("p", "t", driver.ScopeFilter{"a": {"x"}, "b": {"z"}}),
		"key":          b("p", "t", driver.ScopeFilter{"a": {"x", "y"}}),
		"empty list":   b("p", "t", driver.ScopeFilter{"a": {"x", "y"}, "b": {}}),
		"boundary":     b("p", "t", driver.ScopeFilter{"a": {"xy"}, "b": {"z"}}),
		"field moved":  b("pt", "", driver.ScopeFilter{"a": {"x", "y"}, "b": {"z"}}),
		"value to key": b("p", "t", driver.ScopeFilter{"a": {"x", "y"}, "bz": {}}),
	} {
		if other == base {
			t.Errorf("another %s, same binding", name)
		}
	}
}

// TestPullTokenLastCharacterStrict alters the last character of tokens of
// every length modulo 3: where it carries unused bits, only a strict
// decoding refuses a token spelled differently (PULL-4).
func TestPullTokenLastCharacterStrict(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	binding := pullBinding("p", "notes", driver.ScopeFilter{"project": {"p7"}})
	for _, id := range []string{"a", "ab", "abc"} {
		tok := encodePullToken(binding, pullToken{asOf: 9, lastRowID: id})
		last := tok[len(tok)-1]
		for d := 1; d < 4; d++ {
			altered := tok[:len(tok)-1] + string(alphabet[(strings.IndexByte(alphabet, last)+d)%64])
			if _, err := decodePullToken("Pull", altered, binding); driver.CodeOf(err) != driver.CodeInvalidArgument {
				t.Errorf("row id %q: last character +%d accepted (err %v)", id, d, err)
			}
		}
	}
}

// TestPullTokenLongest checks the documented bound: a token for the
// longest row id (255 bytes) and the largest seq fits in 512 bytes and
// decodes.
func TestPullTokenLongest(t *testing.T) {
	binding := pullBinding("p", "notes", driver.ScopeFilter{"project": {"p7"}})
	want := pullToken{asOf: 1<<63 - 1, lastRowID: strings.Repeat("é", 127) + "x"}
	tok := encodePullToken(binding, want)
	if len(tok) > maxPullTokenBytes {
		t.Fatalf("token of %d bytes, over %d", len(tok), maxPullTokenBytes)
	}
	got, err := decodePullToken("Pull", tok, binding)
	if err != nil || got != want {
		t.Fatalf("decode = %+v, %v", got, err)
	}
}
