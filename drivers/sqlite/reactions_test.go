package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// rxEnqueue enqueues n reactions "<prefix>NNNN" of type typ created at
// createdAt in one push of p.
func rxEnqueue(t *testing.T, c *Conn, p, prefix, typ string, n int, createdAt int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	ins := make([]driver.ReactionInput, n)
	for i := range ins {
		ins[i] = driver.ReactionInput{Key: fmt.Sprintf("%s%04d", prefix, i), Type: typ, Payload: "{}", MaxAttempts: 2, CreatedAtMs: createdAt}
	}
	if err := tx.(driver.ReactionsTx).EnqueueReactions(ctx, 0, ins); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReactionPlans pins every reaction statement to its index on a store
// where most reactions are finished: claims read the small partial due
// index, never the table, so their cost does not grow with history
// (docs/performance.md, "cost must not grow with the store").
func TestReactionPlans(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	rxEnqueue(t, c, "p1", "done", "mail", 2000, 1)
	rxEnqueue(t, c, "p1", "todo", "mail", 10, 2)
	for {
		rs, err := c.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w", NowMs: 1, LeaseMs: 1000, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			if ok, err := c.CompleteReaction(ctx, "p1", r.Key, "w", 2); err != nil || !ok {
				t.Fatalf("complete %s: %v %v", r.Key, ok, err)
			}
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	var due int
	if err := c.r.QueryRowContext(ctx, `SELECT count(*) FROM _sync_reactions INDEXED BY _sync_reactions_due
		WHERE partition = 'p1' AND due_at_ms <= 9223372036854775807`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if due != 10 {
		t.Errorf("the due index holds %d entries of p1, want the 10 unfinished reactions", due)
	}
	scan := []string{"SCAN _sync_reactions"}
	pk := "INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"
	checkPlans(t, c, []planCase{
		{"claim lease", sqlitesql.ClaimLease, []any{"p1", 5, 50, nil, "w", 10},
			[]string{"USING INDEX _sync_reactions_due (partition=? AND due_at_ms<?)", pk}, append(scan, "TEMP B-TREE")},
		{"claim lease by types", sqlitesql.ClaimLease, []any{"p1", 5, 50, `["mail"]`, "w", 10},
			[]string{"USING INDEX _sync_reactions_due (partition=? AND due_at_ms<?)"}, append(scan, "TEMP B-TREE")},
		{"claim dead-letters exhausted", sqlitesql.ClaimDeadLetterExhausted, []any{"p1", 5, nil, sqlitesql.ExhaustedCode},
			[]string{"USING INDEX _sync_reactions_exhausted (partition=? AND due_at_ms<?)"}, scan},
		{"complete", sqlitesql.CompleteReaction, []any{"p1", "k", "w", 1}, []string{pk}, scan},
		{"extend", sqlitesql.ExtendReactionLease, []any{"p1", "k", "w", 1, 2}, []string{pk}, scan},
		{"fail with retry", sqlitesql.FailReactionRetry, []any{"p1", "k", "w", 1, 2, "c", nil}, []string{pk}, scan},
		{"fail", sqlitesql.FailReactionDead, []any{"p1", "k", "w", 1, "c", nil}, []string{pk}, scan},
		{"retry", sqlitesql.RetryReaction, []any{"p1", "k", 1}, []string{pk}, scan},
		{"list", sqlitesql.ListReactions, []any{"p1", 1, 1, 1, 1, nil, 10, nil, nil},
			[]string{"USING INDEX _sync_reactions_list (partition=? AND status=? AND (created_at_ms,key)<(?,?))"}, scan},
		{"prune", sqlitesql.PruneReactions, []any{"p1", 5, 5, 10},
			[]string{"USING INDEX _sync_reactions_prune (partition=? AND status=? AND updated_at_ms<?)"}, scan},
	})
}

// TestDuplicateReactionKey checks the code of a duplicate key (RX-1): it is
// duplicate_reaction_key and not a constraint violation, nothing of the
// batch is staged, and the Tx stays usable.
func TestDuplicateReactionKey(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	rxEnqueue(t, c, "p1", "k", "mail", 1, 1) // k0000
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rt := tx.(driver.ReactionsTx)
	err = rt.EnqueueReactions(ctx, 0, []driver.ReactionInput{
		{Key: "new", Type: "mail", Payload: "{}", MaxAttempts: 1}, {Key: "k0000", Type: "mail", Payload: "{}", MaxAttempts: 1}})
	if !errors.Is(err, driver.ErrDuplicateReactionKey) || errors.Is(err, driver.ErrConstraintViolation) {
		t.Fatalf("duplicate key: %v, want only duplicate_reaction_key", err)
	}
	if err := rt.EnqueueReactions(ctx, 0, []driver.ReactionInput{{Key: "after", Type: "mail", Payload: "{}", MaxAttempts: 1}}); err != nil {
		t.Fatalf("enqueue after a duplicate: %v (the Tx must stay usable)", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key)
	}
	if fmt.Sprint(keys) != "[k0000 after]" {
		t.Errorf("stored keys %v, want [k0000 after] (nothing of the failed batch)", keys)
	}
}

// TestReactionsSurviveReopen checks that reactions are durable in the file
// and that a second Conn on the same file sees and claims them.
func TestReactionsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	c, path := openTest(t)
	rxEnqueue(t, c, "p1", "k", "mail", 3, 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openDSN(t, path)
	rs, err := c2.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w", NowMs: 5, LeaseMs: 10, Limit: 10})
	if err != nil || len(rs) != 3 {
		t.Fatalf("claim after reopen: %d reactions, %v; want 3", len(rs), err)
	}
}
