package yjs

import (
	"cmp"
	"context"
	"errors"
	"slices"
)

// Merge merges Yjs updates (format v1) into one update holding every
// struct and deletion of each: the content Y.mergeUpdates gives, and what
// applying the inputs to one Y.Doc and encoding its state gives. Applying
// the result to a Y.Doc equals applying every input to it (in any order,
// any number of times).
//
// Per client, the structs of all inputs are laid on the client's clock
// line: a range two inputs both hold is taken once (a struct covering
// more of it wins; one only partly covered is split, as Yjs splits
// items), a range no input holds is a skip (Yjs keeps the items after it
// pending until it arrives). Delete sets are united, with every GC
// range (deleted by definition), and their ranges compacted. The result is canonical in this sense: Merge(a, b) and
// Merge(b, a) are the same bytes, and a merged update merged again with
// any of its inputs is unchanged in content.
//
// An empty input (no bytes) is the empty update; Merge of nothing is the
// empty update [0 0]. Errors: *Error with CodeMalformed (an input is not
// a v1 update; Input says which) or CodeTooLarge (an input or the
// result over MaxUpdateBytes, MaxStructs or MaxDeleteRanges).
func Merge(updates ...[]byte) ([]byte, error) {
	u := update{structs: map[uint64][]*block{}, deletes: map[uint64][]span{}}
	for i, in := range updates {
		if err := u.decode(in); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Input = i
			}
			return nil, err
		}
	}
	var w writer
	clients := sortedKeys(u.structs)
	w.uint(uint64(len(clients)))
	n := 0
	for _, c := range clients {
		segs := lay(u.structs[c], c)
		if n += len(segs); n > MaxStructs {
			return nil, tooLarge("merged update over MaxStructs structs")
		}
		w.client(c, segs)
	}
	dclients := sortedKeys(u.deletes)
	w.uint(uint64(len(dclients)))
	n = 0
	for _, c := range dclients {
		spans := compact(u.deletes[c])
		if n += len(spans); n > MaxDeleteRanges {
			return nil, tooLarge("merged update over MaxDeleteRanges delete ranges")
		}
		w.uint(c)
		w.uint(uint64(len(spans)))
		for _, s := range spans {
			w.uint(s.clock)
			w.uint(s.length)
		}
	}
	if len(w.buf) > MaxUpdateBytes {
		return nil, tooLarge("merged update over 4 MiB")
	}
	return w.buf, nil
}

// Merger is Merge as the merger of crdtType "yjs-doc" (SSP2 §5.10.2): its
// Merge(ctx, stored, incoming) is Merge(stored, incoming), stored nil for
// a new row or a NULL column. It satisfies server.CRDTMerger.
type Merger struct{}

// Merge merges incoming into stored (see the package function Merge).
func (Merger) Merge(_ context.Context, stored, incoming []byte) ([]byte, error) {
	return Merge(stored, incoming)
}

// sortedKeys returns m's clients, highest first (the order Yjs writes
// them in).
func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	return keys
}

// segment is a laid-out range of one client: a block or a skip (gap).
type segment struct {
	skip   bool
	clock  uint64
	length uint64
	b      *block
}

// lay lays client's blocks on its clock line: sorted by clock (ties in
// compareBlocks' order), each range taken from the first block covering
// it, the rest of a partly covered block split off, gaps as skips, and
// neighbouring GC ranges joined.
func lay(bs []*block, client uint64) []segment {
	slices.SortFunc(bs, func(a, b *block) int {
		if c := cmp.Compare(a.clock, b.clock); c != 0 {
			return c
		}
		return compareBlocks(a, b)
	})
	var out []segment
	var next uint64
	for _, b := range bs {
		if len(out) > 0 {
			if b.end() <= next {
				continue // held already
			}
			if b.clock > next {
				out = append(out, segment{skip: true, clock: next, length: b.clock - next})
			} else if b.clock < next {
				tail := b.sliceFrom(client, next-b.clock)
				b = &tail
			}
		}
		if n := len(out); n > 0 && b.ref == refGC && !out[n-1].skip && out[n-1].b.ref == refGC {
			out[n-1].length += b.length
		} else {
			out = append(out, segment{clock: b.clock, length: b.length, b: b})
		}
		next = b.end()
	}
	return out
}

// client writes one client's laid-out structs.
func (w *writer) client(c uint64, segs []segment) {
	w.uint(uint64(len(segs)))
	w.uint(c)
	w.uint(segs[0].clock)
	for i := range segs {
		if segs[i].skip {
			w.byte(refSkip)
			w.uint(segs[i].length)
			continue
		}
		if segs[i].b.ref == refGC {
			w.byte(refGC)
			w.uint(segs[i].length)
			continue
		}
		w.block(segs[i].b)
	}
}

// compact sorts a client's delete ranges and joins the overlapping and
// adjacent ones.
func compact(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int {
		if c := cmp.Compare(a.clock, b.clock); c != 0 {
			return c
		}
		return cmp.Compare(a.length, b.length)
	})
	out := spans[:0:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.clock <= out[n-1].clock+out[n-1].length {
			out[n-1].length = max(out[n-1].length, s.clock+s.length-out[n-1].clock)
			continue
		}
		out = append(out, s)
	}
	return out
}
