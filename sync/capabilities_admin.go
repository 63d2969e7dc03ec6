package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// Typed access to the admin capability (docs/contract.md ADM-1, ADM-2): read-only
// console views. Input is validated (group V) before the driver is
// called; a driver without the capability → CodeUnsupported with
// Capability "admin" (ERR-2).

// admin returns the driver's admin Conn, or the ERR-2 error.
func (s *Store) admin(op string) (driver.AdminConn, error) {
	a, ok := s.conn.(driver.AdminConn)
	if !ok {
		return nil, s.unsupported(op, CapAdmin)
	}
	return a, nil
}

// ListClientRecords is an admin call (ADM-2), made beside the engine: an
// operator's view.
//
// ListClientRecords returns one page of the partition's client records,
// newest first (UpdatedAtMs descending, then client id descending), after
// the exclusive position (q.AfterUpdatedAtMs, q.AfterClientID), at most
// q.Limit; q.Next(last) is the query of the next page, so every record is
// reachable however many share one UpdatedAtMs (ADM-2; see
// ClientRecordQuery). Checks: V-1 partition; q.AfterClientID "" or
// a valid client id (V-2, V-7), and "" only with q.AfterUpdatedAtMs 0
// (CodeInvalidArgument, ADM-2); q.Limit 1…10,000 (CodeInvalidLimit, V-5).
func (s *Store) ListClientRecords(ctx context.Context, partition string, q ClientRecordQuery) (_ []ClientRecord, err error) {
	defer s.observe(&ctx, "Store.ListClientRecords", partition).done(&err)
	if err := checkCtx(ctx, "ListClientRecords"); err != nil {
		return *new([]ClientRecord), err
	}
	const op = "ListClientRecords"
	a, err := s.admin(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), checkClientRecordPosition(op, q),
		checkLimit(op, "limit", q.Limit, MaxLimit)); err != nil {
		return nil, err
	}
	return a.ListClientRecords(ctx, partition, q)
}

// checkClientRecordPosition checks q's position: the zero position, or a
// valid client id (V-2, V-7) with any time.
func checkClientRecordPosition(op string, q ClientRecordQuery) error {
	if q.AfterClientID == "" && q.AfterUpdatedAtMs != 0 {
		return argErr(op, "ADM-2", "afterUpdatedAtMs is set without afterClientID")
	}
	return checkAfterClientID(op, q.AfterClientID)
}

// ListCommitMeta is an admin call (ADM-1), made beside the engine: an
// operator's view.
//
// ListCommitMeta returns the metadata of the retained commits with seq <
// beforeSeq (exclusive; 0 = from the newest), newest first, at most limit:
// passing the last seq of a page as the next beforeSeq reaches every page
// (ADM-1). Checks: V-1 partition, beforeSeq ≥ 0 (CodeInvalidArgument),
// limit 1…10,000 (V-5).
func (s *Store) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) (_ []CommitMeta, err error) {
	defer s.observe(&ctx, "Store.ListCommitMeta", partition).done(&err)
	if err := checkCtx(ctx, "ListCommitMeta"); err != nil {
		return *new([]CommitMeta), err
	}
	const op = "ListCommitMeta"
	a, err := s.admin(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), checkSeq(op, "beforeSeq", beforeSeq, "ADM-1"),
		checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return a.ListCommitMeta(ctx, partition, beforeSeq, limit)
}

// ScopeActivity is an admin call (ADM-1), made beside the engine: an
// operator's view.
//
// ScopeActivity counts, among the commits with afterSeq < seq ≤
// throughSeq, the changes to table whose scopes match filter (WIN-3) and
// the commits holding at least one of them (ADM-1). Checks: V-1
// partition, a known table (SCH-8), afterSeq ≥ 0 and throughSeq ≥
// afterSeq (CodeInvalidArgument), a filter with ≥ 1 key
// (CodeScanRequiresScope, V-6) of valid text. A key with an empty value
// list matches nothing: the result is zero and the driver is not called.
func (s *Store) ScopeActivity(ctx context.Context, partition, table string, filter ScopeFilter, afterSeq, throughSeq int64) (_ ScopeActivity, err error) {
	defer s.observe(&ctx, "Store.ScopeActivity", partition).done(&err)
	if err := checkCtx(ctx, "ScopeActivity"); err != nil {
		return *new(ScopeActivity), err
	}
	const op = "ScopeActivity"
	a, err := s.admin(op)
	if err != nil {
		return ScopeActivity{}, err
	}
	if err := idPartition.check(op, partition); err != nil {
		return ScopeActivity{}, err
	}
	if _, err := s.schema.Load().table(op, table); err != nil {
		return ScopeActivity{}, err
	}
	if err := checkSeq(op, "afterSeq", afterSeq, "ADM-1"); err != nil {
		return ScopeActivity{}, err
	}
	if throughSeq < afterSeq {
		return ScopeActivity{}, argErr(op, "ADM-1", "throughSeq is below afterSeq")
	}
	empty, err := checkFilter(op, filter)
	if err != nil || empty {
		return ScopeActivity{}, err
	}
	return a.ScopeActivity(ctx, partition, table, filter, afterSeq, throughSeq)
}

// RowScopes is an admin call (ADM-1), made beside the engine: an operator's
// view.
//
// RowScopes returns the scopes of the current row (table, rowID) and
// true, or false when it does not exist (ADM-1). Checks: V-1 partition, a
// known table (SCH-8), V-2 row id.
func (s *Store) RowScopes(ctx context.Context, partition, table, rowID string) (_ Scopes, _ bool, err error) {
	defer s.observe(&ctx, "Store.RowScopes", partition).done(&err)
	if err := checkCtx(ctx, "RowScopes"); err != nil {
		return *new(Scopes), *new(bool), err
	}
	const op = "RowScopes"
	a, err := s.admin(op)
	if err != nil {
		return nil, false, err
	}
	if err := idPartition.check(op, partition); err != nil {
		return nil, false, err
	}
	if err := checkGetRow(op, s.schema.Load(), table, rowID); err != nil {
		return nil, false, err
	}
	return a.RowScopes(ctx, partition, table, rowID)
}
