package postgres

import (
	"encoding/json"
	"testing"
)

// TestPruneChangeScopesCost: deleting the change-scope entries of a
// prune costs a bounded number of buffer accesses per entry deleted
// (HZ-2: cost follows what is pruned), however many entries the
// partition's table holds and whatever the statistics: a whole log never
// analyzed (a first prune after a bulk load) and a small prune of an
// analyzed one. With the entries probed by (partition, table, seq, idx)
// — the scope variable and value taken from a hash of the change's
// scopes — every probe walked every entry of the table: 40 buffers per
// entry here, and upstream's load suite's first prune of 20,000 seeded
// rows ran 54 s.
func TestPruneChangeScopesCost(t *testing.T) {
	t.Parallel() // a database of its own; the count is of buffers, not time
	c, _ := openTest(t)
	ctx := t.Context()
	var last int64
	for i := range 400 {
		seq, err := pushTodos(ctx, c, "p", i*10, 10)
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := c.SetHorizonSeq(ctx, "p", last); err != nil {
		t.Fatal(err)
	}
	// measure runs the statement through seq in a transaction it rolls
	// back and returns the entries it deleted and the buffers it touched.
	measure := func(through int64) (deleted, buffers int64) {
		t.Helper()
		tx, err := c.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var before, after int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM _sync_change_scopes WHERE partition = 'p'").Scan(&before); err != nil {
			t.Fatal(err)
		}
		var out []byte
		if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sqlPruneChangeScopes, "p", through).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plan []struct {
			Plan map[string]any `json:"Plan"`
		}
		if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", out, err)
		}
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM _sync_change_scopes WHERE partition = 'p'").Scan(&after); err != nil {
			t.Fatal(err)
		}
		p := plan[0].Plan
		return before - after, int64(p["Shared Hit Blocks"].(float64) + p["Shared Read Blocks"].(float64))
	}
	for _, ck := range []struct {
		name    string
		analyze bool
		through int64
		want    int64 // entries: 2 scope variables per change, 10 changes per commit
	}{
		{"the whole log, never analyzed", false, last, 8000},
		{"10 commits of 400, analyzed", true, 10, 200},
	} {
		if ck.analyze {
			if _, err := c.pool.Exec(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		deleted, buffers := measure(ck.through)
		t.Logf("%s: %d entries deleted, %d buffers (%.1f per entry)", ck.name, deleted, buffers, float64(buffers)/float64(max(deleted, 1)))
		if deleted != ck.want {
			t.Fatalf("%s: deleted %d entries, want %d", ck.name, deleted, ck.want)
		}
		if buffers > 20*deleted {
			t.Errorf("HZ-2: %s: the prune's change-scope delete touched %d buffers for %d entries (more than 20 each)", ck.name, buffers, deleted)
		}
	}
}
