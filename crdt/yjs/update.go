package yjs

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Bounds of what Decode and Merge take. Each input over one, and a merge
// whose result would be, fails with CodeTooLarge.
const (
	// MaxUpdateBytes bounds one update's size (and the merged update's):
	// the 4 MiB a push's values may weigh (sync.MaxPushBytes).
	MaxUpdateBytes = 4 << 20
	// MaxStructs bounds the structs (items, GC and skip ranges) of one
	// update: of each input, and of the merged update (so a merged value
	// stays mergeable). A merge of two inputs at this bound allocates
	// about 62 MiB in all (measured; BenchmarkMerge).
	MaxStructs = 100_000
	// MaxDeleteRanges bounds the delete-set ranges of one update: of each
	// input and of the merged update.
	MaxDeleteRanges = 100_000
)

// Struct kinds: the low 5 bits of a struct's info byte (Yjs's
// contentRefs; 0 is a GC range, 10 a Skip range).
const (
	refGC      = 0
	refDeleted = 1
	refJSON    = 2
	refBinary  = 3
	refString  = 4
	refEmbed   = 5
	refFormat  = 6
	refType    = 7
	refAny     = 8
	refDoc     = 9
	refSkip    = 10
)

// Info-byte flags of an item.
const (
	flagOrigin      = 0x80
	flagRightOrigin = 0x40
	flagParentSub   = 0x20
)

// Yjs type refs of ContentType (ContentType.js): an XmlElement and an
// XmlHook carry a name.
const (
	typeXMLElement = 3
	typeXMLHook    = 5
	typeMaxRef     = 6
)

type id struct{ client, clock uint64 }

// block is one struct of an update: a GC range, or an item with its
// content. (Skip ranges are not kept: they are gaps.)
type block struct {
	ref    byte // refGC or the item's content ref
	clock  uint64
	length uint64

	origin, rightOrigin       id
	hasOrigin, hasRightOrigin bool
	// The parent, written only when neither origin is: a root type's
	// name (parentIsKey) or a nested type's item id.
	parentKey   string
	parentID    id
	parentIsKey bool
	parentSub   string
	hasSub      bool

	// Content. str: ContentString (UTF-8; length counted in UTF-16
	// units). raw: ContentJSON's and ContentAny's encoded values (length
	// of them; no per-value index is kept, a split finds its place by
	// reading), or the encoded content of the kinds of length 1 (binary,
	// embed, format, type, doc), copied as is.
	str string
	raw []byte
}

func (b *block) end() uint64 { return b.clock + b.length }

// update is a decoded update: structs by client, in clock order, and the
// delete set by client.
type update struct {
	structs map[uint64][]*block
	deletes map[uint64][]span
}

type span struct{ clock, length uint64 }

// decode parses a Yjs update (format v1: Y.encodeStateAsUpdate,
// Y.mergeUpdates) — checking every value is well formed and bounded —
// into u, adding to what u holds. An empty input is the empty update.
func (u *update) decode(in []byte) error {
	if len(in) > MaxUpdateBytes {
		return tooLarge("update over 4 MiB")
	}
	if len(in) == 0 {
		return nil
	}
	r := &reader{buf: in}
	seen := map[uint64]bool{}
	nStruct, nRange := 0, 0
	nClients, err := r.uint()
	if err != nil {
		return err
	}
	for i := uint64(0); i < nClients; i++ {
		nStructs, err := r.uint()
		if err != nil {
			return err
		}
		at := r.pos
		client, err := r.uint()
		if err != nil {
			return err
		}
		if seen[client] {
			return malformed(at, "client listed twice")
		}
		// A client's entry of no structs counts as one: such entries
		// must not make a hostile input a map of a million clients.
		if nStructs == 0 {
			if nStruct++; nStruct > MaxStructs {
				return tooLarge("more than MaxStructs structs")
			}
		}
		seen[client] = true
		clock, err := r.uint()
		if err != nil {
			return err
		}
		for j := uint64(0); j < nStructs; j++ {
			nStruct++
			if nStruct > MaxStructs {
				return tooLarge("more than MaxStructs structs")
			}
			at := r.pos
			b, err := r.block(clock)
			if err != nil {
				return err
			}
			if b.length == 0 {
				if b.ref == refGC || b.ref == refSkip {
					continue // Y.mergeUpdates may write an emptied skip
				}
				return malformed(at, "zero-length item")
			}
			if b.length > maxSafeInteger-clock {
				return malformed(at, "clock beyond 2^53-1")
			}
			clock += b.length
			switch b.ref {
			case refSkip:
			case refGC:
				// A GC range is deleted by definition: its range joins the
				// delete set, so an item another input holds for it, which
				// the merge may take instead, stays deleted.
				u.deletes[client] = append(u.deletes[client], span{b.clock, b.length})
				fallthrough
			default:
				u.structs[client] = append(u.structs[client], &b)
			}
		}
	}
	nClients, err = r.uint()
	if err != nil {
		return err
	}
	for i := uint64(0); i < nClients; i++ {
		client, err := r.uint()
		if err != nil {
			return err
		}
		n, err := r.uint()
		if err != nil {
			return err
		}
		for j := uint64(0); j < n; j++ {
			nRange++
			if nRange > MaxDeleteRanges {
				return tooLarge("more than MaxDeleteRanges delete ranges")
			}
			at := r.pos
			clock, err := r.uint()
			if err != nil {
				return err
			}
			length, err := r.uint()
			if err != nil {
				return err
			}
			if length > maxSafeInteger-clock {
				return malformed(at, "delete range beyond 2^53-1")
			}
			if length > 0 {
				u.deletes[client] = append(u.deletes[client], span{clock, length})
			}
		}
	}
	if r.pos != len(in) {
		return r.fail("bytes after the delete set")
	}
	return nil
}

