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

func TestStatusFlags(t *testing.T) {
	if got := StatusFlags(nil); got != [4]bool{true, true, true, true} {
		t.Errorf("no statuses → %v, want all", got)
	}
	got := StatusFlags([]driver.ReactionStatus{driver.ReactionDeadLetter, driver.ReactionLeased})
	if got != [4]bool{false, true, false, true} {
		t.Errorf("leased + dead_letter → %v", got)
	}
}
