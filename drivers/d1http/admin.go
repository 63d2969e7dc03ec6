package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// The admin capability (ADM-1, ADM-2): read-only console views, the SQLite
// dialect's statements.

var _ driver.AdminConn = (*Conn)(nil)

// ListClientRecords returns one page of client records newest first
// (UpdatedAtMs desc, client id desc) after q's exclusive position, at most
// q.Limit (1…10,000) (ADM-2): a backward walk of _sync_clients_by_time
// from just below the position. Integers come back as text, so the last
// record's position is exact.
func (c *Conn) ListClientRecords(ctx context.Context, partition string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	stmt, args := d1sql.D1AdminListClients, []any{partition, q.Limit}
	if q.AfterClientID != "" {
		stmt, args = d1sql.D1AdminListClientsAfter, []any{partition, num(q.AfterUpdatedAtMs), q.AfterClientID, q.Limit}
	}
	rows, err := c.rows(ctx, "d1http: list client records", stmt, args...)
	if err != nil {
		return nil, err
	}
	out := make([]driver.ClientRecord, 0, len(rows))
	for _, r := range rows {
		var rec driver.ClientRecord
		var subs string
		err := firstErr(
			func() (e error) { rec.ClientID, e = rawString(r[0]); return },
			func() (e error) { rec.ActorID, e = rawString(r[1]); return },
			func() (e error) { rec.WireVersion, e = rawInt(r[2]); return },
			func() (e error) { rec.Cursor, e = rawInt(r[3]); return },
			func() (e error) { rec.UpdatedAtMs, e = rawInt(r[4]); return },
			func() (e error) { subs, e = rawString(r[5]); return },
		)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: stored client record is malformed")
		}
		if rec.Subscriptions, err = storelayout.DecodeSubscriptions(subs); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// ListCommitMeta returns commits with seq < beforeSeq (0 = from the
// newest), newest first, at most limit (ADM-1).
func (c *Conn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]driver.CommitMeta, error) {
	beforeSeq, err := adminview.CommitsBefore(beforeSeq)
	if err != nil {
		return nil, err
	}
	rows, err := c.rows(ctx, "d1http: list commit metadata", sqlitesql.AdminListCommits, partition, num(beforeSeq), limit)
	if err != nil {
		return nil, err
	}
	out := make([]driver.CommitMeta, 0, len(rows))
	for _, r := range rows {
		var m driver.CommitMeta
		var n int64
		err := firstErr(
			func() (e error) { m.Seq, e = rawInt(r[0]); return },
			func() (e error) { m.ClientID, e = rawString(r[1]); return },
			func() (e error) { m.ClientCommitID, e = rawString(r[2]); return },
			func() (e error) { m.ActorID, e = rawString(r[3]); return },
			func() (e error) { m.CreatedAtMs, e = rawInt(r[4]); return },
			func() (e error) { n, e = rawInt(r[5]); return },
		)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: stored commit is malformed")
		}
		m.ChangeCount = int(n)
		out = append(out, m)
	}
	return out, nil
}

// ScopeActivity counts the changes of table matching filter in afterSeq <
// seq ≤ throughSeq, and their commits (ADM-1), from the change-scope index.
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
	rows, err := c.rows(ctx, "d1http: scope activity", sqlitesql.AdminScopeActivity, partition, table, key, list, num(afterSeq), num(throughSeq))
	if err != nil {
		return act, err
	}
	count := adminview.NewActivity(filter, key)
	for _, r := range rows {
		seq, err := rawInt(r[0])
		if err != nil {
			return act, driver.Errorf(driver.CodeInternal, "d1http: stored change is malformed")
		}
		var text string // read by Add only when the filter has other keys
		if len(r) > 1 {
			text, _ = rawString(r[1])
		}
		if err := count.Add(seq, text); err != nil {
			return act, err
		}
	}
	return count.Result(), nil
}

// RowScopes returns the scopes of a current row and true, or false (ADM-1).
func (c *Conn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	return adminview.RowScopes(c.GetRow(ctx, partition, table, rowID))
}
