package mysql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// toSQL converts a row value of column c into the value bound for it:
// string and json → string, integer → int64, float → float64 (sent as an
// 8-byte DOUBLE: bit-exact), boolean → int64 0/1, bytes → []byte (a
// non-nil empty slice stays an empty blob), nil → NULL. A value of the
// wrong Go type, or longer than a keyed column allows, fails with
// CodeInvalidValue naming the column, never the value (V-3, V-10).
func toSQL(c driver.Column, keyed bool, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func(why string) (any, error) {
		return nil, &driver.Error{Code: driver.CodeInvalidValue, Column: c.Name, OpIndex: -1,
			Message: fmt.Sprintf("value of column %s %s", c.Name, why)}
	}
	wrong := func() (any, error) { return bad(fmt.Sprintf("is a %T, want %s (V-3)", v, c.Type)) }
	tooLong := func() (any, error) {
		return bad(fmt.Sprintf("is longer than %d characters, the MySQL limit of a key column (see docs/mysql.md)", keyedWidth))
	}
	switch c.Type {
	case driver.TypeString:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		if keyed && len(s) > keyedWidth && utf8.RuneCountInString(s) > keyedWidth {
			return tooLong()
		}
		return s, nil
	case driver.TypeJSON:
		j, ok := v.(driver.JSON)
		if !ok {
			return wrong()
		}
		if keyed && len(j) > keyedWidth && utf8.RuneCountInString(string(j)) > keyedWidth {
			return tooLong()
		}
		return string(j), nil
	case driver.TypeInteger:
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case driver.TypeFloat:
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
	case driver.TypeBoolean:
		if b, ok := v.(bool); ok {
			if b {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case driver.TypeBytes:
		b, ok := v.([]byte)
		if !ok {
			return wrong()
		}
		if b == nil {
			return nil, nil
		}
		if keyed && len(b) > keyedWidth {
			return bad(fmt.Sprintf("is longer than %d bytes, the MySQL limit of a key column (see docs/mysql.md)", keyedWidth))
		}
		return b, nil
	}
	return wrong()
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
		switch b := v.(type) {
		case []byte:
			if b == nil {
				return []byte{}, nil
			}
			return b, nil
		case string:
			return []byte(b), nil
		}
	case driver.TypeString, driver.TypeJSON:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			return nil, undecodable(col, t, v)
		}
		if t == driver.TypeJSON {
			return driver.JSON(s), nil
		}
		return s, nil
	case driver.TypeInteger, driver.TypeBoolean:
		var i int64
		switch x := v.(type) {
		case int64:
			i = x
		case []byte:
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return nil, undecodable(col, t, v)
			}
			i = n
		default:
			return nil, undecodable(col, t, v)
		}
		if t == driver.TypeBoolean {
			return i != 0, nil
		}
		return i, nil
	case driver.TypeFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	}
	return nil, undecodable(col, t, v)
}

func undecodable(col string, t driver.ColumnType, v any) error {
	return driver.Errorf(driver.CodeInternal, "stored value of column %s is a %T, not a %s", col, v, t)
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

// scanDest returns destinations for (*sql.Rows).Scan of x.sel.
func (x *table) scanDest() []any {
	dest := make([]any, 2+len(x.def.Columns))
	for i := range dest {
		dest[i] = new(any)
	}
	return dest
}

// decodeRow builds a row from destinations filled by Scan: values typed
// through the schema, scopes from the scope columns.
func (x *table) decodeRow(dest []any) (driver.Row, error) {
	t := x.def
	get := func(i int) any { return *(dest[i].(*any)) }
	ver, err := fromSQL(versionColumn, driver.TypeInteger, get(0))
	if err != nil {
		return driver.Row{}, err
	}
	row := driver.Row{ServerVersion: ver.(int64), Values: make(driver.Values, len(t.Columns)), Scopes: make(driver.Scopes, len(t.Scopes))}
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
	row.ID, _ = row.Values[t.PrimaryKey].(string)
	for _, s := range t.Scopes {
		sv, _ := row.Values[s.Column].(string)
		row.Scopes[s.Variable] = sv
	}
	return row, nil
}
