package driver

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendValues appends EncodeValues(v) to dst and returns the extended
// slice: the same bytes, written without reflection or an intermediate
// map (it runs once per change on the push path). Keys are in ascending
// byte order and every string is escaped exactly as encoding/json escapes
// it (AppendJSONString). It fails with CodeInvalidValue, naming the column
// (the first in key order) but never the value (V-3, V-10), for a value of
// a type outside ColumnType's list, a non-finite float or a nil []byte;
// dst is then returned unextended.
func AppendValues(dst []byte, v Values) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	var small [16]string
	keys := small[:0]
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(dst)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = appendTagged(dst, v[k]); err != nil {
			return dst[:start], &Error{Code: CodeInvalidValue, Message: err.Error(), Column: k, OpIndex: -1}
		}
	}
	return append(dst, '}'), nil
}

// appendTagged appends one value as tagValue tags it, in encoding/json's
// text of the [tag, payload] pair.
func appendTagged(dst []byte, x any) ([]byte, error) {
	switch v := x.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		dst = append(dst, `["s",`...)
		dst = AppendJSONString(dst, v)
	case int64:
		dst = append(dst, `["i","`...)
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, '"')
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, errNotFinite
		}
		// strconv's 'g' text has only [0-9.e+-]: no escaping needed.
		dst = append(dst, `["f","`...)
		dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		dst = append(dst, '"')
	case bool:
		dst = append(dst, `["b",`...)
		dst = strconv.AppendBool(dst, v)
	case JSON:
		dst = append(dst, `["j",`...)
		dst = AppendJSONString(dst, string(v))
	case []byte:
		if v == nil {
			_, err := tagValue(v)
			return dst, err
		}
		// Standard base64 is [A-Za-z0-9+/=]: no escaping needed.
		dst = append(dst, `["x","`...)
		dst = base64.StdEncoding.AppendEncode(dst, v)
		dst = append(dst, '"')
	default:
		_, err := tagValue(x)
		return dst, err
	}
	return append(dst, ']'), nil
}

var errNotFinite = func() error { _, err := tagValue(math.NaN()); return err }()

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string exactly as encoding/json
// writes it with HTML escaping on (its default): '<', '>', '&' as \u003c,
// \u003e, \u0026; '"' and '\' escaped; control bytes as \b, \f, \n, \r,
// \t or \u00XX; U+2028 and U+2029 as \u2028 and \u2029; each byte of
// invalid UTF-8 as \ufffd. Everything else is copied unchanged.
func AppendJSONString(dst []byte, s string) []byte {
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
