// Package sync is the engine a host server runs syncstore with. A host
// opens a Store over a driver, ensures its schema, and serves its clients
// with four calls: Push applies a client's commit, Pull serves its
// subscriptions, Prune applies retention, and SubscribeCommits wakes
// waiting pullers when a commit lands; a Worker runs the reactions commits
// enqueue. To serve upstream Syncular's clients over their wire protocol
// (SSP2), mount package github.com/syncstore/syncstore/server, which is
// built on these calls.
//
// The Store's other methods are the primitives the engine is built on and
// the admin and capability calls; they are grouped under Primitives below,
// and each says in its first line what it is and which engine call a host
// normally uses instead (docs/decisions.md, "The Store's surface").
//
// # Opening a store
//
// Drivers register themselves in init, as database/sql drivers do. A host
// blank-imports one, opens a Store by name and ensures its schema:
//
//	import _ "github.com/syncstore/syncstore/drivers/postgres" // or sqlite, mysql, d1http
//
//	store, err := sync.Open("postgres", dsn)
//	if err != nil { … }
//	defer store.Close()
//	if err := store.EnsureSchema(ctx, schema); err != nil { … }
//
// OpenConn wraps a driver.Conn opened by other means (over a host's pool).
// A Store is safe for concurrent use; every call checks its input first, so
// bad input writes nothing (see Validation).
//
// # Pushing client commits
//
// Store.Push applies one client commit (rule group PUSH), all or nothing,
// with idempotent replay, base-version conflicts that carry the server's
// row, server versions and scopes computed, and the log built from the
// rows written:
//
//	resp, err := store.Push(ctx, partition, sync.PushRequest{
//		ClientID: "phone-1", ClientCommitID: "c-42", ActorID: user,
//		Ops: []sync.PushOp{{Table: "todos", RowID: "t1", Op: sync.OpUpsert,
//			Values: values, BaseVersion: sync.Version(3)}},
//	})
//	switch {
//	case err != nil: // bad input (typed, nothing written) or the engine failed
//	case resp.Status == sync.PushRejected: // resp.Ops says which op and why
//	default: // applied at resp.CommitSeq; resp.Changes for live delivery
//	}
//
// The ops of a commit apply in order, each checked against the row as the
// ones before it left it. SetPushOptions adds host hooks run inside the
// push's Tx (Authorize, ValidateOp, ValidateCommit, PlanReactions: see
// PushOptions); a *Refusal from a hook rejects the commit with an
// application code, stored and replayed like a conflict. PushWith takes
// options for one call; PushCommand pushes as the server.
//
// # Pulling
//
// Store.Pull serves one client's subscriptions (rule group PULL): a
// subscription with cursor PullBootstrap gets its scope's rows in pages
// pinned at one commit seq, with a BootstrapToken for the next page; one
// with a cursor gets the whole commits after it that touched its scope,
// and a NextCursor that moves past the commits that did not. A
// subscription whose cursor fell below the horizon is reset
// (ErrCursorExpired as its Reason): the client drops its rows and
// bootstraps again. The client sends back NextCursor and BootstrapToken:
//
//	resp, err := store.Pull(ctx, partition, sync.PullRequest{ClientID: c, ActorID: a,
//		Subscriptions: []sync.PullSubscription{{ID: "mine", Table: "todos",
//			Scopes: sync.ScopeFilter{"owner": {a}}, Cursor: cursor, BootstrapToken: token}}})
//
// The host authorizes the scopes before calling Pull; a client id stays
// bound to the actor that first pulled or pushed with it
// (ErrClientActorMismatch, CR-7).
// Store.PullTo streams the same pull to a PullSink, as many bootstrap pages
// per call as the sink takes, in the memory of a few: the form for a
// protocol layer that writes its response as it goes (docs/pull.md).
//
// # Retention, realtime and reactions
//
// Store.Prune applies upstream Syncular's retention rule to one partition
// (rule group RET); run it on a schedule beside Pull, whose client records
// hold its active-cursor floor (docs/retention.md). Store.SubscribeCommits
// delivers a (partition, seq) wake for every commit any instance lands
// (FAN-1); a server instance then reads what landed with
// Store.ReadCommits (LOG) and records a client's acknowledgement with
// Store.AckClientCursor (CR-6). NewWorker runs the reactions commits
// enqueue (PlanReactions), each under a lease, with retries and a
// dead-letter state (rule group RX). Store.SetReadReplica sends reads a
// host marks with AllowReplica to a replica (REP).
//
// # Primitives
//
// The engine is written once over these calls, each a driver's behind
// input validation (docs/contract.md gives each rule group). A host reaches for
// them for what the engine does not do; each one's doc starts by naming
// the engine call it stands under.
//
//   - Transactions (TX, SEQ): Begin and RunInTx return a *Tx whose
//     UpsertRow, DeleteRow, AppendCommit, PutPushResult, CommitRejected,
//     EnqueueReactions and reads are what Push runs; hosts meet a Tx in
//     push hooks and through Tx.As.
//   - Rows and windows (ROW, SCAN, WIN, SEQ-5): GetRow, ScanRows,
//     ReadCommitWindow, MaxCommitSeq — what Pull reads.
//   - Push results (PR): GetPushResult — what Push replays.
//   - Horizon and retention (HZ, PR-7, CR-4, CR-5): HorizonSeq,
//     SetHorizonSeq, PruneCommitsThrough, CommitSeqBefore,
//     DeletePushResultsBefore, DeleteClientRecordsBefore, MinClientCursor
//     — what Prune runs.
//   - Client records (CR): GetClientRecord, PutClientRecord,
//     ListClientCursors — what Pull writes and Prune reads.
//   - Partition registry (REG): TouchPartition, RotatePartitionLogEpoch,
//     ListPartitionRegistry, ListPartitions — Pull touches a partition;
//     ListPartitions feeds a Prune loop or a Worker's Partitions.
//   - Reaction leases (RX-2…RX-6): ClaimReactions, CompleteReaction,
//     ExtendReactionLease, FailReaction — what a Worker runs.
//
// Admin and capability calls, which a host makes beside the engine:
// reactions for operators (GetReaction, ListReactions, RetryReaction,
// PruneReactions), authoritative queries (AuthoritativeQuery, AQ), index
// lookups (ScanRowsByIndex, IXL), blob references (ListRowsReferencingBlob,
// ListReferencedBlobIDs, BLOB) and admin views (ListClientRecords,
// ListCommitMeta, ScopeActivity, RowScopes, ListRows, ADM). Optional
// driver capabilities are detected by type assertion (Store.Capabilities,
// Store.Supports); a call whose capability the driver lacks returns
// ErrUnsupported, an *Error whose Capability names it (ERR-2).
//
// # Validation
//
// Every Store and Tx method checks its input against docs/contract.md group V
// before the driver is called, in one place (validate.go): partitions
// (V-1), ids (V-2), values against the ensured schema's column types
// (V-3), row ids and scopes against the primary-key and scope columns
// (V-4), limits (V-5), scope filters (V-6), reserved client ids (V-7),
// push results and application codes (V-8), and unknown tables (SCH-8).
// Bad input therefore writes nothing (V-9), every engine rejects it with
// the same *Error code, and messages never contain the value at fault,
// nor partition names (V-10).
//
// Row values use the Go type of their column type (see ColumnType):
// string, int64 (not int), finite float64, bool, JSON, non-nil
// []byte; NULL is an untyped nil. A row's scopes are the values of its
// table's scope columns; ScopesOf computes them from the values:
//
//	t, _ := schema.Table("todos")
//	values := sync.Values{"id": "t1", "project_id": "p7", …}
//	row := sync.Row{ID: "t1", ServerVersion: 1, Values: values, Scopes: sync.ScopesOf(t, values)}
//
// # Transactions
//
// Store.Begin returns a *Tx on one partition (rule group TX). RunInTx runs
// a function in one, commits it, rolls it back on error or panic, and
// retries the whole transaction when an optimistic engine reports a write
// conflict (ErrWriteConflict, TX-9):
//
//	err := store.RunInTx(ctx, partition, func(ctx context.Context, tx *sync.Tx) error {
//		if err := tx.UpsertRow(ctx, "todos", row); err != nil {
//			return err
//		}
//		_, err := tx.AppendCommit(ctx, commit)
//		return err
//	})
//
// Commit tells the truth about its outcome (TX-10): nil means the Tx
// landed; ErrCommitOutcomeUnknown means the engine's answer was lost and
// the driver could not settle it, so the Tx may have landed — re-read what
// it wrote (a push's result) and never apply it again blindly; any other
// error means nothing was written. RunInTx never retries after
// ErrCommitOutcomeUnknown.
//
// # Observing
//
// Store.SetHooks installs Hooks for tracing and metrics: each Store or Tx
// call that reaches the driver reports one Call (its Op, such as
// "Store.Push" or "Tx.Commit", and its partition) with its context and
// its error; hooks cannot change either. The engine's own handle is
// reached through Store.As and Tx.As (TX-11), with or without hooks.
//
// # Errors
//
// Every error is an *Error (an alias of Error) or wraps one, with a
// stable Code (ERR-1). Test it with errors.Is against the sentinels
// (sync.ErrInvalidValue, …) and read details with errors.As:
//
//	var e *sync.Error
//	if errors.As(err, &e) && e.Code == sync.CodeInvalidValue {
//		log.Printf("bad column %s", e.Column)
//	}
//
// # The package name
//
// The package is named sync, as users call it (sync.Open). A file that
// also needs the standard library's sync imports one of them under an
// alias:
//
//	import (
//		gosync "sync"
//
//		"github.com/syncstore/syncstore/sync"
//		_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
//	)
package sync
