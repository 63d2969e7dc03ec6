package yjs_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/syncstore/syncstore/crdt/yjs"
)

// Updates written by Yjs 13.6 (Y.encodeStateAsUpdate): base is client 1
// typing "hello" into Y.Text "text"; stateA is client 1 appending " A";
// stateB is client 2, from base, prepending "B ", deleting the "e" and
// setting a map key to {x: [1, 2.5, "s", null, true]}. Yjs reads the
// merge of stateA and stateB as "B hllo A".
var (
	base   = unhex("01010100040104746578740568656c6c6f00")
	stateA = unhex("01010100040104746578740768656c6c6f204100")
	stateB = unhex("020202004401000242202801016d016b017601017875057d017c402000007701737e7803010004010474657874016881010001840101036c6c6f0101010101")
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestMergeIsCommutativeAndIdempotent(t *testing.T) {
	ab, err := yjs.Merge(stateA, stateB)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := yjs.Merge(stateB, stateA)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, ba) {
		t.Fatalf("Merge(a, b) = %x, Merge(b, a) = %x", ab, ba)
	}
	for _, in := range [][]byte{base, stateA, stateB, ab} {
		again, err := yjs.Merge(ab, in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, ab) {
			t.Errorf("Merge(ab, %x) = %x, want ab %x", in, again, ab)
		}
	}
	// Client 1's whole "hello A" item (clock 0…6) wins over stateB's
	// pieces of "hello"; client 2's "B " and map entry are there.
	for _, want := range []string{"hello A", "B ", "\x01k"} {
		if !bytes.Contains(ab, []byte(want)) {
			t.Errorf("Merge(a, b) = %x has no %q", ab, want)
		}
	}
}

// TestMergeIgnoresEmptyRanges: Y.mergeUpdates may write a skip it
// shortened to nothing; an empty skip or GC range is no struct.
func TestMergeIgnoresEmptyRanges(t *testing.T) {
	withEmpty := unhex("01020100" + "0000" + "0a00" + "00") // client 1: GC 0, skip 0
	got, err := yjs.Merge(withEmpty, base)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := yjs.Merge(base); !bytes.Equal(got, want) {
		t.Fatalf("Merge = %x, want %x", got, want)
	}
}

// TestMergeKeepsGCRangesDeleted: when an input holds a longer item where
// another holds a GC range (content already collected), the item is
// taken and the GC range is in the merged delete set.
func TestMergeKeepsGCRangesDeleted(t *testing.T) {
	gc3 := unhex("01010100" + "0003" + "00") // client 1: clocks 0…2 collected, no delete set
	got, err := yjs.Merge(gc3, base)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("hello")) || !bytes.HasSuffix(got, []byte{1, 1, 1, 0, 3}) {
		t.Fatalf("Merge = %x, want the item and client 1's clocks 0…2 deleted", got)
	}
}

func TestMergeOfNothingIsTheEmptyUpdate(t *testing.T) {
	for _, ins := range [][][]byte{nil, {nil}, {{}, {0, 0}}} {
		got, err := yjs.Merge(ins...)
		if err != nil || !bytes.Equal(got, []byte{0, 0}) {
			t.Errorf("Merge(%x) = %x, %v; want 0000", ins, got, err)
		}
	}
}

func TestMergeRefusesMalformedInput(t *testing.T) {
	cases := map[string][]byte{
		"trailing bytes":       append(append([]byte{}, base...), 0),
		"unknown struct kind":  unhex("0101010011000000"),
		"unknown content kind": unhex("01010100" + "0c" + "0104746578740568656c6c6f00"),
		"client twice":         unhex("0201010000010101000100"),
		"zero-length item":     unhex("0101010004010174" + "00" + "00"),
		"var-uint over 2^53":   unhex("01ffffffffffffffff7f"),
		"string not UTF-8":     unhex("0101010004010474657874" + "02c328" + "00"),
		"unknown type ref":     unhex("0101010007010174" + "09" + "00"),
		"unknown any tag":      unhex("0101010008010174" + "01" + "50" + "00"),
		"JSON not JSON":        unhex("0101010002010174" + "01" + "017b" + "00"),
		"v2 update":            unhex("000000010101000104010101000100"),
	}
	for name, in := range cases {
		_, err := yjs.Merge(base, in)
		var e *yjs.Error
		if !errors.As(err, &e) || e.Code != yjs.CodeMalformed || e.Input != 1 {
			t.Errorf("%s: Merge = %v, want a yjs.malformed *Error on input 1", name, err)
		}
	}
	for i := range len(stateB) {
		if _, err := yjs.Merge(stateB[:i]); err == nil && i > 0 {
			t.Errorf("Merge of the first %d bytes of an update succeeded", i)
		}
	}
}

