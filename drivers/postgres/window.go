package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
)

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7). Candidates come only from the change-scope index for the
// filter key with the fewest values, in rounds of sqlWindow; the other
// keys are checked against each candidate's stored scopes (WIN-3). Every
// round checks the cursor against the partition's horizon and max seq of
// its own snapshot: AfterSeq below the horizon → CodeCursorExpired
// (HZ-4), beyond the head → CodeCursorAhead (WIN-8), and nothing is
// returned; a prune that commits between two rounds therefore fails the
// read instead of leaving a gap (commits above the horizon are never
// pruned, and commits are never rewritten). A filter with an empty value
// list reads no candidate but still checks the cursor, in one statement.
// A commit is appended whole, with only its matching changes in their
// original order (WIN-2), and reading stops after the commit that brings
// the matched changes to ≥ LimitChanges (WIN-4). Deletes carry no Values
// and RowVersion 0 (WIN-6). Errors: CodeUnknownTable,
// CodeScanRequiresScope, CodeCursorExpired, CodeCursorAhead.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	key, _, err := commitwindow.Key(q, c.state.Table)
	if err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	vals := dedupe(q.Filter[key]) // empty when the key has an empty list: no candidate
	w := commitwindow.New("postgres", q, key)
	for after := q.AfterSeq; ; {
		rows, err := c.pool.Query(ctx, sqlWindow, partition, q.Table, key, vals, after, q.ThroughSeq, int64(q.LimitChanges), q.AfterSeq)
		if err != nil {
			return nil, c.mapErr(ctx, err, "postgres: read commit window")
		}
		var bound *int64
		first := true
		for rows.Next() {
			var (
				maxSeq, horizon    int64
				seq, rowVersion    *int64
				idx                *int32
				rowID, op, scopes  *string
				vals               *string
				clientID, commitID *string
				actorID            *string
				createdAt          *int64
			)
			if err := rows.Scan(&maxSeq, &horizon, &bound, &seq, &idx, &rowID, &op, &scopes, &vals, &rowVersion,
				&clientID, &commitID, &actorID, &createdAt); err != nil {
				rows.Close()
				return nil, c.mapErr(ctx, err, "postgres: read commit window")
			}
			if first {
				first = false
				if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
					rows.Close()
					return nil, err
				}
			}
			if seq == nil {
				continue // no candidate in this round
			}
			start, stop := w.Next(*seq)
			if stop {
				break // WIN-4: the previous commit reached the limit
			}
			if start {
				w.Start(*seq, driver.Commit{ClientID: *clientID, ClientCommitID: *commitID, ActorID: *actorID, CreatedAtMs: *createdAt})
			}
			var values []byte
			if vals != nil {
				values = []byte(*vals)
			}
			if err := w.Change(*rowID, *op, *scopes, values, vals != nil, *rowVersion); err != nil {
				rows.Close()
				return nil, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, c.mapErr(ctx, err, "postgres: read commit window")
		}
		if first {
			return nil, driver.Errorf(driver.CodeInternal, "postgres: read commit window: no counters row")
		}
		w.End()
		if w.Done() || bound == nil || *bound >= q.ThroughSeq {
			break
		}
		after = *bound
	}
	return w.Commits(), nil
}
