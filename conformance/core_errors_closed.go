package conformance

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// ERR-4 cases: after Close, every operation of the Conn, of a Tx still
// open and of a Store over the Conn fails with sync.storage.closed (not
// retryable: a retry cannot help), Close rolls back the open Tx, and a
// second Close is a no-op.

// closedCall is one operation tried after Close.
type closedCall struct {
	name string
	call func(ctx context.Context) error
}

// connCalls lists every core method of conn (EnsureSchema and Begin
// included) with valid arguments on partition p.
func connCalls(conn driver.Conn, p string) []closedCall {
	filter := driver.ScopeFilter{"project": {"p7"}}
	calls := []closedCall{
		{"EnsureSchema", func(ctx context.Context) error { return conn.EnsureSchema(ctx, TestSchema()) }},
		{"Begin", func(ctx context.Context) error {
			tx, err := conn.Begin(ctx, p)
			if tx != nil {
				_ = tx.Rollback(context.Background())
			}
			return err
		}},
		{"MaxCommitSeq", func(ctx context.Context) error { _, err := conn.MaxCommitSeq(ctx, p); return err }},
		{"ReadCommitWindow", func(ctx context.Context) error {
			_, err := conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: filter, ThroughSeq: 1, LimitChanges: 10})
			return err
		}},
		{"ReadCommits", func(ctx context.Context) error {
			_, err := conn.ReadCommits(ctx, p, driver.CommitsQuery{ThroughSeq: 1, LimitChanges: 10})
			return err
		}},
		{"CommitSeqBefore", func(ctx context.Context) error { _, err := conn.CommitSeqBefore(ctx, p, 1); return err }},
		{"GetRow", func(ctx context.Context) error { _, _, err := conn.GetRow(ctx, p, tTodos, "t1"); return err }},
		{"ScanRows", func(ctx context.Context) error {
			_, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: filter, Limit: 10})
			return err
		}},
		{"GetPushResult", func(ctx context.Context) error { _, _, err := conn.GetPushResult(ctx, p, "c1", "cc1"); return err }},
		{"HorizonSeq", func(ctx context.Context) error { _, err := conn.HorizonSeq(ctx, p); return err }},
		{"SetHorizonSeq", func(ctx context.Context) error { return conn.SetHorizonSeq(ctx, p, 0) }},
		{"PruneCommitsThrough", func(ctx context.Context) error { _, err := conn.PruneCommitsThrough(ctx, p, 0); return err }},
		{"GetClientRecord", func(ctx context.Context) error { _, _, err := conn.GetClientRecord(ctx, p, "c1"); return err }},
		{"PutClientRecord", func(ctx context.Context) error {
			return conn.PutClientRecord(ctx, p, driver.ClientRecord{ClientID: "c9", Cursor: 1, UpdatedAtMs: 1})
		}},
		{"ListClientCursors", func(ctx context.Context) error { _, err := conn.ListClientCursors(ctx, p, "", 10); return err }},
		{"AckClientCursor", func(ctx context.Context) error {
			_, err := conn.AckClientCursor(ctx, p, "c1", "a1", 0, 1)
			return err
		}},
		{"TouchPartition", func(ctx context.Context) error { _, err := conn.TouchPartition(ctx, p, 1, "e1"); return err }},
		{"RotatePartitionLogEpoch", func(ctx context.Context) error {
			_, err := conn.RotatePartitionLogEpoch(ctx, p, "e2", 1)
			return err
		}},
		{"ListPartitionRegistry", func(ctx context.Context) error { _, err := conn.ListPartitionRegistry(ctx, "", 10); return err }},
		{"ListPartitions", func(ctx context.Context) error { _, err := conn.ListPartitions(ctx, "", 10); return err }},
	}
	if v, ok := conn.(driver.EngineVersioner); ok {
		calls = append(calls, closedCall{"EngineVersion", func(ctx context.Context) error { _, err := v.EngineVersion(ctx); return err }})
	}
	return calls
}

