package d1sql

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowcodec"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// D1Text returns the JSON-transport text of a row value of type t, the
// element that D1Param turns back into the stored value: strings and
// JSON as themselves, integers as decimal text (exact beyond 2^53),
// booleans as "1"/"0", floats as [m, e] with the value exactly m × 2^e
// (zeros as "0" and "-0"), bytes as hex. nil is JSON null. A value
// of the wrong Go type fails with CodeInvalidValue naming the column (V-3).
func D1Text(col string, t driver.ColumnType, v any) (any, error) {
	sv, err := sqlitesql.ToSQL(col, t, v)
	if err != nil || sv == nil {
		return nil, err
	}
	switch x := sv.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if x == 0 {
			return strconv.FormatFloat(x, 'g', -1, 64), nil // "0" or "-0"
		}
		m, e := floatParts(x)
		return []int64{m, e}, nil
	case []byte:
		return hex.EncodeToString(x), nil
	}
	return nil, driver.Errorf(driver.CodeInternal, "column %s: unexpected bound type %T", col, sv)
}

// floatParts returns m and e with f = m × 2^e exactly, |m| < 2^53 and
// e ≥ -1074 (subnormals included), for a finite non-zero f.
func floatParts(f float64) (m, e int64) {
	frac, exp := math.Frexp(f) // f = frac × 2^exp, 0.5 ≤ |frac| < 1
	e = int64(exp) - 53
	if e < -1074 {
		e = -1074
	}
	return int64(math.Ldexp(frac, int(int64(exp)-e))), e
}

// D1Values encodes values (one per column of cols, in order) as the JSON
// array text D1Param reads.
func D1Values(cols []driver.Column, vals []any) (string, error) {
	out := make([]any, len(cols))
	for i, c := range cols {
		v, err := D1Text(c.Name, c.Type, vals[i])
		if err != nil {
			return "", err
		}
		out[i] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", driver.Wrap(driver.CodeInternal, err, "encode row values")
	}
	return string(b), nil
}

// D1RowArgs returns the arguments of D1Upsert for row in partition.
func D1RowArgs(x *sqlitesql.Table, partition string, row driver.Row) ([]any, error) {
	cols := append([]driver.Column{{Name: sqlitesql.VersionColumn, Type: driver.TypeInteger}}, x.Def.Columns...)
	vals := make([]any, 0, len(cols))
	vals = append(vals, row.ServerVersion)
	for _, c := range x.Def.Columns {
		vals = append(vals, row.Values[c.Name])
	}
	j, err := D1Values(cols, vals)
	if err != nil {
		return nil, err
	}
	return []any{partition, j}, nil
}

// D1Width is the number of columns D1SelectList selects.
func D1Width(x *sqlitesql.Table) int {
	n := 1 + len(x.Def.Columns) + x.BytesColumns()
	for _, c := range x.Def.Columns {
		if c.Type == driver.TypeFloat {
			n++
		}
	}
	return n
}

// D1DecodeRow builds a row from one result row of a D1SelectList query,
// its values as the JSON the transport returned (VAL-1).
func D1DecodeRow(x *sqlitesql.Table, raw []json.RawMessage) (driver.Row, error) {
	t := x.Def
	if len(raw) != D1Width(x) {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "row of table %s has %d columns, want %d", t.Name, len(raw), D1Width(x))
	}
	verText, err := rawString(raw[0])
	if err != nil {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "stored row version of table %s is not text", t.Name)
	}
	ver, err := strconv.ParseInt(verText, 10, 64)
	if err != nil {
		return driver.Row{}, driver.Errorf(driver.CodeInternal, "stored row version of table %s is not an integer", t.Name)
	}
	row := rowcodec.NewRow(t, ver)
	nb, nf := 0, 0
	flagBase := 1 + len(t.Columns)
	negBase := flagBase + x.BytesColumns()
	for i, c := range t.Columns {
		r := raw[1+i]
		var v any
		switch c.Type {
		case driver.TypeBytes:
			isNull := rawTruthy(raw[flagBase+nb])
			nb++
			if isNull {
				break
			}
			s, err := rawString(r)
			if err != nil {
				return driver.Row{}, sqlitesql.Undecodable(c.Name, c.Type, r)
			}
			b, err := hex.DecodeString(s)
			if err != nil {
				return driver.Row{}, sqlitesql.Undecodable(c.Name, c.Type, r)
			}
			if b == nil {
				b = []byte{}
			}
			v = b
		default:
			neg := false
			if c.Type == driver.TypeFloat {
				neg = rawTruthy(raw[negBase+nf])
				nf++
			}
			if string(r) == "null" {
				break
			}
			if c.Type == driver.TypeFloat && len(r) > 0 && r[0] != '"' {
				// A JSON number, printed by JavaScript (or Go) as the
				// shortest text that parses back to the same double.
				f, err := strconv.ParseFloat(string(r), 64)
				if err != nil {
					return driver.Row{}, sqlitesql.Undecodable(c.Name, c.Type, r)
				}
				if f == 0 && neg {
					f = math.Copysign(0, -1)
				}
				v = f
				break
			}
			s, err := rawString(r)
			if err != nil {
				return driver.Row{}, sqlitesql.Undecodable(c.Name, c.Type, r)
			}
			if v, err = d1FromText(c.Type, s, neg); err != nil {
				return driver.Row{}, sqlitesql.Undecodable(c.Name, c.Type, r)
			}
		}
		row.Values[c.Name] = v
	}
	rowcodec.SetKeys(&row, t)
	return row, nil
}

// d1FromText converts the text of a non-bytes column back to its value.
func d1FromText(t driver.ColumnType, s string, negZero bool) (any, error) {
	switch t {
	case driver.TypeString:
		return s, nil
	case driver.TypeJSON:
		return driver.JSON(s), nil
	case driver.TypeInteger:
		return strconv.ParseInt(s, 10, 64)
	case driver.TypeBoolean:
		i, err := strconv.ParseInt(s, 10, 64)
		return i != 0, err
	case driver.TypeFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && f == 0 && negZero {
			f = math.Copysign(0, -1)
		}
		return f, err
	}
	return nil, driver.Errorf(driver.CodeInternal, "unknown column type")
}

func rawString(r json.RawMessage) (string, error) {
	var s string
	err := json.Unmarshal(r, &s)
	return s, err
}

// rawTruthy reports whether a JSON value is a non-zero number or true.
func rawTruthy(r json.RawMessage) bool {
	switch string(r) {
	case "true", "1":
		return true
	}
	var f float64
	if json.Unmarshal(r, &f) == nil {
		return f != 0
	}
	return false
}
