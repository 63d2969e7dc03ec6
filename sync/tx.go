package sync

import (
	"context"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Tx is a write transaction on one partition (rule group TX) behind the
// validation of group V. It has the methods of driver.Tx with the same
// signatures; each checks its input against the schema ensured when the Tx
// began and calls the driver only when the input is valid, so a rejected
// call stages nothing (V-9) and the Tx stays usable.
//
// Like driver.Tx it is used by one goroutine at a time. After Commit,
// Rollback or CommitRejected every method returns CodeTxFinished (the
// driver's TX-5), except Rollback, which is then a no-op.
type Tx struct {
	tx     driver.Tx
	schema *compiledSchema
	store  *Store
	// ended is set once Commit, Rollback or CommitRejected reached the
	// driver, so RunInTx never commits a finished Tx.
	ended atomic.Bool
}

// Driver returns the driver.Tx under the Tx. Calls made on it directly
// skip validation.
func (tx *Tx) Driver() driver.Tx { return tx.tx }

// Partition returns the partition the Tx writes.
func (tx *Tx) Partition() string { return tx.tx.Partition() }

// As is the escape hatch to the engine transaction under the Tx (gocloud
// style, driver.Aser): when target is a pointer to a handle type the
// driver documents, As sets *target to the engine's own transaction and
// returns true; otherwise, or once Commit, CommitRejected or Rollback was
// called, it returns false and leaves *target alone. It never panics.
//
// Statements the host runs through the handle are part of the Tx: they
// land with Commit and vanish with Rollback (TX-2), while the Tx holds its
// partition (TX-1), so a host writes its own tables atomically with a
// push. The host must not commit, roll back or otherwise end the engine
// transaction through the handle, must not use the handle concurrently
// with the Tx's methods, and must not use it after the Tx ends. The
// handle is not validated: what the host writes through it is the host's
// (group V does not apply). The store's own tables are not the host's to
// write.
//
// Targets per bundled driver (each driver's docs/<driver>.md says more):
// postgres *pgx.Tx (github.com/jackc/pgx/v5); mysql **sql.Tx; sqlite
// **sql.Tx; d1http none (D1 has no interactive transaction: As returns
// false).
func (tx *Tx) As(target any) bool {
	if tx.ended.Load() {
		return false
	}
	return driver.AsOf(tx.tx, target)
}

// GetRow is driver.Tx's, after SCH-8 and V-2 on id; it sees the Tx's own
// writes (TX-3).
func (tx *Tx) GetRow(ctx context.Context, table, id string) (_ Row, _ bool, err error) {
	defer tx.observe(&ctx, "Tx.GetRow").done(&err)
	if err := checkCtx(ctx, "Tx.GetRow"); err != nil {
		return *new(Row), *new(bool), err
	}
	if err := checkGetRow("Tx.GetRow", tx.schema, table, id); err != nil {
		return Row{}, false, err
	}
	return tx.tx.GetRow(ctx, table, id)
}

// ScanRows is driver.Tx's, after the checks of Store.ScanRows; it sees the
// Tx's own writes (TX-3). A filter key with an empty value list matches
// nothing: the result is empty and the driver is not called.
func (tx *Tx) ScanRows(ctx context.Context, q ScanQuery) (_ []Row, err error) {
	defer tx.observe(&ctx, "Tx.ScanRows").done(&err)
	if err := checkCtx(ctx, "Tx.ScanRows"); err != nil {
		return *new([]Row), err
	}
	empty, err := checkScan("Tx.ScanRows", tx.schema, q)
	if err != nil || empty {
		return nil, err
	}
	return tx.tx.ScanRows(ctx, q)
}

// GetPushResult is driver.Tx's, after V-2 and V-7; it sees results staged
// in the Tx (TX-3).
func (tx *Tx) GetPushResult(ctx context.Context, clientID, clientCommitID string) (_ PushResult, _ bool, err error) {
	defer tx.observe(&ctx, "Tx.GetPushResult").done(&err)
	if err := checkCtx(ctx, "Tx.GetPushResult"); err != nil {
		return *new(PushResult), *new(bool), err
	}
	const op = "Tx.GetPushResult"
	if err := firstErr(checkClientID(op, clientID), idClientCommit.check(op, clientCommitID)); err != nil {
		return PushResult{}, false, err
	}
	return tx.tx.GetPushResult(ctx, clientID, clientCommitID)
}

// UpsertRow is driver.Tx's, after a known table (SCH-8), the row id (V-2),
// every value against its column (V-3 → CodeInvalidValue naming the
// column), and row.ID and row.Scopes against the primary-key and scope
// columns (V-4 → CodeInvalidValue). ServerVersion is any int64 (ROW-2).
func (tx *Tx) UpsertRow(ctx context.Context, table string, row Row) (err error) {
	defer tx.observe(&ctx, "Tx.UpsertRow").done(&err)
	if err := checkCtx(ctx, "Tx.UpsertRow"); err != nil {
		return err
	}
	const op = "Tx.UpsertRow"
	t, err := tx.schema.table(op, table)
	if err != nil {
		return err
	}
	if err := t.checkRow(op, row); err != nil {
		return err
	}
	return tx.tx.UpsertRow(ctx, table, row)
}

// DeleteRow is driver.Tx's, after SCH-8 and V-2 on id.
func (tx *Tx) DeleteRow(ctx context.Context, table, id string) (err error) {
	defer tx.observe(&ctx, "Tx.DeleteRow").done(&err)
	if err := checkCtx(ctx, "Tx.DeleteRow"); err != nil {
		return err
	}
	if err := checkGetRow("Tx.DeleteRow", tx.schema, table, id); err != nil {
		return err
	}
	return tx.tx.DeleteRow(ctx, table, id)
}

// AppendCommit is driver.Tx's, after: ClientID, ClientCommitID and ActorID
// "" (a server-made commit) or V-2, ClientID V-7; each change on a known
// table (SCH-8) with a V-2 row id and op upsert|delete; an upsert's values
// valid as a row's (V-3) with RowID and Scopes matching them (V-4); a
// delete with no values, RowVersion 0 (CodeInvalidArgument) and exactly
// the table's scope variables (V-4). CreatedAtMs is any int64.
func (tx *Tx) AppendCommit(ctx context.Context, c CommitInput) (_ int64, err error) {
	defer tx.observe(&ctx, "Tx.AppendCommit").done(&err)
	if err := checkCtx(ctx, "Tx.AppendCommit"); err != nil {
		return *new(int64), err
	}
	if err := tx.schema.checkCommit("Tx.AppendCommit", c); err != nil {
		return 0, err
	}
	return tx.tx.AppendCommit(ctx, c)
}

// PutPushResult is driver.Tx's (first writer wins, PR-3), after V-2 and
// V-7 on the key and V-8 on r (see CommitRejected for r's checks).
func (tx *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r PushResult) (err error) {
	defer tx.observe(&ctx, "Tx.PutPushResult").done(&err)
	if err := checkCtx(ctx, "Tx.PutPushResult"); err != nil {
		return err
	}
	const op = "Tx.PutPushResult"
	if err := firstErr(checkClientID(op, clientID), idClientCommit.check(op, clientCommitID)); err != nil {
		return err
	}
	if err := checkPushResult(op, r); err != nil {
		return err
	}
	return tx.tx.PutPushResult(ctx, clientID, clientCommitID, r)
}

// CommitRejected is driver.Tx's (TX-8), after V-2 and V-7 on the key and
// V-8 on r: status applied|rejected — and here rejected only —, CommitSeq
// > 0 iff applied, op statuses known, op codes of V-8's syntax (reserved
// prefixes allowed), Details "" or JSON, ServerRow values of value types.
// A rejected call leaves the Tx open with its staged writes; the caller
// still ends it.
func (tx *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r PushResult) (err error) {
	defer tx.observe(&ctx, "Tx.CommitRejected").done(&err)
	if err := checkCtx(ctx, "Tx.CommitRejected"); err != nil {
		return err
	}
	return tx.commitRejected(ctx, clientID, clientCommitID, r)
}

// commitRejected is CommitRejected after checkCtx.
func (tx *Tx) commitRejected(ctx context.Context, clientID, clientCommitID string, r PushResult) error {
	const op = "Tx.CommitRejected"
	if err := firstErr(checkClientID(op, clientID), idClientCommit.check(op, clientCommitID)); err != nil {
		return err
	}
	return tx.commitRejectedKey(ctx, clientID, clientCommitID, r)
}

// commitRejectedKey is commitRejected under a key its caller checked —
// a push's (PUSH-8), a server command's among them (PUSH-13) —,
// unobserved (Push's Call covers it).
func (tx *Tx) commitRejectedKey(ctx context.Context, clientID, clientCommitID string, r PushResult) error {
	const op = "Tx.CommitRejected"
	if err := checkPushResult(op, r); err != nil {
		return err
	}
	if r.Status != PushRejected {
		return argErr(op, "TX-8", "CommitRejected stores a rejected result")
	}
	tx.ended.Store(true)
	return tx.tx.CommitRejected(ctx, clientID, clientCommitID, r)
}

// Commit is driver.Tx's (TX-2, TX-9).
func (tx *Tx) Commit(ctx context.Context) (err error) {
	defer tx.observe(&ctx, "Tx.Commit").done(&err)
	if err := checkCtx(ctx, "Tx.Commit"); err != nil {
		return err
	}
	return tx.commit(ctx)
}

// commit is Commit, unobserved (RunInTx's Call covers it).
func (tx *Tx) commit(ctx context.Context) error {
	tx.ended.Store(true)
	return tx.tx.Commit(ctx)
}

// Rollback is driver.Tx's (TX-2); a second call is a no-op (TX-5).
func (tx *Tx) Rollback(ctx context.Context) (err error) {
	defer tx.observe(&ctx, "Tx.Rollback").done(&err)
	if err := checkCtx(ctx, "Tx.Rollback"); err != nil {
		return err
	}
	return tx.rollback(ctx)
}

// rollback is Rollback, unobserved (Push's and RunInTx's Call covers it).
func (tx *Tx) rollback(ctx context.Context) error {
	tx.ended.Store(true)
	return tx.tx.Rollback(ctx)
}