// block reads one struct at clock.
func (r *reader) block(clock uint64) (block, error) {
	at := r.pos
	info, err := r.byte()
	if err != nil {
		return block{}, err
	}
	b := block{ref: info & 0x1f, clock: clock}
	switch b.ref {
	case refGC, refSkip:
		b.length, err = r.uint()
		return b, err
	}
	if b.ref > refDoc {
		return b, malformed(at, "unknown struct kind")
	}
	if info&flagOrigin != 0 {
		b.hasOrigin = true
		if b.origin, err = r.id(); err != nil {
			return b, err
		}
	}
	if info&flagRightOrigin != 0 {
		b.hasRightOrigin = true
		if b.rightOrigin, err = r.id(); err != nil {
			return b, err
		}
	}
	if !b.hasOrigin && !b.hasRightOrigin {
		isKey, err := r.uint()
		if err != nil {
			return b, err
		}
		if isKey == 1 {
			b.parentIsKey = true
			if b.parentKey, err = r.string(); err != nil {
				return b, err
			}
		} else if b.parentID, err = r.id(); err != nil {
			return b, err
		}
		if info&flagParentSub != 0 {
			b.hasSub = true
			if b.parentSub, err = r.string(); err != nil {
				return b, err
			}
		}
	}
	return b, r.content(&b)
}

func (r *reader) id() (id, error) {
	c, err := r.uint()
	if err != nil {
		return id{}, err
	}
	k, err := r.uint()
	return id{c, k}, err
}

// content reads an item's content (Item.js readItemContent, format v1)
// and sets b's length.
func (r *reader) content(b *block) error {
	start := r.pos
	switch b.ref {
	case refDeleted:
		n, err := r.uint()
		b.length = n
		return err
	case refJSON, refAny:
		n, err := r.uint()
		if err != nil {
			return err
		}
		if n > uint64(len(r.buf)-r.pos) { // each value takes a byte at least
			return r.fail("more values than bytes left")
		}
		b.length = n
		vals := r.pos
		for i := uint64(0); i < n; i++ {
			s := r.pos
			if b.ref == refJSON {
				v, err := r.string()
				if err != nil {
					return err
				}
				if v != "undefined" && !validJSON(v) {
					return malformed(s, "value is not JSON")
				}
			} else if err := r.any(0); err != nil {
				return err
			}
		}
		b.raw = r.buf[vals:r.pos]
		return nil
	case refString:
		s, err := r.string()
		if err != nil {
			return err
		}
		b.str = s
		b.length = utf16Len(s)
		return nil
	case refBinary:
		if _, err := r.bytes(); err != nil {
			return err
		}
	case refEmbed:
		if _, err := r.jsonString(); err != nil {
			return err
		}
	case refFormat:
		if _, err := r.string(); err != nil {
			return err
		}
		if _, err := r.jsonString(); err != nil {
			return err
		}
	case refType:
		at := r.pos
		t, err := r.uint()
		if err != nil {
			return err
		}
		if t > typeMaxRef {
			return malformed(at, "unknown shared type")
		}
		if t == typeXMLElement || t == typeXMLHook {
			if _, err := r.string(); err != nil {
				return err
			}
		}
	case refDoc:
		if _, err := r.string(); err != nil {
			return err
		}
		if err := r.any(0); err != nil {
			return err
		}
	}
	b.length = 1
	b.raw = r.buf[start:r.pos]
	return nil
}

