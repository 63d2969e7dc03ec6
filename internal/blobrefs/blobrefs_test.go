package blobrefs

import (
	"errors"
	"reflect"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestListRows(t *testing.T) {
	tables := map[string]int{"b": 2, "a": 1, "c": 3}
	var asked []string
	rows := func(name string, x, n int) ([]driver.BlobRowRef, error) {
		asked = append(asked, name)
		var out []driver.BlobRowRef
		for i := 0; i < min(n, x); i++ {
			out = append(out, driver.BlobRowRef{Table: name})
		}
		return out, nil
	}
	got, err := ListRows(tables, 3, rows)
	if err != nil || len(got) != 3 {
		t.Fatalf("ListRows = %d rows, %v; want 3", len(got), err)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("tables asked %v, want %v (name order, stop at the limit)", asked, want)
	}
	if got[0].Table != "a" || got[2].Table != "b" {
		t.Errorf("rows %v not in table order", got)
	}
	boom := errors.New("boom")
	if _, err := ListRows(tables, 10, func(string, int, int) ([]driver.BlobRowRef, error) { return nil, boom }); err != boom {
		t.Errorf("ListRows error = %v, want rows's", err)
	}
}

func TestScan(t *testing.T) {
	scopes := []driver.Scope{{Variable: "org", Column: "org_id"}, {Variable: "team", Column: "team_id"}}
	ref, err := Scan(func(dest ...any) error {
		for i, v := range []string{"r1", "o1", "t1"} {
			*dest[i].(*string) = v
		}
		return nil
	}, "tasks", scopes)
	want := driver.BlobRowRef{Table: "tasks", RowID: "r1", Scopes: driver.Scopes{"org": "o1", "team": "t1"}}
	if err != nil || !reflect.DeepEqual(ref, want) {
		t.Fatalf("Scan = %+v, %v; want %+v", ref, err, want)
	}
}
