package txset

import (
	"slices"
	"testing"
)

func TestSet(t *testing.T) {
	var s Set[int]
	if !s.Add(1) || !s.Add(2) || !s.Add(3) {
		t.Fatal("Add on an open Set failed")
	}
	s.Remove(2)
	s.Remove(9) // not in the Set: nothing happens
	got := s.Close()
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Close returned %v, want [1 3] (the transactions still open)", got)
	}
	if s.Add(4) {
		t.Error("Add after Close succeeded; a Begin racing Close would leave its Tx open")
	}
	if got := s.Close(); len(got) != 0 {
		t.Errorf("second Close returned %v, want none", got)
	}
}