// capabilityCalls lists the Conn-half methods of every capability conn
// declares, with valid arguments on partition p.
func capabilityCalls(conn driver.Conn, p string) []closedCall {
	var calls []closedCall
	add := func(name string, call func(ctx context.Context) error) {
		calls = append(calls, closedCall{name, call})
	}
	if c, ok := conn.(driver.ReactionsConn); ok {
		add("ClaimReactions", func(ctx context.Context) error {
			_, err := c.ClaimReactions(ctx, p, driver.ClaimRequest{Owner: "w", Types: []string{"t"}, NowMs: 1, LeaseMs: 1000, Limit: 10})
			return err
		})
		add("CompleteReaction", func(ctx context.Context) error { _, err := c.CompleteReaction(ctx, p, "k", "w", 1); return err })
		if ac, ok := conn.(driver.ReactionsAcrossConn); ok {
			add("ClaimDueReactions", func(ctx context.Context) error {
				_, err := ac.ClaimDueReactions(ctx, driver.DueClaimRequest{Partitions: []string{p},
					ClaimRequest: driver.ClaimRequest{Owner: "w", Types: []string{"t"}, NowMs: 1, LeaseMs: 1000, Limit: 10}})
				return err
			})
		}
		add("GetReaction", func(ctx context.Context) error { _, _, err := c.GetReaction(ctx, p, "k"); return err })
		add("ExtendReactionLease", func(ctx context.Context) error {
			_, err := c.ExtendReactionLease(ctx, p, "k", "w", 1, 1000)
			return err
		})
		add("FailReaction", func(ctx context.Context) error {
			_, err := c.FailReaction(ctx, p, "k", "w", driver.FailRequest{NowMs: 1, Code: "app.failed"})
			return err
		})
		add("RetryReaction", func(ctx context.Context) error { _, err := c.RetryReaction(ctx, p, "k", 1); return err })
		add("ListReactions", func(ctx context.Context) error {
			_, err := c.ListReactions(ctx, p, driver.ReactionListQuery{Limit: 10})
			return err
		})
		add("PruneReactions", func(ctx context.Context) error {
			_, err := c.PruneReactions(ctx, p, driver.ReactionPruneRequest{CompletedBeforeMs: 1, DeadLetterBeforeMs: 1, Limit: 10})
			return err
		})
	}
	if c, ok := conn.(driver.AuthoritativeQueryConn); ok {
		add("AuthoritativeQuery", func(ctx context.Context) error {
			_, err := c.AuthoritativeQuery(ctx, p, driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{tTodos}})
			return err
		})
	}
	if c, ok := conn.(driver.IndexLookupConn); ok {
		add("ScanRowsByIndex", func(ctx context.Context) error {
			_, err := c.ScanRowsByIndex(ctx, p, driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
			return err
		})
	}
	if c, ok := conn.(driver.BlobRefsConn); ok {
		add("ListRowsReferencingBlob", func(ctx context.Context) error {
			_, err := c.ListRowsReferencingBlob(ctx, p, "b1", 10)
			return err
		})
		add("ListReferencedBlobIDs", func(ctx context.Context) error {
			_, err := c.ListReferencedBlobIDs(ctx, p, "", 10)
			return err
		})
	}
	if c, ok := conn.(driver.AdminConn); ok {
		add("ListClientRecords", func(ctx context.Context) error {
			_, err := c.ListClientRecords(ctx, p, driver.ClientRecordQuery{Limit: 10})
			return err
		})
		add("ListCommitMeta", func(ctx context.Context) error { _, err := c.ListCommitMeta(ctx, p, 0, 10); return err })
		add("ScopeActivity", func(ctx context.Context) error {
			_, err := c.ScopeActivity(ctx, p, tTodos, driver.ScopeFilter{"project": {"p7"}}, 0, 1)
			return err
		})
		add("RowScopes", func(ctx context.Context) error { _, _, err := c.RowScopes(ctx, p, tTodos, "t1"); return err })
		add("ListRows", func(ctx context.Context) error { _, err := c.ListRows(ctx, p, tTodos, "", 10); return err })
	}
	if c, ok := conn.(driver.LeasesConn); ok {
		add("IssueLease", func(ctx context.Context) error {
			_, err := c.IssueLease(ctx, p, "c1", driver.LeaseGrant{LeaseID: "lease_1", ActorID: "a1", AllowedScopes: "{}", IssuedAtMs: 1, ExpiresAtMs: 2})
			return err
		})
		add("GetLease", func(ctx context.Context) error { _, _, err := c.GetLease(ctx, p, "c1"); return err })
		add("RevokeLease", func(ctx context.Context) error { _, err := c.RevokeLease(ctx, p, "lease_1"); return err })
	}
	if c, ok := conn.(driver.CommitFanoutConn); ok {
		add("SubscribeCommits", func(ctx context.Context) error {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := c.SubscribeCommits(sctx)
			return err
		})
	}
	return calls
}

