package ssp2

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the package's JSON: a strict RFC 8259 validator (the
// `json` primitive, row-codec json and blob_ref values), a small tree
// parser for the few places that look inside a document (BlobRef shape,
// PUSH_RESULT_DETAILS, realtime control messages, the §11 rendering),
// and writers that produce what JavaScript's JSON.stringify produces
// (the §11 rendering and realtime events are compared with, and read by,
// JavaScript). The validator agrees with encoding/json.Valid on every
// UTF-8 input (FuzzJSONValid checks it); it exists because it allocates
// nothing and the tree parser shares its grammar.

// maxJSONDepth bounds nesting, as encoding/json does (a deeper document
// is invalid).
const maxJSONDepth = 10000

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is a parsed document. Object members keep their text order
// and duplicates; numbers keep their text.
type jsonValue struct {
	kind    jsonKind
	b       bool
	s       string // string value, or number text
	elems   []jsonValue
	members []jsonMember
}

type jsonMember struct {
	key string
	val jsonValue
}

// member returns the last member named key (JSON.parse keeps the last).
func (v *jsonValue) member(key string) (*jsonValue, bool) {
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return &v.members[i].val, true
		}
	}
	return nil, false
}

// float returns a number's value as JSON.parse gives it (nearest double;
// out-of-range magnitudes become ±Inf).
func (v *jsonValue) float() float64 {
	// The text was checked by the parser, so the only error is ErrRange,
	// where f is ±Inf or ±0 — what JavaScript gives too.
	f, _ := strconv.ParseFloat(v.s, 64)
	return f
}

// safeInt returns a number's value when it is an integer within
// ±(2^53−1) as JavaScript's Number.isSafeInteger sees it (1.0 and 1e3
// qualify, 0.5 does not).
func (v *jsonValue) safeInt() (int64, bool) {
	if v.kind != jsonNumber {
		return 0, false
	}
	f := v.float()
	if math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > maxSafeInt {
		return 0, false
	}
	return int64(f), true
}

type jsonParser struct {
	s     []byte
	i     int
	depth int
	tree  bool // build values (else validate only)
	bad   bool
}

// validJSON reports whether s is exactly one JSON document, surrounding
// whitespace allowed.
func validJSON(s []byte) bool {
	p := jsonParser{s: s}
	p.ws()
	p.value()
	p.ws()
	return !p.bad && p.i == len(s)
}

// parseJSON parses s as one JSON document.
func parseJSON(s []byte) (jsonValue, bool) {
	p := jsonParser{s: s, tree: true}
	p.ws()
	v := p.value()
	p.ws()
	if p.bad || p.i != len(s) {
		return jsonValue{}, false
	}
	return v, true
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) fail() jsonValue {
	p.bad = true
	return jsonValue{}
}

func (p *jsonParser) lit(word string) bool {
	if len(p.s)-p.i < len(word) || string(p.s[p.i:p.i+len(word)]) != word {
		p.bad = true
		return false
	}
	p.i += len(word)
	return true
}

func (p *jsonParser) value() jsonValue {
	if p.bad || p.i >= len(p.s) {
		return p.fail()
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, ok := p.str()
		if !ok {
			return p.fail()
		}
		return jsonValue{kind: jsonString, s: s}
	case c == 't':
		p.lit("true")
		return jsonValue{kind: jsonBool, b: true}
	case c == 'f':
		p.lit("false")
		return jsonValue{kind: jsonBool}
	case c == 'n':
		p.lit("null")
		return jsonValue{}
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.fail()
}

func (p *jsonParser) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

func (p *jsonParser) number() jsonValue {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return p.fail()
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return p.fail()
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return p.fail()
		}
	}
	if !p.tree {
		return jsonValue{}
	}
	return jsonValue{kind: jsonNumber, s: string(p.s[start:p.i])}
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

