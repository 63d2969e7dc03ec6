package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// reads are the Conn's reads through a runner (a reader, or a Tx for
// its own writes).
func (c *Conn) reads() sqlrows.Reads[runner] {
	return sqlrows.Reads[runner]{Row: c.getRow, Rows: c.scanRows, PushResult: c.getPushResult, Index: c.scanRowsByIndex}
}

// getRow reads one row through r (a reader, or a Tx for its own writes).
func (c *Conn) getRow(ctx context.Context, r runner, partition, table, id string) (driver.Row, bool, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return driver.Row{}, false, err
	}
	dest := x.ScanDest()
	err = c.queryRow(ctx, r, x.Get, []any{partition, id}, dest...)
	if err == sql.ErrNoRows {
		return driver.Row{}, false, nil
	}
	if err != nil {
		return driver.Row{}, false, err
	}
	row, err := x.DecodeRow(dest)
	if err != nil {
		return driver.Row{}, false, err
	}
	return row, true, nil
}

// scanRows runs a scan through r (SCAN-1…SCAN-5).
func (c *Conn) scanRows(ctx context.Context, r runner, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	x, plan, err := sqlitesql.PlanScan(c.state.Table, partition, q)
	if err != nil || plan.None {
		return nil, err
	}
	if plan.Bound == "" {
		return c.readRows(ctx, r, x, plan.Query, plan.Args, "sqlite: scan rows")
	}
	// The bound and the page must see one snapshot: a row deleted in
	// between would otherwise shorten the page (SCAN-3).
	if _, inTx := r.(*txStmts); inTx {
		return c.boundedScan(ctx, r, x, plan)
	}
	var out []driver.Row
	err = c.readTx(ctx, "sqlite: scan rows", func(r runner) (err error) {
		out, err = c.boundedScan(ctx, r, x, plan)
		return err
	})
	return out, err
}

// boundedScan runs a multi-value scan plan: its bound, then its page.
func (c *Conn) boundedScan(ctx context.Context, r runner, x *sqlitesql.Table, plan sqlitesql.ScanPlan) ([]driver.Row, error) {
	var bound sql.NullString
	if err := c.queryRow(ctx, r, plan.Bound, plan.BoundArgs, &bound); err != nil {
		return nil, err
	}
	if !bound.Valid {
		return c.readRows(ctx, r, x, plan.Query, plan.Args, "sqlite: scan rows")
	}
	return c.readRows(ctx, r, x, plan.BoundedQuery, append(plan.Args, bound.String), "sqlite: scan rows")
}

// readRows runs a row query of table x through r and decodes its rows;
// what names the read in errors.
func (c *Conn) readRows(ctx context.Context, r runner, x *sqlitesql.Table, query string, args []any, what string) ([]driver.Row, error) {
	rows, err := c.query(ctx, r, query, args)
	if err != nil {
		return nil, err
	}
	return sqlrows.Decode(rows, x.ScanDest(), x.DecodeRow, func(err error) error { return c.mapErr(ctx, err, what) })
}

// query runs a multi-row statement through r.
func (c *Conn) query(ctx context.Context, r runner, q string, args []any) (*sql.Rows, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	st, err := r.stmt(ctx, q)
	if err != nil {
		return nil, c.mapErr(ctx, err, "sqlite: prepare a statement")
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, c.mapErr(ctx, err, "sqlite: read")
	}
	return rows, nil
}

// getPushResult reads a stored push result through r; an undecodable one
// is CodeIdempotencyCacheMiss (PR-5, via driver.DecodePushResult).
func (c *Conn) getPushResult(ctx context.Context, r runner, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	var text string
	err := c.queryRow(ctx, r, sqlitesql.SelectPushResult, []any{partition, clientID, clientCommitID}, &text)
	if err == sql.ErrNoRows {
		return driver.PushResult{}, false, nil
	}
	if err != nil {
		return driver.PushResult{}, false, err
	}
	res, err := driver.DecodePushResult([]byte(text))
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return res, true, nil
}

// partitionSeqs returns the partition's max_seq and horizon_seq (0, 0 for
// an unknown partition, P-2).
func (c *Conn) partitionSeqs(ctx context.Context, r runner, partition string) (maxSeq, horizon int64, err error) {
	err = c.queryRow(ctx, r, sqlitesql.SelectPartitionSeqs, []any{partition}, &maxSeq, &horizon)
	if err == sql.ErrNoRows {
		return 0, 0, nil
	}
	return maxSeq, horizon, err
}

// MaxCommitSeq returns the highest committed seq, 0 if none (SEQ-5). It is
// kept in _sync_partitions, so pruning never lowers it.
func (c *Conn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	m, _, err := c.partitionSeqs(ctx, c.reader(), partition)
	return m, err
}

// HorizonSeq returns the partition's pruning horizon, 0 by default (HZ-1).
func (c *Conn) HorizonSeq(ctx context.Context, partition string) (int64, error) {
	_, h, err := c.partitionSeqs(ctx, c.reader(), partition)
	return h, err
}

// CommitSeqBefore returns the largest retained seq created strictly
// before atMs, else 0 (HZ-3).
func (c *Conn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error) {
	var seq sql.NullInt64
	if err := c.queryRow(ctx, c.reader(), sqlitesql.CommitSeqBefore, []any{partition, atMs}, &seq); err != nil {
		return 0, err
	}
	return seq.Int64, nil
}
