package mysql

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/internal/testdb"
)

// A store created before RX-12's store-wide indexes gets them on its next
// open (ensureReactionIndexes), and a claim across partitions uses them.
func TestReactionIndexesAddedOnOpen(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	c := conn.(*Conn)
	for _, ix := range reactionIndexes {
		if _, err := c.db.ExecContext(ctx, "ALTER TABLE _sync_reactions DROP KEY "+ix.name); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	conn, err = Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c = conn.(*Conn)
	for _, ix := range reactionIndexes {
		var n int
		if err := c.db.QueryRowContext(ctx, selectReactionIndex, ix.name).Scan(&n); err != nil || n == 0 {
			t.Errorf("index %s after reopening a store without it: %d columns, %v; want it back", ix.name, n, err)
		}
	}
	for _, r := range explain(t, c, claimDueCandidates(1, 0), 1, "x", 1, "x", 8) {
		if r.table == "_sync_reactions" && r.key != "_sync_reactions_exhausted_all" && r.key != "_sync_reactions_claim_all" {
			t.Errorf("claimDueCandidates reads %v; want the store-wide due indexes", r)
		}
	}
	for _, r := range explain(t, c, claimDueLock([]int{2, 1}), 1, "p1", "a", "b", "p2", "c") {
		if r.key != "PRIMARY" {
			t.Errorf("claimDueLock reads %v; want primary-key probes", r)
		}
	}
}
