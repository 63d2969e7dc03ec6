package ssp2

import (
	"encoding/binary"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// The primitive encodings of the SPEC's Conventions table: little-endian
// fixed-width integers, i64 within ±(2^53−1), strict bool and opt()
// presence bytes, UTF-8-checked str, canonical maps, validated json.

// MaxSafeInt is 2^53−1: every i64 on the wire lies in [-MaxSafeInt,
// MaxSafeInt] (the JavaScript safe-integer contract).
const MaxSafeInt = 1<<53 - 1

const maxSafeInt = float64(MaxSafeInt)

// Opt is an opt(T) field (SPEC Conventions): Present says whether the
// value is on the wire.
type Opt[T any] struct {
	Value   T
	Present bool
}

// Some returns a present Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{Value: v, Present: true} }

// Ptr returns a pointer to a copy of the value, or nil when absent (for
// sync.PushOp.BaseVersion and the like).
func (o Opt[T]) Ptr() *T {
	if !o.Present {
		return nil
	}
	v := o.Value
	return &v
}

// reader decodes primitives from b with a sticky error: after the first
// failure every read returns a zero value and err keeps the failure.
// base is b's offset in the whole input, for messages.
type reader struct {
	b    []byte
	off  int
	base int
	// what names the structure being read, for messages: a constant, or
	// (when frameAt > 0) the frame of type frame at byte frameAt.
	what    string
	frame   FrameType
	frameAt int
	// col is 1 + the index of the row column being read, 0 outside a row.
	col int
	err *Error
	// in, when set, shares strings that repeat across a message.
	in *interner
}

// interner returns the same string for equal short byte strings seen
// recently, so a message naming one table or scope key many times
// allocates it once. Lookups do not allocate.
type interner struct {
	s    [16]string
	next int
}

func (in *interner) get(b []byte) string {
	if in == nil || len(b) > 64 {
		return string(b)
	}
	for i := range in.s {
		if in.s[i] == string(b) {
			return in.s[i]
		}
	}
	s := string(b)
	in.s[in.next] = s
	in.next = (in.next + 1) % len(in.s)
	return s
}

// name reads a str that may repeat in the message (a table name, a scope
// key or value), interned.
func (r *reader) name(field string) string {
	b := r.strBytes(field)
	if r.err != nil {
		return ""
	}
	return r.in.get(b)
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		e := invalidf(format, args...)
		if r.col > 0 {
			e.Message = "column " + itoa(r.col-1) + ": " + e.Message
		}
		if r.frameAt > 0 {
			e.Message = r.frame.String() + " frame at byte " + itoa(r.frameAt) + ": " + e.Message
		} else {
			e.Message = r.what + ": " + e.Message
		}
		r.err = e
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.remaining() < n {
		r.failf("truncated at byte %d reading %s (%d bytes needed, %d left)", r.base+r.off, field, n, r.remaining())
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) u8(field string) uint8 {
	b := r.take(1, field)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u16(field string) uint16 {
	b := r.take(2, field)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *reader) u32(field string) uint32 {
	b := r.take(4, field)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) i32(field string) int32 { return int32(r.u32(field)) }

func (r *reader) i64(field string) int64 {
	b := r.take(8, field)
	if b == nil {
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(b))
	if v > MaxSafeInt || v < -MaxSafeInt {
		r.failf("%s at byte %d is outside the i64 safe range ±(2^53-1)", field, r.base+r.off-8)
		return 0
	}
	return v
}

func (r *reader) f64(field string) float64 {
	b := r.take(8, field)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

func (r *reader) bool(field string) bool {
	switch r.u8(field) {
	case 0:
		return false
	case 1:
		return true
	}
	r.failf("%s at byte %d is not a bool byte (0x00 or 0x01)", field, r.base+r.off-1)
	return false
}

// present reads an opt() presence byte.
func (r *reader) present(field string) bool {
	switch r.u8(field) {
	case 0:
		return false
	case 1:
		return true
	}
	r.failf("%s at byte %d has an option presence byte other than 0x00 or 0x01", field, r.base+r.off-1)
	return false
}

// bytes reads a bytes value; the result aliases the input.
func (r *reader) bytes(field string) []byte {
	n := r.u32(field)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(r.remaining()) {
		r.failf("truncated at byte %d reading %s (%d bytes needed, %d left)", r.base+r.off, field, n, r.remaining())
		return nil
	}
	return r.take(int(n), field)
}

// strBytes reads a str value as bytes (aliasing the input), checked UTF-8.
func (r *reader) strBytes(field string) []byte {
	b := r.bytes(field)
	if r.err != nil {
		return nil
	}
	if !utf8.Valid(b) {
		r.failf("%s at byte %d is not valid UTF-8", field, r.base+r.off-len(b))
		return nil
	}
	return b
}

func (r *reader) str(field string) string { return string(r.strBytes(field)) }

// json reads a json value: a str holding one JSON document, kept as text.
func (r *reader) json(field string) driver.JSON {
	b := r.strBytes(field)
	if r.err != nil {
		return ""
	}
	if !validJSON(b) {
		r.failf("%s at byte %d is not a JSON document", field, r.base+r.off-len(b))
		return ""
	}
	return driver.JSON(b)
}

// count reads a u32 element count and bounds it by the bytes left, given
// the least bytes one element takes, so a hostile count cannot make the
// decoder allocate more than the input justifies.
func (r *reader) count(field string, minElem int) int {
	n := r.u32(field)
	if r.err != nil {
		return 0
	}
	if uint64(n)*uint64(minElem) > uint64(r.remaining()) {
		r.failf("%s at byte %d announces %d elements, more than the %d bytes left can hold", field, r.base+r.off-4, n, r.remaining())
		return 0
	}
	return int(n)
}

// end fails unless the reader consumed all of b (SPEC §1.2 rule 3).
func (r *reader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.failf("%d trailing bytes at byte %d", len(r.b)-r.off, r.base+r.off)
	}
}

// scopeListMap reads a map of str → list(str), keys strictly ascending by
// UTF-16 code units.
func (r *reader) scopeListMap(field string) map[string][]string {
	n := r.count(field, 8)
	m := make(map[string][]string, n)
	var prev []byte
	for i := 0; i < n && r.err == nil; i++ {
		kb := r.strBytes("scope key")
		if r.err != nil {
			break
		}
		if i > 0 && compareUTF16(prev, kb) >= 0 {
			r.failf("%s keys are duplicated or out of ascending UTF-16 order at byte %d", field, r.base+r.off-len(kb))
			break
		}
		prev = kb
		vn := r.count("scope value list", 4)
		vals := make([]string, 0, vn)
		for j := 0; j < vn && r.err == nil; j++ {
			vals = append(vals, r.name("scope value"))
		}
		m[r.in.get(kb)] = vals
	}
	return m
}

// scopeMap reads a map of str → str, keys strictly ascending by UTF-16
// code units.
func (r *reader) scopeMap(field string) map[string]string {
	n := r.count(field, 8)
	m := make(map[string]string, n)
	var prev []byte
	for i := 0; i < n && r.err == nil; i++ {
		kb := r.strBytes("scope key")
		if r.err != nil {
			break
		}
		if i > 0 && compareUTF16(prev, kb) >= 0 {
			r.failf("%s keys are duplicated or out of ascending UTF-16 order at byte %d", field, r.base+r.off-len(kb))
			break
		}
		prev = kb
		m[r.in.get(kb)] = r.name("scope value")
	}
	return m
}

// compareUTF16 compares two UTF-8 strings by their UTF-16 code units, the
// order JavaScript's string comparison gives (SPEC Conventions, map). It
// differs from byte order only where U+E000…U+FFFF meets a supplementary
// character, which UTF-16 writes with surrogates (0xD800…) below it.
func compareUTF16[S ~string | ~[]byte](a, b S) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	// Back up to the start of the rune holding the first difference.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(string(a[i:min(i+4, len(a))]))
	rb, _ := utf8.DecodeRuneInString(string(b[i:min(i+4, len(b))]))
	wa, wb := utf16Weight(ra), utf16Weight(rb)
	if wa < wb {
		return -1
	}
	return 1 // the runes differ, so do their weights
}

// utf16Weight orders runes as their first UTF-16 code unit does, ties
// broken by code point: supplementary characters (high surrogate
// 0xD800…0xDBFF) sort between U+D7FF and U+E000.
func utf16Weight(r rune) rune {
	switch {
	case r >= 0x10000:
		return 0xD800 + (r - 0x10000)
	case r >= 0xE000:
		return r + 0x100000
	}
	return r
}

func lessUTF16(a, b string) bool { return compareUTF16(a, b) < 0 }

// encoder appends primitives to buf with a sticky error.
type encoder struct {
	buf  []byte
	err  error
	keys []string // scratch for map key sorting
}

func (e *encoder) failf(format string, args ...any) {
	if e.err == nil {
		e.err = encodeErrorf(format, args...)
	}
}

func (e *encoder) u8(v uint8)   { e.buf = append(e.buf, v) }
func (e *encoder) u16(v uint16) { e.buf = binary.LittleEndian.AppendUint16(e.buf, v) }
func (e *encoder) u32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }
func (e *encoder) i32(v int32)  { e.u32(uint32(v)) }

func (e *encoder) i64(v int64, field string) {
	if v > MaxSafeInt || v < -MaxSafeInt {
		e.failf("%s is outside the i64 safe range ±(2^53-1)", field)
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(v))
}

func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

func (e *encoder) length(n int, field string) {
	if uint64(n) > math.MaxUint32 {
		e.failf("%s is longer than 2^32-1", field)
	}
	e.u32(uint32(n))
}

func (e *encoder) str(s, field string) {
	if !utf8.ValidString(s) {
		e.failf("%s is not valid UTF-8", field)
	}
	e.length(len(s), field)
	e.buf = append(e.buf, s...)
}

func (e *encoder) bytes(b []byte, field string) {
	e.length(len(b), field)
	e.buf = append(e.buf, b...)
}

func (e *encoder) json(j driver.JSON, field string) {
	if !validJSON([]byte(j)) {
		e.failf("%s is not a JSON document", field)
	}
	e.str(string(j), field)
}

// optJSON writes an opt(json) whose absence is "" (never a JSON document).
func (e *encoder) optJSON(j driver.JSON, field string) {
	if j == "" {
		e.u8(0)
		return
	}
	e.u8(1)
	e.json(j, field)
}

func (e *encoder) optStr(o Opt[string], field string) {
	if !o.Present {
		e.u8(0)
		return
	}
	e.u8(1)
	e.str(o.Value, field)
}

func (e *encoder) scopeListMap(m map[string][]string, field string) {
	e.length(len(m), field)
	if len(m) == 1 { // the common case: no sort, no second lookup
		for k, vals := range m {
			e.scopeList(k, vals)
		}
		return
	}
	keys := e.keys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sortUTF16(keys)
	for _, k := range keys {
		e.scopeList(k, m[k])
	}
	e.keys = keys[:0]
}

func (e *encoder) scopeList(k string, vals []string) {
	e.str(k, "scope key")
	e.length(len(vals), "scope value list")
	for _, v := range vals {
		e.str(v, "scope value")
	}
}

func (e *encoder) scopeMap(m map[string]string, field string) {
	e.length(len(m), field)
	if len(m) == 1 {
		for k, v := range m {
			e.str(k, "scope key")
			e.str(v, "scope value")
		}
		return
	}
	keys := e.keys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sortUTF16(keys)
	for _, k := range keys {
		e.str(k, "scope key")
		e.str(m[k], "scope value")
	}
	e.keys = keys[:0]
}

// sortUTF16 sorts keys by UTF-16 code units: insertion sort for the few
// keys a scope map has, slices.SortFunc beyond.
func sortUTF16(keys []string) {
	if len(keys) > 12 {
		slices.SortFunc(keys, compareUTF16[string])
		return
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && compareUTF16(keys[j], keys[j-1]) < 0; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}
