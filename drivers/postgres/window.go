package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
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
	if _, err := c.table(q.Table); err != nil {
		return nil, err
	}
	key, _, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	vals := dedupe(q.Filter[key]) // empty when the key has an empty list: no candidate
	match := storelayout.NewMatcher(q.Filter, key)
	var (
		out     []driver.Commit
		matched int
		cur     *driver.Commit
	)
	flush := func() {
		if cur != nil && len(cur.Changes) > 0 {
			out = append(out, *cur)
			matched += len(cur.Changes)
		}
		cur = nil
	}
	for after := q.AfterSeq; ; {
		rows, err := c.pool.Query(ctx, sqlWindow, partition, q.Table, key, vals, after, q.ThroughSeq, int64(q.LimitChanges), q.AfterSeq)
		if err != nil {
			return nil, c.mapErr(ctx, err, "postgres: read commit window")
		}
		var bound *int64
		done, first := false, true
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
			if cur == nil || cur.Seq != *seq {
				flush()
				if matched >= q.LimitChanges {
					done = true // WIN-4: the previous commit reached the limit
					break
				}
				cur = &driver.Commit{Seq: *seq, ClientID: *clientID, ClientCommitID: *commitID, ActorID: *actorID, CreatedAtMs: *createdAt}
			}
			ch, ok, err := decodeChange(q.Table, *rowID, *op, *scopes, vals, *rowVersion, match)
			if err != nil {
				rows.Close()
				return nil, err
			}
			if ok {
				cur.Changes = append(cur.Changes, ch)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, c.mapErr(ctx, err, "postgres: read commit window")
		}
		if first {
			return nil, driver.Errorf(driver.CodeInternal, "postgres: read commit window: no counters row")
		}
		flush()
		if done || matched >= q.LimitChanges || bound == nil || *bound >= q.ThroughSeq {
			break
		}
		after = *bound
	}
	return out, nil
}

// decodeChange builds a change from a window candidate; ok is false when
// its scopes fail the filter's other keys (WIN-3).
func decodeChange(table, rowID, op, scopes string, vals *string, rowVersion int64, match storelayout.Matcher) (driver.Change, bool, error) {
	sc, err := storelayout.DecodeScopes(scopes)
	if err != nil {
		return driver.Change{}, false, err
	}
	if !match.Match(sc) {
		return driver.Change{}, false, nil
	}
	ch := driver.Change{Table: table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
	if ch.Op == driver.OpUpsert {
		ch.RowVersion = rowVersion
		if vals != nil {
			if ch.Values, err = driver.DecodeValues([]byte(*vals)); err != nil {
				return driver.Change{}, false, driver.Wrap(driver.CodeInternal, err, "postgres: decode stored change values")
			}
		}
	}
	return ch, true, nil
}
