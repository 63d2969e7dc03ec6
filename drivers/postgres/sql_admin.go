package postgres

func init() {
	infraDDL = append(infraDDL,
		`CREATE INDEX IF NOT EXISTS _sync_clients_by_time ON _sync_clients (partition, updated_at_ms, client_id)`)
}

const (
	// sqlAdminListClients: $1 partition, $2 limit; the first page, newest
	// first, a backward walk of _sync_clients_by_time (ADM-2).
	sqlAdminListClients = `SELECT client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions
FROM _sync_clients WHERE partition = $1 ORDER BY updated_at_ms DESC, client_id DESC LIMIT $2`
	// sqlAdminListClientsAfter: $1 partition, $2 updated_at_ms and $3
	// client id of the exclusive position, $4 limit; the walk starts just
	// below the position (a row comparison is an index condition).
	sqlAdminListClientsAfter = `SELECT client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions
FROM _sync_clients WHERE partition = $1 AND (updated_at_ms, client_id) < ($2, $3)
ORDER BY updated_at_ms DESC, client_id DESC LIMIT $4`
	// sqlAdminListCommits: $1 partition, $2 beforeSeq (exclusive), $3
	// limit; newest first. The commits' primary key serves the walk, the
	// changes' primary key the count.
	sqlAdminListCommits = `SELECT c.seq, c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms,
	(SELECT count(*) FROM _sync_changes AS ch WHERE ch.partition = c.partition AND ch.seq = c.seq)
FROM _sync_commits AS c WHERE c.partition = $1 AND c.seq < $2 ORDER BY c.seq DESC LIMIT $3`
	// sqlAdminScopeActivity: $1 partition, $2 table, $3 variable, $4
	// values (text[]), $5 afterSeq (exclusive), $6 throughSeq → seq and
	// scopes of each change of the table whose variable has one of the
	// values, from the change-scope index; the change by primary key.
	// Each value's range is walked on its own, as sqlWindow walks them
	// (a LATERAL fenced by OFFSET 0: the value stays in the index
	// condition without statistics); $4 holds distinct values.
	sqlAdminScopeActivity = `SELECT cs.seq, ch.scopes FROM unnest($4::text[]) AS v(value)
CROSS JOIN LATERAL (SELECT x.partition, x.seq, x.idx FROM _sync_change_scopes AS x
	WHERE x.partition = $1 AND x.tbl = $2 AND x.variable = $3 AND x.value = v.value
		AND x.seq > $5 AND x.seq <= $6
	OFFSET 0) AS cs
CROSS JOIN LATERAL (SELECT c.scopes FROM _sync_changes AS c
	WHERE c.partition = cs.partition AND c.seq = cs.seq AND c.idx = cs.idx LIMIT 1) AS ch`
)
