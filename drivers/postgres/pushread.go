package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowkeys"
)

// pushReadChunk bounds the ids of one read of BeginPush.
const pushReadChunk = 500

var _ driver.PushBeginner = (*Conn)(nil)

// BeginPush begins a push's Tx and reads its stored result and the
// current rows of keys (driver.PushBeginner) in Begin's own pipeline: ONE
// round trip (BEGIN, the partition's lock, the savepoint, the result's
// SELECT and two SELECTs per table and 500 ids, table.getIn and the ids'
// tombstones, sqlTombstonesIn), instead of
// Begin's and then one per read. The reads run after the partition's
// lock, in the Tx, so they see what GetPushResult and GetRow would first
// thing in it. Retried as Begin is; never deferred (it reads), so a push
// that reads costs Begin's round trip and Commit's.
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	if err := c.check(); err != nil {
		return nil, driver.PushRead{}, err
	}
	xs := make([]*table, len(keys))
	for i, k := range keys {
		x, err := c.state.Table(k.Table)
		if err != nil {
			return nil, driver.PushRead{}, err
		}
		xs[i] = x
	}
	var out driver.PushRead
	queue := func(b *pgx.Batch) {
		out = driver.PushRead{Rows: make([]driver.Row, len(keys)), Found: make([]bool, len(keys)), Tombstones: make([]int64, len(keys))}
		b.Queue(sqlSelectPushResult, partition, clientID, clientCommitID).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var text string
				if err := rows.Scan(&text); err != nil {
					return err
				}
				r, err := driver.DecodePushResult([]byte(text))
				if err != nil {
					return err
				}
				out.Result, out.HasResult = r, true
			}
			return rows.Err()
		})
		for _, g := range rowkeys.Groups(keys, pushReadChunk) {
			x := xs[g.Index[0]]
			ids := make([]string, len(g.Index))
			for j, i := range g.Index {
				ids[j] = keys[i].ID
			}
			b.Queue(x.getIn, partition, ids).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					row, err := x.decodeRow(rows)
					if err != nil {
						return err
					}
					g.Place(&out, row)
				}
				return rows.Err()
			})
			// The ids' tombstones (ROW-5), after the rows: kept for the
			// missing ones only.
			b.Queue(sqlTombstonesIn, partition, g.Table, ids).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id string
					var v int64
					if err := rows.Scan(&id, &v); err != nil {
						return err
					}
					g.PlaceTombstone(&out, id, v)
				}
				return rows.Err()
			})
		}
	}
	gate, err := c.enterGate(ctx, partition)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	t, err := c.beginLive(ctx, partition, gate, queue)
	if err != nil {
		return nil, driver.PushRead{}, c.mapErr(ctx, err, "postgres: begin a push")
	}
	return t, out, nil
}
