package sync

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Fuzz targets for the validation that stands between host input and every
// driver (group V, SCH-2). Each target checks the validator against an
// oracle written independently here, and checks V-10 by difference: the
// message for an input equals the message for a placeholder input of the
// same kind of fault, so no message can depend on (or repeat) the value.
//
//	go test ./sync -run '^$' -fuzz '^FuzzScopeFilter$' -fuzztime 10m
//
// Seeds: the f.Add calls below and testdata/fuzz/<target>/.

// textClass returns the kind of fault of s as text (V-3, V-6) and a
// placeholder with the same fault.
func textClass(s string) (class, placeholder string) {
	switch {
	case !utf8.ValidString(s):
		return "bad-utf8", "\xff"
	case strings.IndexByte(s, 0) >= 0:
		return "nul", "\x00"
	}
	return "ok", "v"
}

// FuzzScopeFilter: up to two keys, each with a value list (values split on
// U+001F; an empty list string is an empty list).
func FuzzScopeFilter(f *testing.F) {
	f.Add(uint8(1), "project", "p7", "owner", "")
	f.Add(uint8(2), "project", "p1\x1fp2", "owner", "")
	f.Add(uint8(0), "", "", "", "")
	f.Add(uint8(2), "a", "ok\x1f\xff", "b", "x\x00y")
	f.Add(uint8(1), "k\x00", "v", "", "")
	f.Add(uint8(2), "k", "secret-scope-value\x00", "k2", "v")
	f.Fuzz(func(t *testing.T, nkeys uint8, k1, v1, k2, v2 string) {
		build := func(vals func(string) string) driver.ScopeFilter {
			fl := driver.ScopeFilter{}
			for i, kv := range [][2]string{{k1, v1}, {k2, v2}} {
				if i >= int(nkeys%3) {
					break
				}
				list := []string{}
				if kv[1] != "" {
					for _, v := range strings.Split(kv[1], "\x1f") {
						list = append(list, vals(v))
					}
				}
				fl[kv[0]] = list
			}
			return fl
		}
		fl := build(func(v string) string { return v })
		empty, err := checkFilter("ScanRows", fl)

		// The oracle, in checkFilterEntries' order (keys sorted).
		wantCode, wantEmpty := driver.Code(""), false
		if len(fl) == 0 {
			wantCode = driver.CodeScanRequiresScope
		}
		for _, k := range sortedKeys(fl) {
			if wantCode != "" {
				break
			}
			if c, _ := textClass(k); k == "" || len(k) > MaxIDBytes || c != "ok" {
				wantCode = driver.CodeInvalidArgument
				break
			}
			if len(fl[k]) == 0 {
				wantEmpty = true
			}
			for _, v := range fl[k] {
				if c, _ := textClass(v); c != "ok" {
					wantCode = driver.CodeInvalidArgument
					break
				}
			}
		}
		if got := driver.CodeOf(err); got != wantCode || (err != nil) != (wantCode != "") {
			t.Fatalf("checkFilter: error %v (code %q), want code %q (V-6)", err, got, wantCode)
		}
		if err == nil && empty != wantEmpty {
			t.Fatalf("checkFilter: empty = %v, want %v (V-6: a key with no values matches nothing)", empty, wantEmpty)
		}
		if err != nil {
			_, err2 := checkFilter("ScanRows", build(func(v string) string { _, p := textClass(v); return p }))
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("V-10: the message depends on a scope value:\n%v\n%v", err, err2)
			}
		}
	})
}

