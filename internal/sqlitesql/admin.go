package sqlitesql

// The admin capability (ADM-1) in the SQLite dialect: read-only console
// views over the infrastructure tables. Every listing walks an index in
// its order and stops at its limit.

// AdminDDL adds the index that lists client records newest first. This
// file's init appends it to InfraDDL, and the statements below to
// InfraStatements and ReadStatements (they only read).
var AdminDDL = []string{
	`CREATE INDEX IF NOT EXISTS _sync_clients_by_time ON _sync_clients (partition, updated_at_ms, client_id)`,
}

func init() {
	InfraDDL = append(InfraDDL, AdminDDL...)
	InfraStatements = append(InfraStatements, AdminListClients, AdminListClientsAfter, AdminListCommits, AdminScopeActivity)
	ReadStatements = append(ReadStatements, AdminListClients, AdminListClientsAfter, AdminListCommits, AdminScopeActivity)
}

// The parts of the client-record listings (ADM-2): the selected columns,
// then the text after them of the first page (AdminClientsFirst) and of a
// next page (AdminClientsAfter). drivers/d1http selects the same rows
// with its own column list.
const (
	adminClientCols   = `client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions`
	AdminClientsFirst = `
FROM _sync_clients WHERE partition = ?1 ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?2`
	AdminClientsAfter = `
FROM _sync_clients WHERE partition = ?1 AND (updated_at_ms, client_id) < (?2, ?3)
ORDER BY updated_at_ms DESC, client_id DESC LIMIT ?4`
)

// Admin statements.
const (
	// AdminListClients: ?1 partition, ?2 limit → client_id, actor_id,
	// wire_version, cursor, updated_at_ms, subscriptions; the first page,
	// newest first (updated_at_ms desc, client id desc), served by a
	// backward walk of _sync_clients_by_time that stops at the limit
	// (ADM-2).
	AdminListClients = `SELECT ` + adminClientCols + AdminClientsFirst
	// AdminListClientsAfter is AdminListClients after the exclusive
	// position (?2 updated_at_ms, ?3 client id), ?4 limit: the walk starts
	// just below the position, so a page costs its length (ADM-2).
	AdminListClientsAfter = `SELECT ` + adminClientCols + AdminClientsAfter
	// AdminListCommits: ?1 partition, ?2 beforeSeq (exclusive; pass
	// math.MaxInt64 for "from the newest"), ?3 limit → seq, client_id,
	// client_commit_id, actor_id, created_at_ms, change count; newest first.
	// The commits' primary key serves the walk, the changes' primary key
	// the count.
	AdminListCommits = `SELECT c.seq, c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms,
	(SELECT count(*) FROM _sync_changes AS ch WHERE ch.partition = c.partition AND ch.seq = c.seq)
FROM _sync_commits AS c WHERE c.partition = ?1 AND c.seq < ?2 ORDER BY c.seq DESC LIMIT ?3`
	// AdminScopeActivity: ?1 partition, ?2 table, ?3 variable, ?4 a JSON
	// array of values (JSONList), ?5 afterSeq (exclusive), ?6 throughSeq →
	// seq and the scopes JSON of each change of the table whose scope
	// variable has one of the values, from the change-scope index (the
	// caller checks the filter's other keys against the scopes). CROSS JOIN
	// pins the join order, so the plan never drifts to a walk of the log.
	AdminScopeActivity = `SELECT cs.seq, ch.scopes FROM _sync_change_scopes AS cs
CROSS JOIN _sync_changes AS ch ON ch.partition = cs.partition AND ch.seq = cs.seq AND ch.idx = cs.idx
WHERE cs.partition = ?1 AND cs.tbl = ?2 AND cs.variable = ?3 AND cs.value IN (SELECT value FROM json_each(?4))
	AND cs.seq > ?5 AND cs.seq <= ?6`
)
