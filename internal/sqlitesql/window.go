package sqlitesql

// windowSelect is the shared head of the window candidate queries: the
// candidates come from the change-scope index only (WIN-7), joined to
// their change and commit by primary key. CROSS JOIN pins the join order
// (SQLite never reorders a CROSS JOIN), so the plan cannot drift to a scan
// of the log.
const windowSelect = `SELECT ` + windowCols + `
FROM _sync_change_scopes AS cs` + windowJoins + `
WHERE cs.partition = ?1 AND cs.tbl = ?2 AND cs.variable = ?3 AND `

// windowCols are the columns of a window candidate.
const windowCols = `cs.seq, cs.idx, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
	c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms`

// windowJoins joins a candidate to its change and commit by primary key.
const windowJoins = `
CROSS JOIN _sync_changes AS ch ON ch.partition = cs.partition AND ch.seq = cs.seq AND ch.idx = cs.idx
CROSS JOIN _sync_commits AS c ON c.partition = cs.partition AND c.seq = cs.seq`

// WindowSingle selects the window candidates for one value of one scope
// variable: ?1 partition, ?2 table, ?3 variable, ?4 value, ?5 afterSeq
// (exclusive), ?6 throughSeq (inclusive). It walks the change-scope index
// in (seq, idx) order, so no sort happens and the reader may stop early
// (WIN-4). Columns: seq, idx, row_id, op, scopes, vals, row_version,
// client_id, client_commit_id, actor_id, created_at_ms.
const WindowSingle = windowSelect + `cs.value = ?4 AND cs.seq > ?5 AND cs.seq <= ?6
ORDER BY cs.seq, cs.idx`

// WindowList is WindowSingle for a list of values: ?4 is a JSON array of
// strings, so one prepared statement serves lists of any length (V-6).
// The candidates of the listed values in the seq range are sorted by
// (seq, idx); the range of other values is never touched. Run it on a
// range bounded by WindowBound, so the sort holds at most about
// limitChanges candidates per value, never the whole range.
const WindowList = windowSelect + `cs.value IN (SELECT j.value FROM json_each(?4) AS j) AND cs.seq > ?5 AND cs.seq <= ?6
ORDER BY cs.seq, cs.idx`

// WindowBound bounds one round of a multi-value window read: the
// smallest, over the listed values, of the seq of each value's ?7-th
// candidate in (?5, ?6] — NULL when no value has that many. Each value
// walks its own change-scope index range in order and stops there, so a
// round costs O(values × limit) whatever the size of the log. Arguments
// as WindowList plus ?7 = limitChanges.
const WindowBound = `SELECT min((SELECT cs.seq FROM _sync_change_scopes AS cs
	WHERE cs.partition = ?1 AND cs.tbl = ?2 AND cs.variable = ?3 AND cs.value = v.value AND cs.seq > ?5 AND cs.seq <= ?6
	ORDER BY cs.seq, cs.idx LIMIT 1 OFFSET ?7 - 1)) AS bound
FROM json_each(?4) AS v`

// WindowRound is one round of a multi-value window read in a single
// statement, for an engine where every statement costs a request (D1):
// WindowBound's seq bound, computed once, as the first column of every
// row, then WindowList's columns for the candidates in (?5, bound], or
// (?5, ?6] when the bound is NULL. No row: no candidate in (?5, ?6].
// Arguments as WindowBound. CROSS JOIN keeps the bound first, so the
// change-scope index range is cut at it.
const WindowRound = `SELECT b.bound, ` + windowCols + `
FROM (` + WindowBound + `) AS b
CROSS JOIN _sync_change_scopes AS cs` + windowJoins + `
WHERE cs.partition = ?1 AND cs.tbl = ?2 AND cs.variable = ?3 AND cs.value IN (SELECT j.value FROM json_each(?4) AS j)
	AND cs.seq > ?5 AND cs.seq <= coalesce(b.bound, ?6)
ORDER BY cs.seq, cs.idx`
