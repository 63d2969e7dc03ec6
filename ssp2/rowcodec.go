package ssp2

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// ColumnType is a §2.4 column type; its value is the wire tag.
type ColumnType uint8

// The column types. Blob_ref is encoded as json and crdt as bytes; the
// tags let schema and apply surfaces tell them apart.
const (
	TypeString  ColumnType = 1
	TypeInteger ColumnType = 2
	TypeFloat   ColumnType = 3
	TypeBoolean ColumnType = 4
	TypeJSON    ColumnType = 5
	TypeBytes   ColumnType = 6
	TypeBlobRef ColumnType = 7
	TypeCRDT    ColumnType = 8
)

var columnTypeNames = [...]string{"", "string", "integer", "float", "boolean", "json", "bytes", "blob_ref", "crdt"}

// Valid reports whether t is one of the eight types.
func (t ColumnType) Valid() bool { return t >= TypeString && t <= TypeCRDT }

// String returns the type's name ("blob_ref").
func (t ColumnType) String() string {
	if t.Valid() {
		return columnTypeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// ParseColumnType returns the type named name ("string" … "crdt").
func ParseColumnType(name string) (ColumnType, bool) {
	for t := TypeString; t <= TypeCRDT; t++ {
		if columnTypeNames[t] == name {
			return t, true
		}
	}
	return 0, false
}

// MarshalText writes the type's name.
func (t ColumnType) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, encodeErrorf("column type %d", t)
	}
	return []byte(columnTypeNames[t]), nil
}

// UnmarshalText reads a type name.
func (t *ColumnType) UnmarshalText(b []byte) error {
	v, ok := ParseColumnType(string(b))
	if !ok {
		return invalidf("unknown column type name")
	}
	*t = v
	return nil
}

// DriverType returns the engine's column type storing t: blob_ref is
// stored as json, crdt as bytes.
func (t ColumnType) DriverType() driver.ColumnType {
	switch t {
	case TypeString:
		return driver.TypeString
	case TypeInteger:
		return driver.TypeInteger
	case TypeFloat:
		return driver.TypeFloat
	case TypeBoolean:
		return driver.TypeBoolean
	case TypeJSON, TypeBlobRef:
		return driver.TypeJSON
	case TypeBytes, TypeCRDT:
		return driver.TypeBytes
	}
	return ""
}

// Column is a schema-IR column (§2.4), in the JSON shape of upstream's
// DriverColumn. The row codec and the SSG2 column table use Name, Type
// and Nullable; the rest is IR metadata, never on the wire.
type Column struct {
	Name     string     `json:"name"`
	Type     ColumnType `json:"type"`
	Nullable bool       `json:"nullable"`
	// CRDTType names the server merger of a crdt column (§5.10.1).
	CRDTType string `json:"crdtType,omitempty"`
	// Encrypted marks a client-side encrypted column (§5.11): its Type is
	// bytes and DeclaredType the application's type.
	Encrypted    bool       `json:"encrypted,omitempty"`
	DeclaredType ColumnType `json:"declaredType,omitempty"`
}

// RowCodec is the positional row codec of one table at one schema version
// (§2.4): a null bitmap of ceil(columns/8) bytes (bit i set = column i is
// NULL, LSB first), then each non-NULL value in column order. Build one
// per (table, schema version) with NewRowCodec and share it: it is
// immutable and safe for concurrent use.
//
// Values are the engine's Go types (driver.Values):
//
//	string   string      integer  int64 (within ±MaxSafeInt)
//	float    float64     boolean  bool
//	json     driver.JSON blob_ref driver.JSON (a §5.9.1 BlobRef document)
//	bytes    []byte      crdt     []byte (opaque)
//	NULL     nil (an untyped nil)
//
// As in the engine, a []byte(nil) is refused rather than read as NULL or
// empty; decoded bytes values are never nil ([]byte{} when empty).
//
// A float carries any IEEE-754 bit pattern: -0.0 and NaN payloads
// round-trip exactly (the engine itself refuses NaN and ±Inf on push).
type RowCodec struct {
	cols      []Column
	bitmapLen int
	index     map[string]int
}

