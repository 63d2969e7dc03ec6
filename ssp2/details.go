package ssp2

import (
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Bounds of a PUSH_RESULT_DETAILS detailsJson object (§6.3.1).
const (
	MaxDetailsBytes        = 4096 // the normalized object, JSON-encoded
	MaxDetailsFieldPaths   = 32
	MaxDetailsFieldPathLen = 160
	MaxDetailsTokenLen     = 96
	MaxDetailsReferences   = 16
	MaxDetailsRefKeyLen    = 64
	MaxDetailsRefValueLen  = 256 // UTF-8 bytes
)

// CheckRejectionDetails checks a detailsJson document against the bounded
// shape of §6.3.1: a JSON object with at least one of fieldPaths (1–32
// unique paths identifier(.identifier)*, each ≤ 160 characters), reason
// and requiredAction (tokens [a-z][a-z0-9]*([._-][a-z0-9]+)*, ≤ 96),
// references (1–16 entries, token keys ≤ 64, values non-empty, trimmed,
// without control characters, ≤ 256 UTF-8 bytes), and nothing else; no
// member twice; at most 4,096 bytes once normalized. A violation is an
// *Error with CodeInvalidRequest (a decode error of the frame).
func CheckRejectionDetails(details driver.JSON) error {
	if !utf8.ValidString(string(details)) {
		return invalidf("details are not valid UTF-8")
	}
	if err := checkRejectionDetails([]byte(details)); err != nil {
		return err
	}
	return nil
}

func checkRejectionDetails(b []byte) *Error {
	v, ok := parseJSON(b)
	if !ok {
		return invalidf("details are not a JSON document")
	}
	if v.kind != jsonObject {
		return invalidf("details are not a JSON object")
	}
	if hasDuplicateKeys(v.members) {
		return invalidf("details repeat a member")
	}
	// The normalized form (fieldPaths, reason, requiredAction, references
	// with sorted keys), encoded as JSON.stringify would, for the size bound.
	var norm []byte
	add := func(key string) {
		if len(norm) == 0 {
			norm = append(norm, '{')
		} else {
			norm = append(norm, ',')
		}
		norm = appendJSString(norm, key)
		norm = append(norm, ':')
	}
	if m, ok := v.member("fieldPaths"); ok {
		if m.kind != jsonArray || len(m.elems) == 0 || len(m.elems) > MaxDetailsFieldPaths {
			return invalidf("fieldPaths is not a list of 1-%d paths", MaxDetailsFieldPaths)
		}
		add("fieldPaths")
		norm = append(norm, '[')
		for i, p := range m.elems {
			if p.kind != jsonString || len(p.s) > MaxDetailsFieldPathLen || !isFieldPath(p.s) {
				return invalidf("fieldPaths entry %d is not a schema path of at most %d characters", i, MaxDetailsFieldPathLen)
			}
			for _, q := range m.elems[:i] {
				if q.s == p.s {
					return invalidf("fieldPaths entry %d repeats a path", i)
				}
			}
			if i > 0 {
				norm = append(norm, ',')
			}
			norm = appendJSString(norm, p.s)
		}
		norm = append(norm, ']')
	}
	for _, name := range [...]string{"reason", "requiredAction"} {
		if m, ok := v.member(name); ok {
			if m.kind != jsonString || len(m.s) > MaxDetailsTokenLen || !isToken(m.s) {
				return invalidf("%s is not a lowercase stable token of at most %d characters", name, MaxDetailsTokenLen)
			}
			add(name)
			norm = appendJSString(norm, m.s)
		}
	}
	if m, ok := v.member("references"); ok {
		if m.kind != jsonObject || len(m.members) == 0 || len(m.members) > MaxDetailsReferences {
			return invalidf("references is not an object of 1-%d entries", MaxDetailsReferences)
		}
		if hasDuplicateKeys(m.members) {
			return invalidf("references repeat a key")
		}
		refs := jsPropertyOrder(m.members)
		sortMembersUTF16(refs)
		add("references")
		norm = append(norm, '{')
		for i, ref := range refs {
			if len(ref.key) > MaxDetailsRefKeyLen || !isToken(ref.key) {
				return invalidf("a references key is not a lowercase stable token of at most %d characters", MaxDetailsRefKeyLen)
			}
			if ref.val.kind != jsonString || !isSafeReference(ref.val.s) {
				return invalidf("a references value is not a non-empty trimmed string without control characters of at most %d bytes", MaxDetailsRefValueLen)
			}
			if i > 0 {
				norm = append(norm, ',')
			}
			norm = appendJSString(norm, ref.key)
			norm = append(norm, ':')
			norm = appendJSString(norm, ref.val.s)
		}
		norm = append(norm, '}')
	}
	for _, m := range v.members {
		switch m.key {
		case "fieldPaths", "reason", "requiredAction", "references":
		default:
			return invalidf("details have a member outside fieldPaths, reason, requiredAction and references")
		}
	}
	if len(norm) == 0 {
		return invalidf("details have none of fieldPaths, reason, requiredAction and references")
	}
	if len(norm)+1 > MaxDetailsBytes {
		return invalidf("details exceed %d bytes", MaxDetailsBytes)
	}
	return nil
}

func hasDuplicateKeys(ms []jsonMember) bool {
	for i := range ms {
		for j := range i {
			if ms[i].key == ms[j].key {
				return true
			}
		}
	}
	return false
}

func sortMembersUTF16(ms []jsonMember) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && lessUTF16(ms[j].key, ms[j-1].key); j-- {
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

// isFieldPath matches [A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*.
func isFieldPath(s string) bool {
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case start:
			if !isIdentStart(c) {
				return false
			}
			start = false
		case c == '.':
			start = true
		case !isIdentPart(c):
			return false
		}
	}
	return len(s) > 0 && !start
}

// isToken matches [a-z][a-z0-9]*([._-][a-z0-9]+)*.
func isToken(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	sep := false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			sep = false
		case c == '.' || c == '_' || c == '-':
			if sep {
				return false
			}
			sep = true
		default:
			return false
		}
	}
	return !sep
}

// isSafeReference: non-empty, ≤ MaxDetailsRefValueLen bytes, equal to its
// JavaScript trim(), no C0/DEL/C1 control character.
func isSafeReference(s string) bool {
	if s == "" || len(s) > MaxDetailsRefValueLen {
		return false
	}
	for _, r := range s {
		if r <= 0x1f || r >= 0x7f && r <= 0x9f {
			return false
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return !isJSTrimSpace(first) && !isJSTrimSpace(last)
}

// isJSTrimSpace reports whether String.prototype.trim removes r
// (WhiteSpace and LineTerminator of ECMA-262).
func isJSTrimSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