var identOracle = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// FuzzIdentifier puts one fuzzed identifier in each position of a schema
// (table, column, scope variable, index) and checks CompileSchema against
// SCH-2, and against the SQL dialect's own identifier check (its second
// line of defence must never reject what sync admits).
func FuzzIdentifier(f *testing.F) {
	for _, s := range []string{"todos", "_x", "a1", "1a", "", "sync_x", "SYNC_x", "_sync", "_Sync_meta", "a-b", "é", "a\x00",
		`a"b`, strings.Repeat("a", 63), strings.Repeat("a", 64), "pk", "PK",
		"json_each", "JSON_TREE", "sqlite_x", "_CF_x", "pg_x", "Pragma_x", "primary", "json_eachx", "sqlitex", "pgx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		lower := strings.ToLower(id)
		valid := identOracle.MatchString(id) && !strings.HasPrefix(lower, "sync_") && !strings.HasPrefix(lower, "_sync")
		for pos, s := range identSchemas(id) {
			// "pk" and "p" are the other identifiers of the table; a clash is a duplicate.
			want := valid && !(pos == "column" && lower == "pk") && !(pos == "variable" && lower == "p")
			// Table and index names an engine reserves (SCH-2).
			if pos == "table" || pos == "index" {
				for _, p := range []string{"sqlite_", "_cf_", "pg_", "pragma_"} {
					want = want && !strings.HasPrefix(lower, p)
				}
				want = want && !(pos == "table" && (lower == "json_each" || lower == "json_tree")) && !(pos == "index" && lower == "primary")
			}
			_, err := CompileSchema(s)
			if (err == nil) != want {
				t.Fatalf("%s %q: CompileSchema error %v, want accepted=%v (SCH-2)", pos, id, err, want)
			}
			if err != nil {
				if driver.CodeOf(err) != driver.CodeSchemaInvalid {
					t.Fatalf("%s: code %q, want %s", pos, driver.CodeOf(err), driver.CodeSchemaInvalid)
				}
				if msg := err.Error(); !utf8.ValidString(msg) || strings.IndexByte(msg, 0) >= 0 {
					t.Fatalf("%s: the message carries raw bytes of the identifier: %q", pos, msg)
				}
				continue
			}
			if !sqlitesql.ValidIdent(id) {
				t.Fatalf("%s %q: sync admits what the SQL dialect rejects", pos, id)
			}
		}
	})
}

// identSchemas returns one schema per identifier position, with id there.
func identSchemas(id string) map[string]driver.Schema {
	table := func(mod func(*driver.Table)) driver.Schema {
		t := driver.Table{Name: "t", Columns: []driver.Column{{Name: "pk", Type: driver.TypeString}, {Name: "c", Type: driver.TypeString}},
			PrimaryKey: "pk", Scopes: []driver.Scope{{Variable: "p", Column: "c"}}}
		mod(&t)
		return driver.Schema{Version: 1, Tables: []driver.Table{t}}
	}
	return map[string]driver.Schema{
		"table":    table(func(t *driver.Table) { t.Name = id }),
		"column":   table(func(t *driver.Table) { t.Columns[1].Name = id; t.Scopes[0].Column = id }),
		"variable": table(func(t *driver.Table) { t.Scopes = append(t.Scopes, driver.Scope{Variable: id, Column: "pk"}) }),
		"index":    table(func(t *driver.Table) { t.Indexes = []driver.Index{{Name: id, Columns: []string{"c"}}} }),
	}
}

