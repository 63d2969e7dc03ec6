package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestPlansCapabilities pins the plans of the capability statements on a
// loaded, analyzed store, custom and generic: an index lookup is served by
// the declared index (IXL-4), and a claim walks the due index (RX-2) —
// no sequential scan of any table.
func TestPlansCapabilities(t *testing.T) {
	t.Parallel() // a database of its own; EXPLAIN reads statistics, not load
	c, _ := openTest(t)
	ctx := t.Context()
	for i := range 200 {
		if _, err := pushTodos(ctx, c, "p", i*10, 10); err != nil {
			t.Fatal(err)
		}
	}
	// 4,000 reactions in two partitions, half of them completed.
	for p, part := range []string{"p", "q"} {
		tx, err := c.Begin(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		var in []driver.ReactionInput
		for i := range 2000 {
			in = append(in, driver.ReactionInput{Key: fmt.Sprintf("k%05d", i), Type: "t" + fmt.Sprint(i%3), Payload: "{}", MaxAttempts: 3, CreatedAtMs: int64(i + p)})
		}
		if err := tx.(*Tx).EnqueueReactions(ctx, 1, in); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		rs, err := c.ClaimReactions(ctx, part, driver.ClaimRequest{Owner: "w", NowMs: 1000, LeaseMs: 10, Limit: 1000})
		if err != nil || len(rs) != 1000 {
			t.Fatalf("claim: %d rows, %v", len(rs), err)
		}
		for _, r := range rs {
			if _, err := c.CompleteReaction(ctx, part, r.Key, "w", 1001); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	_, lookup, lookupArgs, err := c.indexLookup("p", driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o7"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name, q string
		args    []any
		want    string
	}{
		{"index lookup by_owner", lookup, lookupArgs, declaredIndexName("todos", "by_owner")},
		{"claim", sqlClaim, []any{"p", int64(5000), []string(nil), int64(50), "w2", int64(6000)}, "_sync_reactions_due"},
		// RX-12 on an idle store (nothing due at 500): the store-wide index.
		{"claim across", sqlClaimAcross, []any{int64(500), []string{"t1"}, int64(50), "w2", int64(6000), []string(nil)}, "_sync_reactions_due_all"},
		{"claim across listed", sqlClaimAcross, []any{int64(500), []string{"t1"}, int64(50), "w2", int64(6000), []string{"p", "q"}}, "_sync_reactions_due_all"},
		{"claim by type", sqlClaim, []any{"p", int64(5000), []string{"t1"}, int64(50), "w2", int64(6000)}, "_sync_reactions_due"},
	}
	for _, ck := range checks {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s): sequential scan:\n%s", ck.name, mode, plan)
			}
			// The scope index on owner_id leads with the same two columns
			// as by_owner, so it serves the lookup with the same condition
			// (the generic plan takes it).
			if !strings.Contains(plan, ck.want) && !(ck.want == declaredIndexName("todos", "by_owner") && strings.Contains(plan, scopeIndexName("todos", "owner_id"))) {
				t.Errorf("%s (%s): plan does not use %s:\n%s", ck.name, mode, ck.want, plan)
			}
		}
	}
}