// txCalls lists every method of tx but Rollback, Commit and
// CommitRejected (the Tx halves of its capabilities included).
func txCalls(tx driver.Tx) []closedCall {
	row := todo("t2", "p7", "o1")
	calls := []closedCall{
		{"Tx.GetRow", func(ctx context.Context) error { _, _, err := tx.GetRow(ctx, tTodos, "t1"); return err }},
		{"Tx.ScanRows", func(ctx context.Context) error {
			_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7"}}, Limit: 10})
			return err
		}},
		{"Tx.GetPushResult", func(ctx context.Context) error { _, _, err := tx.GetPushResult(ctx, "c1", "cc1"); return err }},
		{"Tx.UpsertRow", func(ctx context.Context) error { return tx.UpsertRow(ctx, tTodos, row) }},
		{"Tx.DeleteRow", func(ctx context.Context) error { return tx.DeleteRow(ctx, tTodos, "t1") }},
		{"Tx.AppendCommit", func(ctx context.Context) error {
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc2", ActorID: "a1", CreatedAtMs: 1,
				Changes: []driver.Change{upsertChange(tTodos, row)}})
			return err
		}},
		{"Tx.PutPushResult", func(ctx context.Context) error {
			return tx.PutPushResult(ctx, "c1", "cc2", driver.PushResult{Status: driver.PushApplied, CommitSeq: 2, RecordedAtMs: 1})
		}},
	}
	if x, ok := tx.(driver.ReactionsTx); ok {
		calls = append(calls, closedCall{"Tx.EnqueueReactions", func(ctx context.Context) error {
			return x.EnqueueReactions(ctx, 1, []driver.ReactionInput{{Key: "k9", Type: "t", Payload: driver.JSON(`{}`), MaxAttempts: 1, CreatedAtMs: 1}})
		}})
	}
	if x, ok := tx.(driver.IndexLookupTx); ok {
		calls = append(calls, closedCall{"Tx.ScanRowsByIndex", func(ctx context.Context) error {
			_, err := x.ScanRowsByIndex(ctx, driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o1"}, Limit: 10})
			return err
		}})
	}
	if x, ok := tx.(driver.BlobRefsTx); ok {
		calls = append(calls, closedCall{"Tx.SetBlobRefs", func(ctx context.Context) error {
			return x.SetBlobRefs(ctx, tTodos, "t1", []string{"b1"})
		}})
	}
	return calls
}

// expectClosed runs every call and checks that each fails with
// sync.storage.closed, not retryable (ERR-4).
func expectClosed(t T, calls []closedCall) {
	t.Helper()
	for _, c := range calls {
		errExpectTyped(t, c.name+" after Close", c.call(t.Context()), driver.CodeClosed)
	}
}

