package yjs

import (
	"encoding/json"
	"unicode/utf8"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER (2^53 − 1): lib0
// refuses a var-uint above it, and every client id, clock and length of
// an update is one.
const maxSafeInteger = 1<<53 - 1

// reader decodes lib0's binary encoding (lib0/decoding.js) from an
// in-memory buffer. Every read checks the bounds; the first failure is
// sticky and reported with the offset it happened at.
type reader struct {
	buf []byte
	pos int
}

func (r *reader) fail(msg string) error { return malformed(r.pos, msg) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, r.fail("unexpected end of update")
	}
	b := r.buf[r.pos]
	r.pos++
	return b, nil
}

// uint reads lib0's var-uint: 7 bits a byte, least significant first,
// the high bit set on every byte but the last; at most 2^53 − 1.
func (r *reader) uint() (uint64, error) {
	var n uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		if !fits53(uint64(b&0x7f), shift) {
			return 0, r.fail("var-uint above 2^53-1")
		}
		n |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return n, nil
		}
	}
	return 0, r.fail("var-uint too long")
}

// fits53 reports whether v << shift stays below 2^53.
func fits53(v uint64, shift uint) bool {
	if shift >= 53 {
		return v == 0
	}
	return v>>(53-shift) == 0
}

// int skips lib0's var-int: the first byte holds the continuation bit,
// the sign bit and 6 bits, each next byte 7; at most 2^53 − 1 in
// magnitude.
func (r *reader) int() error {
	b, err := r.byte()
	if err != nil {
		return err
	}
	if b&0x80 == 0 {
		return nil
	}
	for shift := uint(6); shift < 64; shift += 7 {
		b, err := r.byte()
		if err != nil {
			return err
		}
		if !fits53(uint64(b&0x7f), shift) {
			return r.fail("var-int above 2^53-1")
		}
		if b < 0x80 {
			return nil
		}
	}
	return r.fail("var-int too long")
}

// bytes reads lib0's var-uint8-array: a var-uint length, then the bytes
// (a sub-slice of the input, not a copy).
func (r *reader) bytes() ([]byte, error) {
	n, err := r.uint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.buf)-r.pos) {
		return nil, r.fail("length beyond the end of the update")
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// string reads lib0's var-string: var-uint8-array of UTF-8. Text that is
// not valid UTF-8 is refused: lib0's encoder (TextEncoder) never writes
// it.
func (r *reader) string() (string, error) {
	at := r.pos
	b, err := r.bytes()
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", malformed(at, "string is not valid UTF-8")
	}
	return string(b), nil
}

// jsonString reads a var-string that must hold one JSON text (Yjs's
// ContentJSON, ContentEmbed, ContentFormat values: JSON.parse on apply).
func (r *reader) jsonString() (string, error) {
	at := r.pos
	s, err := r.string()
	if err != nil {
		return "", err
	}
	if !json.Valid([]byte(s)) {
		return "", malformed(at, "value is not JSON")
	}
	return s, nil
}

func (r *reader) skip(n int) error {
	if n > len(r.buf)-r.pos {
		return r.fail("unexpected end of update")
	}
	r.pos += n
	return nil
}

// maxAnyDepth bounds the nesting of lib0 "any" values (objects and arrays
// inside each other) this package reads.
const maxAnyDepth = 64

// any skips one lib0 "any" value (lib0/decoding.js readAny), checking it
// is well formed: a tag byte 116…127, then the tag's payload.
func (r *reader) any(depth int) error {
	if depth > maxAnyDepth {
		return r.fail("any value nested too deep")
	}
	at := r.pos
	tag, err := r.byte()
	if err != nil {
		return err
	}
	switch tag {
	case 127, 126, 121, 120: // undefined, null, false, true
		return nil
	case 125: // integer
		return r.int()
	case 124: // float32, big-endian
		return r.skip(4)
	case 123, 122: // float64, bigint64
		return r.skip(8)
	case 119: // string
		_, err := r.string()
		return err
	case 118: // object: count, then key string and value
		n, err := r.uint()
		if err != nil {
			return err
		}
		for i := uint64(0); i < n; i++ {
			if _, err := r.string(); err != nil {
				return err
			}
			if err := r.any(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case 117: // array
		n, err := r.uint()
		if err != nil {
			return err
		}
		for i := uint64(0); i < n; i++ {
			if err := r.any(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case 116: // Uint8Array
		_, err := r.bytes()
		return err
	}
	return malformed(at, "unknown any-value tag")
}

// writer is lib0's encoder (lib0/encoding.js), writing canonical forms.
type writer struct{ buf []byte }

func (w *writer) byte(b byte) { w.buf = append(w.buf, b) }

func (w *writer) uint(n uint64) {
	for n >= 0x80 {
		w.buf = append(w.buf, byte(n)|0x80)
		n >>= 7
	}
	w.buf = append(w.buf, byte(n))
}

func (w *writer) string(s string) {
	w.uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) raw(b []byte) { w.buf = append(w.buf, b...) }
