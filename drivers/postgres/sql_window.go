package postgres

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
// The candidates are walked per value, as b walks them: a LATERAL over
// unnest($4) whose sub-query is fenced by OFFSET 0, so the planner cannot
// flatten it into one range over the variable with the value as a filter.
// Without statistics (a store never analyzed: autovacuum off) it did —
// value = ANY($4) became a filter on a walk of every value's entries from
// the first value on, about 1 s per 500-change page at 500,000 commits
// against 50 ms now (docs/performance.md); TestPlansUnanalyzed pins
// it. $4 holds distinct values (the driver dedupes them), so no candidate
// is read twice.
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
// (TestPlansUseIndexes, TestPlansManyPartitions pin it).
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
	FROM unnest($4::text[]) AS wv(value)
	CROSS JOIN LATERAL (
		SELECT cs.partition, cs.seq, cs.idx FROM _sync_change_scopes AS cs
		WHERE cs.partition = $1 AND cs.tbl = $2 AND cs.variable = $3 AND cs.value = wv.value
			AND cs.seq > $5 AND cs.seq <= (SELECT COALESCE(bound, $6) FROM b)
		OFFSET 0) AS cs
	CROSS JOIN LATERAL (
		SELECT row_id, op, scopes, vals, row_version FROM _sync_changes
		WHERE partition = cs.partition AND seq = cs.seq AND idx = cs.idx LIMIT 1) AS ch
	CROSS JOIN LATERAL (
		SELECT client_id, client_commit_id, actor_id, created_at_ms FROM _sync_commits
		WHERE partition = cs.partition AND seq = cs.seq LIMIT 1) AS c
	WHERE p.horizon_seq <= $8::bigint AND p.max_seq >= $8::bigint
	OFFSET 0) AS w ON true
ORDER BY w.seq, w.idx`
