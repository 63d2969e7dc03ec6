package storelayout

import (
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// PickKey chooses the filter key that drives a candidate query: the one
// with the fewest values (ties: the smallest key, so the choice is
// deterministic). empty reports that some key has an empty value list, so
// the filter matches nothing (V-6). ok is false for a filter without keys.
func PickKey(f driver.ScopeFilter) (key string, empty, ok bool) {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "", false, false
	}
	sort.Strings(keys)
	key = keys[0]
	for _, k := range keys {
		if len(f[k]) == 0 {
			return k, true, true
		}
		if len(f[k]) < len(f[key]) {
			key = k
		}
	}
	return key, false, true
}

// Matcher checks the filter keys other than the driving one against a
// change's stored scopes (WIN-3): every key present with a listed value;
// extra stored keys are ignored.
type Matcher struct {
	sets map[string]map[string]struct{}
}

// NewMatcher returns a Matcher for every key of f except skip.
func NewMatcher(f driver.ScopeFilter, skip string) Matcher {
	m := Matcher{sets: make(map[string]map[string]struct{}, len(f))}
	for k, vs := range f {
		if k == skip {
			continue
		}
		set := make(map[string]struct{}, len(vs))
		for _, v := range vs {
			set[v] = struct{}{}
		}
		m.sets[k] = set
	}
	return m
}

// Empty reports whether there is nothing left to check.
func (m Matcher) Empty() bool { return len(m.sets) == 0 }

// Match reports whether scopes satisfy every key of m.
func (m Matcher) Match(scopes driver.Scopes) bool {
	for k, set := range m.sets {
		v, ok := scopes[k]
		if !ok {
			return false
		}
		if _, ok := set[v]; !ok {
			return false
		}
	}
	return true
}
