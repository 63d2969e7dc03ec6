package postgres

// sqlReadCommits reads the whole commits of a partition by seq range
// (LOG-1…LOG-4) with the partition's counters of the same snapshot (one
// statement sees one snapshot, LOG-3): $1 partition, $2 afterSeq
// (exclusive), $3 throughSeq (inclusive), $4 limitChanges.
//
// Every row starts with the partition's max_seq and horizon_seq (0, 0
// for an unknown partition); there is always at least one row: when the
// cursor fails HZ-4 or WIN-8, or the range holds no change, one row whose
// change columns are NULL. The changes are read only when the cursor lies
// in [horizon_seq, max_seq] (a one-time filter on p), so a failing cursor
// costs one primary-key lookup.
//
// The CTE b bounds the read (LOG-2): the seq of the $4-th change after $2,
// a walk of the changes' primary key that stops there (OFFSET $4-1 LIMIT
// 1); NULL when fewer changes lie in ($2, $3]. The read then walks the
// same key through the bound — whole commits only, in (seq, idx) order —
// and fetches each change's commit by primary key through a LATERAL …
// LIMIT 1 the planner cannot turn into a join over the whole log. The
// bound is read as a scalar sub-query (an InitPlan parameter), so it is
// part of the walk's index condition whatever the statistics, as
// sqlWindow's is (TestPlansUseIndexes pins it).
const sqlReadCommits = `WITH p AS (
	SELECT coalesce(max(s.max_seq), 0) AS max_seq, coalesce(max(s.horizon_seq), 0) AS horizon_seq
	FROM _sync_partitions AS s WHERE s.partition = $1),
b AS (
	SELECT x.seq AS bound FROM _sync_changes AS x
	WHERE x.partition = $1 AND x.seq > $2::bigint AND x.seq <= $3::bigint
	ORDER BY x.seq, x.idx OFFSET $4::bigint - 1 LIMIT 1)
SELECT p.max_seq, p.horizon_seq, w.seq, w.tbl, w.row_id, w.op, w.scopes, w.vals, w.row_version,
	w.client_id, w.client_commit_id, w.actor_id, w.created_at_ms
FROM p LEFT JOIN LATERAL (
	SELECT ch.seq, ch.idx, ch.tbl, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
		c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms
	FROM _sync_changes AS ch
	CROSS JOIN LATERAL (
		SELECT client_id, client_commit_id, actor_id, created_at_ms FROM _sync_commits
		WHERE partition = ch.partition AND seq = ch.seq LIMIT 1) AS c
	WHERE ch.partition = $1 AND ch.seq > $2::bigint AND ch.seq <= (SELECT coalesce((SELECT bound FROM b), $3::bigint))
		AND p.horizon_seq <= $2::bigint AND p.max_seq >= $2::bigint
	OFFSET 0) AS w ON true
ORDER BY w.seq, w.idx`
