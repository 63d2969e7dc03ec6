package rowcodec

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestBind(t *testing.T) {
	for _, c := range []struct {
		typ       driver.ColumnType
		in        any
		boolAsInt bool
		want      any
	}{
		{driver.TypeString, "s", false, "s"},
		{driver.TypeJSON, driver.JSON(`{"a":1}`), false, `{"a":1}`},
		{driver.TypeInteger, int64(7), false, int64(7)},
		{driver.TypeFloat, math.Copysign(0, -1), false, math.Copysign(0, -1)},
		{driver.TypeBoolean, true, false, true},
		{driver.TypeBoolean, true, true, int64(1)},
		{driver.TypeBoolean, false, true, int64(0)},
		{driver.TypeBytes, []byte(nil), false, nil},
		{driver.TypeString, nil, false, nil},
	} {
		got, err := Bind("c", c.typ, c.in, c.boolAsInt)
		if err != nil || got != c.want && !(c.typ == driver.TypeFloat && math.Signbit(got.(float64))) {
			t.Errorf("Bind(%s, %v) = %v, %v; want %v", c.typ, c.in, got, err, c.want)
		}
	}
	if got, err := Bind("c", driver.TypeBytes, []byte{}, false); err != nil || got.([]byte) == nil {
		t.Errorf("an empty blob must stay non-nil, got %#v, %v", got, err)
	}
	for _, bad := range []struct {
		typ driver.ColumnType
		in  any
	}{{driver.TypeInteger, "secret"}, {driver.TypeFloat, math.NaN()}, {driver.TypeFloat, math.Inf(1)}, {driver.TypeJSON, "x"}} {
		_, err := Bind("col", bad.typ, bad.in, false)
		var de *driver.Error
		if !errors.As(err, &de) || de.Code != driver.CodeInvalidValue || de.Column != "col" || strings.Contains(de.Message, "secret") {
			t.Errorf("Bind(%s, %v) error = %v; want CodeInvalidValue naming the column, not the value", bad.typ, bad.in, err)
		}
	}
}

func TestDecode(t *testing.T) {
	if v, err := DecodeText("c", driver.TypeJSON, []byte(`[1]`)); err != nil || v != driver.JSON(`[1]`) {
		t.Errorf("DecodeText json = %v, %v", v, err)
	}
	if _, err := DecodeText("c", driver.TypeString, int64(1)); err == nil {
		t.Error("DecodeText of an int64 must fail")
	}
	if v, err := DecodeBytes("c", nil); err != nil || v.([]byte) == nil {
		t.Errorf("DecodeBytes(nil) = %#v, %v; want a non-nil empty slice", v, err)
	}
	if v, err := DecodeFloat("c", int64(2)); err != nil || v != 2.0 {
		t.Errorf("DecodeFloat(int64) = %v, %v", v, err)
	}
	if _, err := DecodeFloat("c", "2"); err == nil {
		t.Error("DecodeFloat of a string must fail")
	}
}

func TestRowKeysAndArgs(t *testing.T) {
	tbl := driver.Table{Name: "t", PrimaryKey: "id", Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "org", Type: driver.TypeString}},
		Scopes: []driver.Scope{{Column: "org", Variable: "o"}}}
	row := NewRow(tbl, 3)
	row.Values["id"], row.Values["org"] = "r1", "acme"
	SetKeys(&row, tbl)
	if row.ID != "r1" || row.Scopes["o"] != "acme" || row.ServerVersion != 3 {
		t.Errorf("row = %+v", row)
	}
	args, err := Args("p", row, tbl.Columns, false)
	if err != nil || len(args) != 4 || args[0] != "p" || args[1] != int64(3) || args[2] != "r1" || args[3] != "acme" {
		t.Errorf("Args = %v, %v", args, err)
	}
}
