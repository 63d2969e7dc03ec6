package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/rowkeys"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

var _ driver.PushBeginner = (*Conn)(nil)

// BeginPush begins a push's Tx and reads its stored result and the
// current rows of keys (driver.PushBeginner) in ONE request: a read batch
// (one D1 transaction, so one snapshot) of Begin's read of the stamp and
// max seq, the result's statement, and per table and 98 ids one GetIn
// statement and one of the ids' tombstones (ROW-5). A push of 10 rows thus takes the 2 requests of a bare commit
// (this and Commit) instead of 13. The rows are read in the snapshot of
// the stamp, so the Commit's stamp guard covers them (TX-9).
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	if err := c.check(); err != nil {
		return nil, driver.PushRead{}, err
	}
	out := driver.PushRead{Rows: make([]driver.Row, len(keys)), Found: make([]bool, len(keys)), Tombstones: make([]int64, len(keys))}
	stmts := []stmt{st(d1sql.D1BeginRead, partition), st(sqlitesql.SelectPushResult, partition, clientID, clientCommitID)}
	groups := rowkeys.Groups(keys, sqlitesql.MaxTombstonesIn)
	xs := make([]*sqlitesql.Table, len(groups))
	for gi, g := range groups {
		x, err := c.state.Table(g.Table)
		if err != nil {
			return nil, driver.PushRead{}, err
		}
		xs[gi] = x
		stmts = append(stmts, st(d1sql.D1Rows(x, x.GetIn(len(g.Index))), g.IDs(keys, partition)...),
			st(sqlitesql.TombstonesIn(len(g.Index)), g.IDs(keys, partition, g.Table)...)) // ROW-5
	}
	gate, _ := c.gates.TryEnter(partition) // read anyway: the rows must be in the stamp's snapshot
	held := false
	defer func() {
		if !held {
			c.gates.Leave(gate, counters{}, false, false)
		}
	}()
	res, err := c.cl.read(ctx, "d1http: begin a push", stmts...)
	if err == nil && len(res) != len(stmts) {
		err = driver.Errorf(driver.CodeInternal, "d1http: begin a push: %d results for %d statements", len(res), len(stmts))
	}
	var t *Tx
	if err == nil {
		t, err = c.newTx(ctx, partition, res[0].Results.Rows)
	}
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
		for _, raw := range res[2+2*gi].Results.Rows {
			row, err := d1sql.D1DecodeRow(xs[gi], raw)
			if err != nil {
				return nil, driver.PushRead{}, err
			}
			g.Place(&out, row)
		}
		for _, raw := range res[3+2*gi].Results.Rows {
			if len(raw) != 2 {
				return nil, driver.PushRead{}, driver.Errorf(driver.CodeInternal, "d1http: begin a push: a tombstone of %d columns", len(raw))
			}
			id, err := rawString(raw[0])
			if err != nil {
				return nil, driver.PushRead{}, err
			}
			v, err := rawInt(raw[1])
			if err != nil {
				return nil, driver.PushRead{}, err
			}
			g.PlaceTombstone(&out, id, v)
		}
	}
	held = true
	t.hold(gate)
	return t, out, nil
}
