package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// GetRow returns the committed row (ROW-4: missing → false, nil).
func (c *Conn) GetRow(ctx context.Context, partition, table, id string) (driver.Row, bool, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return driver.Row{}, false, err
	}
	rows, err := c.queryRows(ctx, x, x.get, []any{partition, id})
	if err != nil || len(rows) == 0 {
		return driver.Row{}, false, err
	}
	return rows[0], true, nil
}

// ScanRows returns committed rows selected by q (SCAN-1…SCAN-5).
func (c *Conn) ScanRows(ctx context.Context, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	x, query, args, none, err := c.scanQuery(partition, q)
	if err != nil || none {
		return nil, err
	}
	return c.queryRows(ctx, x, query, args)
}

// scanQuery plans a scan: the table, its query and arguments, or none.
func (c *Conn) scanQuery(partition string, q driver.ScanQuery) (*table, string, []any, bool, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, "", nil, false, err
	}
	query, args, none, err := x.scanPlan(partition, q)
	return x, query, args, none, err
}

// queryRows runs a row query of table x on the pool and decodes its rows.
func (c *Conn) queryRows(ctx context.Context, x *table, q string, args []any) ([]driver.Row, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: read rows")
	}
	defer rows.Close()
	var out []driver.Row
	for rows.Next() {
		row, err := x.decodeRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, c.mapErr(ctx, rows.Err(), "postgres: read rows")
}

// GetPushResult returns a committed push result (PR-2, PR-5).
func (c *Conn) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	var text string
	err := c.queryRow(ctx, c.pool, sqlSelectPushResult, []any{partition, clientID, clientCommitID}, &text)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.PushResult{}, false, nil
	}
	if err != nil {
		return driver.PushResult{}, false, err
	}
	r, err := driver.DecodePushResult([]byte(text))
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return r, true, nil
}

// partitionSeqs returns max_seq and horizon_seq (0, 0 for an unknown
// partition, P-2).
func (c *Conn) partitionSeqs(ctx context.Context, r querier, partition string) (maxSeq, horizon int64, err error) {
	err = c.queryRow(ctx, r, sqlSelectSeqs, []any{partition}, &maxSeq, &horizon)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	return maxSeq, horizon, err
}

// MaxCommitSeq returns the highest committed seq, 0 if none (SEQ-5). It is
// the partition row's counter, written in the committing transaction, so
// it never shows an unreadable commit and pruning never lowers it.
func (c *Conn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	m, _, err := c.partitionSeqs(ctx, c.pool, partition)
	return m, err
}

// HorizonSeq returns the partition's pruning horizon, 0 by default (HZ-1).
func (c *Conn) HorizonSeq(ctx context.Context, partition string) (int64, error) {
	_, h, err := c.partitionSeqs(ctx, c.pool, partition)
	return h, err
}

// CommitSeqBefore returns the largest retained seq created strictly
// before atMs, else 0 (HZ-3); served by _sync_commits_before.
func (c *Conn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error) {
	var seq *int64
	if err := c.queryRow(ctx, c.pool, sqlCommitSeqBefore, []any{partition, atMs}, &seq); err != nil {
		return 0, err
	}
	if seq == nil {
		return 0, nil
	}
	return *seq, nil
}

// changeStatements encodes the changes of one commit as the arguments
// (after partition and seq) of sqlInsertChanges and sqlInsertChangeScopes.
// Values are encoded with driver.EncodeValues; a delete carries neither
// values nor a row version (WIN-6). Fails with CodeInvalidValue before
// anything is written.
func changeStatements(changes []driver.Change) ([]stmt, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	n := len(changes)
	idx := make([]int32, n)
	tbl, rowID, op, scopes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	vals := make([]*string, n)
	ver := make([]int64, n)
	var sTbl, sVar, sVal []string
	var sIdx []int32
	for i, ch := range changes {
		idx[i], tbl[i], rowID[i], op[i] = int32(i), ch.Table, ch.RowID, string(ch.Op)
		sc := ch.Scopes
		if sc == nil {
			sc = driver.Scopes{}
		}
		b, err := json.Marshal(sc)
		if err != nil {
			return nil, driver.Wrap(driver.CodeInternal, err, "postgres: encode change scopes")
		}
		scopes[i] = string(b)
		if ch.Op == driver.OpUpsert {
			v, err := driver.EncodeValues(ch.Values)
			if err != nil {
				return nil, err
			}
			s := string(v)
			vals[i], ver[i] = &s, ch.RowVersion
		}
		keys := make([]string, 0, len(sc))
		for k := range sc {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sTbl, sVar, sVal, sIdx = append(sTbl, ch.Table), append(sVar, k), append(sVal, sc[k]), append(sIdx, int32(i))
		}
	}
	out := []stmt{{sqlInsertChanges, []any{idx, tbl, rowID, op, scopes, vals, ver}}}
	if len(sTbl) > 0 {
		out = append(out, stmt{sqlInsertChangeScopes, []any{sTbl, sVar, sVal, sIdx}})
	}
	return out, nil
}
