package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// VAL-1: every value round-trips exactly through GetRow and ScanRows
// (inside and outside a Tx) and ReadCommitWindow. Values are compared by
// valSame, not go-cmp: floats by their bits (-0.0 ≠ 0.0), bytes as
// non-nil slices (empty ≠ NULL), Go types exactly (int64, driver.JSON).

type valCase struct {
	name string
	col  string
	v    any
}

// valCases returns one case per edge value, each stored in its own kinds
// row with every other value column NULL.
func valCases() []valCase {
	var cs []valCase
	add := func(col, name string, v any) { cs = append(cs, valCase{col + "/" + name, col, v}) }
	for _, x := range []struct {
		n string
		v int64
	}{{"min", math.MinInt64}, {"max", math.MaxInt64}, {"2^53+1", 1<<53 + 1}, {"-(2^53+1)", -(1<<53 + 1)},
		{"-1", -1}, {"0", 0}, {"2^31", 1 << 31}, {"-2^31-1", -(1 << 31) - 1}, {"2^32", 1 << 32}} {
		add("i", x.n, x.v)
	}
	for _, x := range []struct {
		n string
		v float64
	}{{"-0.0", math.Copysign(0, -1)}, {"0.0", 0}, {"5e-324", math.SmallestNonzeroFloat64}, {"-5e-324", -math.SmallestNonzeroFloat64},
		{"max", math.MaxFloat64}, {"-max", -math.MaxFloat64}, {"0.1", 0.1}, {"1e-300", 1e-300}, {"-1.5", -1.5},
		{"smallest-normal", 2.2250738585072014e-308}, {"1/3", 1.0 / 3.0}, {"2^53+1-as-float", float64(1<<53 + 1)},
		{"123456789.123456789", 123456789.123456789}, {"1e21", 1e21}, {"-1e-7", -1e-7}} {
		add("f", x.n, x.v)
	}
	big := strings.Repeat("0123456789abcdef", 3200) + "✓" + strings.Repeat("fedcba9876543210", 3200)
	for _, x := range []struct{ n, v string }{{"emoji", "😀👍🏽👨‍👩‍👧"}, {"combining", "e\u0301"}, {"precomposed", "\u00e9"},
		{"fffd", "\uFFFD"}, {"rtl", "مرحبا بالعالم שלום"}, {"rtl-override", "\u202Eabc"}, {"empty", ""}, {"100KB", big},
		{"sql", "'; DROP TABLE x; --"}, {"quotes", `\ " ' % _ ` + "`"}, {"padded", "  padded  "}, {"controls", "\t\n\r\x01\x7f"},
		{"astral", "𝄞"}, {"separators", "\u2028\u2029"}, {"bom", "\ufeffbom"}, {"null-word", "null"}} {
		add("s", x.n, x.v)
	}
	var large strings.Builder
	large.WriteString("[")
	for i := range 4000 {
		if i > 0 {
			large.WriteString(",")
		}
		fmt.Fprintf(&large, `{"k":%d,"v":"x%d"}`, i, i)
	}
	large.WriteString("]")
	for _, x := range []struct{ n, v string }{{"spacing", `{"b":1, "a":2}`}, {"duplicate-keys", `{"a":1,"a":2}`},
		{"nul-escape", `"\u0000"`}, {"empty-array", `[]`}, {"empty-object", `{}`}, {"1e400", `1e400`},
		{"nested", `{"a":[{"b":{"c":[1,2,{"d":null}]}}],"e":"\n"}`}, {"outer-whitespace", " \n{\"x\" : [ 1 , 2 ] }\t "},
		{"json-null", `null`}, {"true", `true`}, {"minus-zero", `-0`}, {"1.0", `1.0`}, {"exponent", `1E+2`},
		{"surrogates", `"\ud83d\ude00"`}, {"raw-emoji", `"😀"`}, {"escaped-slash", `"\/"`}, {"large", large.String()}} {
		if json.Valid([]byte(x.v)) {
			add("j", x.n, driver.JSON(x.v))
		}
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	pattern := make([]byte, 64<<10)
	for i := range pattern {
		pattern[i] = byte(i*31 + 7)
	}
	for _, x := range []struct {
		n string
		v []byte
	}{{"one-zero", []byte{0}}, {"zeros", []byte{0, 0, 0}}, {"all-256", all}, {"empty", []byte{}},
		{"invalid-utf8", []byte{0xff, 0xfe, 0xfd}}, {"64KB", pattern}, {"text", []byte("text")}} {
		add("x", x.n, x.v)
	}
	add("b", "true", true)
	add("b", "false", false)
	return cs
}

// valRows returns the rows of valCases plus an all-NULL row and a row
// with every column set, in group grp.
func valRows(grp string) ([]driver.Row, map[string]string) {
	names := map[string]string{}
	var rows []driver.Row
	for i, c := range valCases() {
		id := fmt.Sprintf("v%03d", i)
		names[id] = c.name
		rows = append(rows, rowKinds(id, grp, int64(i), driver.Values{c.col: c.v}))
	}
	names["v-null"], names["v-all"] = "every column NULL", "every column set"
	rows = append(rows, rowKinds("v-null", grp, 0, nil), rowKinds("v-all", grp, 77, driver.Values{"s": "mixed ✓", "i": int64(-7),
		"f": 2.5, "b": true, "j": driver.JSON(`{"k":[1,2]}`), "x": []byte{0, 1, 2}}))
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID }) // scan order
	return rows, names
}

