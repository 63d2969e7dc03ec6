// Package rowcodec is the engine-neutral half of every driver's value
// codec: checking a row value against its column type before it is bound
// (V-3, V-10), the text forms of stored strings, and building a
// driver.Row from decoded values. How each engine stores a type (0/1 for
// booleans, -0.0 marks, bytes NULL flags) stays in its driver.
package rowcodec

import (
	"bytes"
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
)

// Bind checks that v has the Go type of column type t and returns the
// value bound for it: string and json → string, integer → int64, float →
// float64 (NaN and ±Inf refused), boolean → bool, or int64 1/0 when
// boolAsInt, bytes → []byte (a non-nil empty slice stays an empty blob,
// a nil one is NULL), nil → NULL. A value of the wrong Go type fails with
// CodeInvalidValue naming the column, never the value (V-3, V-10).
func Bind(col string, t driver.ColumnType, v any, boolAsInt bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case driver.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case driver.TypeJSON:
		if j, ok := v.(driver.JSON); ok {
			return string(j), nil
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
			if !boolAsInt {
				return b, nil
			}
			if b {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case driver.TypeBytes:
		if b, ok := v.([]byte); ok {
			if b == nil {
				return nil, nil
			}
			return b, nil
		}
	}
	return nil, InvalidValue(col, fmt.Sprintf("is a %T, want %s (V-3)", v, t))
}

// InvalidValue is the CodeInvalidValue error for a value of column col:
// "value of column <col> <why>"; why must not quote the value (V-10).
func InvalidValue(col, why string) error {
	return &driver.Error{Code: driver.CodeInvalidValue, Column: col, OpIndex: -1,
		Message: fmt.Sprintf("value of column %s %s", col, why)}
}

// Undecodable is the CodeInternal error for a stored value of column col
// that does not decode as its schema type t.
func Undecodable(col string, t driver.ColumnType, v any) error {
	return driver.Errorf(driver.CodeInternal, "stored value of column %s is a %T, not a %s", col, v, t)
}

// DecodeText converts a stored value of a string or json column (t), as
// database/sql returns it (string or []byte), into the row value: string
// or driver.JSON (VAL-1). Any other Go type is Undecodable.
func DecodeText(col string, t driver.ColumnType, v any) (any, error) {
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
}

// NewRow is the row of table t at version ver, its Values and Scopes
// allocated for t, to be filled with SetValues.
func NewRow(t driver.Table, ver int64) driver.Row {
	return driver.Row{ServerVersion: ver, Values: make(driver.Values, len(t.Columns)), Scopes: make(driver.Scopes, len(t.Scopes))}
}

// SetKeys sets row.ID from t's primary key column and row.Scopes from its
// scope columns, once row.Values is complete.
func SetKeys(row *driver.Row, t driver.Table) {
	row.ID, _ = row.Values[t.PrimaryKey].(string)
	for _, s := range t.Scopes {
		sv, _ := row.Values[s.Column].(string)
		row.Scopes[s.Variable] = sv
	}
}

// Args returns the arguments of an upsert of row in partition: the
// partition, the row's version, then each column of cols as Bind returns
// it (the first error of Bind). A []byte argument is a copy, so a driver
// may keep the arguments past the call (a staged upsert) while the
// caller reuses its buffer (TX-12); nil stays nil, empty stays empty.
func Args(partition string, row driver.Row, cols []driver.Column, boolAsInt bool) ([]any, error) {
	args := make([]any, 0, 2+len(cols))
	args = append(args, partition, row.ServerVersion)
	for _, c := range cols {
		v, err := Bind(c.Name, c.Type, row.Values[c.Name], boolAsInt)
		if err != nil {
			return nil, err
		}
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		args = append(args, v)
	}
	return args, nil
}

// DecodeBytes converts a stored value of a bytes column, as database/sql
// returns it ([]byte, string, or nil for an empty blob), into the row
// value: a non-nil []byte (VAL-1). The caller has told NULL apart. Any
// other Go type is Undecodable.
func DecodeBytes(col string, v any) (any, error) {
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
	return nil, Undecodable(col, driver.TypeBytes, v)
}

// DecodeFloat converts a stored value of a float column, as database/sql
// returns it (float64; float32 from a FLOAT column; int64 where the
// engine stored an integral REAL as an integer), into the row value: a
// float64 (VAL-1). Any other Go type is Undecodable.
func DecodeFloat(col string, v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	}
	return nil, Undecodable(col, driver.TypeFloat, v)
}
