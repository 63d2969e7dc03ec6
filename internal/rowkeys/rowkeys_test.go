package rowkeys

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
)

func TestGroupsKeepOrderAndChunk(t *testing.T) {
	k := func(table, id string) driver.RowKey { return driver.RowKey{Table: table, ID: id} }
	keys := []driver.RowKey{k("a", "1"), k("b", "1"), k("a", "2"), k("a", "3"), k("b", "2"), k("a", "4")}
	got := Groups(keys, 2)
	want := []Group{{Table: "a", Index: []int{0, 2}}, {Table: "b", Index: []int{1, 4}}, {Table: "a", Index: []int{3, 5}}}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Group{})); d != "" {
		t.Fatalf("Groups (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]any{"p", "1", "2"}, got[1].IDs(keys, "p")); d != "" {
		t.Fatalf("IDs (-want +got):\n%s", d)
	}
	read := driver.PushRead{Rows: make([]driver.Row, len(keys)), Found: make([]bool, len(keys))}
	if !got[2].Place(&read, driver.Row{ID: "4"}) || got[2].Place(&read, driver.Row{ID: "1"}) {
		t.Fatal("Place must take the group's own ids only")
	}
	if !read.Found[5] || read.Rows[5].ID != "4" || read.Found[0] {
		t.Fatalf("Place filed the row at the wrong key: %+v", read.Found)
	}
}
