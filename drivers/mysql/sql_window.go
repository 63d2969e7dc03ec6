package mysql

import "strings"

// windowCols are the columns every window candidate query returns.
const windowCols = `cs.seq, cs.idx, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
	c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms`

// windowRange is the candidate range of one scope value after a (seq,
// idx) cursor: p, tbl, variable, value, lastSeq, throughSeq, lastSeq,
// lastIdx. Served by _sync_change_scopes' primary key in (seq, idx)
// order.
const windowRange = `cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = ? AND cs.seq >= ? AND cs.seq <= ?
	AND (cs.seq > ? OR cs.idx > ?)`

// windowJoin joins candidates to their change and commit by primary key,
// in that order (STRAIGHT_JOIN pins it: candidates come only from the
// change-scope index, WIN-7).
const windowJoin = `
STRAIGHT_JOIN _sync_changes AS ch ON ch.p = cs.p AND ch.seq = cs.seq AND ch.idx = cs.idx
STRAIGHT_JOIN _sync_commits AS c ON c.p = cs.p AND c.seq = cs.seq`

// windowSingle: the candidates of one value, windowRange's arguments plus
// the round size.
const windowSingle = `SELECT ` + windowCols + `
FROM _sync_change_scopes AS cs` + windowJoin + `
WHERE ` + windowRange + `
ORDER BY cs.seq, cs.idx LIMIT ?`

// windowList returns the candidate query of n values: a UNION ALL of each
// value's range, each cut at the round size, merged and cut again.
// Arguments: windowRange's and the round size per value, then the round
// size.
func windowList(n int) string {
	one := `(SELECT cs.p, cs.seq, cs.idx FROM _sync_change_scopes AS cs WHERE ` + windowRange + ` ORDER BY cs.seq, cs.idx LIMIT ?)`
	parts := make([]string, n)
	for i := range parts {
		parts[i] = one
	}
	return `SELECT ` + windowCols + `
FROM (` + strings.Join(parts, " UNION ALL ") + `) AS cs` + windowJoin + `
ORDER BY cs.seq, cs.idx LIMIT ?`
}

// windowJSON is the candidate query of a long value list bound as one
// JSON array: each value is a range read of the change-scope index from
// the cursor; the candidates are merged by a sort. Arguments: the list,
// then windowRange's without the value, then the round size.
func (c *Conn) windowJSON() string {
	return `SELECT ` + windowCols + `
FROM ` + c.jsonValues() + `
STRAIGHT_JOIN _sync_change_scopes AS cs ON cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = ` + jsonAlias + `.` + jsonValueColumn + `
	AND cs.seq >= ? AND cs.seq <= ? AND (cs.seq > ? OR cs.idx > ?)` + windowJoin + `
ORDER BY cs.seq, cs.idx LIMIT ?`
}

// windowHead is the first part of every round's statement: one row
// (kind 0) with the partition's max_seq and horizon_seq (0 when it has
// none), read by the same statement, so in the same read view, as the
// candidates (kind 1) that follow it through UNION ALL. Arguments: the
// partition twice. A round is therefore one statement that always
// returns a row, and its cursor check costs no round trip (HZ-4, WIN-8).
const windowHead = `SELECT 0 AS kind, COALESCE((SELECT max_seq FROM _sync_partitions WHERE p = ?), 0) AS max_seq,
	COALESCE((SELECT horizon_seq FROM _sync_horizons WHERE p = ?), 0) AS horizon_seq,
	NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
UNION ALL
`

// withHead returns the statement of a round: windowHead, then the
// candidate query q (a SELECT of windowCols), which keeps its own ORDER
// BY and LIMIT inside the parentheses. UNION ALL promises no order across
// or within its parts, so the reader sorts the candidates itself.
func withHead(q string) string {
	return windowHead + "(SELECT 1, NULL, NULL, " + strings.TrimPrefix(q, "SELECT ") + ")"
}

// windowCounters reads windowHead's counters alone: max_seq, horizon_seq.
const windowCounters = `SELECT COALESCE((SELECT max_seq FROM _sync_partitions WHERE p = ?), 0),
	COALESCE((SELECT horizon_seq FROM _sync_horizons WHERE p = ?), 0)`

// windowSingleRound and windowListRounds[n] are the round statements of
// one value and of n ≤ maxInlineValues values, built once.
var (
	windowSingleRound = withHead(windowSingle)
	windowListRounds  = func() (out [maxInlineValues + 1]string) {
		for n := 2; n <= maxInlineValues; n++ {
			out[n] = withHead(windowList(n))
		}
		return out
	}()
)
