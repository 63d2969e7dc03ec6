package ssp2

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// §11.2 canonical JSON (contractual where the SPEC hashes JSON) and the
// §3.5 scope digest.

// AppendCanonicalScopes appends the canonical JSON of a scope map (§11.2):
// keys sorted by UTF-16 code units, each value list sorted the same way
// and deduplicated, no whitespace, strings quoted as JSON.stringify does.
// This is the X-Syncular-Scopes header value (§5.5) and the scope
// digest's input. Keys and values must be valid UTF-8.
func AppendCanonicalScopes(dst []byte, scopes map[string][]string) []byte {
	dst = append(dst, '{')
	var vals []string
	for i, k := range sortedKeysUTF16(scopes) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSString(dst, k)
		dst = append(dst, ':', '[')
		vals = append(vals[:0], scopes[k]...)
		slices.SortFunc(vals, compareUTF16[string])
		vals = slices.Compact(vals)
		for j, v := range vals {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSString(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// ScopeDigest returns the scope digest of effective scopes (§3.5): the
// lowercase hex SHA-256 of their canonical JSON (AppendCanonicalScopes).
func ScopeDigest(scopes map[string][]string) string {
	sum := sha256.Sum256(AppendCanonicalScopes(make([]byte, 0, 64), scopes))
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON returns doc in §11.2 canonical form: no insignificant
// whitespace, object keys sorted by UTF-16 code units (a repeated key
// keeps its last value, as JSON.parse does), numbers in JavaScript's
// shortest round-trip form, strings quoted as JSON.stringify does. Array
// order is kept (scope value lists are sorted by AppendCanonicalScopes,
// which knows they are sets). A doc that is not JSON is an *Error with
// CodeInvalidRequest.
func CanonicalJSON(doc []byte) ([]byte, error) {
	v, ok := parseJSON(doc)
	if !ok {
		return nil, invalidf("not a JSON document")
	}
	canonicalize(&v)
	return appendJSONValue(nil, &v, false), nil
}

func canonicalize(v *jsonValue) {
	for i := range v.elems {
		canonicalize(&v.elems[i])
	}
	if v.kind != jsonObject {
		return
	}
	// Collapse duplicates (last value wins), then sort by key.
	var out []jsonMember
	for i := range v.members {
		m := v.members[i]
		canonicalize(&m.val)
		if j := slices.IndexFunc(out, func(o jsonMember) bool { return o.key == m.key }); j >= 0 {
			out[j].val = m.val
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b jsonMember) int { return compareUTF16(a.key, b.key) })
	v.members = out
}

// sortedKeysUTF16 returns m's keys sorted by UTF-16 code units.
func sortedKeysUTF16[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16[string])
	return keys
}