// NewRowCodec compiles the codec of cols, in declaration order (the wire
// order). It fails with ErrEncode for a column of an unknown type, an
// empty name, or a name used twice.
func NewRowCodec(cols []Column) (*RowCodec, error) {
	c := newRowCodec(cols)
	c.index = make(map[string]int, len(cols))
	for i, col := range c.cols {
		if !col.Type.Valid() {
			return nil, encodeErrorf("column %d has an unknown type", i)
		}
		if col.Name == "" || !utf8.ValidString(col.Name) {
			return nil, encodeErrorf("column %d has an empty or non-UTF-8 name", i)
		}
		if _, dup := c.index[col.Name]; dup {
			return nil, encodeErrorf("column %d repeats a name", i)
		}
		c.index[col.Name] = i
	}
	return c, nil
}

// newRowCodec is the codec of a decoded SSG2 column table, which may
// repeat names (only a receiver's schema check refuses that).
func newRowCodec(cols []Column) *RowCodec {
	return &RowCodec{cols: append([]Column(nil), cols...), bitmapLen: (len(cols) + 7) / 8}
}

// Columns returns the codec's columns (a copy).
func (c *RowCodec) Columns() []Column { return append([]Column(nil), c.cols...) }

// Len returns the number of columns.
func (c *RowCodec) Len() int { return len(c.cols) }

// Validate checks that payload is exactly one row of this codec, with
// every §2.4 decode check, without building values: the bitmap's length
// and zero padding bits, no NULL in a non-nullable column, bool bytes,
// UTF-8 strings, i64 within ±(2^53−1), json values that are JSON
// documents, blob_ref values of the §5.9.1 shape, and no byte left over.
// A violation is an *Error with CodeInvalidRequest naming the column
// (never its value).
func (c *RowCodec) Validate(payload []byte) error {
	r := reader{b: payload, what: "row"}
	c.read(&r, nil, false)
	r.end()
	if r.err != nil {
		return r.err
	}
	return nil
}

// Decode decodes payload (exactly one row, checked as Validate does) into
// a new driver.Values keyed by column name, ready for sync.PushOp.Values.
// Strings are copied; []byte values alias payload.
func (c *RowCodec) Decode(payload []byte) (driver.Values, error) {
	vals, err := c.DecodeValues(make([]any, 0, len(c.cols)), payload)
	if err != nil {
		return nil, err
	}
	m := make(driver.Values, len(c.cols))
	for i, col := range c.cols {
		m[col.Name] = vals[i]
	}
	return m, nil
}

// DecodeValues decodes payload (checked as Validate does) and appends its
// values to dst in column order.
func (c *RowCodec) DecodeValues(dst []any, payload []byte) ([]any, error) {
	r := reader{b: payload, what: "row"}
	start := len(dst)
	dst = c.read(&r, dst, true)
	r.end()
	if r.err != nil {
		return dst[:start], r.err
	}
	return dst, nil
}

// read reads one row from r, appending its values to dst when build.
func (c *RowCodec) read(r *reader, dst []any, build bool) []any {
	bitmap := r.take(c.bitmapLen, "null bitmap")
	if r.err != nil {
		return dst
	}
	if pad := len(c.cols) % 8; pad != 0 && bitmap[len(bitmap)-1]>>pad != 0 {
		r.failf("null bitmap padding bits are set")
		return dst
	}
	for i := range c.cols {
		col := &c.cols[i]
		r.col = i + 1
		if bitmap[i>>3]>>(i&7)&1 != 0 {
			if !col.Nullable {
				r.failf("NULL and not nullable")
				return dst
			}
			if build {
				dst = append(dst, nil)
			}
			continue
		}
		switch col.Type {
		case TypeString:
			b := r.strBytes("string column")
			if build && r.err == nil {
				dst = append(dst, string(b))
			}
		case TypeInteger:
			v := r.i64("integer column")
			if build && r.err == nil {
				dst = append(dst, v)
			}
		case TypeFloat:
			v := r.f64("float column")
			if build && r.err == nil {
				dst = append(dst, v)
			}
		case TypeBoolean:
			v := r.bool("boolean column")
			if build && r.err == nil {
				dst = append(dst, v)
			}
		case TypeJSON:
			b := r.strBytes("json column")
			if r.err == nil && !validJSON(b) {
				r.failf("json value is not a JSON document")
			}
			if build && r.err == nil {
				dst = append(dst, driver.JSON(b))
			}
		case TypeBlobRef:
			b := r.strBytes("blob_ref column")
			if r.err == nil {
				if _, err := parseBlobRef(b); err != nil {
					r.failf("%s", err.Message)
				}
			}
			if build && r.err == nil {
				dst = append(dst, driver.JSON(b))
			}
		case TypeBytes, TypeCRDT:
			b := r.bytes("bytes column")
			if build && r.err == nil {
				if b == nil {
					b = []byte{}
				}
				dst = append(dst, b)
			}
		}
		if r.err != nil {
			return dst
		}
	}
	r.col = 0
	return dst
}