func TestMergeBounds(t *testing.T) {
	_, err := yjs.Merge(make([]byte, yjs.MaxUpdateBytes+1))
	var e *yjs.Error
	if !errors.As(err, &e) || e.Code != yjs.CodeTooLarge {
		t.Errorf("an input over MaxUpdateBytes: %v, want yjs.too_large", err)
	}
	if _, err := yjs.Merge(itemRuns(1, yjs.MaxStructs+1)); !errors.As(err, &e) || e.Code != yjs.CodeTooLarge {
		t.Errorf("MaxStructs+1 structs: %v, want yjs.too_large", err)
	}
	// MaxStructs clients of no struct each.
	var clients []byte
	clients = appendUint(clients, yjs.MaxStructs+1)
	for c := range yjs.MaxStructs + 1 {
		clients = append(clients, 0)
		clients = appendUint(clients, uint64(c))
		clients = append(clients, 0)
	}
	clients = append(clients, 0)
	if _, err := yjs.Merge(clients); !errors.As(err, &e) || e.Code != yjs.CodeTooLarge {
		t.Errorf("MaxStructs+1 empty clients: %v, want yjs.too_large", err)
	}
	// Two inputs within the bound whose merge is not: refused, so a
	// stored merged value always merges again.
	half := yjs.MaxStructs/2 + 1
	if _, err := yjs.Merge(itemRuns(1, half), itemRuns(1, yjs.MaxStructs)); err != nil {
		t.Errorf("MaxStructs structs of one client twice: %v", err)
	}
	if _, err := yjs.Merge(itemRuns(1, half), itemRuns(2, half)); !errors.As(err, &e) || e.Code != yjs.CodeTooLarge {
		t.Errorf("a merge of MaxStructs+2 structs: %v, want yjs.too_large", err)
	}
}

// itemRuns is an update of client's first n clocks as n items of deleted
// content in root "t", each after the one before (n structs: items are
// never joined).
func itemRuns(client uint64, n int) []byte {
	in := []byte{1}
	in = appendUint(in, uint64(n))
	in = appendUint(in, client)
	in = append(in, 0)
	for i := range n {
		if i == 0 {
			in = append(in, 0x01, 1, 1, 't', 1)
			continue
		}
		in = append(in, 0x81)
		in = appendUint(in, client)
		in = appendUint(in, uint64(i-1))
		in = append(in, 1)
	}
	return append(in, 0)
}

func appendUint(b []byte, n uint64) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// FuzzMerge feeds arbitrary bytes to Merge: it must never panic, refuse
// with an *Error only, and what it accepts must merge to a fixed point
// (Merge(m) = m, Merge(m, in) = m) and commute with base.
func FuzzMerge(f *testing.F) {
	for _, s := range [][]byte{base, stateA, stateB, {0, 0}, {}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := yjs.Merge(in)
		if err != nil {
			var e *yjs.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		again, err := yjs.Merge(m)
		if err != nil || !bytes.Equal(again, m) {
			t.Fatalf("Merge(Merge(x)) = %x, %v; Merge(x) = %x", again, err, m)
		}
		if again, err = yjs.Merge(m, in); err != nil || !bytes.Equal(again, m) {
			t.Fatalf("Merge(m, x) = %x, %v; m = %x", again, err, m)
		}
		ab, err1 := yjs.Merge(base, in)
		ba, err2 := yjs.Merge(in, base)
		if err1 != nil || err2 != nil || !bytes.Equal(ab, ba) {
			t.Fatalf("Merge(base, x) = %x, %v; Merge(x, base) = %x, %v", ab, err1, ba, err2)
		}
	})
}
