package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	d "github.com/syncstore/syncstore/internal/sqlitedialect"
)

var _ driver.PushBeginner = (*Conn)(nil)

// BeginPush begins a push's Tx (Begin) and reads its stored result and
// the current rows of keys (driver.PushBeginner) in 1 + one statement per
// table and 99 ids (sqlitedialect.GetIn), instead of 1 + one per row:
// each statement is a round through database/sql and the engine, whatever
// it reads.
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	dtx, err := c.Begin(ctx, partition)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	t := dtx.(*Tx)
	var out driver.PushRead
	err = t.op(ctx, func() error {
		var err error
		out.Result, out.HasResult, err = c.getPushResult(ctx, t.st, partition, clientID, clientCommitID)
		if err != nil || out.HasResult {
			return err
		}
		out.Rows, out.Found = make([]driver.Row, len(keys)), make([]bool, len(keys))
		var tables []string
		ids := map[string][]int{} // table → key indexes
		for i, k := range keys {
			if _, ok := ids[k.Table]; !ok {
				tables = append(tables, k.Table)
			}
			ids[k.Table] = append(ids[k.Table], i)
		}
		for _, name := range tables {
			x, err := c.table(name)
			if err != nil {
				return err
			}
			for all := ids[name]; len(all) > 0; {
				part := all[:min(len(all), d.MaxGetIn)]
				all = all[len(part):]
				args := make([]any, 0, 1+len(part))
				args = append(args, partition)
				at := make(map[string]int, len(part))
				for _, i := range part {
					args = append(args, keys[i].ID)
					at[keys[i].ID] = i
				}
				rows, err := c.readRows(ctx, t.st, x, x.GetIn(len(part)), args)
				if err != nil {
					return err
				}
				for _, row := range rows {
					if i, ok := at[row.ID]; ok {
						out.Rows[i], out.Found[i] = row, true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		_ = t.Rollback(context.WithoutCancel(ctx))
		return nil, driver.PushRead{}, err
	}
	return t, out, nil
}
