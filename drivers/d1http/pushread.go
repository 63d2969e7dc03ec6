package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	d "github.com/syncstore/syncstore/internal/sqlitedialect"
)

var _ driver.PushReader = (*Tx)(nil)

// ReadForPush reads a push's stored result and the current rows of keys
// (driver.PushReader) in ONE request: a read batch (one snapshot) of the
// result's statement and one GetIn statement per table and 99 ids, for
// the keys the Tx has not staged. Without it a push of 10 rows makes 11
// requests before its Commit. It sees the Tx's own writes (TX-3): staged
// rows and deletes come from the overlay, and a result staged in the Tx
// answers when none is committed (PR-3), exactly as GetRow and
// GetPushResult do.
func (t *Tx) ReadForPush(ctx context.Context, clientID, clientCommitID string, keys []driver.RowKey) (out driver.PushRead, err error) {
	err = t.op(func() error {
		out.Rows, out.Found = make([]driver.Row, len(keys)), make([]bool, len(keys))
		stmts := []stmt{st(d.SelectPushResult, t.partition, clientID, clientCommitID)}
		type group struct {
			x   *d.Table
			ids []int // key indexes
		}
		var groups []group
		open := map[string]int{} // table → index in groups of its open group
		for i, k := range keys {
			x, err := t.c.table(k.Table)
			if err != nil {
				return err
			}
			if s, ok := t.ov.row(k.Table, k.ID); ok {
				if !s.deleted {
					out.Rows[i], out.Found[i] = s.copyRow(), true
				}
				continue
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
			args = append(args, t.partition)
			for _, i := range g.ids {
				args = append(args, keys[i].ID)
			}
			stmts = append(stmts, st(g.x.D1Rows(g.x.GetIn(len(g.ids))), args...))
		}
		if err := t.c.check(); err != nil {
			return err
		}
		res, err := t.c.cl.read(ctx, "d1http: read for a push", stmts...)
		if err != nil {
			return err
		}
		if len(res) != len(stmts) {
			return driver.Errorf(driver.CodeInternal, "d1http: read for a push: %d results for %d statements", len(res), len(stmts))
		}
		if rows := res[0].Results.Rows; len(rows) > 0 {
			text, err := rawString(rows[0][0])
			if err != nil {
				return driver.Errorf(driver.CodeIdempotencyCacheMiss, "stored push result is not text (PR-5)")
			}
			if out.Result, err = driver.DecodePushResult([]byte(text)); err != nil {
				return err
			}
			out.HasResult = true
		} else if r, ok := t.ov.results[[2]string{clientID, clientCommitID}]; ok {
			out.Result, out.HasResult = r, true
		}
		for gi, g := range groups {
			at := make(map[string]int, len(g.ids))
			for _, i := range g.ids {
				at[keys[i].ID] = i
			}
			for _, raw := range res[1+gi].Results.Rows {
				row, err := g.x.D1DecodeRow(raw)
				if err != nil {
					return err
				}
				if i, ok := at[row.ID]; ok {
					out.Rows[i], out.Found[i] = row, true
				}
			}
		}
		return nil
	})
	if err != nil {
		return driver.PushRead{}, err
	}
	return out, nil
}
