package sqlitedialect

import (
	"slices"
	"strconv"
	"unicode/utf8"

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
			vals, err := driver.EncodeValues(ch.Values)
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json
// does with HTML escaping on: '<', '>', '&' as \u003c, \u003e, \u0026;
// control bytes as \b, \f, \n, \r, \t or \u00XX; U+2028 and U+2029
// escaped; each byte of invalid UTF-8 as \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