// valSame reports whether got is exactly want: same Go type, floats by
// bits, bytes non-nil and equal, NULL an untyped nil.
func valSame(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(w) == math.Float64bits(g)
	case []byte:
		g, ok := got.([]byte)
		return ok && g != nil && bytes.Equal(w, g)
	}
	return reflect.TypeOf(want) == reflect.TypeOf(got) && want == got
}

// valDescribe renders v for a failure message: its Go type and a bounded
// rendering (float bits included).
func valDescribe(v any) string {
	short := func(s string) string {
		if len(s) > 48 {
			return fmt.Sprintf("%q…(%d bytes)", s[:48], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	switch x := v.(type) {
	case nil:
		return "untyped nil"
	case float64:
		return fmt.Sprintf("float64 %v (bits %#016x)", x, math.Float64bits(x))
	case []byte:
		if x == nil {
			return "[]byte(nil)"
		}
		return fmt.Sprintf("[]byte len %d %s", len(x), short(string(x)))
	case string:
		return "string " + short(x)
	case driver.JSON:
		return "driver.JSON " + short(string(x))
	}
	return fmt.Sprintf("%T %v", v, v)
}

// valCheck compares got with want (values by valSame, the rest exactly)
// and reports each difference under what.
func valCheck(t T, what string, want, got driver.Row) {
	t.Helper()
	if want.ID != got.ID || want.ServerVersion != got.ServerVersion {
		t.Errorf("VAL-1: %s: got id %q version %d, want id %q version %d", what, got.ID, got.ServerVersion, want.ID, want.ServerVersion)
	}
	if d := diff(want.Scopes, got.Scopes); d != "" {
		t.Errorf("VAL-1: %s: scopes %s", what, d)
	}
	valCheckValues(t, what, want.Values, got.Values)
}

func valCheckValues(t T, what string, want, got driver.Values) {
	t.Helper()
	var bad []string
	for col, w := range want {
		g, ok := got[col]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("column %s missing", col))
		case !valSame(w, g):
			bad = append(bad, fmt.Sprintf("column %s: want %s, got %s", col, valDescribe(w), valDescribe(g)))
		}
	}
	for col := range got {
		if _, ok := want[col]; !ok {
			bad = append(bad, fmt.Sprintf("unexpected column %s", col))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("VAL-1: %s: %s", what, b)
	}
}

// valCheckRows checks that got holds exactly want, in order.
func valCheckRows(t T, what string, want, got []driver.Row, names map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("VAL-1: %s returned %d rows, want %d: ids %v", what, len(got), len(want), ids(got))
		return
	}
	for i := range want {
		valCheck(t, fmt.Sprintf("%s, row %s (%s)", what, want[i].ID, names[want[i].ID]), want[i], got[i])
	}
}

// valReadAll reads every row of rows through get and scan and checks them.
func valReadAll(t T, where string, r rowReader, rows []driver.Row, names map[string]string) {
	t.Helper()
	ctx := t.Context()
	for _, w := range rows {
		got, found, err := r.get(ctx, tKinds, w.ID)
		if err != nil || !found {
			t.Errorf("VAL-1: %s.GetRow(%s) %s = found %v, err %v", r.name, w.ID, where, found, err)
			continue
		}
		valCheck(t, fmt.Sprintf("%s.GetRow %s, row %s (%s)", r.name, where, w.ID, names[w.ID]), w, got)
	}
	got, err := r.scan(ctx, driver.ScanQuery{Table: tKinds, Filter: driver.ScopeFilter{"grp": {w0grp(rows)}}, Limit: 1000})
	if err != nil {
		t.Errorf("VAL-1: %s.ScanRows %s: %v", r.name, where, err)
		return
	}
	valCheckRows(t, r.name+".ScanRows "+where, rows, rowsByID(got), names)
}

func w0grp(rows []driver.Row) string { return rows[0].Scopes["grp"] }

func init() {
	register(
		// Catches every lossy storage: floats through text or REAL with
		// lost -0.0/subnormals, int64 through float64, strings through a
		// 3-byte UTF-8 charset or normalization, JSON through a binary JSON
		// type, empty bytes read back as NULL, JSON null read as NULL,
		// booleans read as integers.
		Case{Name: "VAL-1/values-round-trip", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			rows, names := valRows("g1")
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			seq := stage(t, tx, tKinds, rows...)
			valReadAll(t, "inside the writing Tx", rowTxReader(tx), rows, names)
			commit(t, tx)
			valReadAll(t, "after commit", rowConnReader(conn, "p1"), rows, names)

			win, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tKinds, Filter: driver.ScopeFilter{"grp": {"g1"}},
				ThroughSeq: seq, LimitChanges: 10000})
			must(t, "VAL-1: ReadCommitWindow", err)
			if len(win) != 1 || len(win[0].Changes) != len(rows) {
				t.Fatalf("VAL-1: ReadCommitWindow returned seqs %v; want one commit with %d changes", seqs(win), len(rows))
			}
			for i, ch := range win[0].Changes {
				w := rows[i]
				what := fmt.Sprintf("ReadCommitWindow change %d, row %s (%s)", i, w.ID, names[w.ID])
				if ch.RowID != w.ID || ch.RowVersion != w.ServerVersion || ch.Op != driver.OpUpsert {
					t.Errorf("VAL-1: %s: got row %q version %d op %s", what, ch.RowID, ch.RowVersion, ch.Op)
				}
				valCheckValues(t, what, w.Values, ch.Values)
			}

			// Read in a later Tx, then write back what was read: unchanged.
			tx2 := begin(t, conn, "p1")
			defer tx2.Rollback(context.Background())
			valReadAll(t, "in a later Tx", rowTxReader(tx2), rows, names)
			read, err := tx2.ScanRows(ctx, driver.ScanQuery{Table: tKinds, Filter: driver.ScopeFilter{"grp": {"g1"}}, Limit: 1000})
			must(t, "VAL-1: Tx.ScanRows", err)
			for _, r := range read {
				must(t, "VAL-1: UpsertRow of a row as read", tx2.UpsertRow(ctx, tKinds, r))
			}
			commit(t, tx2)
			valReadAll(t, "after writing back what was read", rowConnReader(conn, "p1"), rows, names)
		}},
		// Catches a driver that stores []byte{} as NULL or NULL as an
		// empty blob, or returns a typed nil ([]byte(nil), (*T)(nil)) for
		// NULL — differences go-cmp's EquateEmpty would hide.
		Case{Name: "VAL-1/empty-bytes-and-null-are-distinct", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			empty, null := rowKinds("empty", "g", 1, driver.Values{"x": []byte{}, "s": ""}), rowKinds("null", "g", 1, nil)
			push(t, conn, "p1", tKinds, empty, null)
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			for _, r := range []rowReader{rowConnReader(conn, "p1"), rowTxReader(tx)} {
				got, _, err := r.get(t.Context(), tKinds, "empty")
				must(t, "VAL-1: "+r.name+".GetRow(empty)", err)
				if b, ok := got.Values["x"].([]byte); !ok || b == nil || len(b) != 0 {
					t.Errorf("VAL-1: %s: empty bytes read back as %s; want non-nil []byte{}", r.name, valDescribe(got.Values["x"]))
				}
				if s, ok := got.Values["s"].(string); !ok || s != "" {
					t.Errorf("VAL-1: %s: empty string read back as %s; want \"\"", r.name, valDescribe(got.Values["s"]))
				}
				got, _, err = r.get(t.Context(), tKinds, "null")
				must(t, "VAL-1: "+r.name+".GetRow(null)", err)
				for _, col := range []string{"s", "i", "f", "b", "j", "x"} {
					if v, ok := got.Values[col]; !ok || v != nil {
						t.Errorf("VAL-1: %s: NULL in column %s read back as %s (present %v); want untyped nil", r.name, col, valDescribe(v), ok)
					}
				}
			}
		}},
	)
}
