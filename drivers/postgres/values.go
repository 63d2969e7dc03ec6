package postgres

import (
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// toSQL converts a row value of column type t into the value bound for it
// (pgx encodes each in the binary format of its column: int8, float8 bit
// for bit, bool, bytea, text). A non-nil empty []byte stays an empty
// bytea; nil is NULL. A value of the wrong Go type fails with
// CodeInvalidValue naming the column, never the value (V-3, V-10).
func toSQL(col string, t driver.ColumnType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	ok := false
	switch t {
	case driver.TypeString:
		_, ok = v.(string)
	case driver.TypeInteger:
		_, ok = v.(int64)
	case driver.TypeFloat:
		f, isF := v.(float64)
		ok = isF && !math.IsNaN(f) && !math.IsInf(f, 0)
	case driver.TypeBoolean:
		_, ok = v.(bool)
	case driver.TypeJSON:
		if j, isJ := v.(driver.JSON); isJ {
			return string(j), nil
		}
	case driver.TypeBytes:
		if b, isB := v.([]byte); isB {
			if b == nil {
				return nil, nil
			}
			return b, nil
		}
	}
	if !ok {
		return nil, &driver.Error{Code: driver.CodeInvalidValue, Column: col, OpIndex: -1,
			Message: fmt.Sprintf("value of column %s is a %T, want %s (V-3)", col, v, t)}
	}
	return v, nil
}

// fromSQL converts what pgx decoded for a column of type t (null reports
// SQL NULL) back into the row value (VAL-1).
func fromSQL(col string, t driver.ColumnType, v any, null bool) (any, error) {
	if null {
		return nil, nil
	}
	switch t {
	case driver.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case driver.TypeJSON:
		if s, ok := v.(string); ok {
			return driver.JSON(s), nil
		}
	case driver.TypeInteger:
		if i, ok := v.(int64); ok {
			return i, nil
		}
	case driver.TypeFloat:
		if f, ok := v.(float64); ok {
			return f, nil
		}
	case driver.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case driver.TypeBytes:
		if b, ok := v.([]byte); ok {
			if b == nil {
				b = []byte{}
			}
			return b, nil
		}
	}
	return nil, driver.Errorf(driver.CodeInternal, "stored value of column %s is a %T, not a %s", col, v, t)
}

// upsertArgs returns the arguments of x.upsert for row in partition.
func (x *table) upsertArgs(partition string, row driver.Row) ([]any, error) {
	args := make([]any, 0, 2+len(x.def.Columns))
	args = append(args, partition, row.ServerVersion)
	for _, c := range x.def.Columns {
		v, err := toSQL(c.Name, c.Type, row.Values[c.Name])
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return args, nil
}

// decodeRow builds a row from the current row of rows (selectList order).
func (x *table) decodeRow(rows pgx.Rows) (driver.Row, error) {
	t := x.def
	vals, err := rows.Values()
	if err != nil {
		return driver.Row{}, driver.Wrap(driver.CodeInternal, err, "postgres: decode a row of table %s", t.Name)
	}
	raw := rows.RawValues()
	if len(vals) != 1+len(t.Columns) {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "postgres: table %s returned %d columns", t.Name, len(vals))
	}
	ver, ok := vals[0].(int64)
	if !ok {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "postgres: stored row version of table %s is not an integer", t.Name)
	}
	row := driver.Row{ServerVersion: ver, Values: make(driver.Values, len(t.Columns)), Scopes: make(driver.Scopes, len(t.Scopes))}
	for i, c := range t.Columns {
		v, err := fromSQL(c.Name, c.Type, vals[1+i], raw[1+i] == nil)
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