func validJSON(s string) bool { return json.Valid([]byte(s)) }

// utf16Len is the length of s in UTF-16 code units: JavaScript's
// String.length, which Yjs counts a string item's length in.
func utf16Len(s string) uint64 {
	var n uint64
	for _, c := range s {
		n++
		if c >= 0x10000 {
			n++
		}
	}
	return n
}

// sliceFrom returns b without its first k units (0 < k < b.length), as
// Yjs splits a struct: the right part's origin is the unit before it,
// its right origin and parent those of b.
func (b block) sliceFrom(client, k uint64) block {
	out := b
	out.clock = b.clock + k
	out.length = b.length - k
	if b.ref == refGC {
		return out
	}
	out.hasOrigin, out.origin = true, id{client, b.clock + k - 1}
	switch b.ref {
	case refString:
		out.str = utf16Tail(b.str, k)
	case refJSON, refAny:
		r := reader{buf: b.raw}
		for range k { // read and checked by decode already
			if b.ref == refJSON {
				_, _ = r.bytes()
			} else {
				_ = r.any(0)
			}
		}
		out.raw = b.raw[r.pos:]
	}
	return out
}

// utf16Tail returns s without its first k UTF-16 units. When k splits a
// surrogate pair, the pair's second half becomes U+FFFD, as Yjs's
// ContentString.splice does.
func utf16Tail(s string, k uint64) string {
	var n uint64
	for i, c := range s {
		if n == k {
			return s[i:]
		}
		w := uint64(1)
		if c >= 0x10000 {
			w = 2
		}
		if n+w > k { // k is inside this pair
			return string(utf8.RuneError) + s[i+utf8.RuneLen(c):]
		}
		n += w
	}
	return ""
}

// block writes b in format v1.
func (w *writer) block(b *block) {
	if b.ref == refGC {
		w.byte(refGC)
		w.uint(b.length)
		return
	}
	info := b.ref
	if b.hasOrigin {
		info |= flagOrigin
	}
	if b.hasRightOrigin {
		info |= flagRightOrigin
	}
	if b.hasSub {
		info |= flagParentSub
	}
	w.byte(info)
	if b.hasOrigin {
		w.uint(b.origin.client)
		w.uint(b.origin.clock)
	}
	if b.hasRightOrigin {
		w.uint(b.rightOrigin.client)
		w.uint(b.rightOrigin.clock)
	}
	if !b.hasOrigin && !b.hasRightOrigin {
		if b.parentIsKey {
			w.uint(1)
			w.string(b.parentKey)
		} else {
			w.uint(0)
			w.uint(b.parentID.client)
			w.uint(b.parentID.clock)
		}
		if b.hasSub {
			w.string(b.parentSub)
		}
	}
	switch b.ref {
	case refDeleted:
		w.uint(b.length)
	case refString:
		w.string(b.str)
	case refJSON, refAny:
		w.uint(b.length)
		w.raw(b.raw)
	default:
		w.raw(b.raw)
	}
}

// compareBlocks orders two blocks of one client starting at the same
// clock: the longer first, then a GC range before an item, then by kind,
// origins, parent and content — a total order, so a merge picks the same
// block whatever the order of its inputs.
func compareBlocks(a, b *block) int {
	switch {
	case a.length != b.length:
		if a.length > b.length {
			return -1
		}
		return 1
	case (a.ref == refGC) != (b.ref == refGC):
		if a.ref == refGC {
			return -1
		}
		return 1
	}
	if c := cmp.Or(cmp.Compare(a.ref, b.ref),
		compareID(a.hasOrigin, a.origin, b.hasOrigin, b.origin),
		compareID(a.hasRightOrigin, a.rightOrigin, b.hasRightOrigin, b.rightOrigin),
		compareBool(a.parentIsKey, b.parentIsKey),
		strings.Compare(a.parentKey, b.parentKey),
		compareID(true, a.parentID, true, b.parentID),
		compareBool(a.hasSub, b.hasSub),
		strings.Compare(a.parentSub, b.parentSub),
		strings.Compare(a.str, b.str),
		bytes.Compare(a.raw, b.raw)); c != 0 {
		return c
	}
	return 0
}

func compareID(hasA bool, a id, hasB bool, b id) int {
	return cmp.Or(compareBool(hasA, hasB), cmp.Compare(a.client, b.client), cmp.Compare(a.clock, b.clock))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