// FuzzValue checks V-3 for one value of one column: accepted exactly when
// the oracle accepts; a rejection is CodeInvalidValue naming the column,
// with a message that does not depend on the value (V-10); an accepted
// value survives the driver codec exactly (VAL-1).
func FuzzValue(f *testing.F) {
	f.Add(uint8(0), uint8(0), false, "text", int64(0), uint64(0), []byte(nil))
	f.Add(uint8(0), uint8(0), false, "bad\xff", int64(0), uint64(0), []byte(nil))
	f.Add(uint8(2), uint8(2), false, "", int64(0), math.Float64bits(math.NaN()), []byte(nil))
	f.Add(uint8(4), uint8(4), true, `{"a": 1, "a": 2}`, int64(0), uint64(0), []byte(nil))
	f.Add(uint8(4), uint8(4), false, `{"a":`, int64(0), uint64(0), []byte(nil))
	f.Add(uint8(5), uint8(5), false, "", int64(0), uint64(0), []byte{})
	f.Add(uint8(5), uint8(5), true, "", int64(0), uint64(0), []byte(nil))
	f.Add(uint8(1), uint8(6), true, "", int64(0), uint64(0), []byte(nil))
	f.Add(uint8(1), uint8(7), false, "", int64(7), uint64(0), []byte(nil))
	f.Fuzz(func(t *testing.T, colType, kind uint8, nullable bool, s string, i int64, fbits uint64, raw []byte) {
		types := []driver.ColumnType{driver.TypeString, driver.TypeInteger, driver.TypeFloat, driver.TypeBoolean, driver.TypeJSON, driver.TypeBytes}
		col := driver.Column{Name: "col", Type: types[int(colType)%len(types)], Nullable: nullable}
		fl := math.Float64frombits(fbits)
		var x any
		switch kind % 9 {
		case 0:
			x = s
		case 1:
			x = i
		case 2:
			x = fl
		case 3:
			x = i%2 == 0
		case 4:
			x = driver.JSON(s)
		case 5:
			x = raw // nil when the fuzzer gives nil: ambiguous, rejected
		case 6:
			x = nil
		case 7:
			x = int(i) // never coerced
		case 8:
			x = float32(fl)
		}
		class, placeholder := valueClass(col, x)
		err := checkValue("UpsertRow", col, x)
		if (err == nil) != (class == "ok") {
			t.Fatalf("checkValue(%s nullable=%v, %T) error %v, want class %s (V-3)", col.Type, col.Nullable, x, err, class)
		}
		if err != nil {
			var e *driver.Error
			if de, ok := err.(*driver.Error); ok {
				e = de
			}
			if e == nil || e.Code != driver.CodeInvalidValue || e.Column != col.Name {
				t.Fatalf("checkValue error %#v, want CodeInvalidValue naming column %q (V-3)", err, col.Name)
			}
			if err2 := checkValue("UpsertRow", col, placeholder); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("V-10: the message depends on the value:\n%v\n%v", err, err2)
			}
			return
		}
		enc, err := driver.EncodeValues(driver.Values{col.Name: x})
		if err != nil {
			t.Fatalf("an accepted value does not encode: %v", err)
		}
		got, err := driver.DecodeValues(enc)
		if err != nil {
			t.Fatalf("an accepted value does not decode: %v", err)
		}
		if !sameValue(x, got[col.Name]) {
			t.Fatalf("an accepted %T changed in the codec: %#v → %#v (VAL-1)", x, x, got[col.Name])
		}
	})
}

// valueClass is the oracle of V-3: "ok" or the kind of fault, and a
// placeholder value with the same fault.
func valueClass(c driver.Column, x any) (string, any) {
	if x == nil {
		if c.Nullable {
			return "ok", nil
		}
		return "null", nil
	}
	wrong := func() (string, any) { return "wrong-type", x } // the message names the Go type only
	switch c.Type {
	case driver.TypeString:
		s, ok := x.(string)
		if !ok {
			return wrong()
		}
		cl, p := textClass(s)
		return cl, p
	case driver.TypeInteger:
		if _, ok := x.(int64); !ok {
			return wrong()
		}
	case driver.TypeFloat:
		f, ok := x.(float64)
		if !ok {
			return wrong()
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "non-finite", math.Inf(1)
		}
	case driver.TypeBoolean:
		if _, ok := x.(bool); !ok {
			return wrong()
		}
	case driver.TypeJSON:
		j, ok := x.(driver.JSON)
		if !ok {
			return wrong()
		}
		if !utf8.ValidString(string(j)) {
			return "bad-utf8", driver.JSON("\xff")
		}
		if !jsonValid(string(j)) {
			return "bad-json", driver.JSON("{")
		}
	case driver.TypeBytes:
		b, ok := x.([]byte)
		if !ok {
			return wrong()
		}
		if b == nil {
			return "nil-bytes", []byte(nil)
		}
	}
	return "ok", x
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && y != nil && string(x) == string(y)
	}
	return a == b
}

// jsonValid is the oracle's JSON check: a full decode, not json.Valid.
func jsonValid(s string) bool { return json.Unmarshal([]byte(s), new(any)) == nil }
