package mysql

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowkeys"
)

var _ driver.PushBeginner = (*Conn)(nil)

// pushReadChunk bounds the ids of one IN list of BeginPush.
const pushReadChunk = 500

// BeginPush begins a push's Tx (Begin) and reads its stored result and
// the current rows of keys (driver.PushBeginner) in 1 + one statement per
// table (per 500 ids), instead of 1 + one per row: each statement is a
// round trip, and a push of 10 rows would otherwise make 11.
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	dtx, err := c.Begin(ctx, partition)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	t := dtx.(*Tx)
	var out driver.PushRead
	err = t.op(ctx, func() error {
		var err error
		out.Result, out.HasResult, err = c.getPushResult(ctx, t.tx, partition, clientID, clientCommitID)
		if err != nil || out.HasResult {
			return err
		}
		out.Rows, out.Found = make([]driver.Row, len(keys)), make([]bool, len(keys))
		for _, g := range rowkeys.Groups(keys, pushReadChunk) {
			x, err := c.table(g.Table)
			if err != nil {
				return err
			}
			if err := t.readRowsIn(ctx, x, g, keys, &out); err != nil {
				return err
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

// readRowsIn reads the rows of x among g's keys into out.
func (t *Tx) readRowsIn(ctx context.Context, x *table, g rowkeys.Group, keys []driver.RowKey, out *driver.PushRead) error {
	q := "SELECT " + x.sel + " FROM " + quoteIdent(x.def.Name) + " WHERE " + quoteIdent(partitionColumn) + " = ? AND " +
		quoteIdent(x.def.PrimaryKey) + " IN (" + qmarks(len(g.Index)) + ")"
	rows, err := t.c.query(ctx, t.tx, q, g.IDs(keys, t.partition), "mysql: read rows for a push")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		dest := x.scanDest()
		if err := rows.Scan(dest...); err != nil {
			return t.c.mapErr(ctx, err, "mysql: read rows for a push")
		}
		row, err := x.decodeRow(dest)
		if err != nil {
			return err
		}
		g.Place(out, row)
	}
	return t.c.mapErr(ctx, rows.Err(), "mysql: read rows for a push")
}
