package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	d "github.com/syncstore/syncstore/internal/sqlitedialect"
)

var _ driver.PushBeginner = (*Conn)(nil)

// BeginPush begins a push's Tx and reads its stored result and the
// current rows of keys (driver.PushBeginner) in ONE request: a read batch
// (one D1 transaction, so one snapshot) of Begin's read of the stamp and
// max seq, the result's statement, and one GetIn statement per table and
// 99 ids. A push of 10 rows thus takes the 2 requests of a bare commit
// (this and Commit) instead of 13. The rows are read in the snapshot of
// the stamp, so the Commit's stamp guard covers them (TX-9).
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	if err := c.check(); err != nil {
		return nil, driver.PushRead{}, err
	}
	out := driver.PushRead{Rows: make([]driver.Row, len(keys)), Found: make([]bool, len(keys))}
	stmts := []stmt{st(d.D1BeginRead, partition), st(d.SelectPushResult, partition, clientID, clientCommitID)}
	type group struct {
		x   *d.Table
		ids []int // key indexes
	}
	var groups []group
	open := map[string]int{} // table → index in groups of its open group
	for i, k := range keys {
		x, err := c.table(k.Table)
		if err != nil {
			return nil, driver.PushRead{}, err
		}
		g, ok := open[k.Table]
		if !ok || len(groups[g].ids) == d.MaxGetIn {
			groups = append(groups, group{x: x})
			g = len(groups) - 1
			open[k.Table] = g
		}
		groups[g].ids = append(groups[g].ids, i)
	}
	for _, g := range groups {
		args := make([]any, 0, 1+len(g.ids))
		args = append(args, partition)
		for _, i := range g.ids {
			args = append(args, keys[i].ID)
		}
		stmts = append(stmts, st(g.x.D1Rows(g.x.GetIn(len(g.ids))), args...))
	}
	res, err := c.cl.read(ctx, "d1http: begin a push", stmts...)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	if len(res) != len(stmts) {
		return nil, driver.PushRead{}, driver.Errorf(driver.CodeInternal, "d1http: begin a push: %d results for %d statements", len(res), len(stmts))
	}
	t, err := c.newTx(ctx, partition, res[0].Results.Rows)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	if rows := res[1].Results.Rows; len(rows) > 0 {
		text, err := rawString(rows[0][0])
		if err != nil {
			return nil, driver.PushRead{}, driver.Errorf(driver.CodeIdempotencyCacheMiss, "stored push result is not text (PR-5)")
		}
		if out.Result, err = driver.DecodePushResult([]byte(text)); err != nil {
			return nil, driver.PushRead{}, err
		}
		out.HasResult = true
	}
	for gi, g := range groups {
		at := make(map[string]int, len(g.ids))
		for _, i := range g.ids {
			at[keys[i].ID] = i
		}
		for _, raw := range res[2+gi].Results.Rows {
			row, err := g.x.D1DecodeRow(raw)
			if err != nil {
				return nil, driver.PushRead{}, err
			}
			if i, ok := at[row.ID]; ok {
				out.Rows[i], out.Found[i] = row, true
			}
		}
	}
	return t, out, nil
}
