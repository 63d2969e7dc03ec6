package sqlitesql

// Whole commits by seq range (LOG-1…LOG-4) in the SQLite dialect. This
// file's init adds the statement to InfraStatements and ReadStatements.

func init() {
	InfraStatements = append(InfraStatements, ReadCommits)
	ReadStatements = append(ReadStatements, ReadCommits)
}

// logCols are the columns of a whole-commit read: a change and its
// commit's metadata.
const logCols = `ch.seq, ch.tbl, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
	c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms`

// ReadCommits selects the changes of the whole commits of partition ?1
// with ?2 < seq ≤ ?3 (afterSeq exclusive, throughSeq inclusive), in (seq,
// idx) order, stopping after the commit of the ?4-th change (LOG-2: the
// scalar sub-query finds that change's seq, the bound; NULL when fewer
// changes lie in the range, and the read then reaches ?3). Both walk the
// changes' primary key (partition, seq, idx) from ?2 and stop — the
// sub-query at the ?4-th entry, the read at the bound — and each change's
// commit is fetched by its primary key (partition, seq): the cost follows
// what is returned, never the size of the log (LOG-4). CROSS JOIN pins the
// join order. Run it in the snapshot the cursor is checked in (LOG-3).
// Columns: seq, tbl, row_id, op, scopes, vals, row_version, client_id,
// client_commit_id, actor_id, created_at_ms.
const ReadCommits = `SELECT ` + logCols + `
FROM _sync_changes AS ch
CROSS JOIN _sync_commits AS c ON c.partition = ch.partition AND c.seq = ch.seq
WHERE ch.partition = ?1 AND ch.seq > ?2 AND ch.seq <= coalesce((
	SELECT b.seq FROM _sync_changes AS b WHERE b.partition = ?1 AND b.seq > ?2 AND b.seq <= ?3
	ORDER BY b.seq, b.idx LIMIT 1 OFFSET ?4 - 1), ?3)
ORDER BY ch.seq, ch.idx`
