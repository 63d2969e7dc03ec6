package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowkeys"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

var _ driver.PushBeginner = (*Conn)(nil)

// BeginPush begins a push's Tx (Begin) and reads its stored result and
// the current rows of keys (driver.PushBeginner) in 1 + one statement per
// table and 99 ids (sqlitesql.GetIn), instead of 1 + one per row:
// each statement is a round through database/sql and the engine, whatever
// it reads.
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	begin := func() (driver.Tx, error) { return c.Begin(ctx, partition) }
	return rowkeys.BeginPush(ctx, begin, func(t *Tx, out *driver.PushRead) error {
		return t.op(ctx, func() error {
			var err error
			out.Result, out.HasResult, err = c.getPushResult(ctx, t.st, partition, clientID, clientCommitID)
			if err != nil || out.HasResult {
				return err
			}
			out.Rows, out.Found, out.Tombstones = make([]driver.Row, len(keys)), make([]bool, len(keys)), make([]int64, len(keys))
			for _, g := range rowkeys.Groups(keys, sqlitesql.MaxTombstonesIn) {
				x, err := c.state.Table(g.Table)
				if err != nil {
					return err
				}
				rows, err := c.readRows(ctx, t.st, x, c.pooled(x.GetIn(len(g.Index))), g.IDs(keys, partition), "sqlite: scan rows")
				if err != nil {
					return err
				}
				for _, row := range rows {
					g.Place(out, row)
				}
				if len(rows) < len(g.Index) {
					if err := c.readTombstones(ctx, t, g, keys, out); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

// readTombstones reads the tombstones of g's keys whose rows are missing
// into out (driver.PushRead.Tombstones, ROW-5): one statement, only for a
// group with a missing row.
func (c *Conn) readTombstones(ctx context.Context, t *Tx, g rowkeys.Group, keys []driver.RowKey, out *driver.PushRead) error {
	args := []any{t.partition, g.Table}
	for _, i := range g.Index {
		if !out.Found[i] {
			args = append(args, keys[i].ID)
		}
	}
	rows, err := c.query(ctx, t.st, c.pooled(sqlitesql.TombstonesIn(len(args)-2)), args)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return c.mapErr(ctx, err, "sqlite: read tombstones")
		}
		g.PlaceTombstone(out, id, v)
	}
	return c.mapErr(ctx, rows.Err(), "sqlite: read tombstones")
}
