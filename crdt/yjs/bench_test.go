package yjs

import (
	"fmt"
	"testing"
)

// typing is an update of one client typing n 8-character runs into the
// root text "text" one after another (each run its own item, as a
// keystroke-by-keystroke history leaves them when others interleave),
// the first `deleted` runs deleted.
func typing(client uint64, n, deleted int) []byte {
	var w writer
	w.uint(1)
	w.uint(uint64(n))
	w.uint(client)
	w.uint(0)
	for i := range n {
		b := block{ref: refString, clock: uint64(8 * i), length: 8, str: "abcdefgh"}
		if i == 0 {
			b.parentIsKey, b.parentKey = true, "text"
		} else {
			b.hasOrigin, b.origin = true, id{client, uint64(8*i - 1)}
		}
		w.block(&b)
	}
	if deleted == 0 {
		w.uint(0)
		return w.buf
	}
	w.uint(1)
	w.uint(client)
	w.uint(1)
	w.uint(0)
	w.uint(uint64(8 * deleted))
	return w.buf
}

// BenchmarkMerge: the server's merge of a document's state with one
// client's pushed state, both holding the same 10,000 runs (80,000
// characters) of three clients — the full-state push of SSP2 §5.10.4.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		stored, err := Merge(typing(1, n, n/10), typing(2, n, 0), typing(3, n, 0))
		if err != nil {
			b.Fatal(err)
		}
		incoming, err := Merge(typing(1, n, n/5), typing(2, n, 0), typing(3, n+1, 0))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("runs=%d/bytes=%d", 3*n, len(stored)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stored) + len(incoming)))
			for b.Loop() {
				if _, err := Merge(stored, incoming); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
