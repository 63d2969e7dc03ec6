package storelayout

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestPickKeyAndMatcher(t *testing.T) {
	key, empty, ok := PickKey(driver.ScopeFilter{"b": {"1", "2"}, "a": {"1", "2"}, "c": {"9", "8", "7"}})
	if key != "a" || empty || !ok {
		t.Errorf("PickKey tie = %q %v %v, want a", key, empty, ok)
	}
	key, _, _ = PickKey(driver.ScopeFilter{"b": {"1"}, "a": {"1", "2"}})
	if key != "b" {
		t.Errorf("PickKey = %q, want the key with fewest values", key)
	}
	if _, empty, _ := PickKey(driver.ScopeFilter{"b": {"1"}, "a": {}}); !empty {
		t.Errorf("PickKey misses an empty list")
	}
	if _, _, ok := PickKey(driver.ScopeFilter{}); ok {
		t.Errorf("PickKey ok on an empty filter")
	}
	m := NewMatcher(driver.ScopeFilter{"a": {"1"}, "b": {"x", "y"}}, "a")
	for scopes, want := range map[string]bool{"y": true, "z": false, "": false} {
		s := driver.Scopes{"a": "other", "extra": "e"}
		if scopes != "" {
			s["b"] = scopes
		}
		if got := m.Match(s); got != want {
			t.Errorf("Match(b=%q) = %v, want %v", scopes, got, want)
		}
	}
}
