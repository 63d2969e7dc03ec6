package mysql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowcodec"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// toSQL converts a row value of column c into the value bound for it:
// string and json → string, integer → int64, float → float64 (sent as an
// 8-byte DOUBLE: bit-exact), boolean → int64 0/1, bytes → []byte (a
// non-nil empty slice stays an empty blob), nil → NULL. A value of the
// wrong Go type, or longer than a keyed column allows, fails with
// CodeInvalidValue naming the column, never the value (V-3, V-10).
func toSQL(c driver.Column, keyed bool, v any) (any, error) {
	b, err := rowcodec.Bind(c.Name, c.Type, v, true)
	if err != nil || !keyed {
		return b, err
	}
	switch x := b.(type) {
	case string: // string and json
		if len(x) > keyedWidth && utf8.RuneCountInString(x) > keyedWidth {
			return nil, rowcodec.InvalidValue(c.Name, fmt.Sprintf("is longer than %d characters, the MySQL limit of a key column (see docs/mysql.md)", keyedWidth))
		}
	case []byte:
		if len(x) > keyedWidth {
			return nil, rowcodec.InvalidValue(c.Name, fmt.Sprintf("is longer than %d bytes, the MySQL limit of a key column (see docs/mysql.md)", keyedWidth))
		}
	}
	return b, nil
}

// fromSQL converts what the engine returned for a column of type t back
// into the row value (VAL-1). The binary protocol returns BIGINT and
// TINYINT as int64, DOUBLE as float64, text and blobs as []byte and NULL
// as nil; the text forms are accepted too.
func fromSQL(col string, t driver.ColumnType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case driver.TypeBytes:
		return rowcodec.DecodeBytes(col, v)
	case driver.TypeString, driver.TypeJSON:
		return rowcodec.DecodeText(col, t, v)
	case driver.TypeInteger, driver.TypeBoolean:
		var i int64
		switch x := v.(type) {
		case int64:
			i = x
		case []byte:
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return nil, rowcodec.Undecodable(col, t, v)
			}
			i = n
		default:
			return nil, rowcodec.Undecodable(col, t, v)
		}
		if t == driver.TypeBoolean {
			return i != 0, nil
		}
		return i, nil
	case driver.TypeFloat:
		return rowcodec.DecodeFloat(col, v)
	}
	return nil, rowcodec.Undecodable(col, t, v)
}

// insertArgs returns the arguments of x.insert / x.upsert for row.
func (x *table) insertArgs(partition string, row driver.Row) ([]any, error) {
	args := make([]any, 0, 3+len(x.def.Columns))
	args = append(args, partition, row.ServerVersion, nil)
	var negZero []string
	for i, c := range x.def.Columns {
		v, err := toSQL(c, x.keyed[c.Name], row.Values[c.Name])
		if err != nil {
			return nil, err
		}
		if f, ok := v.(float64); ok && f == 0 && math.Signbit(f) {
			negZero = append(negZero, strconv.Itoa(i))
		}
		args = append(args, v)
	}
	if negZero != nil {
		args[2] = strings.Join(negZero, ",")
	}
	return args, nil
}

// updateArgs returns the arguments of x.update from insertArgs' result.
func (x *table) updateArgs(ins []any) []any {
	args := make([]any, 0, len(ins))
	args = append(args, ins[1], ins[2])
	var id any
	for i, c := range x.def.Columns {
		if c.Name == x.def.PrimaryKey {
			id = ins[3+i]
			continue
		}
		args = append(args, ins[3+i])
	}
	return append(args, ins[0], id)
}

// guardedUpdateArgs returns the arguments of x.guardedUpdate from
// insertArgs' result: updateArgs', the base version, then the scope
// columns' new values (the guard that the row's scopes do not change).
func (x *table) guardedUpdateArgs(ins []any, base int64) []any {
	args := append(x.updateArgs(ins), base)
	for _, i := range x.guardCols {
		args = append(args, ins[i])
	}
	return args
}

// scanDest returns destinations for (*sql.Rows).Scan of x.sel.
func (x *table) scanDest() []any {
	return sqlrows.AnyDest(2 + len(x.def.Columns))
}

// decodeRow builds a row from destinations filled by Scan: values typed
// through the schema, scopes from the scope columns.
func (x *table) decodeRow(dest []any) (driver.Row, error) {
	t := x.def
	get := func(i int) any { return sqlrows.Scanned(dest, i) }
	ver, err := fromSQL(versionColumn, driver.TypeInteger, get(0))
	if err != nil {
		return driver.Row{}, err
	}
	row := rowcodec.NewRow(t, ver.(int64))
	for i, c := range t.Columns {
		v, err := fromSQL(c.Name, c.Type, get(2+i))
		if err != nil {
			return driver.Row{}, err
		}
		row.Values[c.Name] = v
	}
	if nz, ok := get(1).([]byte); ok && len(nz) > 0 {
		for _, pos := range strings.Split(string(nz), ",") {
			i, err := strconv.Atoi(pos)
			if err != nil || i < 0 || i >= len(t.Columns) || t.Columns[i].Type != driver.TypeFloat {
				return driver.Row{}, driver.Errorf(driver.CodeInternal, "stored -0.0 marks of table %s are malformed", t.Name)
			}
			if f, ok := row.Values[t.Columns[i].Name].(float64); ok && f == 0 {
				row.Values[t.Columns[i].Name] = math.Copysign(0, -1)
			}
		}
	}
	rowcodec.SetKeys(&row, t)
	return row, nil
}
