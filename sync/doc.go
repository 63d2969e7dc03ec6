// Package sync is what a host server imports to use syncstore: the driver
// registry, *Store and *Tx (the driver's operations behind input
// validation), schema compilation, and the error codes.
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
//
// # Opening a store
//
// Drivers register themselves in init (Register), as database/sql drivers
// do. A host blank-imports the driver, then opens a Store by name and
// ensures its schema:
//
//	store, err := sync.Open("sqlite", "file:app.db")
//	if err != nil { … }
//	defer store.Close()
//	if err := store.EnsureSchema(ctx, schema); err != nil { … }
//
// OpenConn wraps a driver.Conn opened by other means.
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
// # Pushing client commits
//
// Store.Push is the engine's write path (rule group PUSH): one client
// commit, all or nothing, with idempotent replay, base-version conflicts
// that carry the server's row, server versions and scopes computed, and
// the log built from the rows written. Hosts push through it and keep Tx
// for special cases:
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
// The ops of a commit apply in order, a row possibly written by several
// of them, each checked against the row as the ones before it left it.
// SetPushOptions adds host hooks run inside the push's Tx: Authorize and
// ValidateOp per op (ValidateOp sees the row the op replaces and may
// return the values to write: merged CRDT columns, scope columns put
// back), ValidateCommit per commit (the whole candidate commit, staged
// in the Tx) and PlanReactions per applied commit (reactions enqueued
// with it); a *Refusal from a hook rejects the commit with an
// application code, stored and replayed like a conflict. PushWith takes
// options for one call (hooks resolved per request); PushCommand pushes
// as the server, under the client-id namespace clients cannot use.
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
// Pull writes the client record that Prune's active-cursor floor reads
// (RET-1), so run Prune beside it. The host authorizes the scopes before
// calling Pull; a client id stays bound to the actor that first pulled
// with it (ErrClientActorMismatch).
//
// Store.PullTo is the same pull streamed to a PullSink — each
// subscription's start, its pages or window, its end — with as many
// pages of a bootstrap per call as the sink takes, in the memory of a
// few pages: the form for a protocol layer that writes its response as
// it goes (docs/pull.md).
//
// # Capabilities
//
// Optional driver capabilities are detected by type assertion
// (Store.Capabilities, Store.Supports) and reached through Store and Tx
// methods such as ScanRowsByIndex, which return ErrUnsupported — an *Error
// whose Capability names what is missing — when the driver lacks it
// (ERR-2).
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
package sync
