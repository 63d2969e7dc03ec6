package rxorder

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestSort(t *testing.T) {
	rx := []driver.Reaction{{Key: "b", CreatedAtMs: 2}, {Key: "z", CreatedAtMs: 1}, {Key: "a", CreatedAtMs: 2}, {Key: "B", CreatedAtMs: 2}}
	Sort(rx)
	var got string
	for _, r := range rx {
		got += r.Key
	}
	if got != "zBab" {
		t.Errorf("order %q, want zBab (createdAt, then key bytewise)", got)
	}
}
