package adminview

import (
	"math"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestCommitsBefore(t *testing.T) {
	if got, err := CommitsBefore(0); err != nil || got != math.MaxInt64 {
		t.Errorf("CommitsBefore(0) = %d, %v", got, err)
	}
	if got, err := CommitsBefore(7); err != nil || got != 7 {
		t.Errorf("CommitsBefore(7) = %d, %v", got, err)
	}
	if _, err := CommitsBefore(-1); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Errorf("CommitsBefore(-1) = %v, want invalid_argument", err)
	}
}

func TestActivity(t *testing.T) {
	if _, _, err := ActivityKey(anyTable, "t", driver.ScopeFilter{}, 0, 10); driver.CodeOf(err) != driver.CodeScanRequiresScope {
		t.Errorf("ActivityKey of an empty filter = %v, want scan_requires_scope", err)
	}
	filter := driver.ScopeFilter{"org": {"o1"}, "team": {"t1", "t2"}}
	key, done, err := ActivityKey(anyTable, "t", filter, 0, 10)
	if err != nil || done || key == "" {
		t.Fatalf("ActivityKey = %q, %v, %v", key, done, err)
	}
	if _, done, _ := ActivityKey(anyTable, "t", filter, 10, 10); !done {
		t.Error("an empty seq range is not done")
	}
	a := NewActivity(filter, key)
	for _, c := range []struct {
		seq    int64
		scopes string
	}{
		{1, `{"org":"o1","team":"t1"}`},
		{1, `{"org":"o1","team":"t2"}`},
		{2, `{"org":"o1","team":"t9"}`}, // the other key does not match
		{3, `{"org":"o1","team":"t2"}`},
	} {
		if err := a.Add(c.seq, c.scopes); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := a.Result(), (driver.ScopeActivity{Commits: 2, Changes: 3}); got != want {
		t.Errorf("Result = %+v, want %+v", got, want)
	}
	if err := a.Add(4, "not json"); err == nil {
		t.Error("Add of malformed scopes succeeded")
	}
}

func TestRowScopes(t *testing.T) {
	s, ok, err := RowScopes(driver.Row{Scopes: driver.Scopes{"org": "o1"}}, true, nil)
	if err != nil || !ok || s["org"] != "o1" {
		t.Errorf("RowScopes = %v, %v, %v", s, ok, err)
	}
	if s, ok, _ := RowScopes(driver.Row{Scopes: driver.Scopes{"org": "o1"}}, false, nil); ok || s != nil {
		t.Errorf("RowScopes of a missing row = %v, %v", s, ok)
	}
}

func anyTable(string) (struct{}, error) { return struct{}{}, nil }

func TestActivityKeyUnknownTable(t *testing.T) {
	unknown := func(name string) (int, error) { return 0, driver.Errorf(driver.CodeUnknownTable, "no %s", name) }
	if _, _, err := ActivityKey(unknown, "t", driver.ScopeFilter{}, 0, 10); driver.CodeOf(err) != driver.CodeUnknownTable {
		t.Errorf("an unknown table must be reported first, got %v", err)
	}
}
