package mysql

import (
	"context"
	"math"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// The admin capability (ADM-1, ADM-2): read-only console views of committed
// data. Every listing walks an index in its order and stops at its limit.

var _ driver.AdminConn = (*Conn)(nil)

// Admin statements.
const (
	// adminListClients: p, limit → the first page of client records,
	// newest first (updated_at_ms desc, client id desc), a backward walk of
	// _sync_clients_by_time that stops at the limit (ADM-2).
	adminListClients = `SELECT client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions
FROM _sync_clients FORCE INDEX (_sync_clients_by_time) WHERE p = ? ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?`
	// adminListClientsAfter: p, updated_at_ms, updated_at_ms, client id
	// (the exclusive position), limit → the page after the position. The
	// position is spelled as an OR of two ranges, which MySQL and MariaDB
	// both turn into a range read of the index (MariaDB does not for a
	// row comparison), so the walk starts just below it (ADM-2).
	adminListClientsAfter = `SELECT client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions
FROM _sync_clients FORCE INDEX (_sync_clients_by_time)
WHERE p = ? AND (updated_at_ms < ? OR (updated_at_ms = ? AND client_id < ?))
ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?`
	// adminListCommits: p, beforeSeq (exclusive), limit → seq, client_id,
	// client_commit_id, actor_id, created_at_ms, change count; newest
	// first. The commits' primary key serves the walk, the changes'
	// primary key the count.
	adminListCommits = `SELECT c.seq, c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms,
	(SELECT COUNT(*) FROM _sync_changes AS ch WHERE ch.p = c.p AND ch.seq = c.seq)
FROM _sync_commits AS c WHERE c.p = ? AND c.seq < ? ORDER BY c.seq DESC LIMIT ?`
)

// adminScopeActivity: a JSON array of values, p, tbl, variable, afterSeq
// (exclusive), throughSeq → seq and scopes JSON of each change of the
// table whose scope variable has one of the values: range reads of the
// change-scope index, joined to the changes by primary key (STRAIGHT_JOIN
// pins the order, never a walk of the log).
func (c *Conn) adminScopeActivity() string {
	return `SELECT cs.seq, ch.scopes FROM ` + c.jsonValues() + `
STRAIGHT_JOIN _sync_change_scopes AS cs ON cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = j.` + jsonValueColumn + `
	AND cs.seq > ? AND cs.seq <= ?
STRAIGHT_JOIN _sync_changes AS ch ON ch.p = cs.p AND ch.seq = cs.seq AND ch.idx = cs.idx`
}

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
	var out []driver.ClientRecord
	for rows.Next() {
		var rec driver.ClientRecord
		var subs []byte
		if err := rows.Scan(&rec.ClientID, &rec.ActorID, &rec.WireVersion, &rec.Cursor, &rec.UpdatedAtMs, &subs); err != nil {
			return nil, c.mapErr(ctx, err, "mysql: list client records")
		}
		if rec.Subscriptions, err = storelayout.DecodeSubscriptions(string(subs)); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, c.mapErr(ctx, rows.Err(), "mysql: list client records")
}

// ListCommitMeta returns the metadata of the retained commits with seq <
// beforeSeq (0 = from the newest), newest first, at most limit (1…10,000):
// passing the last seq of a page as the next beforeSeq reaches every page
// (ADM-1). Errors: beforeSeq < 0 → CodeInvalidArgument.
func (c *Conn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]driver.CommitMeta, error) {
	if beforeSeq < 0 {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "beforeSeq must be ≥ 0 (ADM-1)")
	}
	if beforeSeq == 0 {
		beforeSeq = math.MaxInt64
	}
	rows, err := c.query(ctx, nil, adminListCommits, []any{partition, beforeSeq, int64(limit)}, "mysql: list commit metadata")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.CommitMeta
	for rows.Next() {
		var m driver.CommitMeta
		if err := rows.Scan(&m.Seq, &m.ClientID, &m.ClientCommitID, &m.ActorID, &m.CreatedAtMs, &m.ChangeCount); err != nil {
			return nil, c.mapErr(ctx, err, "mysql: list commit metadata")
		}
		out = append(out, m)
	}
	return out, c.mapErr(ctx, rows.Err(), "mysql: list commit metadata")
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
	if _, err := c.table(table); err != nil {
		return act, err
	}
	key, empty, ok := storelayout.PickKey(filter)
	if !ok {
		return act, driver.Errorf(driver.CodeScanRequiresScope, "scope activity requires a scope filter (V-6)")
	}
	if empty || throughSeq <= afterSeq {
		return act, nil
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
	match := storelayout.NewMatcher(filter, key)
	commits := map[int64]bool{}
	for rows.Next() {
		var seq int64
		var text []byte
		if err := rows.Scan(&seq, &text); err != nil {
			return act, c.mapErr(ctx, err, "mysql: scope activity")
		}
		if !match.Empty() {
			scopes, err := storelayout.DecodeScopes(string(text))
			if err != nil {
				return act, err
			}
			if !match.Match(scopes) {
				continue
			}
		}
		act.Changes++
		commits[seq] = true
	}
	if err := rows.Err(); err != nil {
		return act, c.mapErr(ctx, err, "mysql: scope activity")
	}
	act.Commits = int64(len(commits))
	return act, nil
}

// RowScopes returns the scopes of the current row (table, rowID) and
// true, or false when it does not exist (ADM-1). Errors: CodeUnknownTable.
func (c *Conn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	row, ok, err := c.GetRow(ctx, partition, table, rowID)
	if err != nil || !ok {
		return nil, false, err
	}
	return row.Scopes, true, nil
}
