package ssp2

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Rows segment constants (§5.2).
const (
	// SegmentMagic opens every rows segment.
	SegmentMagic = "SSG2"
	// SegmentFormatVersion is the format version this package reads and
	// writes.
	SegmentFormatVersion uint16 = 1
	// DefaultBlockRows and DefaultBlockBytes are the block targets of
	// §5.2: a SegmentWriter closes a block when it holds this many rows or
	// this many row bytes, whichever comes first.
	DefaultBlockRows  = 1000
	DefaultBlockBytes = 256 << 10
)

// SegmentHeader describes the rows segment a SegmentWriter writes.
type SegmentHeader struct {
	Table         string
	SchemaVersion int32
	// Columns are the table's columns in codec order; the column table
	// carries their Name, Type (tags 1–8) and Nullable.
	Columns []Column
	// BlockRows and BlockBytes override DefaultBlockRows and
	// DefaultBlockBytes when > 0.
	BlockRows  int
	BlockBytes int
}

// SegmentInfo describes a written segment.
type SegmentInfo struct {
	// ID is the segmentId: "sha256:" + lowercase hex SHA-256 of the bytes
	// (§5.1).
	ID string
	// ByteLength is the segment's size in bytes; RowCount its rows.
	ByteLength int64
	RowCount   int64
}

// SegmentWriter streams one rows segment (§5.2) to an io.Writer: the
// header, blocks of rows (each a serverVersion and the row's codec bytes),
// the end marker. It holds at most one block in memory, writes each block
// with one Write call, and hashes what it writes for the segmentId. Not
// safe for concurrent use. After an error every method returns it.
type SegmentWriter struct {
	w       io.Writer
	codec   *RowCodec
	h       hash.Hash
	buf     []byte // pending bytes: the header, then the current block
	blockAt int    // offset in buf of the current block's rows
	rows    int    // rows in the current block
	maxRows int
	maxLen  int
	n       int64
	count   int64
	err     error
	closed  bool
}

// NewSegmentWriter starts a segment for h on w. Nothing is written until
// the first block fills or Close. It fails with ErrEncode for a bad column
// list (as NewRowCodec) or a table name that is not UTF-8.
func NewSegmentWriter(w io.Writer, h SegmentHeader) (*SegmentWriter, error) {
	sw := &SegmentWriter{h: sha256.New()}
	if err := sw.Reset(w, h); err != nil {
		return nil, err
	}
	return sw, nil
}

// Reset starts a new segment for h on w, reusing sw's buffers (a server
// building many segments keeps one writer per worker). It fails as
// NewSegmentWriter does, leaving sw unusable until a Reset succeeds.
func (sw *SegmentWriter) Reset(w io.Writer, h SegmentHeader) error {
	codec, err := NewRowCodec(h.Columns)
	if err == nil && len(h.Columns) > math.MaxUint16 {
		err = encodeErrorf("a rows segment has at most 65535 columns")
	}
	if err == nil && !utf8.ValidString(h.Table) {
		err = encodeErrorf("segment table name is not valid UTF-8")
	}
	if err != nil {
		sw.err = err
		return err
	}
	if sw.h == nil {
		sw.h = sha256.New()
	}
	sw.h.Reset()
	*sw = SegmentWriter{w: w, codec: codec, h: sw.h, buf: sw.buf[:0], maxRows: h.BlockRows, maxLen: h.BlockBytes}
	if sw.maxRows <= 0 {
		sw.maxRows = DefaultBlockRows
	}
	if sw.maxLen <= 0 {
		sw.maxLen = DefaultBlockBytes
	}
	sw.buf = appendSegmentHeader(sw.buf, h.Table, h.SchemaVersion, h.Columns)
	sw.startBlock()
	return nil
}

func appendSegmentHeader(dst []byte, table string, schemaVersion int32, cols []Column) []byte {
	dst = append(dst, SegmentMagic...)
	dst = binary.LittleEndian.AppendUint16(dst, SegmentFormatVersion)
	dst = binary.LittleEndian.AppendUint16(dst, 0)
	dst = appendLenString(dst, table)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(schemaVersion))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(cols)))
	for _, c := range cols {
		dst = appendLenString(dst, c.Name)
		var flags byte
		if c.Nullable {
			flags = 1
		}
		dst = append(dst, byte(c.Type), flags)
	}
	return dst
}

