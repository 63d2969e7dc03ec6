package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// sqlWindow reads one round of window candidates (WIN-7: from the
// change-scope index only, joined to their change and commit by primary
// key), with the partition's counters of the same snapshot (one
// statement sees one snapshot). $1 partition, $2 table, $3 variable, $4
// values (text[]), $5 afterSeq of the round (exclusive), $6 throughSeq
// (inclusive), $7 limitChanges, $8 the read's cursor (its first afterSeq).
//
// Every row starts with the partition's max_seq and horizon_seq (0, 0
// for an unknown partition); there is always at least one row: when the
// cursor fails HZ-4 or WIN-8, or nothing is left in ($5, $6], one row
// whose candidate columns are NULL. The candidates are read only when the
// cursor lies in [horizon_seq, max_seq] (a one-time filter on p), so a
// failing cursor costs one primary-key lookup.
//
// Each candidate's change and commit are fetched by primary key through a
// LATERAL … LIMIT 1 sub-query, which the planner cannot flatten into a
// hash join over the whole log: the plan stays index lookups per
// candidate, whatever the statistics say.
//
// The CTE b bounds the round: the smallest, over the values, of the seq of
// each value's $7-th candidate in ($5, $6] — each value walks its own
// index range in order and stops there (LATERAL … OFFSET $7-1 LIMIT 1).
// The round then reads every candidate in ($5, bound], whole commits
// only, sorted by (seq, idx): at most about $7 per value, whatever the
// size of the log. Each candidate row carries the bound (NULL: no value
// had $7 candidates, so the round reached $6). The bound is read as a
// scalar sub-query (an InitPlan parameter), so it is part of the walk's
// index condition whatever the statistics; joined as a row of b, it was a
// filter on every entry after $5 under some statistics (many partitions,
// a large store), and a pull of a long history cost O(N²/page)
// (TestPlansUseIndexes, TestPlansManyPartitions pin it; issue 17).
const sqlWindow = `WITH p AS (
	SELECT coalesce(max(s.max_seq), 0) AS max_seq, coalesce(max(s.horizon_seq), 0) AS horizon_seq
	FROM _sync_partitions AS s WHERE s.partition = $1),
b AS (
	SELECT min(x.seq) AS bound
	FROM unnest($4::text[]) AS v(value)
	CROSS JOIN LATERAL (
		SELECT cs.seq FROM _sync_change_scopes AS cs
		WHERE cs.partition = $1 AND cs.tbl = $2 AND cs.variable = $3 AND cs.value = v.value
			AND cs.seq > $5 AND cs.seq <= $6
		ORDER BY cs.seq, cs.idx OFFSET $7::bigint - 1 LIMIT 1) AS x)
SELECT p.max_seq, p.horizon_seq, w.bound, w.seq, w.idx, w.row_id, w.op, w.scopes, w.vals, w.row_version,
	w.client_id, w.client_commit_id, w.actor_id, w.created_at_ms
FROM p LEFT JOIN LATERAL (
	SELECT (SELECT bound FROM b) AS bound, cs.seq, cs.idx, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
		c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms
	FROM _sync_change_scopes AS cs
	CROSS JOIN LATERAL (
		SELECT row_id, op, scopes, vals, row_version FROM _sync_changes
		WHERE partition = cs.partition AND seq = cs.seq AND idx = cs.idx LIMIT 1) AS ch
	CROSS JOIN LATERAL (
		SELECT client_id, client_commit_id, actor_id, created_at_ms FROM _sync_commits
		WHERE partition = cs.partition AND seq = cs.seq LIMIT 1) AS c
	WHERE p.horizon_seq <= $8::bigint AND p.max_seq >= $8::bigint
		AND cs.partition = $1 AND cs.tbl = $2 AND cs.variable = $3 AND cs.value = ANY($4::text[])
		AND cs.seq > $5 AND cs.seq <= (SELECT COALESCE(bound, $6) FROM b)
	OFFSET 0) AS w ON true
ORDER BY w.seq, w.idx`

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
