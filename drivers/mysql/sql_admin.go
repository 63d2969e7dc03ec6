package mysql

// Admin statements.
const (
	// adminListClients: p, limit → the first page of client records,
	// newest first (updated_at_ms desc, client id desc), a backward walk of
	// _sync_clients_by_time that stops at the limit (ADM-2).
	adminListClients = `SELECT client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions
FROM _sync_clients FORCE INDEX (_sync_clients_by_time) WHERE p = ? ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?`
	// adminListClientsAfter: p, updated_at_ms, updated_at_ms, client id
	// (the exclusive position), limit → the page after the position. The
	// position is spelled as an OR of two ranges, which MySQL and MariaDB
	// both turn into a range read of the index (MariaDB does not for a
	// row comparison), so the walk starts just below it (ADM-2).
	adminListClientsAfter = `SELECT client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions
FROM _sync_clients FORCE INDEX (_sync_clients_by_time)
WHERE p = ? AND (updated_at_ms < ? OR (updated_at_ms = ? AND client_id < ?))
ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?`
	// adminListCommits: p, beforeSeq (exclusive), limit → seq, client_id,
	// client_commit_id, actor_id, created_at_ms, change count; newest
	// first. The commits' primary key serves the walk, the changes'
	// primary key the count.
	adminListCommits = `SELECT c.seq, c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms,
	(SELECT COUNT(*) FROM _sync_changes AS ch WHERE ch.p = c.p AND ch.seq = c.seq)
FROM _sync_commits AS c WHERE c.p = ? AND c.seq < ? ORDER BY c.seq DESC LIMIT ?`
)

// adminScopeActivity: a JSON array of values, p, tbl, variable, afterSeq
// (exclusive), throughSeq → seq and scopes JSON of each change of the
// table whose scope variable has one of the values: range reads of the
// change-scope index, joined to the changes by primary key (STRAIGHT_JOIN
// pins the order, never a walk of the log).
func (c *Conn) adminScopeActivity() string {
	return `SELECT cs.seq, ch.scopes FROM ` + c.jsonValues() + `
STRAIGHT_JOIN _sync_change_scopes AS cs ON cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = ` + jsonAlias + `.` + jsonValueColumn + `
	AND cs.seq > ? AND cs.seq <= ?
STRAIGHT_JOIN _sync_changes AS ch ON ch.p = cs.p AND ch.seq = cs.seq AND ch.idx = cs.idx`
}
