package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
)

// ReadCommits returns the whole commits selected by q, oldest first
// (LOG-1…LOG-4), in one statement (sqlReadCommits) that also reads the
// partition's counters, so the cursor is checked in the snapshot the
// commits come from (LOG-3: below the horizon → CodeCursorExpired, beyond
// the head → CodeCursorAhead, no commit returned). It walks the changes'
// primary key from q.AfterSeq through the commit that reaches
// q.LimitChanges (LOG-2).
func (c *Conn) ReadCommits(ctx context.Context, partition string, q driver.CommitsQuery) ([]driver.Commit, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	const what = "postgres: read commits"
	rows, err := c.pool.Query(ctx, sqlReadCommits, partition, q.AfterSeq, q.ThroughSeq, int64(q.LimitChanges))
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	defer rows.Close()
	g := commitwindow.NewLog("postgres", q)
	first := true
	for rows.Next() {
		var (
			maxSeq, horizon         int64
			seq, rowVersion         *int64
			tbl, rowID, op, scopes  *string
			vals                    *string
			clientID, commitID, act *string
			createdAt               *int64
		)
		if err := rows.Scan(&maxSeq, &horizon, &seq, &tbl, &rowID, &op, &scopes, &vals, &rowVersion,
			&clientID, &commitID, &act, &createdAt); err != nil {
			return nil, c.mapErr(ctx, err, what)
		}
		if first {
			first = false
			if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
				return nil, err
			}
		}
		if seq == nil {
			continue // no change in the range
		}
		start, stop := g.Next(*seq)
		if stop {
			break
		}
		if start {
			g.Start(*seq, driver.Commit{ClientID: *clientID, ClientCommitID: *commitID, ActorID: *act, CreatedAtMs: *createdAt})
		}
		var values []byte
		if vals != nil {
			values = []byte(*vals)
		}
		if err := g.Change(*tbl, *rowID, *op, *scopes, values, vals != nil, *rowVersion); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	if first {
		return nil, driver.Errorf(driver.CodeInternal, "%s: no counters row", what)
	}
	g.End()
	return g.Commits(), nil
}
