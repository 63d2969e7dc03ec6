package sync

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// kindsTable has one non-nullable and one nullable column of every type.
func kindsTable(t *testing.T) *compiledTable {
	t.Helper()
	cols := []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "g", Type: driver.TypeString}}
	for _, typ := range []driver.ColumnType{driver.TypeString, driver.TypeInteger, driver.TypeFloat, driver.TypeBoolean, driver.TypeJSON, driver.TypeBytes} {
		cols = append(cols, driver.Column{Name: string(typ), Type: typ}, driver.Column{Name: "n_" + string(typ), Type: typ, Nullable: true})
	}
	s, err := CompileSchema(driver.Schema{Version: 1, Tables: []driver.Table{{Name: "kinds", Columns: cols, PrimaryKey: "id",
		Scopes: []driver.Scope{{Variable: "grp", Column: "g"}}, Indexes: []driver.Index{{Name: "by_int", Columns: []string{"integer", "n_string"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return newCompiledSchema(s).tables["kinds"]
}

// goodKinds returns valid values for kindsTable, every nullable NULL.
func goodKinds() driver.Values {
	return driver.Values{"id": "r1", "g": "grp-1", "string": "s", "integer": int64(1), "float": 1.5, "boolean": true,
		"json": driver.JSON(`{"a":1}`), "bytes": []byte{0}, "n_string": nil, "n_integer": nil, "n_float": nil,
		"n_boolean": nil, "n_json": nil, "n_bytes": nil}
}

// expectErr checks err's code and Column, and that its text holds none
// of hidden (V-10).
func expectErr(t *testing.T, err error, code driver.Code, column string, hidden ...string) {
	t.Helper()
	var e *driver.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v; want *driver.Error with code %s", err, code)
	}
	if e.Code != code {
		t.Errorf("code = %s (%v); want %s", e.Code, err, code)
	}
	if column != "-" && e.Column != column {
		t.Errorf("Column = %q (%v); want %q", e.Column, err, column)
	}
	for _, h := range hidden {
		if h != "" && strings.Contains(err.Error(), h) {
			t.Errorf("message %q contains the value %q (V-10)", err, h)
		}
	}
}

func TestCheckValues(t *testing.T) {
	tb := kindsTable(t)
	if err := tb.checkValues("op", goodKinds()); err != nil {
		t.Fatalf("good values rejected: %v", err)
	}
	type nonString string
	good := []struct {
		col string
		v   any
	}{
		{"string", ""}, {"string", "é😀\uFFFD"}, {"integer", int64(math.MinInt64)}, {"integer", int64(math.MaxInt64)},
		{"float", 0.0}, {"float", -math.MaxFloat64}, {"float", math.SmallestNonzeroFloat64}, {"boolean", false},
		{"json", driver.JSON(` [1, "\u0000", {"a":1,"a":2}] `)}, {"json", driver.JSON("null")}, {"bytes", []byte{}},
		{"n_string", "x"}, {"n_bytes", []byte{}}, {"n_json", driver.JSON("0")},
	}
	for _, g := range good {
		v := goodKinds()
		v[g.col] = g.v
		if err := tb.checkValues("op", v); err != nil {
			t.Errorf("%s = %#v rejected: %v", g.col, g.v, err)
		}
	}
	bad := []struct {
		name, col string
		v         any
	}{
		{"string invalid UTF-8", "string", "secret\xff"},
		{"string with NUL", "string", "secret\x00"},
		{"string as bytes", "string", []byte("secret")},
		{"string as JSON", "string", driver.JSON(`"secret"`)},
		{"string named type", "string", nonString("secret")},
		{"string NULL", "string", nil},
		{"integer int", "integer", 7},
		{"integer int32", "integer", int32(7)},
		{"integer uint64", "integer", uint64(7)},
		{"integer float64", "integer", 7.0},
		{"integer string", "integer", "7"},
		{"integer NULL", "integer", nil},
		{"float NaN", "float", math.NaN()},
		{"float +Inf", "float", math.Inf(1)},
		{"float -Inf", "float", math.Inf(-1)},
		{"float NaN nullable", "n_float", math.NaN()},
		{"float float32", "float", float32(1.5)},
		{"float int64", "float", int64(1)},
		{"boolean string", "boolean", "true"},
		{"boolean int64", "boolean", int64(1)},
		{"json invalid", "json", driver.JSON(`{"secret":`)},
		{"json trailing", "json", driver.JSON(`{} secret`)},
		{"json empty", "json", driver.JSON("")},
		{"json invalid UTF-8", "json", driver.JSON("\"secret\xff\"")},
		{"json as string", "json", `{"secret":1}`},
		{"json as bytes", "json", []byte(`{}`)},
		{"bytes nil", "bytes", []byte(nil)},
		{"bytes nil nullable", "n_bytes", []byte(nil)},
		{"bytes string", "bytes", "secret"},
		{"bytes JSON", "bytes", driver.JSON("{}")},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			v := goodKinds()
			v[b.col] = b.v
			expectErr(t, tb.checkValues("op", v), driver.CodeInvalidValue, b.col, "secret")
		})
	}
	t.Run("missing column", func(t *testing.T) {
		v := goodKinds()
		delete(v, "n_json")
		expectErr(t, tb.checkValues("op", v), driver.CodeInvalidValue, "n_json")
	})
	t.Run("unknown column", func(t *testing.T) {
		v := goodKinds()
		v["zz"] = "secret"
		expectErr(t, tb.checkValues("op", v), driver.CodeInvalidValue, "zz", "secret")
	})
	t.Run("nil values", func(t *testing.T) {
		expectErr(t, tb.checkValues("op", nil), driver.CodeInvalidValue, "id")
	})
}

func TestCheckRowV4(t *testing.T) {
	tb := kindsTable(t)
	row := func(f func(r *driver.Row)) driver.Row {
		r := driver.Row{ID: "r1", ServerVersion: -5, Scopes: driver.Scopes{"grp": "grp-1"}, Values: goodKinds()}
		f(&r)
		return r
	}
	if err := tb.checkRow("op", row(func(*driver.Row) {})); err != nil {
		t.Fatalf("valid row rejected: %v", err)
	}
	cases := []struct {
		name   string
		row    driver.Row
		code   driver.Code
		column string
	}{
		{"empty id", row(func(r *driver.Row) { r.ID = "" }), driver.CodeInvalidArgument, ""},
		{"id 256 bytes", row(func(r *driver.Row) { r.ID = strings.Repeat("i", 256); r.Values["id"] = r.ID }), driver.CodeInvalidArgument, ""},
		{"id != pk value", row(func(r *driver.Row) { r.ID = "secret" }), driver.CodeInvalidValue, "id"},
		{"scopes nil", row(func(r *driver.Row) { r.Scopes = nil }), driver.CodeInvalidValue, "g"},
		{"scope value differs", row(func(r *driver.Row) { r.Scopes["grp"] = "secret" }), driver.CodeInvalidValue, "g"},
		{"extra scope", row(func(r *driver.Row) { r.Scopes["other"] = "secret" }), driver.CodeInvalidValue, ""},
		{"bad value before V-4", row(func(r *driver.Row) { r.Values["integer"] = 1 }), driver.CodeInvalidValue, "integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectErr(t, tb.checkRow("op", c.row), c.code, c.column, "secret", "grp-1")
		})
	}
	if err := tb.checkRow("op", row(func(r *driver.Row) { r.ID = strings.Repeat("i", 255); r.Values["id"] = r.ID })); err != nil {
		t.Errorf("255-byte id rejected: %v", err)
	}
}

func TestIDKinds(t *testing.T) {
	for _, k := range []idKind{idPartition, idRow, idClient, idClientCommit, idActor, idEpoch, idSubscription, idReactionType, idReactionKey} {
		ok := []string{"a", strings.Repeat("é", k.max/2), strings.Repeat("x", k.max), "[\"remote-command\",\"x\"]"}
		for _, s := range ok {
			if err := k.check("op", s); err != nil {
				t.Errorf("%s: %d-byte value rejected: %v", k.name, len(s), err)
			}
		}
		for _, s := range []string{"", strings.Repeat("x", k.max+1), "secret\xff", "secret\x00x", "secret" + string([]byte{0xed, 0xa0, 0x80})} {
			expectErr(t, k.check("op", s), driver.CodeInvalidArgument, "", "secret")
			if !strings.Contains(k.check("op", s).Error(), k.rule) {
				t.Errorf("%s message does not cite %s", k.name, k.rule)
			}
		}
		if err := k.checkOptional("op", ""); err != nil {
			t.Errorf("%s: checkOptional(\"\") = %v", k.name, err)
		}
	}
	if idReactionKey.max != 256 || idPartition.max != 255 {
		t.Errorf("bounds: reaction key %d, partition %d", idReactionKey.max, idPartition.max)
	}
}

func TestClientIDsV7(t *testing.T) {
	for _, id := range []string{`["remote-command",`, `["remote-command","secret"]`} {
		expectErr(t, checkClientID("op", id), driver.CodeInvalidClientID, "", "secret")
		expectErr(t, checkOptionalClientID("op", id), driver.CodeInvalidClientID, "")
	}
	for _, id := range []string{`["remote-command"]`, `remote-command`, ` ["remote-command",`, `["Remote-command",`} {
		if err := checkClientID("op", id); err != nil {
			t.Errorf("client id %q rejected: %v", id, err)
		}
	}
	if err := checkOptionalClientID("op", ""); err != nil {
		t.Errorf("empty optional client id rejected: %v", err)
	}
	expectErr(t, checkClientID("op", ""), driver.CodeInvalidArgument, "")
}

func TestCheckLimitAndFilter(t *testing.T) {
	for _, n := range []int{1, 10000} {
		if err := checkLimit("op", "limit", n, MaxLimit); err != nil {
			t.Errorf("limit %d rejected: %v", n, err)
		}
	}
	for _, n := range []int{0, -1, 10001, math.MinInt} {
		expectErr(t, checkLimit("op", "limit", n, MaxLimit), driver.CodeInvalidLimit, "")
	}
	expectErr(t, checkLimit("op", "limit", 1001, MaxIndexLookupLimit), driver.CodeInvalidLimit, "")

	for _, f := range []driver.ScopeFilter{nil, {}} {
		_, err := checkFilter("op", f)
		expectErr(t, err, driver.CodeScanRequiresScope, "")
	}
	big := make([]string, 1500)
	for i := range big {
		big[i] = strings.Repeat("v", i%40)
	}
	if empty, err := checkFilter("op", driver.ScopeFilter{"a": big, "b": {""}}); err != nil || empty {
		t.Errorf("1,500 values: empty=%v err=%v; want false, nil", empty, err)
	}
	if empty, err := checkFilter("op", driver.ScopeFilter{"a": {"x"}, "b": {}}); err != nil || !empty {
		t.Errorf("empty value list: empty=%v err=%v; want true, nil", empty, err)
	}
	for _, f := range []driver.ScopeFilter{{"a": {"secret\x00"}}, {"a": {"ok", "secret\xff"}}, {"": {"x"}}, {"a\xff": {"secret"}}} {
		_, err := checkFilter("op", f)
		expectErr(t, err, driver.CodeInvalidArgument, "", "secret")
	}
}

func TestCheckChangeAndCommit(t *testing.T) {
	tb := kindsTable(t)
	cs := &compiledSchema{tables: map[string]*compiledTable{"kinds": tb}}
	up := driver.Change{Table: "kinds", RowID: "r1", Op: driver.OpUpsert, Scopes: driver.Scopes{"grp": "grp-1"}, Values: goodKinds(), RowVersion: 3}
	del := driver.Change{Table: "kinds", RowID: "r1", Op: driver.OpDelete, Scopes: driver.Scopes{"grp": "grp-1"}}
	commit := func(cs ...driver.Change) driver.CommitInput {
		return driver.CommitInput{ClientID: "c", ClientCommitID: "cc", ActorID: "a", CreatedAtMs: -1, Changes: cs}
	}
	for name, c := range map[string]driver.CommitInput{
		"upsert and delete": commit(up, del),
		"no changes":        commit(),
		"server commit":     {Changes: []driver.Change{del}},
	} {
		if err := cs.checkCommit("op", c); err != nil {
			t.Errorf("%s rejected: %v", name, err)
		}
	}
	edit := func(c driver.Change, f func(c *driver.Change)) driver.Change {
		c.Scopes = driver.Scopes{"grp": "grp-1"}
		c.Values = nil
		if c.Op == driver.OpUpsert {
			c.Values = goodKinds()
		}
		f(&c)
		return c
	}
	cases := []struct {
		name   string
		in     driver.CommitInput
		code   driver.Code
		column string
	}{
		{"unknown table", commit(edit(up, func(c *driver.Change) { c.Table = "nosuch" })), driver.CodeUnknownTable, ""},
		{"bad op", commit(edit(up, func(c *driver.Change) { c.Op = "insert" })), driver.CodeInvalidArgument, ""},
		{"empty row id", commit(edit(up, func(c *driver.Change) { c.RowID = "" })), driver.CodeInvalidArgument, ""},
		{"upsert id != pk", commit(edit(up, func(c *driver.Change) { c.RowID = "secret" })), driver.CodeInvalidValue, "id"},
		{"upsert bad value", commit(edit(up, func(c *driver.Change) { c.Values["float"] = math.NaN() })), driver.CodeInvalidValue, "float"},
		{"upsert scope mismatch", commit(edit(up, func(c *driver.Change) { c.Scopes["grp"] = "secret" })), driver.CodeInvalidValue, "g"},
		{"upsert nil values", commit(edit(up, func(c *driver.Change) { c.Values = nil })), driver.CodeInvalidValue, "id"},
		{"delete with values", commit(edit(del, func(c *driver.Change) { c.Values = goodKinds() })), driver.CodeInvalidArgument, ""},
		{"delete with version", commit(edit(del, func(c *driver.Change) { c.RowVersion = 2 })), driver.CodeInvalidArgument, ""},
		{"delete without scopes", commit(edit(del, func(c *driver.Change) { c.Scopes = nil })), driver.CodeInvalidValue, "g"},
		{"delete extra scope", commit(edit(del, func(c *driver.Change) { c.Scopes["x"] = "secret" })), driver.CodeInvalidValue, ""},
		{"delete bad scope text", commit(edit(del, func(c *driver.Change) { c.Scopes["grp"] = "secret\x00" })), driver.CodeInvalidValue, "g"},
		{"second change bad", commit(up, edit(del, func(c *driver.Change) { c.Op = "" })), driver.CodeInvalidArgument, ""},
		{"remote-command client", driver.CommitInput{ClientID: `["remote-command",1]`}, driver.CodeInvalidClientID, ""},
		{"client id NUL", driver.CommitInput{ClientID: "secret\x00"}, driver.CodeInvalidArgument, ""},
		{"commit id 256", driver.CommitInput{ClientCommitID: strings.Repeat("c", 256)}, driver.CodeInvalidArgument, ""},
		{"actor invalid UTF-8", driver.CommitInput{ActorID: "secret\xff"}, driver.CodeInvalidArgument, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectErr(t, cs.checkCommit("op", c.in), c.code, c.column, "secret", "grp-1")
		})
	}
	var nilSchema *compiledSchema
	expectErr(t, nilSchema.checkCommit("op", commit(up)), driver.CodeUnknownTable, "")
	if err := nilSchema.checkCommit("op", commit()); err != nil {
		t.Errorf("empty commit without a schema rejected: %v", err)
	}
}
