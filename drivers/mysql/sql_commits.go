package mysql

// logHead is the first part of every round of a whole-commit read
// (LOG-3): one row (kind 0) with the partition's max_seq and horizon_seq
// (0 when it has none), read by the same statement, so in the same read
// view, as the changes (kind 1) that follow it through UNION ALL.
// Arguments: the partition twice.
const logHead = `SELECT 0 AS kind, COALESCE((SELECT max_seq FROM _sync_partitions WHERE p = ?), 0) AS max_seq,
	COALESCE((SELECT horizon_seq FROM _sync_horizons WHERE p = ?), 0) AS horizon_seq,
	NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
UNION ALL
`

// logRound is one round of a whole-commit read (LOG-1…LOG-4): logHead,
// then the changes of the partition after the (seq, idx) position,
// through throughSeq, in (seq, idx) order, at most the round size, each
// with its commit by primary key. Arguments: logHead's, then p, lastSeq,
// throughSeq, lastSeq, lastIdx, the round size. Served by the changes'
// primary key (p, seq, idx), a range read from the position that stops at
// the round size, and the commits' primary key (STRAIGHT_JOIN pins the
// order): never a scan of the log (TestPlanReadCommits pins it). UNION ALL
// promises no order, so the reader sorts the changes itself.
const logRound = logHead + `(SELECT 1, NULL, NULL, ch.seq, ch.idx, ch.tbl, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
	c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms
FROM _sync_changes AS ch
STRAIGHT_JOIN _sync_commits AS c ON c.p = ch.p AND c.seq = ch.seq
WHERE ch.p = ? AND ch.seq >= ? AND ch.seq <= ? AND (ch.seq > ? OR ch.idx > ?)
ORDER BY ch.seq, ch.idx LIMIT ?)`
