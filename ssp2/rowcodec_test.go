package ssp2_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// allCols has every type twice: non-nullable, then nullable.
var allCols = func() []ssp2.Column {
	var cols []ssp2.Column
	for ty := ssp2.TypeString; ty <= ssp2.TypeCRDT; ty++ {
		cols = append(cols, ssp2.Column{Name: ty.String(), Type: ty}, ssp2.Column{Name: ty.String() + "_n", Type: ty, Nullable: true})
	}
	return cols
}()

const blobID = "sha256:c24f8baa413f0d38cfa8babdb0c095b421eeaf47ce0d85050111958f57f6668c"

var randRunes = []rune{'a', 'Z', '0', ' ', '"', '\\', '\n', 0, 'é', 'ζ', '中', 0xE000, 0xFFFD, 0xFFFF, 0x1F4DD, 0x1D11E, 0x10FFFF}

func randString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteRune(randRunes[r.IntN(len(randRunes))])
	}
	return b.String()
}

func randValue(r *rand.Rand, c ssp2.Column) any {
	if c.Nullable && r.IntN(4) == 0 {
		return nil
	}
	switch c.Type {
	case ssp2.TypeString:
		return randString(r)
	case ssp2.TypeInteger:
		switch r.IntN(4) {
		case 0:
			return int64(ssp2.MaxSafeInt)
		case 1:
			return int64(-ssp2.MaxSafeInt)
		}
		return r.Int64N(2*ssp2.MaxSafeInt+1) - ssp2.MaxSafeInt
	case ssp2.TypeFloat:
		switch r.IntN(6) {
		case 0:
			return math.Copysign(0, -1)
		case 1:
			return math.Float64frombits(0x7FF8_0000_0000_0001) // a NaN with a payload
		case 2:
			return math.Inf(-1)
		}
		return math.Float64frombits(r.Uint64())
	case ssp2.TypeBoolean:
		return r.IntN(2) == 0
	case ssp2.TypeJSON:
		docs := []driver.JSON{`null`, `7`, `"x"`, ` {"a": [1, 2.5e3, true]} `, `{"k":"` + driver.JSON(strings.ReplaceAll(randString(r), `\`, ``)) + `"}`}
		d := docs[r.IntN(len(docs))]
		if strings.ContainsAny(string(d), "\x00\n\"") && d[0] == '{' && d[1] == '"' {
			return driver.JSON(`{}`)
		}
		return d
	case ssp2.TypeBlobRef:
		refs := []driver.JSON{`{"blobId":"` + blobID + `","byteLength":0}`, `{"blobId":"` + blobID + `","byteLength":12,"mediaType":"image/png","name":"a.png"}`}
		return refs[r.IntN(len(refs))]
	}
	b := make([]byte, r.IntN(8))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b // may be empty: empty is not NULL
}

// sameValues compares row values, floats by bit pattern.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		fa, okA := a[i].(float64)
		fb, okB := b[i].(float64)
		if okA && okB {
			if math.Float64bits(fa) != math.Float64bits(fb) {
				return false
			}
			continue
		}
		if !cmp.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestRowCodecRoundTrip(t *testing.T) {
	codec, err := ssp2.NewRowCodec(allCols)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for i := range 1500 {
		vals := make([]any, len(allCols))
		for j, c := range allCols {
			vals[j] = randValue(r, c)
		}
		buf, err = codec.AppendValues(buf[:0], vals)
		if err != nil {
			t.Fatalf("row %d: encode: %v", i, err)
		}
		if err := codec.Validate(buf); err != nil {
			t.Fatalf("row %d: validate: %v", i, err)
		}
		got, err := codec.DecodeValues(nil, buf)
		if err != nil {
			t.Fatalf("row %d: decode: %v", i, err)
		}
		if !sameValues(got, vals) {
			t.Fatalf("row %d: decode(encode(v)) != v\n got %#v\nwant %#v", i, got, vals)
		}
		again, err := codec.AppendValues(nil, got)
		if err != nil || !bytes.Equal(again, buf) {
			t.Fatalf("row %d: re-encoding differs", i)
		}
		m, err := codec.Decode(buf)
		if err != nil || len(m) != len(allCols) {
			t.Fatalf("row %d: Decode map: %v", i, err)
		}
		viaMap, err := codec.Append(nil, m)
		if err != nil || !bytes.Equal(viaMap, buf) {
			t.Fatalf("row %d: Append(Decode(b)) != b: %v", i, err)
		}
	}
}

func TestRowCodecEdges(t *testing.T) {
	cols := []ssp2.Column{
		{Name: "i", Type: ssp2.TypeInteger},
		{Name: "f", Type: ssp2.TypeFloat},
		{Name: "b", Type: ssp2.TypeBytes, Nullable: true},
		{Name: "s", Type: ssp2.TypeString},
	}
	codec, err := ssp2.NewRowCodec(cols)
	if err != nil {
		t.Fatal(err)
	}
	negZero := math.Copysign(0, -1)
	enc := func(vals ...any) []byte {
		t.Helper()
		b, err := codec.AppendValues(nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// -0.0 keeps its sign bit; a NaN keeps its payload; ±Inf pass (the
	// codec carries any bit pattern, §11.1 rule 10).
	for _, f := range []float64{negZero, math.Float64frombits(0xFFF0_0000_0000_0F00), math.Inf(1)} {
		got, err := codec.DecodeValues(nil, enc(int64(0), f, nil, ""))
		if err != nil || math.Float64bits(got[1].(float64)) != math.Float64bits(f) {
			t.Errorf("float %x: got %v, %v", math.Float64bits(f), got, err)
		}
	}
	// Empty bytes are not NULL; a nil []byte is neither, and refused.
	empty := enc(int64(1), 0.0, []byte{}, "")
	null := enc(int64(1), 0.0, nil, "")
	if _, err := codec.AppendValues(nil, []any{int64(1), 0.0, []byte(nil), ""}); !errors.Is(err, ssp2.ErrEncode) {
		t.Errorf("[]byte(nil): %v", err)
	}
	if bytes.Equal(empty, null) || empty[0] != 0 || null[0] != 0b100 {
		t.Errorf("empty %x, null %x", empty, null)
	}
	if got, _ := codec.DecodeValues(nil, empty); got[2] == nil || len(got[2].([]byte)) != 0 {
		t.Errorf("empty bytes decode to %#v", got[2])
	}
	// Non-BMP strings survive.
	if got, _ := codec.DecodeValues(nil, enc(int64(1), 0.0, nil, "📝 𝄞")); got[3] != "📝 𝄞" {
		t.Errorf("non-BMP string: %q", got[3])
	}
	// The safe-integer bounds encode; one past them does not, and is
	// refused on decode.
	for _, n := range []int64{ssp2.MaxSafeInt, -ssp2.MaxSafeInt} {
		enc(n, 0.0, nil, "")
	}
	for _, n := range []int64{ssp2.MaxSafeInt + 1, -ssp2.MaxSafeInt - 1, math.MinInt64} {
		if _, err := codec.AppendValues(nil, []any{n, 0.0, nil, ""}); !errors.Is(err, ssp2.ErrEncode) {
			t.Errorf("encode %d: %v", n, err)
		}
		row := enc(int64(0), 0.0, nil, "")
		for k := range 8 {
			row[1+k] = byte(uint64(n) >> (8 * k))
		}
		if err := codec.Validate(row); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("decode %d: %v", n, err)
		}
	}
}

func TestRowCodecRefusals(t *testing.T) {
	cols := []ssp2.Column{
		{Name: "id", Type: ssp2.TypeString},
		{Name: "ok", Type: ssp2.TypeBoolean, Nullable: true},
		{Name: "j", Type: ssp2.TypeJSON, Nullable: true},
		{Name: "att", Type: ssp2.TypeBlobRef, Nullable: true},
	}
	codec, err := ssp2.NewRowCodec(cols)
	if err != nil {
		t.Fatal(err)
	}
	good, err := codec.Append(nil, driver.Values{"id": "r1", "ok": true, "j": driver.JSON(`{"a":1}`), "att": driver.JSON(`{"blobId":"` + blobID + `","byteLength":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	// Every proper prefix is truncated; a trailing byte is refused.
	for n := range len(good) {
		if err := codec.Validate(good[:n]); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Fatalf("prefix of %d bytes: %v", n, err)
		}
	}
	if err := codec.Validate(append(append([]byte(nil), good...), 0)); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
		t.Fatalf("trailing byte: %v", err)
	}
	patch := func(at int, b byte) []byte {
		x := append([]byte(nil), good...)
		x[at] = b
		return x
	}
	for name, row := range map[string][]byte{
		"padding bit":         patch(0, 0b0001_0000),
		"null non-nullable":   patch(0, 0b0000_0001),
		"bool byte 2":         patch(1+4+2, 2), // bitmap, id "r1", then ok
		"invalid UTF-8":       patch(1+4, 0xFF),
		"json not a document": mustAppendRaw(t, cols, "r1", nil, `{"a":`, ""),
		"blob_ref bad shape":  mustAppendRaw(t, cols, "r1", nil, "", `{"byteLength":3,"blobId":"`+blobID+`"}`),
	} {
		if err := codec.Validate(row); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%s: %v", name, err)
		} else if strings.Contains(err.Error(), "r1") || strings.Contains(err.Error(), blobID) {
			t.Errorf("%s: the message quotes a value: %v", name, err)
		}
	}
	for name, v := range map[string]driver.Values{
		"missing column":  {"id": "x", "ok": nil, "j": nil},
		"extra column":    {"id": "x", "ok": nil, "j": nil, "att": nil, "more": nil},
		"wrong Go type":   {"id": int64(1), "ok": nil, "j": nil, "att": nil},
		"json as string":  {"id": "x", "ok": nil, "j": `{}`, "att": nil},
		"NULL in non-nul": {"id": nil, "ok": nil, "j": nil, "att": nil},
		"invalid json":    {"id": "x", "ok": nil, "j": driver.JSON(`{`), "att": nil},
		"bad blob_ref":    {"id": "x", "ok": nil, "j": nil, "att": driver.JSON(`{"blobId":"sha256:00","byteLength":1}`)},
		"bad utf-8":       {"id": "\xff", "ok": nil, "j": nil, "att": nil},
	} {
		if _, err := codec.Append(nil, v); !errors.Is(err, ssp2.ErrEncode) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ssp2.NewRowCodec([]ssp2.Column{{Name: "a", Type: ssp2.TypeString}, {Name: "a", Type: ssp2.TypeString}}); !errors.Is(err, ssp2.ErrEncode) {
		t.Errorf("duplicate column names: %v", err)
	}
}

// mustAppendRaw builds a row of cols bypassing the encoder's checks (for
// refusals): strings are written as given.
func mustAppendRaw(t *testing.T, cols []ssp2.Column, id string, ok any, j, att string) []byte {
	t.Helper()
	var bitmap byte
	var body []byte
	str := func(s string) { body = append(body, byte(len(s)), byte(len(s)>>8), 0, 0); body = append(body, s...) }
	str(id)
	bitmap |= 1 << 1 // ok NULL
	if j == "" {
		bitmap |= 1 << 2
	} else {
		str(j)
	}
	if att == "" {
		bitmap |= 1 << 3
	} else {
		str(att)
	}
	return append([]byte{bitmap}, body...)
}

func TestBlobRefShape(t *testing.T) {
	ok := []string{
		`{"blobId":"` + blobID + `","byteLength":0}`,
		`{"blobId":"` + blobID + `","byteLength":1e3,"mediaType":"","name":"n"}`,
		`{"blobId":"` + blobID + `","byteLength":9007199254740991,"name":"x"}`,
		` { "blobId" : "` + blobID + `" , "byteLength" : 2.0 } `,
	}
	for _, s := range ok {
		if _, err := ssp2.ParseBlobRef(driver.JSON(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := []string{
		`[]`, `null`, `"x"`, `{`,
		`{"byteLength":0}`,
		`{"blobId":"` + blobID + `"}`,
		`{"blobId":"` + strings.ToUpper(blobID) + `","byteLength":0}`,
		`{"blobId":"sha256:abc","byteLength":0}`,
		`{"blobId":"` + blobID + `","byteLength":-1}`,
		`{"blobId":"` + blobID + `","byteLength":1.5}`,
		`{"blobId":"` + blobID + `","byteLength":9007199254740992}`,
		`{"blobId":"` + blobID + `","byteLength":"1"}`,
		`{"blobId":"` + blobID + `","byteLength":0,"mediaType":1}`,
		`{"blobId":"` + blobID + `","byteLength":0,"extra":1}`,
		`{"byteLength":0,"blobId":"` + blobID + `"}`,
		`{"blobId":"` + blobID + `","byteLength":0,"name":"a","mediaType":"b"}`,
		`{"blobId":"` + blobID + `","blobId":"` + blobID + `","byteLength":0}`,
	}
	for _, s := range bad {
		if _, err := ssp2.ParseBlobRef(driver.JSON(s)); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%s: %v", s, err)
		}
	}
	ref := ssp2.BlobRef{BlobID: blobID, ByteLength: 5, Name: ssp2.Some("a\"b.png")}
	j, err := ref.JSON()
	if err != nil || string(j) != `{"blobId":"`+blobID+`","byteLength":5,"name":"a\"b.png"}` {
		t.Fatalf("JSON: %s, %v", j, err)
	}
	back, err := ssp2.ParseBlobRef(j)
	if err != nil || back != ref {
		t.Fatalf("ParseBlobRef(JSON) = %+v, %v", back, err)
	}
}

func TestSegmentWriter(t *testing.T) {
	codec, _ := ssp2.NewRowCodec(notesCols)
	for _, c := range []struct {
		rows, blockRows, blockBytes int
		want                        []int
	}{
		{0, 0, 0, nil},
		{2500, 0, 0, []int{1000, 1000, 500}},
		{1000, 0, 0, []int{1000}},
		{10, 4, 0, []int{4, 4, 2}},
		{5, 0, 1, []int{1, 1, 1, 1, 1}}, // every row reaches the byte target
	} {
		var out bytes.Buffer
		sw, err := ssp2.NewSegmentWriter(&out, ssp2.SegmentHeader{Table: "notes", SchemaVersion: 7, Columns: notesCols, BlockRows: c.blockRows, BlockBytes: c.blockBytes})
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.rows {
			if err := sw.WriteRow(int64(i+1), notesRow(i)); err != nil {
				t.Fatal(err)
			}
		}
		info, err := sw.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		if info.ID != ssp2.SegmentID(b) || info.ByteLength != int64(len(b)) || info.RowCount != int64(c.rows) {
			t.Errorf("info %+v for %d bytes", info, len(b))
		}
		seg, err := ssp2.DecodeSegment(b)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		n := 0
		for _, blk := range seg.Blocks {
			sizes = append(sizes, len(blk))
			for _, r := range blk {
				if r.ServerVersion != int64(n+1) {
					t.Fatalf("row %d has serverVersion %d", n, r.ServerVersion)
				}
				wantRow, _ := codec.Append(nil, notesRow(n))
				gotRow, err := codec.AppendValues(nil, r.Values)
				if err != nil || !bytes.Equal(gotRow, wantRow) {
					t.Fatalf("row %d differs", n)
				}
				n++
			}
		}
		if !cmp.Equal(sizes, c.want) || seg.Table != "notes" || seg.SchemaVersion != 7 {
			t.Errorf("%d rows, block rows %d, bytes %d: blocks %v, want %v", c.rows, c.blockRows, c.blockBytes, sizes, c.want)
		}
		if err := seg.MatchColumns("notes", 7, notesCols); err != nil {
			t.Error(err)
		}
		if err := seg.MatchColumns("notes", 7, allCols); ssp2.CodeOf(err) != ssp2.CodeSchemaMismatch {
			t.Errorf("MatchColumns of other columns: %v", err)
		}
		enc, err := seg.Encode()
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("re-encode: %v", err)
		}
	}
	// A refused row leaves the writer usable; a row with serverVersion 0 is
	// refused.
	var out bytes.Buffer
	sw, _ := ssp2.NewSegmentWriter(&out, ssp2.SegmentHeader{Table: "notes", SchemaVersion: 1, Columns: notesCols})
	if err := sw.WriteRow(0, notesRow(0)); !errors.Is(err, ssp2.ErrEncode) {
		t.Fatalf("serverVersion 0: %v", err)
	}
	if err := sw.WriteRow(1, driver.Values{"id": "x"}); !errors.Is(err, ssp2.ErrEncode) {
		t.Fatalf("bad row: %v", err)
	}
	row, _ := codec.Append(nil, notesRow(1))
	if err := sw.WriteRowBytes(2, row); err != nil {
		t.Fatal(err)
	}
	if err := sw.WriteRowBytes(3, row[:len(row)-1]); !errors.Is(err, ssp2.ErrEncode) {
		t.Fatalf("truncated row bytes: %v", err)
	}
	if _, err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	seg, err := ssp2.DecodeSegment(out.Bytes())
	if err != nil || len(seg.Blocks) != 1 || len(seg.Blocks[0]) != 1 {
		t.Fatalf("%v %+v", err, seg)
	}
	// Reset reuses a writer: the next segment is written whole.
	var again bytes.Buffer
	if err := sw.Reset(&again, ssp2.SegmentHeader{Table: "notes", SchemaVersion: 2, Columns: notesCols}); err != nil {
		t.Fatal(err)
	}
	_ = sw.WriteRow(9, notesRow(3))
	if info, err := sw.Close(); err != nil || info.RowCount != 1 || info.ID != ssp2.SegmentID(again.Bytes()) {
		t.Fatalf("after Reset: %+v, %v", info, err)
	}
	if s, err := ssp2.DecodeSegment(again.Bytes()); err != nil || s.SchemaVersion != 2 || s.Blocks[0][0].ServerVersion != 9 {
		t.Fatalf("after Reset: %+v, %v", s, err)
	}
	// A write error is sticky.
	sw, _ = ssp2.NewSegmentWriter(&failWriter{}, ssp2.SegmentHeader{Table: "notes", SchemaVersion: 1, Columns: notesCols, BlockRows: 1})
	if err := sw.WriteRow(1, notesRow(0)); err == nil {
		t.Fatal("write error not reported")
	}
	if _, err := sw.Close(); err == nil {
		t.Fatal("Close after a write error")
	}
}

func TestSegmentRefusals(t *testing.T) {
	var out bytes.Buffer
	sw, _ := ssp2.NewSegmentWriter(&out, ssp2.SegmentHeader{Table: "t", SchemaVersion: 1, Columns: []ssp2.Column{{Name: "a", Type: ssp2.TypeInteger}}})
	_ = sw.WriteRow(1, driver.Values{"a": int64(5)})
	if _, err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	good := out.Bytes()
	// Layout: magic 4, version 2, flags 2, table str 5, schema 4, count 2,
	// column "a" str 5, tag 1, flags 1 → header is 26 bytes.
	const colTag, colFlags = 24, 25
	patch := func(at int, b byte) []byte {
		x := append([]byte(nil), good...)
		x[at] = b
		return x
	}
	for n := range len(good) {
		if err := ssp2.ValidateSegment(good[:n]); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Fatalf("prefix %d: %v", n, err)
		}
	}
	for name, b := range map[string][]byte{
		"bad magic":           patch(3, '1'),
		"format version 2":    patch(4, 2),
		"flags":               patch(6, 1),
		"unknown tag 9":       patch(colTag, 9),
		"tag 0":               patch(colTag, 0),
		"reserved col flag":   patch(colFlags, 2),
		"trailing after end":  append(append([]byte(nil), good...), 0),
		"block length +1":     patch(26+4, 18),
		"block rows 2":        patch(26, 2),
		"serverVersion zero":  append(append(append([]byte(nil), good[:34]...), 0, 0, 0, 0, 0, 0, 0, 0), good[42:]...),
		"serverVersion > max": append(append(append([]byte(nil), good[:34]...), 0, 0, 0, 0, 0, 0, 0x20, 0), good[42:]...),
	} {
		if err := ssp2.ValidateSegment(b); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := ssp2.DecodeSegment(b); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%s: decode %v", name, err)
		}
	}
}

func randFor(i int) *rand.Rand { return rand.New(rand.NewPCG(uint64(i), 99)) }
