package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// The admin capability (ADM-1, ADM-2): read-only console views, served by the
// readers (committed data only) and internal/sqlitesql/admin.go's statements.

var _ driver.AdminConn = (*Conn)(nil)

// ListClientRecords returns one page of the partition's client records,
// newest first (UpdatedAtMs descending, client id descending), after q's
// exclusive position, at most q.Limit (1…10,000) (ADM-2): a backward walk
// of _sync_clients_by_time from just below the position.
func (c *Conn) ListClientRecords(ctx context.Context, partition string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	stmt, args := sqlitesql.AdminListClients, []any{partition, int64(q.Limit)}
	if q.AfterClientID != "" {
		stmt, args = sqlitesql.AdminListClientsAfter, []any{partition, q.AfterUpdatedAtMs, q.AfterClientID, int64(q.Limit)}
	}
	rows, err := c.query(ctx, c.reader(), stmt, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return adminview.ClientRecords(rows, func(err error) error { return c.mapErr(ctx, err, "sqlite: list client records") })
}

// ListCommitMeta returns the metadata of the retained commits with seq <
// beforeSeq (0 = from the newest), newest first, at most limit (1…10,000):
// passing the last seq of a page as the next beforeSeq reaches every page
// (ADM-1). beforeSeq < 0 → CodeInvalidArgument.
func (c *Conn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]driver.CommitMeta, error) {
	beforeSeq, err := adminview.CommitsBefore(beforeSeq)
	if err != nil {
		return nil, err
	}
	rows, err := c.query(ctx, c.reader(), sqlitesql.AdminListCommits, []any{partition, beforeSeq, int64(limit)})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return adminview.CommitMetas(rows, func(err error) error { return c.mapErr(ctx, err, "sqlite: list commit metadata") })
}

// ScopeActivity counts, among the commits with afterSeq < seq ≤
// throughSeq, the changes to table whose scopes match filter (WIN-3) and
// the commits holding at least one of them (ADM-1). Candidates come from
// the change-scope index of the filter's driving key. Errors:
// CodeUnknownTable; a filter with no keys → CodeScanRequiresScope (V-6).
func (c *Conn) ScopeActivity(ctx context.Context, partition, table string, filter driver.ScopeFilter, afterSeq, throughSeq int64) (driver.ScopeActivity, error) {
	var act driver.ScopeActivity
	key, done, err := adminview.ActivityKey(c.state.Table, table, filter, afterSeq, throughSeq)
	if err != nil || done {
		return act, err
	}
	list, err := storelayout.JSONList(filter[key])
	if err != nil {
		return act, err
	}
	rows, err := c.query(ctx, c.reader(), sqlitesql.AdminScopeActivity, []any{partition, table, key, list, afterSeq, throughSeq})
	if err != nil {
		return act, err
	}
	defer rows.Close()
	return adminview.NewActivity(filter, key).CountRows(rows, func(err error) error { return c.mapErr(ctx, err, "sqlite: scope activity") })
}

// RowScopes returns the scopes of the current row (table, rowID) and
// true, or false when it does not exist (ADM-1). Errors: CodeUnknownTable.
func (c *Conn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	return adminview.RowScopes(c.GetRow(ctx, partition, table, rowID))
}
