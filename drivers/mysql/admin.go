package mysql

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// The admin capability (ADM-1, ADM-2): read-only console views of committed
// data. Every listing walks an index in its order and stops at its limit.

var _ driver.AdminConn = (*Conn)(nil)

// ListClientRecords returns one page of the partition's client records,
// newest first (UpdatedAtMs descending, client id descending), after q's
// exclusive position, at most q.Limit (1…10,000) (ADM-2).
func (c *Conn) ListClientRecords(ctx context.Context, partition string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	stmt, args := adminListClients, []any{partition, int64(q.Limit)}
	if q.AfterClientID != "" {
		stmt, args = adminListClientsAfter, []any{partition, q.AfterUpdatedAtMs, q.AfterUpdatedAtMs, q.AfterClientID, int64(q.Limit)}
	}
	rows, err := c.query(ctx, nil, stmt, args, "mysql: list client records")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return adminview.ClientRecords(rows, func(err error) error { return c.mapErr(ctx, err, "mysql: list client records") })
}

// ListCommitMeta returns the metadata of the retained commits with seq <
// beforeSeq (0 = from the newest), newest first, at most limit (1…10,000):
// passing the last seq of a page as the next beforeSeq reaches every page
// (ADM-1). Errors: beforeSeq < 0 → CodeInvalidArgument.
func (c *Conn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]driver.CommitMeta, error) {
	beforeSeq, err := adminview.CommitsBefore(beforeSeq)
	if err != nil {
		return nil, err
	}
	rows, err := c.query(ctx, nil, adminListCommits, []any{partition, beforeSeq, int64(limit)}, "mysql: list commit metadata")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return adminview.CommitMetas(rows, func(err error) error { return c.mapErr(ctx, err, "mysql: list commit metadata") })
}

// ScopeActivity counts, among the commits with afterSeq < seq ≤
// throughSeq, the changes to table whose scopes match filter (WIN-3) and
// the commits holding at least one of them (ADM-1). Candidates come from
// the change-scope index of the filter's driving key; the other keys are
// checked against each candidate's stored scopes. Errors:
// CodeUnknownTable; a filter with no keys → CodeScanRequiresScope (V-6).
func (c *Conn) ScopeActivity(ctx context.Context, partition, table string, filter driver.ScopeFilter, afterSeq, throughSeq int64) (driver.ScopeActivity, error) {
	var act driver.ScopeActivity
	if err := c.check(); err != nil {
		return act, err
	}
	key, done, err := adminview.ActivityKey(c.state.Table, table, filter, afterSeq, throughSeq)
	if err != nil || done {
		return act, err
	}
	list, err := storelayout.JSONList(dedupe(filter[key]))
	if err != nil {
		return act, err
	}
	rows, err := c.query(ctx, nil, c.adminScopeActivity(), []any{list, partition, table, key, afterSeq, throughSeq}, "mysql: scope activity")
	if err != nil {
		return act, err
	}
	defer rows.Close()
	return adminview.NewActivity(filter, key).CountRows(rows, func(err error) error { return c.mapErr(ctx, err, "mysql: scope activity") })
}

// RowScopes returns the scopes of the current row (table, rowID) and
// true, or false when it does not exist (ADM-1). Errors: CodeUnknownTable.
func (c *Conn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	return adminview.RowScopes(c.GetRow(ctx, partition, table, rowID))
}
