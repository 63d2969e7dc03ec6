package sqlitesql

import (
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
)

// ToSQL converts a row value of column type t into the value bound for
// it: string and json → string, integer → int64, float → float64 (stored
// bit-exact, see ColumnSQLType), boolean → int64 0/1, bytes → []byte
// (a non-nil empty slice stays an empty blob), nil → NULL. A value of the
// wrong Go type fails with CodeInvalidValue naming the column, never the
// value (V-3, V-10); sync has normally rejected it already.
func ToSQL(col string, t driver.ColumnType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func() (any, error) {
		return nil, &driver.Error{Code: driver.CodeInvalidValue, Column: col, OpIndex: -1,
			Message: fmt.Sprintf("value of column %s is a %T, want %s (V-3)", col, v, t)}
	}
	switch t {
	case driver.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
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
	case driver.TypeJSON:
		if j, ok := v.(driver.JSON); ok {
			return string(j), nil
		}
	case driver.TypeBytes:
		if b, ok := v.([]byte); ok {
			if b == nil {
				return nil, nil
			}
			return b, nil
		}
	}
	return bad()
}

// FromSQL converts what the engine returned for a column of type t back
// into the row value (VAL-1). isNull tells NULL from an empty blob for
// bytes columns (the engine reports both as no bytes).
func FromSQL(col string, t driver.ColumnType, v any, isNull bool) (any, error) {
	if t == driver.TypeBytes {
		if isNull {
			return nil, nil
		}
		switch b := v.(type) {
		case []byte:
			if b == nil {
				return []byte{}, nil
			}
			return b, nil
		case string:
			return []byte(b), nil
		case nil:
			return []byte{}, nil
		}
		return nil, Undecodable(col, t, v)
	}
	if v == nil {
		return nil, nil
	}
	switch t {
	case driver.TypeString, driver.TypeJSON:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			return nil, Undecodable(col, t, v)
		}
		if t == driver.TypeJSON {
			return driver.JSON(s), nil
		}
		return s, nil
	case driver.TypeInteger:
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case driver.TypeFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
	case driver.TypeBoolean:
		if i, ok := v.(int64); ok {
			return i != 0, nil
		}
	}
	return nil, Undecodable(col, t, v)
}

// Undecodable is the CodeInternal error for a stored value of column col
// that does not decode as its schema type t.
func Undecodable(col string, t driver.ColumnType, v any) error {
	return driver.Errorf(driver.CodeInternal, "stored value of column %s is a %T, not a %s", col, v, t)
}

// UpsertArgs returns the arguments of Upsert for row in partition.
func (x *Table) UpsertArgs(partition string, row driver.Row) ([]any, error) {
	args := make([]any, 0, 2+len(x.Def.Columns))
	args = append(args, partition, row.ServerVersion)
	for _, c := range x.Def.Columns {
		v, err := ToSQL(c.Name, c.Type, row.Values[c.Name])
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return args, nil
}

// ScanDest returns Width() destinations for (*sql.Rows).Scan; pass them to
// DecodeRow afterwards.
func (x *Table) ScanDest() []any {
	dest := make([]any, x.Width())
	for i := range dest {
		dest[i] = new(any)
	}
	return dest
}

// DecodeRow builds a row from destinations filled by Scan (SelectList
// order): values typed through the schema, scopes from the scope columns.
func (x *Table) DecodeRow(dest []any) (driver.Row, error) {
	t := x.Def
	get := func(i int) any { return *(dest[i].(*any)) }
	ver, ok := get(0).(int64)
	if !ok {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "stored row version of table %s is not an integer", t.Name)
	}
	row := driver.Row{ServerVersion: ver, Values: make(driver.Values, len(t.Columns)), Scopes: make(driver.Scopes, len(t.Scopes))}
	nb := 0
	for i, c := range t.Columns {
		isNull := false
		if c.Type == driver.TypeBytes {
			isNull = truthy(get(1 + len(t.Columns) + nb))
			nb++
		}
		v, err := FromSQL(c.Name, c.Type, get(1+i), isNull)
		if err != nil {
			return driver.Row{}, err
		}
		row.Values[c.Name] = v
	}
	row.ID, _ = row.Values[t.PrimaryKey].(string)
	for _, s := range t.Scopes {
		sv, _ := row.Values[s.Column].(string)
		row.Scopes[s.Variable] = sv
	}
	return row, nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case int64:
		return x != 0
	case bool:
		return x
	}
	return false
}
