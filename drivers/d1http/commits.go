package d1http

import (
	"context"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// ReadCommits returns the whole commits selected by q, oldest first
// (LOG-1…LOG-4), with the SQL of drivers/sqlite, in one request: a batch,
// which D1 runs as one transaction, of the partition's counters and
// d1sql.D1ReadCommits. The cursor is checked against the counters of that
// snapshot (LOG-3: below the horizon → CodeCursorExpired, beyond the head
// → CodeCursorAhead, no commit returned). Row versions and times come
// back as text (VAL-1).
func (c *Conn) ReadCommits(ctx context.Context, partition string, q driver.CommitsQuery) ([]driver.Commit, error) {
	const what = "d1http: read commits"
	if err := c.check(); err != nil {
		return nil, err
	}
	res, err := c.cl.read(ctx, what, st(sqlitesql.SelectPartitionSeqs, partition),
		st(d1sql.D1ReadCommits, partition, num(q.AfterSeq), num(q.ThroughSeq), q.LimitChanges))
	if err != nil {
		return nil, err
	}
	maxSeq, horizon, err := decodeSeqs(res[0].Results.Rows)
	if err != nil {
		return nil, err
	}
	if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
		return nil, err
	}
	g := commitwindow.NewLog("d1http", q)
	if err := logRead(g, res[1].Results.Rows); err != nil {
		return nil, err
	}
	return g.Commits(), nil
}

// logRead feeds g the changes of one whole-commit read (rows ordered by
// seq, idx; whole commits only) until the stop rule is met (LOG-2).
func logRead(g *commitwindow.Log, rows [][]json.RawMessage) error {
	bad := func() error { return driver.Errorf(driver.CodeInternal, "d1http: stored change is malformed") }
	for _, r := range rows {
		if len(r) != 11 {
			return bad()
		}
		seq, err := rawInt(r[0])
		if err != nil {
			return bad()
		}
		start, stop := g.Next(seq)
		if stop {
			return nil
		}
		if start {
			var meta driver.Commit
			err := firstErr(
				func() (e error) { meta.ClientID, e = rawString(r[7]); return },
				func() (e error) { meta.ClientCommitID, e = rawString(r[8]); return },
				func() (e error) { meta.ActorID, e = rawString(r[9]); return },
				func() (e error) { meta.CreatedAtMs, e = rawInt(r[10]); return },
			)
			if err != nil {
				return bad()
			}
			g.Start(seq, meta)
		}
		var tbl, rowID, op, scopes, vals string
		var version int64
		err = firstErr(
			func() (e error) { tbl, e = rawString(r[1]); return },
			func() (e error) { rowID, e = rawString(r[2]); return },
			func() (e error) { op, e = rawString(r[3]); return },
			func() (e error) { scopes, e = rawString(r[4]); return },
			func() (e error) { version, e = rawInt(r[6]); return },
		)
		if err != nil {
			return bad()
		}
		hasVals := string(r[5]) != "null"
		if hasVals && op == string(driver.OpUpsert) {
			if vals, err = rawString(r[5]); err != nil {
				return bad()
			}
		}
		if err := g.Change(tbl, rowID, op, scopes, []byte(vals), hasVals, version); err != nil {
			return err
		}
	}
	g.End()
	return nil
}
