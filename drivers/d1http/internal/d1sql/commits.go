package d1sql

import "github.com/syncstore/syncstore/internal/sqlitesql"

// D1ReadCommits is sqlitesql.ReadCommits (LOG-1…LOG-4) with each change's
// row version and its commit's time as text, so values beyond 2^53
// survive the JSON transport (VAL-1).
var D1ReadCommits = D1Window(sqlitesql.ReadCommits)

// D1InsertChangesFrom and D1InsertChangeScopesFrom are
// sqlitesql.InsertChanges and InsertChangeScopes for a later part of a
// commit's changes: ?4 is the idx of the part's first change. A commit
// whose changes' JSON passes one bound value's budget (D1 caps a bound
// string at 2,000,000 bytes) is written in parts, in idx order.
const (
	D1InsertChangesFrom = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT ?1, ?2, c.key + ?4, c.value ->> 0, c.value ->> 1, c.value ->> 2, c.value -> 3, c.value ->> 4, c.value ->> 5
FROM json_each(?3) AS c`
	D1InsertChangeScopesFrom = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT ?1, c.value ->> 0, s.key, s.value, ?2, c.key + ?4
FROM json_each(?3) AS c, json_each(c.value -> 3) AS s`
)
