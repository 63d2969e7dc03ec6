package mysql

import (
	"math"
	"testing"
)

// TestPlanReadCommits pins the statements of the reads the SSP2 server
// makes on its hot paths: a whole-commit round (LOG-4) reads the counters
// by primary key and walks the changes' primary key from the position in
// order (a range, no filesort), each commit by primary key; an ack (CR-6)
// finds the record and the partition's head by primary key; an admin row
// page (ADM-3) is a range read of the table's primary key in order.
func TestPlanReadCommits(t *testing.T) {
	c := planStore(t)
	if err := c.SetHorizonSeq(t.Context(), "p", 1); err != nil { // so _sync_horizons has p's row
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    string
		args []any
		want map[string]string
	}{
		{"whole commits, first round (LOG-4)", logRound, []any{"p", "p", "p", 0, 1 << 40, 0, math.MaxInt32, 89},
			map[string]string{"ch": "PRIMARY", "c": "PRIMARY", "_sync_partitions": "PRIMARY", "_sync_horizons": "PRIMARY"}},
		{"whole commits, next round (LOG-4)", logRound, []any{"p", "p", "p", 30, 1 << 40, 30, 2, 89},
			map[string]string{"ch": "PRIMARY", "c": "PRIMARY", "_sync_partitions": "PRIMARY", "_sync_horizons": "PRIMARY"}},
		{"ack a client cursor (CR-6)", ackClient, []any{5, 1000, "p", "c-1", "a", 5, "p"},
			map[string]string{"_sync_clients": "PRIMARY", "_sync_partitions": "PRIMARY"}},
	} {
		plan := explain(t, c, tc.q, tc.args...)
		expectPlan(t, tc.name, plan, tc.want, false)
		for _, r := range plan {
			if r.table == "ch" && r.typ != "range" {
				t.Errorf("%s: the changes are read by access type %s, want a range read from the position: %v", tc.name, r.typ, plan)
			}
		}
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"", "r0100"} {
		plan := explain(t, c, x.listRows(), "p", after, 50)
		expectPlan(t, "admin rows after "+after+" (ADM-3)", plan, map[string]string{"todos": "PRIMARY"}, false)
		for _, r := range plan {
			if r.table == "todos" && r.typ != "range" {
				t.Errorf("admin rows after %q: access type %s, want a range read from the position: %v", after, r.typ, plan)
			}
		}
	}
}