func (p *jsonParser) hex4() rune {
	if len(p.s)-p.i < 4 {
		return -1
	}
	var r rune
	for k := 0; k < 4; k++ {
		h := hexVal(p.s[p.i+k])
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	p.i += 4
	return r
}

// str reads a string at p.i (the opening quote). In tree mode it returns
// the unescaped value; a lone surrogate escape becomes U+FFFD, as
// encoding/json does.
func (p *jsonParser) str() (string, bool) {
	p.i++ // opening quote
	start := p.i
	plain := true
	for {
		if p.i >= len(p.s) {
			return "", false
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			if !p.tree {
				p.i++
				return "", true
			}
			raw := p.s[start:p.i]
			p.i++
			if plain {
				return string(raw), true
			}
			return unescapeJSON(raw), true
		case c == '\\':
			plain = false
			p.i++
			if p.i >= len(p.s) {
				return "", false
			}
			switch p.s[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				if p.hex4() < 0 {
					return "", false
				}
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
}

// unescapeJSON decodes the body of a string already checked by str.
func unescapeJSON(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4At(raw[i+1:])
			i += 4 // i is at the last hex digit
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is a pair
				// (the string was validated: "\u" is followed by 4 hex digits).
				if r < 0xDC00 && i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2 := hex4At(raw[i+3:]); r2 >= 0xDC00 && r2 <= 0xDFFF {
						r = utf16.DecodeRune(r, r2)
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
		i++
	}
	return string(out)
}

func hex4At(b []byte) rune {
	var r rune
	for k := 0; k < 4; k++ {
		r = r<<4 | hexVal(b[k])
	}
	return r
}

func (p *jsonParser) array() jsonValue {
	p.i++
	if p.depth++; p.depth > maxJSONDepth {
		return p.fail()
	}
	v := jsonValue{kind: jsonArray}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return v
	}
	for {
		p.ws()
		e := p.value()
		if p.bad {
			return v
		}
		if p.tree {
			v.elems = append(v.elems, e)
		}
		p.ws()
		if p.i >= len(p.s) {
			return p.fail()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return v
		default:
			return p.fail()
		}
	}
}

func (p *jsonParser) object() jsonValue {
	p.i++
	if p.depth++; p.depth > maxJSONDepth {
		return p.fail()
	}
	v := jsonValue{kind: jsonObject}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return v
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return p.fail()
		}
		k, ok := p.str()
		if !ok {
			return p.fail()
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return p.fail()
		}
		p.i++
		p.ws()
		e := p.value()
		if p.bad {
			return v
		}
		if p.tree {
			v.members = append(v.members, jsonMember{key: k, val: e})
		}
		p.ws()
		if p.i >= len(p.s) {
			return p.fail()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return v
		default:
			return p.fail()
		}
	}
}

// appendJSString appends s quoted as JavaScript's JSON.stringify quotes a
// string: '"' and '\\' escaped, \b \f \n \r \t, other controls as \u00xx,
// everything else (U+2028, DEL, non-ASCII) literal. s is valid UTF-8.
func appendJSString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSNumber appends f as JavaScript's Number#toString (and so
// JSON.stringify) writes it; NaN and ±Infinity are written null (§11.1
// rule 10) and -0 as 0.
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits d1…dk and exponent: f = 0.d1…dk × 10^n.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mant, exp := e, 0
	for j := 0; j < len(e); j++ {
		if e[j] == 'e' {
			mant = e[:j]
			x, _ := strconv.Atoi(string(e[j+1:]))
			exp = x
			break
		}
	}
	var digits [24]byte
	k := 0
	for _, c := range mant {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := 0; j < n-k; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// appendJSValue appends v as JSON.stringify(JSON.parse(text of v)) writes
// it: numbers in JavaScript form, strings re-quoted, and object members
// in JavaScript's property order — array-index keys ("0"…"4294967294")
// first in ascending numeric order, then the others in first-appearance
// order, a duplicated key keeping its first position and last value.
func appendJSValue(dst []byte, v *jsonValue) []byte { return appendJSONValue(dst, v, true) }

// appendJSONValue is appendJSValue; with jsOrder false object members are
// written in their slice order.
func appendJSONValue(dst []byte, v *jsonValue, jsOrder bool) []byte {
	switch v.kind {
	case jsonNull:
		return append(dst, "null"...)
	case jsonBool:
		return appendBool(dst, v.b)
	case jsonNumber:
		return appendJSNumber(dst, v.float())
	case jsonString:
		return appendJSString(dst, v.s)
	case jsonArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, &v.elems[i], jsOrder)
		}
		return append(dst, ']')
	}
	members := v.members
	if jsOrder {
		members = jsPropertyOrder(members)
	}
	dst = append(dst, '{')
	for i := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSString(dst, members[i].key)
		dst = append(dst, ':')
		dst = appendJSONValue(dst, &members[i].val, jsOrder)
	}
	return append(dst, '}')
}

// jsPropertyOrder returns members as a JavaScript object built from them
// enumerates its properties (see appendJSValue).
func jsPropertyOrder(members []jsonMember) []jsonMember {
	out := make([]jsonMember, 0, len(members))
	pos := make(map[string]int, len(members))
	for _, m := range members {
		if j, ok := pos[m.key]; ok {
			out[j].val = m.val
			continue
		}
		pos[m.key] = len(out)
		out = append(out, m)
	}
	var idx, rest []jsonMember
	for _, m := range out {
		if _, ok := arrayIndex(m.key); ok {
			idx = append(idx, m)
		} else {
			rest = append(rest, m)
		}
	}
	if len(idx) == 0 {
		return out
	}
	for i := 1; i < len(idx); i++ { // insertion sort: few keys
		for j := i; j > 0; j-- {
			a, _ := arrayIndex(idx[j-1].key)
			b, _ := arrayIndex(idx[j].key)
			if a <= b {
				break
			}
			idx[j-1], idx[j] = idx[j], idx[j-1]
		}
	}
	return append(idx, rest...)
}

// arrayIndex reports whether key is a canonical array index
// ("0"…"4294967294").
func arrayIndex(key string) (uint64, bool) {
	if key == "" || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(key, 10, 64)
	if err != nil || n > 4294967294 {
		return 0, false
	}
	return n, true
}
