package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"math"
	"slices"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
)

// ReadCommits returns the whole commits selected by q, oldest first
// (LOG-1…LOG-4), in rounds that resume after the last (seq, idx) read,
// each sized to the changes still wanted plus roundHeadroom (a few more
// finish the last commit). Every round is one statement (logRound) that
// also reads the partition's max_seq and horizon_seq, so the cursor is
// checked in the read view the round's changes come from (LOG-3: below
// the horizon → CodeCursorExpired, beyond the head → CodeCursorAhead, no
// commit returned); a prune that commits between two rounds therefore
// fails the read instead of leaving a gap (commits above the horizon are
// never pruned, and never rewritten). Reading stops after the commit that
// brings the changes to ≥ LimitChanges (LOG-2).
func (c *Conn) ReadCommits(ctx context.Context, partition string, q driver.CommitsQuery) ([]driver.Commit, error) {
	g := commitwindow.NewLog("mysql", q)
	lastSeq, lastIdx := q.AfterSeq, int64(math.MaxInt32)
	for {
		size := int64(max(q.LimitChanges-g.Count(), 0) + roundHeadroom)
		changes, maxSeq, horizon, err := c.logRound(ctx, []any{partition, partition, partition, lastSeq, q.ThroughSeq, lastSeq, lastIdx, size})
		if err != nil {
			return nil, err
		}
		if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
			return nil, err
		}
		slices.SortFunc(changes, func(a, b logChange) int { return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.idx, b.idx)) })
		for _, ch := range changes {
			lastSeq, lastIdx = ch.seq, ch.idx
			start, stop := g.Next(ch.seq)
			if stop {
				return g.Commits(), nil
			}
			if start {
				g.Start(ch.seq, ch.meta)
			}
			if err := g.Change(ch.tbl, ch.rowID, ch.op, string(ch.scopes), ch.vals, ch.vals != nil, ch.rowVersion); err != nil {
				return nil, err
			}
		}
		if int64(len(changes)) < size {
			g.End()
			return g.Commits(), nil
		}
	}
}

// logChange is one change of a whole-commit round with its commit.
type logChange struct {
	seq, idx, rowVersion int64
	tbl, rowID, op       string
	scopes, vals         []byte
	meta                 driver.Commit
}

// logRound runs one round statement and returns its changes, in the
// order they came, and the counters of its head row.
func (c *Conn) logRound(ctx context.Context, args []any) (changes []logChange, maxSeq, horizon int64, err error) {
	const what = "mysql: read commits"
	rows, err := c.query(ctx, nil, logRound, args, what)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	head := false
	for rows.Next() {
		var (
			kind                 int64
			m, h                 sql.NullInt64
			seq, idx, rowVersion sql.NullInt64
			tbl, rowID, op       sql.NullString
			clientID, commitID   sql.NullString
			actorID              sql.NullString
			createdAt            sql.NullInt64
			ch                   logChange
		)
		if err := rows.Scan(&kind, &m, &h, &seq, &idx, &tbl, &rowID, &op, &ch.scopes, &ch.vals, &rowVersion,
			&clientID, &commitID, &actorID, &createdAt); err != nil {
			return nil, 0, 0, c.mapErr(ctx, err, what)
		}
		if kind == 0 {
			head, maxSeq, horizon = true, m.Int64, h.Int64
			continue
		}
		ch.seq, ch.idx, ch.rowVersion = seq.Int64, idx.Int64, rowVersion.Int64
		ch.tbl, ch.rowID, ch.op = tbl.String, rowID.String, op.String
		ch.meta = driver.Commit{ClientID: clientID.String, ClientCommitID: commitID.String, ActorID: actorID.String,
			CreatedAtMs: createdAt.Int64}
		changes = append(changes, ch)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, c.mapErr(ctx, err, what)
	}
	if !head {
		return nil, 0, 0, driver.Errorf(driver.CodeInternal, "%s: the round has no counters row", what)
	}
	return changes, maxSeq, horizon, nil
}
