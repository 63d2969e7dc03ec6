package postgres

import "strings"

// The reactions capability (docs/contract.md RX-1…RX-10) in PostgreSQL.
//
// One table, _sync_reactions, keyed (partition, key) — the same layout as
// the SQLite dialect's. due_at_ms is the time a row can next be claimed:
// available_at_ms while pending, the lease expiry while leased, NULL once
// terminal (completed, dead_letter). Every statement is served by an
// index (the driver's tests pin the claim's plan with EXPLAIN):
//
//	_sync_reactions_due        (partition, due_at_ms, created_at_ms, key) WHERE due_at_ms IS NOT NULL
//	                           claims walk it in claim order (RX-2) and stop at the limit
//	_sync_reactions_exhausted  (partition, due_at_ms) WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts
//	                           the few rows a claim must dead-letter (RX-4)
//	_sync_reactions_due_all    (due_at_ms) WHERE due_at_ms IS NOT NULL
//	                           claims across partitions (RX-12): an idle store is one empty range
//	_sync_reactions_exhausted_all (due_at_ms) WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts
//	                           the rows such a claim must dead-letter (RX-4)
//	_sync_reactions_list       (partition, status, created_at_ms, key): listing per status (RX-8)
//	_sync_reactions_prune      (partition, status, updated_at_ms, key) WHERE due_at_ms IS NULL
//	                           terminal rows oldest first (RX-9)
//
// keys and types are text COLLATE "C", so ties order bytewise (RX-2, RX-8).

// reactionsPK is the primary key constraint of _sync_reactions: a unique
// violation on it is a duplicate reaction key (RX-1).
const reactionsPK = "_sync_reactions_pkey"

var reactionsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_reactions (
	partition ` + textC + ` NOT NULL,
	key ` + textC + ` NOT NULL,
	type ` + textC + ` NOT NULL,
	payload text NOT NULL,
	status text NOT NULL,
	attempts integer NOT NULL,
	max_attempts integer NOT NULL,
	source_commit_seq bigint NOT NULL,
	created_at_ms bigint NOT NULL,
	available_at_ms bigint NOT NULL,
	due_at_ms bigint,
	lease_owner text NOT NULL,
	lease_expires_at_ms bigint NOT NULL,
	failure_code text,
	failure_details text,
	failure_at_ms bigint,
	updated_at_ms bigint NOT NULL,
	CONSTRAINT ` + reactionsPK + ` PRIMARY KEY (partition, key))`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_due ON _sync_reactions (partition, due_at_ms, created_at_ms, key)
WHERE due_at_ms IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_exhausted ON _sync_reactions (partition, due_at_ms)
WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts`,
	// RX-12's store-wide indexes read only columns of format 2, so every
	// open creates them (IF NOT EXISTS) with no format change: a store
	// from before gets them on its next open (built once, inside the
	// open's transaction), and an older driver ignores them.
	`CREATE INDEX IF NOT EXISTS _sync_reactions_due_all ON _sync_reactions (due_at_ms) WHERE due_at_ms IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_exhausted_all ON _sync_reactions (due_at_ms)
WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_list ON _sync_reactions (partition, status, created_at_ms, key)`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_prune ON _sync_reactions (partition, status, updated_at_ms, key)
WHERE due_at_ms IS NULL`,
}

func init() { infraDDL = append(infraDDL, reactionsDDL...) }

// upgradeFormat2 takes a format-2 store to format 3: the reaction record
// as upstream keeps it (RX-1, RX-11) — version, source client id and
// client commit id (0 and ” for reactions enqueued before, which did not
// record them) and completion time (the time of the last change of a
// reaction already completed, which is when it was completed).
var upgradeFormat2 = []string{
	`ALTER TABLE _sync_reactions ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS source_client_id text NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS source_client_commit_id text NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS completed_at_ms bigint`,
	`UPDATE _sync_reactions SET completed_at_ms = updated_at_ms WHERE status = 'completed' AND completed_at_ms IS NULL`,
	`UPDATE _sync_meta SET value = '3' WHERE key = 'format' AND value = '2'`,
}

// upgradeFormat3 takes a format-3 store to format 4: _sync_commits gets
// tx_token (NULL for every commit written before), the mark a deferred
// Tx's first commit carries so that a Commit whose answer was lost before
// the transaction's id arrived is settled by its own commit, never by
// another store's of the same key at the same seq (settleByCommit, TX-10).
// A column without a default is added without rewriting the table.
var upgradeFormat3 = []string{
	`ALTER TABLE _sync_commits ADD COLUMN IF NOT EXISTS tx_token bigint`,
	`UPDATE _sync_meta SET value = '4' WHERE key = 'format' AND value = '3'`,
}

// upgradeFormat4 takes a format-4 store to format 5: HZ-3's index leads
// with an expression of the partition (the partition with the empty
// string appended), not the bare column. Any index on _sync_commits that
// leads with the bare partition column is one a window read may take to
// fetch a candidate's commit (sqlWindow's probe on partition and seq):
// with many small partitions the planner took the former
// (partition, created_at_ms, seq) and walked the partition's range with
// seq as a filter, per candidate — harmless for a small tenant, a walk of
// a large partition's whole log per candidate under a generic plan. Only
// sqlCommitSeqBefore names the expression, so only it can use the new
// index (TestPlansManyPartitions, TestPlansRetention, TestUpgradeFormat4).
//
// The index is built inside the upgrade's transaction, so writes to the
// log wait for the build once (docs/performance.md measures it). The old
// index is dropped after the transaction by dropRetiredIndexes.
var upgradeFormat4 = []string{
	`CREATE INDEX IF NOT EXISTS _sync_commits_before ON _sync_commits ((partition || ''), created_at_ms, seq)`,
	`UPDATE _sync_meta SET value = '5' WHERE key = 'format' AND value = '4'`,
}

// retiredIndexes are indexes of earlier formats that this format no
// longer creates or reads; dropRetiredIndexes removes them.
var retiredIndexes = []string{"_sync_commits_by_time"}

// reactionColumns is the select list of every statement returning
// reactions (scanReaction reads it in this order).
const reactionColumns = `key, type, payload, status, attempts, max_attempts, source_commit_seq, created_at_ms,
	available_at_ms, lease_owner, lease_expires_at_ms, failure_code, failure_details, failure_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id, completed_at_ms`

// keyAboveAll sorts after every reaction key in COLLATE "C" (bytewise):
// U+10FFFF is the greatest UTF-8 sequence and a key has at most 256 bytes.
// It is the list cursor's key when a listing starts from the newest.
var keyAboveAll = strings.Repeat("\U0010FFFF", 65)

// exhaustedCode is the failure code a claim records when it dead-letters
// a reaction whose attempts reached maxAttempts (RX-4).
const exhaustedCode = "reaction.attempts_exhausted"

const (
	// sqlEnqueueReactions inserts the reactions of parallel arrays ($3
	// keys, $4 types, $5 payloads, $6 max attempts, $7 createdAt) as
	// pending in partition $1 with source commit $2 (RX-1). One
	// statement: a duplicate key (in the batch or stored) inserts none.
	sqlEnqueueReactions = `INSERT INTO _sync_reactions (partition, key, type, payload, status, attempts, max_attempts,
	source_commit_seq, created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id)
