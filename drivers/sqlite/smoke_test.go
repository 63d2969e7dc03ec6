package sqlite

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

// TestBasicOperations walks the core operations once on a file store.
func TestBasicOperations(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	r1, r2 := todoRow("a", "p1", "o1"), todoRow("b", "p2", "o1")
	if s := pushRows(t, c, "P", r1, r2); s != 1 {
		t.Fatalf("first seq = %d, want 1", s)
	}
	if s := pushRows(t, c, "P", todoRow("c", "p1", "o2")); s != 2 {
		t.Fatalf("second seq = %d, want 2", s)
	}
	got, ok, err := c.GetRow(ctx, "P", "todos", "a")
	if err != nil || !ok {
		t.Fatalf("GetRow: %v %v", ok, err)
	}
	if d := cmp.Diff(r1, got); d != "" {
		t.Errorf("GetRow (-want +got):\n%s", d)
	}
	rows, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "c"}, rowIDs(rows)); d != "" {
		t.Errorf("scan ids (-want +got):\n%s", d)
	}
	win, err := c.ReadCommitWindow(ctx, "P", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"owner": {"o1", "o2"}, "project": {"p1"}}, ThroughSeq: 10, LimitChanges: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(win) != 2 || win[0].Seq != 1 || len(win[0].Changes) != 1 || win[0].Changes[0].RowID != "a" || win[1].Seq != 2 {
		t.Errorf("window = %+v", win)
	}
	if m, err := c.MaxCommitSeq(ctx, "P"); err != nil || m != 2 {
		t.Errorf("MaxCommitSeq = %d, %v", m, err)
	}
	v, err := c.EngineVersion(ctx)
	if err != nil || len(v) < 8 {
		t.Errorf("EngineVersion = %q, %v", v, err)
	}
}

func rowIDs(rows []driver.Row) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}
