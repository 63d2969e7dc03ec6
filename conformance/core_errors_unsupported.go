package conformance

import (
	"context"
	"errors"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// coreOnly hides every optional capability of the Conn and Tx it wraps, so
// the Store accessors of every capability can be checked on any driver.
type coreOnly struct{ driver.Conn }

type coreOnlyTx struct{ driver.Tx }

func (c coreOnly) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return coreOnlyTx{tx}, nil
}

func init() {
	register(
		// Catches a Store accessor that panics on a failed type assertion,
		// returns an empty result, or names no capability, when the driver
		// lacks the capability.
		Case{Name: "ERR-2/every-missing-capability-is-unsupported", Run: func(t T, h Harness) {
			ctx := t.Context()
			store := syncstore.OpenConn(coreOnly{openStore(t, h)})
			must(t, "Store.EnsureSchema", store.EnsureSchema(ctx, TestSchema()))
			if got := store.Capabilities(); len(got) != 0 {
				t.Fatalf("ERR-2: a core-only Conn declares %v", got)
			}
			check := func(op string, c driver.Capability, err error) {
				t.Helper()
				var e *driver.Error
				if !errors.As(err, &e) || e.Code != driver.CodeUnsupported || e.Capability != c {
					t.Errorf("ERR-2: %s without %s = %v; want unsupported naming the capability", op, c, err)
				}
			}
			const p = "p1"
			filter := driver.ScopeFilter{"project": {"p7"}}
			_, err := store.ScanRowsByIndex(ctx, p, driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
			check("ScanRowsByIndex", driver.CapIndexLookup, err)
			_, err = store.AuthoritativeQuery(ctx, p, driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{tTodos}})
			check("AuthoritativeQuery", driver.CapAuthoritativeQuery, err)
			_, err = store.ClaimReactions(ctx, p, driver.ClaimRequest{Owner: "w", Types: []string{"t"}, NowMs: 1, LeaseMs: 1000, Limit: 10})
			check("ClaimReactions", driver.CapReactions, err)
			_, err = store.ClaimDueReactions(ctx, driver.DueClaimRequest{ClaimRequest: driver.ClaimRequest{Owner: "w", Types: []string{"t"}, NowMs: 1, LeaseMs: 1000, Limit: 10}})
			check("ClaimDueReactions", driver.CapReactionsAcross, err)
			_, err = store.CompleteReaction(ctx, p, "k", "w", 1)
			check("CompleteReaction", driver.CapReactions, err)
			_, err = store.ExtendReactionLease(ctx, p, "k", "w", 1, 1000)
			check("ExtendReactionLease", driver.CapReactions, err)
			_, err = store.FailReaction(ctx, p, "k", "w", driver.FailRequest{NowMs: 1, Code: "app.failed"})
			check("FailReaction", driver.CapReactions, err)
			_, err = store.RetryReaction(ctx, p, "k", 1)
			check("RetryReaction", driver.CapReactions, err)
			_, err = store.ListReactions(ctx, p, driver.ReactionListQuery{Limit: 10})
			check("ListReactions", driver.CapReactions, err)
			_, err = store.PruneReactions(ctx, p, driver.ReactionPruneRequest{CompletedBeforeMs: 1, DeadLetterBeforeMs: 1, Limit: 10})
			check("PruneReactions", driver.CapReactions, err)
			_, err = store.ListRowsReferencingBlob(ctx, p, "b1", 10)
			check("ListRowsReferencingBlob", driver.CapBlobRefs, err)
			_, err = store.ListReferencedBlobIDs(ctx, p, "", 10)
			check("ListReferencedBlobIDs", driver.CapBlobRefs, err)
			_, err = store.ListClientRecords(ctx, p, driver.ClientRecordQuery{Limit: 10})
			check("ListClientRecords", driver.CapAdmin, err)
			_, err = store.ListCommitMeta(ctx, p, 0, 10)
			check("ListCommitMeta", driver.CapAdmin, err)
			_, err = store.ScopeActivity(ctx, p, tTodos, filter, 0, 10)
			check("ScopeActivity", driver.CapAdmin, err)
			_, _, err = store.RowScopes(ctx, p, tTodos, "t1")
			check("RowScopes", driver.CapAdmin, err)
			_, err = store.ListRows(ctx, p, tTodos, "", 10)
			check("ListRows", driver.CapAdmin, err)
			_, err = store.IssueLease(ctx, p, "c1", syncstore.LeaseRequest{ActorID: "a1", NowMs: 1, TTLMs: 1000})
			check("IssueLease", driver.CapLeases, err)
			_, _, err = store.GetLease(ctx, p, "c1")
			check("GetLease", driver.CapLeases, err)
			_, err = store.RevokeLease(ctx, p, "lease_1")
			check("RevokeLease", driver.CapLeases, err)
			_, err = store.SubscribeCommits(ctx)
			check("SubscribeCommits", driver.CapCommitFanout, err)

			tx, err := store.Begin(ctx, p)
			must(t, "Store.Begin", err)
			defer tx.Rollback(context.Background())
			_, err = tx.ScanRowsByIndex(ctx, driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
			check("Tx.ScanRowsByIndex", driver.CapIndexLookup, err)
			check("Tx.EnqueueReactions", driver.CapReactions, tx.EnqueueReactions(ctx, 1, []driver.ReactionInput{
				{Key: "k", Type: "t", Payload: driver.JSON(`{}`), MaxAttempts: 1, CreatedAtMs: 1}}))
			check("Tx.SetBlobRefs", driver.CapBlobRefs, tx.SetBlobRefs(ctx, tTodos, "t1", []string{"b1"}))
		}},
	)
}