SELECT $1, u.k, u.t, u.p, 'pending', 0, u.m, $2, u.c, u.c, u.c, '', 0, u.c, u.v, u.ci, u.cc
FROM unnest($3::text[], $4::text[], $5::text[], $6::integer[], $7::bigint[], $8::bigint[], $9::text[], $10::text[])
	AS u(k, t, p, m, c, v, ci, cc)`

	// sqlClaim is one statement (one round trip, autocommit): at $2 now,
	// it dead-letters the due rows of partition $1 of the types $3 (NULL
	// = every type) whose attempts reached the cap (RX-4), and leases to
	// owner $5 until $6 at most $4 other due rows chosen by due time,
	// createdAt, key (RX-2), attempts+1. Both sets are taken with FOR
	// UPDATE SKIP LOCKED, so concurrent claimers never wait for each
	// other and never lease the same row (RX-3): a row another claimer
	// changed after this statement's snapshot is re-checked against the
	// locking predicate and skipped. The outer statements find the locked
	// rows by primary key (= ANY(ARRAY(…)): an index probe per row, never
	// a hash join over the partition) and repeat their predicates.
	sqlClaim = `WITH exhausted AS (
	SELECT key FROM _sync_reactions
	WHERE partition = $1 AND due_at_ms <= $2 AND attempts >= max_attempts AND ($3::text[] IS NULL OR type = ANY($3::text[]))
	FOR UPDATE SKIP LOCKED
), dead AS (
	UPDATE _sync_reactions AS r SET status = 'dead_letter', due_at_ms = NULL,
		available_at_ms = $2, lease_owner = '', lease_expires_at_ms = 0,
		failure_code = '` + exhaustedCode + `', failure_details = NULL, failure_at_ms = $2, updated_at_ms = $2
	WHERE r.partition = $1 AND r.key = ANY(ARRAY(SELECT key FROM exhausted)) AND r.due_at_ms <= $2 AND r.attempts >= r.max_attempts
), picked AS (
	SELECT key FROM _sync_reactions
	WHERE partition = $1 AND due_at_ms <= $2 AND attempts < max_attempts AND ($3::text[] IS NULL OR type = ANY($3::text[]))
	ORDER BY due_at_ms, created_at_ms, key
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE _sync_reactions AS r SET status = 'leased', attempts = r.attempts + 1,
	lease_owner = $5, lease_expires_at_ms = $6, due_at_ms = $6, updated_at_ms = $2
WHERE r.partition = $1 AND r.key = ANY(ARRAY(SELECT key FROM picked)) AND r.due_at_ms <= $2 AND r.attempts < r.max_attempts
RETURNING r.key, r.type, r.payload, r.status, r.attempts, r.max_attempts, r.source_commit_seq, r.created_at_ms,
	r.available_at_ms, r.lease_owner, r.lease_expires_at_ms, r.failure_code, r.failure_details, r.failure_at_ms, r.updated_at_ms,
	r.version, r.source_client_id, r.source_client_commit_id, r.completed_at_ms`

	// sqlClaimAcross is sqlClaim over every partition ($6 NULL) or the
	// partitions $6 (text[]), one statement (RX-12): at $1 now, for types
	// $2 (NULL = every type), it dead-letters the due rows at their
	// attempts cap (RX-4) and leases to owner $4 until $5 at most $3 other
	// due rows, chosen fairly: each due row is ranked in its partition's
	// claim order (due time, createdAt, key) and rows are taken by rank,
	// then due time, createdAt, partition, key. A window function cannot
	// be locked, so the ranking (cand, 2×$3 candidates, read without
	// locks) is separate from the lock: picked locks candidates in rank
	// order with FOR UPDATE SKIP LOCKED, re-checking that each is still
	// due on its newest version (READ COMMITTED re-evaluation), so
	// concurrent claimers never lease the same row (RX-3); a claim racing
	// another may lease fewer rows than are due. The due rows are found
	// through _sync_reactions_due_all (an idle store: one empty range),
	// the locked rows by primary key.
	sqlClaimAcross = `WITH exhausted AS (
	SELECT partition, key FROM _sync_reactions
	WHERE due_at_ms <= $1 AND attempts >= max_attempts AND ($2::text[] IS NULL OR type = ANY($2::text[]))
		AND ($6::text[] IS NULL OR partition = ANY($6::text[]))
	FOR UPDATE SKIP LOCKED
), dead AS (
	UPDATE _sync_reactions AS r SET status = 'dead_letter', due_at_ms = NULL,
		available_at_ms = $1, lease_owner = '', lease_expires_at_ms = 0,
		failure_code = '` + exhaustedCode + `', failure_details = NULL, failure_at_ms = $1, updated_at_ms = $1
	FROM exhausted AS e
	WHERE r.partition = e.partition AND r.key = e.key AND r.due_at_ms <= $1 AND r.attempts >= r.max_attempts
), cand AS (
	SELECT partition, key, rk, due_at_ms, created_at_ms FROM (
		SELECT partition, key, due_at_ms, created_at_ms,
			row_number() OVER (PARTITION BY partition ORDER BY due_at_ms, created_at_ms, key) AS rk
		FROM _sync_reactions
		WHERE due_at_ms <= $1 AND attempts < max_attempts AND ($2::text[] IS NULL OR type = ANY($2::text[]))
			AND ($6::text[] IS NULL OR partition = ANY($6::text[]))
	) AS ranked
	ORDER BY rk, due_at_ms, created_at_ms, partition, key
	LIMIT 2 * $3::bigint
), picked AS (
	SELECT r.partition, r.key FROM _sync_reactions AS r JOIN cand AS c ON r.partition = c.partition AND r.key = c.key
	WHERE r.due_at_ms <= $1 AND r.attempts < r.max_attempts
	ORDER BY c.rk, c.due_at_ms, c.created_at_ms, c.partition, c.key
	LIMIT $3::bigint
	FOR UPDATE OF r SKIP LOCKED
)
UPDATE _sync_reactions AS r SET status = 'leased', attempts = r.attempts + 1,
	lease_owner = $4, lease_expires_at_ms = $5, due_at_ms = $5, updated_at_ms = $1
FROM picked AS k
WHERE r.partition = k.partition AND r.key = k.key AND r.due_at_ms <= $1 AND r.attempts < r.max_attempts
RETURNING r.partition, r.key, r.type, r.payload, r.status, r.attempts, r.max_attempts, r.source_commit_seq, r.created_at_ms,
	r.available_at_ms, r.lease_owner, r.lease_expires_at_ms, r.failure_code, r.failure_details, r.failure_at_ms, r.updated_at_ms,
	r.version, r.source_client_id, r.source_client_commit_id, r.completed_at_ms`

	// sqlCompleteReaction: $1 partition, $2 key, $3 owner, $4 now (RX-5).
	sqlCompleteReaction = `UPDATE _sync_reactions SET status = 'completed', due_at_ms = NULL, lease_owner = '',
	lease_expires_at_ms = 0, updated_at_ms = $4, completed_at_ms = $4
WHERE partition = $1 AND key = $2 AND status = 'leased' AND lease_owner = $3`

	// sqlExtendReactionLease: $1 partition, $2 key, $3 owner, $4 now, $5
	// new expiry (now + lease) (RX-5).
	sqlExtendReactionLease = `UPDATE _sync_reactions SET lease_expires_at_ms = $5, due_at_ms = $5, updated_at_ms = $4
WHERE partition = $1 AND key = $2 AND status = 'leased' AND lease_owner = $3`

	// sqlFailReactionRetry: $1 partition, $2 key, $3 owner, $4 now, $5
	// retryAt, $6 code, $7 details (NULL: none). Pending at retryAt (RX-6).
	sqlFailReactionRetry = `UPDATE _sync_reactions SET status = 'pending', available_at_ms = $5, due_at_ms = $5,
	lease_owner = '', lease_expires_at_ms = 0,
	failure_code = $6, failure_details = $7, failure_at_ms = $4, updated_at_ms = $4
WHERE partition = $1 AND key = $2 AND status = 'leased' AND lease_owner = $3`

	// sqlFailReactionDead: $1 partition, $2 key, $3 owner, $4 now, $5 code,
	// $6 details (NULL: none). Dead letter available at now (RX-6).
	sqlFailReactionDead = `UPDATE _sync_reactions SET status = 'dead_letter', available_at_ms = $4, due_at_ms = NULL,
	lease_owner = '', lease_expires_at_ms = 0,
	failure_code = $5, failure_details = $6, failure_at_ms = $4, updated_at_ms = $4
WHERE partition = $1 AND key = $2 AND status = 'leased' AND lease_owner = $3`

	// sqlRetryReaction: $1 partition, $2 key, $3 now. Only a dead letter
	// becomes pending, attempts 0, due now; its last failure is cleared
	// (RX-7, as upstream does).
	sqlRetryReaction = `UPDATE _sync_reactions SET status = 'pending', attempts = 0, available_at_ms = $3,
	due_at_ms = $3, updated_at_ms = $3, failure_code = NULL, failure_details = NULL, failure_at_ms = NULL,
	completed_at_ms = NULL
WHERE partition = $1 AND key = $2 AND status = 'dead_letter'`

	// sqlListReactions: $1 partition; $2…$5 include pending, leased,
	// completed, dead_letter; $6 types (NULL = all); $7 limit; $8 the
	// cursor's key and $9 its createdAt (keyAboveAll and MaxInt64 from the
	// newest). Newest first: created_at_ms desc, key desc (RX-8), after
	// the cursor. Each status is read from _sync_reactions_list, at most
	// $7 rows, starting at the cursor.
	sqlListReactions = `SELECT ` + reactionColumns + ` FROM (
	(` + listOne + `'pending' AND $2 ` + listTail + `)
	UNION ALL (` + listOne + `'leased' AND $3 ` + listTail + `)
	UNION ALL (` + listOne + `'completed' AND $4 ` + listTail + `)
	UNION ALL (` + listOne + `'dead_letter' AND $5 ` + listTail + `)
) AS l ORDER BY created_at_ms DESC, key DESC LIMIT $7`

	listOne  = `SELECT ` + reactionColumns + ` FROM _sync_reactions WHERE partition = $1 AND status = `
	listTail = `AND ($6::text[] IS NULL OR type = ANY($6::text[])) AND (created_at_ms, key) < ($9::bigint, $8::text)
	ORDER BY created_at_ms DESC, key DESC LIMIT $7`

	// sqlGetReaction: $1 partition, $2 key → the reaction, no row when
	// none (RX-11).
	sqlGetReaction = `SELECT ` + reactionColumns + ` FROM _sync_reactions WHERE partition = $1 AND key = $2`

	// sqlPruneReactions deletes at most $4 terminal rows of partition $1,
	// oldest updated_at_ms first: completed before $2, dead letters before
	// $3 (strict), returning the status of each deleted row (RX-9). The
	// outer WHERE repeats the predicate, so a row a concurrent retry
	// revived is re-checked on its new version and kept: of a prune and a
	// retry on one row exactly one wins.
	sqlPruneReactions = `DELETE FROM _sync_reactions WHERE partition = $1 AND key IN (
	SELECT key FROM (
		(SELECT key, updated_at_ms FROM _sync_reactions
			WHERE partition = $1 AND status = 'completed' AND due_at_ms IS NULL AND updated_at_ms < $2
			ORDER BY updated_at_ms, key LIMIT $4)
		UNION ALL
		(SELECT key, updated_at_ms FROM _sync_reactions
			WHERE partition = $1 AND status = 'dead_letter' AND due_at_ms IS NULL AND updated_at_ms < $3
			ORDER BY updated_at_ms, key LIMIT $4)
	) AS c ORDER BY updated_at_ms, key LIMIT $4)
	AND due_at_ms IS NULL
	AND ((status = 'completed' AND updated_at_ms < $2) OR (status = 'dead_letter' AND updated_at_ms < $3))
RETURNING status`
)
