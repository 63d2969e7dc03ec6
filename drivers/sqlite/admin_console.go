package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
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
	var out []driver.ClientRecord
	for rows.Next() {
		var rec driver.ClientRecord
		var subs string
		if err := rows.Scan(&rec.ClientID, &rec.ActorID, &rec.WireVersion, &rec.Cursor, &rec.UpdatedAtMs, &subs); err != nil {
			return nil, c.mapErr(ctx, err, "sqlite: list client records")
		}
		if rec.Subscriptions, err = storelayout.DecodeSubscriptions(subs); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, c.mapErr(ctx, rows.Err(), "sqlite: list client records")
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
	out, err := sqlrows.Collect(rows, func(r *sql.Rows) (driver.CommitMeta, error) {
		var m driver.CommitMeta
		err := r.Scan(&m.Seq, &m.ClientID, &m.ClientCommitID, &m.ActorID, &m.CreatedAtMs, &m.ChangeCount)
		return m, err
	})
	return out, c.mapErr(ctx, err, "sqlite: list commit metadata")
}

// ScopeActivity counts, among the commits with afterSeq < seq ≤
// throughSeq, the changes to table whose scopes match filter (WIN-3) and
// the commits holding at least one of them (ADM-1). Candidates come from
// the change-scope index of the filter's driving key. Errors:
// CodeUnknownTable; a filter with no keys → CodeScanRequiresScope (V-6).
func (c *Conn) ScopeActivity(ctx context.Context, partition, table string, filter driver.ScopeFilter, afterSeq, throughSeq int64) (driver.ScopeActivity, error) {
	var act driver.ScopeActivity
	if _, err := c.table(table); err != nil {
		return act, err
	}
	key, done, err := adminview.ActivityKey(filter, afterSeq, throughSeq)
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
	count := adminview.NewActivity(filter, key)
	for rows.Next() {
		var seq int64
		var text string
		if err := rows.Scan(&seq, &text); err != nil {
			return act, c.mapErr(ctx, err, "sqlite: scope activity")
		}
		if err := count.Add(seq, text); err != nil {
			return act, err
		}
	}
	if err := rows.Err(); err != nil {
		return act, c.mapErr(ctx, err, "sqlite: scope activity")
	}
	return count.Result(), nil
}

// RowScopes returns the scopes of the current row (table, rowID) and
// true, or false when it does not exist (ADM-1). Errors: CodeUnknownTable.
func (c *Conn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	return adminview.RowScopes(c.GetRow(ctx, partition, table, rowID))
}