func (sw *SegmentWriter) startBlock() {
	sw.buf = append(sw.buf, 0, 0, 0, 0, 0, 0, 0, 0) // rowCount, byteLength
	sw.blockAt = len(sw.buf)
	sw.rows = 0
}

// WriteRow appends one row: its server version (1 ≤ serverVersion ≤
// MaxSafeInt) and its values (checked as RowCodec.Append checks). A
// refused row is not written and does not fail the writer.
func (sw *SegmentWriter) WriteRow(serverVersion int64, v driver.Values) error {
	return sw.add(serverVersion, func(dst []byte) ([]byte, error) { return sw.codec.Append(dst, v) })
}

// WriteRowValues is WriteRow with positional values.
func (sw *SegmentWriter) WriteRowValues(serverVersion int64, vals []any) error {
	return sw.add(serverVersion, func(dst []byte) ([]byte, error) { return sw.codec.AppendValues(dst, vals) })
}

// WriteRowBytes appends one row already in the codec's encoding; it is
// validated (RowCodec.Validate) before it is taken.
func (sw *SegmentWriter) WriteRowBytes(serverVersion int64, row []byte) error {
	return sw.add(serverVersion, func(dst []byte) ([]byte, error) {
		if err := sw.codec.Validate(row); err != nil {
			return dst, encodeErrorf("row bytes: %v", err)
		}
		return append(dst, row...), nil
	})
}

func (sw *SegmentWriter) add(serverVersion int64, appendRow func([]byte) ([]byte, error)) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.closed {
		return encodeErrorf("the segment writer is closed")
	}
	if serverVersion < 1 || serverVersion > MaxSafeInt {
		return encodeErrorf("a segment row's serverVersion must be in [1, 2^53-1]")
	}
	at := len(sw.buf)
	sw.buf = binary.LittleEndian.AppendUint64(sw.buf, uint64(serverVersion))
	buf, err := appendRow(sw.buf)
	if err != nil {
		sw.buf = sw.buf[:at]
		return err
	}
	if uint64(len(buf)-sw.blockAt) > math.MaxUint32 {
		sw.buf = buf[:at]
		return encodeErrorf("a segment row does not fit in a block")
	}
	sw.buf = buf
	sw.rows++
	sw.count++
	if sw.rows >= sw.maxRows || len(sw.buf)-sw.blockAt >= sw.maxLen {
		return sw.flushBlock()
	}
	return nil
}

// flushBlock writes the pending bytes (header first time) with the
// current block, if it has rows, and starts the next block.
func (sw *SegmentWriter) flushBlock() error {
	if sw.rows == 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(sw.buf[sw.blockAt-8:], uint32(sw.rows))
	binary.LittleEndian.PutUint32(sw.buf[sw.blockAt-4:], uint32(len(sw.buf)-sw.blockAt))
	if err := sw.write(sw.buf); err != nil {
		return err
	}
	sw.buf = sw.buf[:0]
	sw.startBlock()
	return nil
}

func (sw *SegmentWriter) write(b []byte) error {
	sw.h.Write(b)
	if _, err := sw.w.Write(b); err != nil {
		sw.err = err
		return err
	}
	sw.n += int64(len(b))
	return nil
}

// Close writes the last block and the end marker and returns the
// segment's id, length and row count. It does not close the io.Writer.
func (sw *SegmentWriter) Close() (SegmentInfo, error) {
	if sw.err != nil {
		return SegmentInfo{}, sw.err
	}
	if sw.closed {
		return SegmentInfo{}, encodeErrorf("the segment writer is closed")
	}
	if err := sw.flushBlock(); err != nil {
		return SegmentInfo{}, err
	}
	sw.buf = sw.buf[:sw.blockAt-8] // drop the empty block's prefix
	sw.buf = append(sw.buf, 0, 0, 0, 0)
	if err := sw.write(sw.buf); err != nil {
		return SegmentInfo{}, err
	}
	sw.closed = true
	var sum [sha256.Size]byte
	return SegmentInfo{ID: "sha256:" + hex.EncodeToString(sw.h.Sum(sum[:0])), ByteLength: sw.n, RowCount: sw.count}, nil
}

