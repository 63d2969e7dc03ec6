package sqlitesql

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowcodec"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// ToSQL converts a row value of column type t into the value bound for
// it: string and json → string, integer → int64, float → float64 (stored
// bit-exact, see ColumnSQLType), boolean → int64 0/1, bytes → []byte
// (a non-nil empty slice stays an empty blob), nil → NULL. A value of the
// wrong Go type fails with CodeInvalidValue naming the column, never the
// value (V-3, V-10); sync has normally rejected it already.
func ToSQL(col string, t driver.ColumnType, v any) (any, error) {
	return rowcodec.Bind(col, t, v, true)
}

// FromSQL converts what the engine returned for a column of type t back
// into the row value (VAL-1). isNull tells NULL from an empty blob for
// bytes columns (the engine reports both as no bytes).
func FromSQL(col string, t driver.ColumnType, v any, isNull bool) (any, error) {
	if t == driver.TypeBytes {
		if isNull {
			return nil, nil
		}
		return rowcodec.DecodeBytes(col, v)
	}
	if v == nil {
		return nil, nil
	}
	switch t {
	case driver.TypeString, driver.TypeJSON:
		return rowcodec.DecodeText(col, t, v)
	case driver.TypeInteger:
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case driver.TypeFloat:
		return rowcodec.DecodeFloat(col, v)
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
	return rowcodec.Undecodable(col, t, v)
}

// UpsertArgs returns the arguments of Upsert for row in partition.
func (x *Table) UpsertArgs(partition string, row driver.Row) ([]any, error) {
	return rowcodec.Args(partition, row, x.Def.Columns, true)
}

// ScanDest returns Width() destinations for (*sql.Rows).Scan; pass them to
// DecodeRow afterwards.
func (x *Table) ScanDest() []any {
	return sqlrows.AnyDest(x.Width())
}

// DecodeRow builds a row from destinations filled by Scan (SelectList
// order): values typed through the schema, scopes from the scope columns.
func (x *Table) DecodeRow(dest []any) (driver.Row, error) {
	t := x.Def
	get := func(i int) any { return sqlrows.Scanned(dest, i) }
	ver, ok := get(0).(int64)
	if !ok {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "stored row version of table %s is not an integer", t.Name)
	}
	row := rowcodec.NewRow(t, ver)
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
	rowcodec.SetKeys(&row, t)
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
