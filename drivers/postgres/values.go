package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowcodec"
)

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
	return nil, rowcodec.Undecodable(col, t, v)
}

// upsertArgs returns the arguments of x.upsert for row in partition, each
// value as rowcodec.Bind checks it (V-3, V-10): pgx encodes each in the
// binary format of its column (int8, float8 bit for bit, bool, bytea,
// text); a non-nil empty []byte stays an empty bytea, nil is NULL.
func (x *table) upsertArgs(partition string, row driver.Row) ([]any, error) {
	return rowcodec.Args(partition, row, x.def.Columns, false)
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
	row := rowcodec.NewRow(t, ver)
	for i, c := range t.Columns {
		v, err := fromSQL(c.Name, c.Type, vals[1+i], raw[1+i] == nil)
		if err != nil {
			return driver.Row{}, err
		}
		row.Values[c.Name] = v
	}
	rowcodec.SetKeys(&row, t)
	return row, nil
}
