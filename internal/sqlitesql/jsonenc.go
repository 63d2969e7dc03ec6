package sqlitesql

import (
	"slices"
	"strconv"

	"github.com/syncstore/syncstore/driver"
)

// ChangesJSON encodes the changes of one commit as the JSON array that
// InsertChanges and InsertChangeScopes expand (see there): one element
// [table, row id, op, scopes object, values, row version] per change.
// Values are encoded with driver.EncodeValues and carried as a JSON
// string; a delete carries neither values (null) nor a row version (0)
// (WIN-6). Fails with CodeInvalidValue for a value that cannot be encoded,
// before anything is written.
//
// The output is byte-for-byte what encoding/json.Marshal produces for the
// same [][6]any (scope keys sorted, HTML-safe escapes, invalid UTF-8 as
// U+FFFD), written without reflection: it runs once per commit on the
// push path.
func ChangesJSON(changes []driver.Change) (string, error) {
	buf := make([]byte, 0, 256*len(changes)+2)
	buf = append(buf, '[')
	var keys []string
	for i, ch := range changes {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = appendJSONString(buf, ch.Table)
		buf = append(buf, ',')
		buf = appendJSONString(buf, ch.RowID)
		buf = append(buf, ',')
		buf = appendJSONString(buf, string(ch.Op))
		buf = append(buf, ",{"...)
		keys = keys[:0]
		for k := range ch.Scopes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for j, k := range keys {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			buf = appendJSONString(buf, ch.Scopes[k])
		}
		buf = append(buf, "},"...)
		if ch.Op == driver.OpUpsert {
			vals, err := driver.AppendValues(nil, ch.Values)
			if err != nil {
				return "", err
			}
			buf = appendJSONString(buf, string(vals))
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, ch.RowVersion, 10)
		} else {
			buf = append(buf, "null,0"...)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, ']')
	return string(buf), nil
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// does with HTML escaping on (driver.AppendJSONString).
func appendJSONString(dst []byte, s string) []byte { return driver.AppendJSONString(dst, s) }