// SegmentID returns the segmentId of segment bytes b (§5.1).
func SegmentID(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Segment is a decoded rows segment.
type Segment struct {
	Table         string
	SchemaVersion int32
	// Columns is the column table (Name, Type, Nullable).
	Columns []Column
	// Blocks are the row blocks in order, each non-empty.
	Blocks [][]SegmentRow
}

// SegmentRow is one row record.
type SegmentRow struct {
	// ServerVersion is ≥ 1.
	ServerVersion int64
	// Values are the row's values in column order (RowCodec's Go types).
	Values []any
}

// DecodeSegment decodes b as one rows segment with every structural check
// of §5.2: magic, format version 1, zero flags, column flag bits 1–7
// zero, column type tags 1–8, blocks whose rows consume exactly their
// byteLength, serverVersion ≥ 1, each row valid for the column table
// (RowCodec.Validate), the end marker, nothing after it. A violation is an
// *Error with CodeInvalidRequest. Comparing the column table with the
// receiver's schema (CodeSchemaMismatch) is MatchColumns'. []byte values
// alias b.
func DecodeSegment(b []byte) (*Segment, error) {
	s := &Segment{}
	if err := readSegment(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

// ValidateSegment checks b as DecodeSegment does without building values
// (the structural check of an inline segment, §5.7).
func ValidateSegment(b []byte) error {
	if err := validateSegment(b); err != nil {
		return err
	}
	return nil
}

func validateSegment(b []byte) *Error { return readSegment(b, nil) }

// readSegment reads b, filling s when non-nil.
func readSegment(b []byte, s *Segment) *Error {
	r := reader{b: b, what: "rows segment"}
	magic := r.take(4, "magic")
	if r.err == nil && string(magic) != SegmentMagic {
		r.failf("bad magic")
	}
	if v := r.u16("formatVersion"); r.err == nil && v != SegmentFormatVersion {
		r.failf("unsupported format version %d", v)
	}
	if f := r.u16("flags"); r.err == nil && f != 0 {
		r.failf("non-zero flags")
	}
	table := r.str("table")
	schemaVersion := r.i32("schemaVersion")
	nc := int(r.u16("column count"))
	if r.err == nil && nc*6 > r.remaining() {
		r.failf("the column count exceeds the bytes left")
	}
	if r.err != nil {
		return r.err
	}
	cols := make([]Column, nc)
	for i := range cols {
		cols[i].Name = r.str("column name")
		t := ColumnType(r.u8("column type"))
		flags := r.u8("column flags")
		if r.err != nil {
			return r.err
		}
		if !t.Valid() {
			r.failf("column %d has unknown type tag %d", i, t)
			return r.err
		}
		if flags&^1 != 0 {
			r.failf("column %d has reserved flag bits set", i)
			return r.err
		}
		cols[i].Type, cols[i].Nullable = t, flags == 1
	}
	codec := newRowCodec(cols)
	if s != nil {
		s.Table, s.SchemaVersion, s.Columns = table, schemaVersion, cols
	}
	for block := 0; ; block++ {
		if r.remaining() < 4 {
			r.failf("truncated: no end marker")
			return r.err
		}
		rowCount := r.u32("block rowCount")
		if rowCount == 0 {
			if r.remaining() != 0 {
				r.failf("%d bytes after the end marker", r.remaining())
				return r.err
			}
			return nil
		}
		n := r.u32("block byteLength")
		if r.err == nil && uint64(n) > uint64(r.remaining()) {
			r.failf("block %d declares %d bytes, %d are left", block, n, r.remaining())
		}
		if r.err == nil && uint64(rowCount)*9 > uint64(n) {
			r.failf("block %d declares more rows than its bytes can hold", block)
		}
		if r.err != nil {
			return r.err
		}
		blockAt := r.off
		br := reader{b: r.take(int(n), "block rows"), base: blockAt, what: "rows segment block " + itoa(block)}
		var rows []SegmentRow
		if s != nil {
			rows = make([]SegmentRow, 0, rowCount)
		}
		for i := uint32(0); i < rowCount; i++ {
			sv := br.i64("row serverVersion")
			if br.err == nil && sv < 1 {
				br.failf("row %d serverVersion is below 1", i)
			}
			if br.err != nil {
				return br.err
			}
			var vals []any
			if s != nil {
				vals = codec.read(&br, make([]any, 0, nc), true)
			} else {
				codec.read(&br, nil, false)
			}
			if br.err != nil {
				// "rows segment block B: …" → "rows segment block B row I: …"
				if p := br.what + ": "; strings.HasPrefix(br.err.Message, p) {
					br.err.Message = br.what + " row " + itoa(int(i)) + ": " + br.err.Message[len(p):]
				}
				return br.err
			}
			if s != nil {
				rows = append(rows, SegmentRow{ServerVersion: sv, Values: vals})
			}
		}
		if br.remaining() != 0 {
			br.failf("rows do not consume exactly the block's byteLength (%d bytes left)", br.remaining())
			return br.err
		}
		if s != nil {
			s.Blocks = append(s.Blocks, rows)
		}
	}
}

// Encode returns s's bytes; see AppendEncode.
func (s *Segment) Encode() ([]byte, error) { return s.AppendEncode(nil) }

// AppendEncode appends s's canonical bytes to dst with its block layout as
// it is (each block non-empty, rows checked as RowCodec.AppendValues
// checks). Encoding a decoded segment reproduces its bytes.
func (s *Segment) AppendEncode(dst []byte) ([]byte, error) {
	codec, err := NewRowCodec(s.Columns)
	if err != nil {
		// A decoded column table may repeat names; encoding it is still
		// well defined.
		for _, c := range s.Columns {
			if !c.Type.Valid() {
				return dst, err
			}
		}
		codec = newRowCodec(s.Columns)
	}
	if len(s.Columns) > math.MaxUint16 || !utf8.ValidString(s.Table) {
		return dst, encodeErrorf("segment table name or column count cannot be encoded")
	}
	for _, c := range s.Columns {
		if !utf8.ValidString(c.Name) {
			return dst, encodeErrorf("a segment column name is not valid UTF-8")
		}
	}
	start := len(dst)
	dst = appendSegmentHeader(dst, s.Table, s.SchemaVersion, s.Columns)
	for bi, block := range s.Blocks {
		if len(block) == 0 {
			return dst[:start], encodeErrorf("segment block %d is empty", bi)
		}
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
		for _, row := range block {
			if row.ServerVersion < 1 || row.ServerVersion > MaxSafeInt {
				return dst[:start], encodeErrorf("segment block %d has a serverVersion outside [1, 2^53-1]", bi)
			}
			dst = binary.LittleEndian.AppendUint64(dst, uint64(row.ServerVersion))
			if dst, err = codec.AppendValues(dst, row.Values); err != nil {
				return dst[:start], err
			}
		}
		binary.LittleEndian.PutUint32(dst[at:], uint32(len(block)))
		binary.LittleEndian.PutUint32(dst[at+4:], uint32(len(dst)-at-8))
	}
	return append(dst, 0, 0, 0, 0), nil
}

// MatchColumns compares the segment's column table with the receiver's
// generated columns for (table, schema version): same count, and per
// position the same name, type and nullability (§5.2). A difference is an
// *Error with CodeSchemaMismatch.
func (s *Segment) MatchColumns(table string, schemaVersion int32, cols []Column) error {
	if s.Table != table || s.SchemaVersion != schemaVersion {
		return &Error{Code: CodeSchemaMismatch, Message: "rows segment is for another table or schema version"}
	}
	if len(s.Columns) != len(cols) {
		return &Error{Code: CodeSchemaMismatch, Message: "rows segment column count differs from the schema"}
	}
	for i, c := range s.Columns {
		if c.Name != cols[i].Name || c.Type != cols[i].Type || c.Nullable != cols[i].Nullable {
			return &Error{Code: CodeSchemaMismatch, Message: "rows segment column " + itoa(i) + " differs from the schema"}
		}
	}
	return nil
}
