package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"math"
	"slices"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// roundHeadroom is added to the number of changes still wanted to size a
// round: a few more candidates finish the last commit or replace those
// the other filter keys reject.
const roundHeadroom = 64

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7). Candidates come only from the change-scope index, for
// the filter key with the fewest values (WIN-7), in rounds that resume
// after the last (seq, idx) read: one value walks its index range in
// order; several values walk each range, each cut at the round size, and
// merge them, so a round costs O(values × round) whatever the size of the
// log. Every round is one statement that also reads the partition's
// max_seq and horizon_seq (windowHead), so the cursor is checked in the
// read view the round's candidates come from: AfterSeq below the horizon
// → CodeCursorExpired (HZ-4), beyond the head → CodeCursorAhead (WIN-8),
// and nothing is returned; a prune that commits between two rounds
// therefore fails the read instead of leaving a gap (commits above the
// horizon are never pruned, and commits are never rewritten). A filter
// with an empty value list reads no candidate but still checks the
// cursor, in one statement. The other keys are checked against each
// candidate's stored scopes (WIN-3). A commit is appended whole, with
// only its matching changes in their original order (WIN-2), and reading
// stops after the commit that brings the matched changes to ≥
// LimitChanges (WIN-4). Deletes carry no Values and RowVersion 0 (WIN-6).
// Errors: CodeUnknownTable, CodeCursorExpired, CodeCursorAhead.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	key, empty, err := commitwindow.Key(q, c.state.Table)
	if err != nil {
		return nil, err
	}
	if empty {
		// Nothing can match; the cursor is still checked, in one statement.
		var maxSeq, horizon int64
		if err := c.queryRow(ctx, nil, windowCounters, []any{partition, partition}, &maxSeq, &horizon); err != nil {
			return nil, err
		}
		return nil, driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq)
	}
	w := &windowReader{c: c, q: q, g: commitwindow.New("mysql", q, key)}
	vals := dedupe(q.Filter[key])
	lastSeq, lastIdx := q.AfterSeq, int64(math.MaxInt32)
	var list string
	if len(vals) > maxInlineValues {
		var err error
		if list, err = storelayout.JSONList(vals); err != nil {
			return nil, err
		}
	}
	for {
		size := int64(max(q.LimitChanges-w.g.Matched(), 0) + roundHeadroom)
		var query string
		args := []any{partition, partition}
		if len(vals) == 1 {
			query = windowSingleRound
			args = append(args, partition, q.Table, key, vals[0], lastSeq, q.ThroughSeq, lastSeq, lastIdx, size)
		} else if len(vals) > maxInlineValues {
			query = withHead(c.windowJSON())
			args = append(args, list, partition, q.Table, key, lastSeq, q.ThroughSeq, lastSeq, lastIdx, size)
		} else {
			query = windowListRounds[len(vals)]
			for _, v := range vals {
				args = append(args, partition, q.Table, key, v, lastSeq, q.ThroughSeq, lastSeq, lastIdx, size)
			}
			args = append(args, size)
		}
		n, err := w.read(ctx, query, args, &lastSeq, &lastIdx)
		if err != nil {
			return nil, err
		}
		if w.g.Done() || n < size {
			w.g.Flush()
			return w.g.Commits(), nil
		}
	}
}

// windowReader reads the rounds of one window read; g groups their
// candidates into commits and applies the stop rule across rounds (a
// round may end inside a commit).
type windowReader struct {
	c *Conn
	q driver.WindowQuery
	g *commitwindow.Grouper
}

// candidate is one change-scope candidate of a round with its change and
// commit.
type candidate struct {
	seq, idx, rowVersion int64
	rowID, op            string
	scopes, vals         []byte
	meta                 driver.Commit
}

// read runs one round: it checks the cursor against the round's counters,
// then consumes its candidates in (seq, idx) order, advancing the cursor,
// and returns how many candidates it read.
func (w *windowReader) read(ctx context.Context, query string, args []any, lastSeq, lastIdx *int64) (int64, error) {
	cands, maxSeq, horizon, err := w.round(ctx, query, args)
	if err != nil {
		return 0, err
	}
	if err := driver.CheckWindowCursor(w.q.AfterSeq, horizon, maxSeq); err != nil {
		return 0, err
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.idx, b.idx)) })
	for i, cd := range cands {
		*lastSeq, *lastIdx = cd.seq, cd.idx
		start, stop := w.g.Next(cd.seq)
		if stop {
			return int64(i + 1), nil // WIN-4: the previous commit reached the limit
		}
		if start {
			w.g.Start(cd.seq, cd.meta)
		}
		if err := w.g.Change(cd.rowID, cd.op, string(cd.scopes), cd.vals, cd.vals != nil, cd.rowVersion); err != nil {
			return 0, err
		}
	}
	return int64(len(cands)), nil
}

// round runs one round statement and returns its candidates, in the
// order they came, and the counters of its head row.
func (w *windowReader) round(ctx context.Context, query string, args []any) (cands []candidate, maxSeq, horizon int64, err error) {
	const what = "mysql: read commit window"
	rows, err := w.c.query(ctx, nil, query, args, what)
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
			rowID, op            sql.NullString
			clientID, commitID   sql.NullString
			actorID              sql.NullString
			createdAt            sql.NullInt64
			cd                   candidate
		)
		if err := rows.Scan(&kind, &m, &h, &seq, &idx, &rowID, &op, &cd.scopes, &cd.vals, &rowVersion,
			&clientID, &commitID, &actorID, &createdAt); err != nil {
			return nil, 0, 0, w.c.mapErr(ctx, err, what)
		}
		if kind == 0 {
			head, maxSeq, horizon = true, m.Int64, h.Int64
			continue
		}
		cd.seq, cd.idx, cd.rowVersion = seq.Int64, idx.Int64, rowVersion.Int64
		cd.rowID, cd.op = rowID.String, op.String
		cd.meta = driver.Commit{ClientID: clientID.String, ClientCommitID: commitID.String, ActorID: actorID.String,
			CreatedAtMs: createdAt.Int64}
		cands = append(cands, cd)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, w.c.mapErr(ctx, err, what)
	}
	if !head {
		return nil, 0, 0, driver.Errorf(driver.CodeInternal, "%s: the round has no counters row", what)
	}
	return cands, maxSeq, horizon, nil
}
