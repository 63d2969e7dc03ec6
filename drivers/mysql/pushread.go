package mysql

import (
	"context"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowkeys"
)

var _ driver.PushBeginner = (*Conn)(nil)

// pushReadChunk bounds the ids of one IN list of BeginPush.
const pushReadChunk = 500

// BeginPush begins a push's Tx (Begin) and reads its stored result and
// the current rows of keys (driver.PushBeginner) in 1 + one statement per
// table (per 500 ids), instead of 1 + one per row: each statement is a
// round trip, and a push of 10 rows would otherwise make 11. The first
// table's statement also reads the result (a LEFT JOIN of both on a
// one-row table), so a push into one table makes ONE statement.
func (c *Conn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	begin := func() (driver.Tx, error) { return c.Begin(ctx, partition) }
	return rowkeys.BeginPush(ctx, begin, func(t *Tx, out *driver.PushRead) error {
		return t.op(ctx, func() error {
			out.Rows, out.Found, out.Tombstones = make([]driver.Row, len(keys)), make([]bool, len(keys)), make([]int64, len(keys))
			groups := rowkeys.Groups(keys, pushReadChunk)
			if len(groups) == 0 {
				var err error
				out.Result, out.HasResult, err = c.getPushResult(ctx, t.tx, partition, clientID, clientCommitID)
				return err
			}
			for gi, g := range groups {
				x, err := c.state.Table(g.Table)
				if err != nil {
					return err
				}
				if gi == 0 {
					err = t.readResultAndRowsIn(ctx, x, g, keys, clientID, clientCommitID, out)
				} else {
					err = t.readRowsIn(ctx, x, g, keys, out)
				}
				if err != nil || out.HasResult {
					return err
				}
			}
			for _, g := range groups {
				if err := t.readTombstonesIn(ctx, g, keys, out); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// readTombstonesIn reads the tombstones of g's keys whose rows are
// missing into out (ROW-5): one statement, only for a group with a
// missing row (a push of updates reads none).
func (t *Tx) readTombstonesIn(ctx context.Context, g rowkeys.Group, keys []driver.RowKey, out *driver.PushRead) error {
	args := []any{t.partition, g.Table}
	for _, i := range g.Index {
		if !out.Found[i] {
			args = append(args, keys[i].ID)
		}
	}
	if len(args) == 2 {
		return nil
	}
	rows, err := t.c.query(ctx, t.tx, tombstonesInSQL(len(args)-2), args, "mysql: read tombstones for a push")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id []byte
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return t.c.mapErr(ctx, err, "mysql: read tombstones for a push")
		}
		g.PlaceTombstone(out, string(id), v)
	}
	return t.c.mapErr(ctx, rows.Err(), "mysql: read tombstones for a push")
}

// pushReadRowsSQL reads the rows of x among n ids of a partition: ?1
// the partition, then the ids.
func pushReadRowsSQL(x *table, n int) string {
	return "SELECT " + x.sel + " FROM " + quoteIdent(x.def.Name) + " FORCE INDEX (PRIMARY) WHERE " +
		quoteIdent(partitionColumn) + " = ? AND " + quoteIdent(x.def.PrimaryKey) + " IN (" + qmarks(n) + ")"
}

// pushReadSQL reads a push result and the rows of x among n ids in one
// statement (readResultAndRowsIn): the partition, client id and commit id
// of the result, the partition again, then the ids.
//
// Both statements name the primary key (FORCE INDEX): MariaDB optimizes
// a prepared statement again at every execution, and with the table's
// other indexes (which all lead with the partition) as candidates its
// range analysis — an index dive per id and index — was most of the
// read's time (TestPlanPushRead; ≈ 35 µs of a ≈ 190 µs read of 10 ids on
// the conformance schema, measured alternating both forms 3,000 times).
func pushReadSQL(x *table, n int) string {
	cols := []string{"t." + quoteIdent(versionColumn), "t." + quoteIdent(negZeroColumn)}
	for _, c := range x.def.Columns {
		cols = append(cols, "t."+quoteIdent(c.Name))
	}
	return "SELECT r.result, " + strings.Join(cols, ", ") + " FROM (SELECT 1 AS one) AS o" +
		" LEFT JOIN _sync_push_results r ON r.p = ? AND r.client_id = ? AND r.client_commit_id = ?" +
		" LEFT JOIN " + quoteIdent(x.def.Name) + " t FORCE INDEX (PRIMARY) ON t." + quoteIdent(partitionColumn) + " = ? AND t." +
		quoteIdent(x.def.PrimaryKey) + " IN (" + qmarks(n) + ")"
}

// readRowsIn reads the rows of x among g's keys into out.
func (t *Tx) readRowsIn(ctx context.Context, x *table, g rowkeys.Group, keys []driver.RowKey, out *driver.PushRead) error {
	rows, err := t.c.query(ctx, t.tx, pushReadRowsSQL(x, len(g.Index)), g.IDs(keys, t.partition), "mysql: read rows for a push")
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

// readResultAndRowsIn reads the push result of (clientID, clientCommitID)
// and the rows of x among g's keys in one statement: one row per row
// found, or a single row with NULL row columns when none is; the result
// column (NULL when none is stored) repeats on every row.
func (t *Tx) readResultAndRowsIn(ctx context.Context, x *table, g rowkeys.Group, keys []driver.RowKey, clientID, clientCommitID string, out *driver.PushRead) error {
	rows, err := t.c.query(ctx, t.tx, pushReadSQL(x, len(g.Index)),
		g.IDs(keys, t.partition, clientID, clientCommitID, t.partition), "mysql: read for a push")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var result []byte
		dest := append([]any{&result}, x.scanDest()...)
		if err := rows.Scan(dest...); err != nil {
			return t.c.mapErr(ctx, err, "mysql: read for a push")
		}
		if result != nil {
			r, err := driver.DecodePushResult(result)
			if err != nil {
				return err
			}
			out.Result, out.HasResult = r, true
			return nil
		}
		if *(dest[1].(*any)) == nil {
			continue // no row of x among the keys
		}
		row, err := x.decodeRow(dest[1:])
		if err != nil {
			return err
		}
		g.Place(out, row)
	}
	return t.c.mapErr(ctx, rows.Err(), "mysql: read for a push")
}