func init() {
	register(
		// Catches a driver that reports a closed store as unavailable (a
		// retryable code: hosts and workers would retry it forever), lets
		// a method through to a closed pool (sql: database is closed), or
		// fails a second Close.
		Case{Name: "ERR-4/every-conn-method-after-close", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("t1", "p7", "o1"))
			must(t, "Close", conn.Close())
			expectClosed(t, connCalls(conn, "p1"))
		}},
		// Catches a capability method that bypasses the closed check
		// (reactions, queries on pools of their own, fanout listeners).
		Case{Name: "ERR-4/capability-methods-after-close", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			calls := capabilityCalls(conn, "p1")
			if len(calls) == 0 {
				t.Skipf("ERR-4: the driver declares no capability (ERR-4/every-conn-method-after-close covers the core)")
			}
			push(t, conn, "p1", tTodos, todo("t1", "p7", "o1"))
			must(t, "Close", conn.Close())
			expectClosed(t, calls)
		}},
		// Catches a Tx that writes on after its Conn was closed (its
		// buffered writes landing at Commit, a Commit that reports
		// success on a gone store), and a Close that leaves the open Tx
		// holding its partition.
		Case{Name: "ERR-4/tx-open-at-close", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			var other driver.Conn
			if h.Reopen != nil {
				other = h.Reopen(t, conn)
				must(t, "EnsureSchema on the other Conn", other.EnsureSchema(t.Context(), TestSchema()))
			}
			push(t, conn, "p1", tTodos, todo("t1", "p7", "o1"))
			tx := begin(t, conn, "p1")
			stage(t, tx, tTodos, todo("t3", "p7", "o1"))
			must(t, "Close", conn.Close())

			if other != nil {
				// Close rolled the Tx back: the partition is free for
				// another Conn, and nothing of the Tx is visible.
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				tx2, err := other.Begin(ctx, "p1")
				cancel()
				if err != nil {
					t.Errorf("ERR-4: Begin on another Conn after Close = %v; the Tx open at Close still holds its partition", err)
				} else {
					must(t, "Rollback on the other Conn", tx2.Rollback(t.Context()))
				}
			}
			expectClosed(t, txCalls(tx))
			errExpectTyped(t, "Tx.CommitRejected after Close", tx.CommitRejected(t.Context(), "c1", "cc3",
				driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1}), driver.CodeClosed)
			errExpectTyped(t, "Tx.Commit after Close", tx.Commit(t.Context()), driver.CodeClosed)
			if err := tx.Rollback(t.Context()); err != nil {
				t.Errorf("ERR-4: Tx.Rollback after Close = %v; want nil (Close rolled it back)", err)
			}
			if other != nil {
				seq, err := other.MaxCommitSeq(t.Context(), "p1")
				must(t, "MaxCommitSeq on the other Conn", err)
				expectEqual(t, "ERR-4: MaxCommitSeq after a Tx open at Close", int64(1), seq)
				_, found, err := other.GetRow(t.Context(), "p1", tTodos, "t3")
				must(t, "GetRow on the other Conn", err)
				if found {
					t.Errorf("ERR-4: a row staged by the Tx open at Close landed")
				}
			}
		}},
		// Catches a second Close that fails or reopens anything, and a
		// Store (the host's view) whose calls after Close do not say
		// closed — RunInTx included, which must not retry.
		Case{Name: "ERR-4/close-twice-and-store", Run: func(t T, h Harness) {
			store := syncstore.OpenConn(openStore(t, h))
			ctx := t.Context()
			must(t, "Store.EnsureSchema", store.EnsureSchema(ctx, TestSchema()))
			must(t, "Store.Close", store.Close())
			if err := store.Close(); err != nil {
				t.Errorf("ERR-4: second Store.Close = %v; want nil (no-op)", err)
			}
			if err := store.Conn().Close(); err != nil {
				t.Errorf("ERR-4: third Close, on the Conn = %v; want nil (no-op)", err)
			}
			_, err := store.MaxCommitSeq(ctx, "p1")
			errExpectTyped(t, "Store.MaxCommitSeq after Close", err, driver.CodeClosed)
			_, _, err = store.GetRow(ctx, "p1", tTodos, "t1")
			errExpectTyped(t, "Store.GetRow after Close", err, driver.CodeClosed)
			_, err = store.Begin(ctx, "p1")
			errExpectTyped(t, "Store.Begin after Close", err, driver.CodeClosed)
			calls := 0
			err = store.RunInTx(ctx, "p1", func(context.Context, *syncstore.Tx) error { calls++; return nil })
			errExpectTyped(t, "Store.RunInTx after Close", err, driver.CodeClosed)
			if calls != 0 {
				t.Errorf("ERR-4: RunInTx after Close called fn %d times; want 0", calls)
			}
			_, err = store.Pull(ctx, "p1", pullReq(pullSub("s", "p7", 0), pullSub("b", "p7", syncstore.PullBootstrap)))
			errExpectTyped(t, "Store.Pull after Close", err, driver.CodeClosed)
		}},
	)
}