// Append appends the encoding of row v (every column present, no other
// key) to dst. It fails with ErrEncode, naming the column and never the
// value, for a missing or extra column, a value of the wrong Go type (a
// []byte(nil) included), NULL in a non-nullable column, a string that is
// not UTF-8, an integer outside ±MaxSafeInt, a json value that is not a
// JSON document, or a blob_ref value that is not a §5.9.1 BlobRef. On
// failure dst is returned unchanged in length.
func (c *RowCodec) Append(dst []byte, v driver.Values) ([]byte, error) {
	if len(v) != len(c.cols) {
		return dst, encodeErrorf("row has %d values for %d columns", len(v), len(c.cols))
	}
	start := len(dst)
	dst = c.appendBitmap(dst)
	for i := range c.cols {
		x, ok := v[c.cols[i].Name]
		if !ok {
			return dst[:start], encodeErrorf("row has no value for column %d", i)
		}
		var err error
		if dst, err = c.appendValue(dst, start, i, x); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// AppendValues appends the encoding of vals, one per column in order
// (checked as Append checks).
func (c *RowCodec) AppendValues(dst []byte, vals []any) ([]byte, error) {
	if len(vals) != len(c.cols) {
		return dst, encodeErrorf("row has %d values for %d columns", len(vals), len(c.cols))
	}
	start := len(dst)
	dst = c.appendBitmap(dst)
	for i, x := range vals {
		var err error
		if dst, err = c.appendValue(dst, start, i, x); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

func (c *RowCodec) appendBitmap(dst []byte) []byte {
	for range c.bitmapLen {
		dst = append(dst, 0)
	}
	return dst
}

// appendValue appends column i's value x, or sets its NULL bit in the
// bitmap at dst[start:].
func (c *RowCodec) appendValue(dst []byte, start, i int, x any) ([]byte, error) {
	col := &c.cols[i]
	if b, isBytes := x.([]byte); isBytes && b == nil {
		return dst, encodeErrorf("column %d holds a nil []byte, which is neither NULL (nil) nor empty ([]byte{})", i)
	}
	if x == nil {
		if !col.Nullable {
			return dst, encodeErrorf("column %d is NULL and not nullable", i)
		}
		dst[start+(i>>3)] |= 1 << (i & 7)
		return dst, nil
	}
	switch col.Type {
	case TypeString:
		if s, ok := x.(string); ok {
			if !utf8.ValidString(s) {
				return dst, encodeErrorf("column %d (string) is not valid UTF-8", i)
			}
			return appendLenString(dst, s), nil
		}
	case TypeInteger:
		if n, ok := x.(int64); ok {
			if n > MaxSafeInt || n < -MaxSafeInt {
				return dst, encodeErrorf("column %d (integer) is outside ±(2^53-1)", i)
			}
			return binary.LittleEndian.AppendUint64(dst, uint64(n)), nil
		}
	case TypeFloat:
		if f, ok := x.(float64); ok {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case TypeBoolean:
		if b, ok := x.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case TypeJSON, TypeBlobRef:
		if j, ok := x.(driver.JSON); ok {
			if !utf8.ValidString(string(j)) || !validJSON([]byte(j)) {
				return dst, encodeErrorf("column %d (%s) is not a JSON document", i, col.Type)
			}
			if col.Type == TypeBlobRef {
				if _, err := parseBlobRef([]byte(j)); err != nil {
					return dst, encodeErrorf("column %d (blob_ref): %s", i, err.Message)
				}
			}
			return appendLenString(dst, string(j)), nil
		}
	case TypeBytes, TypeCRDT:
		if b, ok := x.([]byte); ok {
			if uint64(len(b)) > math.MaxUint32 {
				return dst, encodeErrorf("column %d (%s) is longer than 2^32-1 bytes", i, col.Type)
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
			return append(dst, b...), nil
		}
	}
	return dst, encodeErrorf("column %d (%s) holds a %T", i, col.Type, x)
}

func appendLenString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}
