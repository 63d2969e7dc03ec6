package sqlitesql

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rxorder"
)

// The reactions capability (docs/contract.md RX-1…RX-10) in the SQLite dialect.
//
// One table, _sync_reactions, keyed (partition, key). due_at_ms is the
// time a row can next be claimed: available_at_ms while pending, the lease
// expiry while leased, NULL once terminal (completed, dead_letter). Every
// statement is served by an index:
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
// A claim is two statements run in one write transaction (or one D1
// batch): ClaimDeadLetterExhausted, then ClaimLease. Neither needs the
// caller to look at rows in between. The table has a rowid (payloads may
// be large, so WITHOUT ROWID would pay for them in every index page).

// ReactionsDDL creates the reactions table and its indexes; idempotent.
// It is part of InfraDDL (appended by this file's init), so every store
// has the table from its first open.
var ReactionsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_reactions (
	partition TEXT NOT NULL,
	key TEXT NOT NULL,
	type TEXT NOT NULL,
	payload TEXT NOT NULL,
	status TEXT NOT NULL,
	attempts INTEGER NOT NULL,
	max_attempts INTEGER NOT NULL,
	source_commit_seq INTEGER NOT NULL,
	created_at_ms INTEGER NOT NULL,
	available_at_ms INTEGER NOT NULL,
	due_at_ms INTEGER,
	lease_owner TEXT NOT NULL,
	lease_expires_at_ms INTEGER NOT NULL,
	failure_code TEXT,
	failure_details TEXT,
	failure_at_ms INTEGER,
	updated_at_ms INTEGER NOT NULL,
	PRIMARY KEY (partition, key)
)`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_due ON _sync_reactions (partition, due_at_ms, created_at_ms, key)
WHERE due_at_ms IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_exhausted ON _sync_reactions (partition, due_at_ms)
WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts`,
	// The two store-wide indexes of RX-12 read only columns of format 2,
	// so they are created by every open (IF NOT EXISTS) with no format
	// change: a store from before gets them on its next open, and an
	// older driver opening the store ignores them.
	`CREATE INDEX IF NOT EXISTS _sync_reactions_due_all ON _sync_reactions (due_at_ms) WHERE due_at_ms IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_exhausted_all ON _sync_reactions (due_at_ms)
WHERE due_at_ms IS NOT NULL AND attempts >= max_attempts`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_list ON _sync_reactions (partition, status, created_at_ms, key)`,
	`CREATE INDEX IF NOT EXISTS _sync_reactions_prune ON _sync_reactions (partition, status, updated_at_ms, key)
WHERE due_at_ms IS NULL`,
}

// UpgradeFormat2 takes a format-2 store (InfraDDL's layout) to format 3,
// in one transaction: the reaction record as upstream keeps it (RX-1,
// RX-11) — version, source client id and client commit id (” and 0 for
// reactions enqueued before, which did not record them) and completion
// time (the time of the last change for a reaction already completed,
// which is when it was completed). The statements take no arguments.
var UpgradeFormat2 = append(ReactionsFormat3DDL,
	`UPDATE _sync_meta SET value = '3' WHERE key = '`+MetaFormat+`' AND value = '2'`)

// ReactionsFormat3DDL are UpgradeFormat2's statements on _sync_reactions.
var ReactionsFormat3DDL = []string{
	`ALTER TABLE _sync_reactions ADD COLUMN version INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE _sync_reactions ADD COLUMN source_client_id TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE _sync_reactions ADD COLUMN source_client_commit_id TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE _sync_reactions ADD COLUMN completed_at_ms INTEGER`,
	`UPDATE _sync_reactions SET completed_at_ms = updated_at_ms WHERE status = 'completed'`,
}

// ReactionColumns is the select list every statement returning reactions
// uses, in this order: key, type, payload, status, attempts, max_attempts,
// source_commit_seq, created_at_ms, available_at_ms, lease_owner,
// lease_expires_at_ms, failure_code (NULL: no failure), failure_details
// (NULL: none), failure_at_ms, updated_at_ms, version, source_client_id,
// source_client_commit_id, completed_at_ms (NULL: not completed).
const ReactionColumns = `key, type, payload, status, attempts, max_attempts, source_commit_seq, created_at_ms,
	available_at_ms, lease_owner, lease_expires_at_ms, failure_code, failure_details, failure_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id, completed_at_ms`

// ExhaustedCode is the failure code a claim records when it dead-letters a
// reaction whose attempts reached maxAttempts (RX-4).
const ExhaustedCode = "reaction.attempts_exhausted"

// typesIn3, typesIn4, typesIn6 are true when the JSON array parameter ?3,
// ?4 or ?6 is NULL (every type) or holds the row's type.
const (
	typesIn3 = `(?3 IS NULL OR type IN (SELECT value FROM json_each(?3)))`
	typesIn4 = `(?4 IS NULL OR type IN (SELECT value FROM json_each(?4)))`
	typesIn6 = `(?6 IS NULL OR type IN (SELECT value FROM json_each(?6)))`
)

// Reaction statements. Owner operations report success by their changed
// row count (1 = true, 0 = false: RX-5).
const (
	// EnqueueReactions inserts every reaction of the JSON array ?3 (see
	// EncodeReactionBatch) as pending in partition ?1 with source commit
	// ?2 (RX-1): attempts 0, available and due at createdAt. One
	// statement, so a duplicate key (PRIMARY KEY violation, within the
	// batch or with a stored row) inserts none of them.
	EnqueueReactions = `INSERT INTO _sync_reactions (partition, key, type, payload, status, attempts, max_attempts,
	source_commit_seq, created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id)
SELECT ?1, j.value ->> 'k', j.value ->> 't', j.value ->> 'p', 'pending', 0, j.value ->> 'm',
	?2, j.value ->> 'c', j.value ->> 'c', j.value ->> 'c', '', 0, j.value ->> 'c',
	CAST(j.value ->> 'v' AS INTEGER), j.value ->> 'ci', j.value ->> 'cc'
FROM json_each(?3) AS j`

	// ClaimDeadLetterExhausted dead-letters, at ?2 now, every due row of
	// partition ?1 of the types in the JSON array ?3 (NULL = every type)
	// whose attempts reached max_attempts (RX-4), recording the failure
	// code ?4 (ExhaustedCode). Such rows are found through
	// _sync_reactions_exhausted: the cost is the number of rows moved, each
	// moved once. Run it before ClaimLease in the same transaction.
	ClaimDeadLetterExhausted = `UPDATE _sync_reactions SET status = 'dead_letter', due_at_ms = NULL,
	available_at_ms = ?2, lease_owner = '', lease_expires_at_ms = 0,
	failure_code = ?4, failure_details = NULL, failure_at_ms = ?2, updated_at_ms = ?2
WHERE partition = ?1 AND due_at_ms <= ?2 AND attempts >= max_attempts AND ` + typesIn3

	// ClaimLease leases, for owner ?5 until ?6 (now + lease), at most ?3
	// rows of partition ?1 due at ?2 now (due_at_ms ≤ now: pending with
	// availableAt ≤ now, leased with expiry ≤ now, RX-2), of the types in
	// the JSON array ?4 (NULL = every type), chosen by due time, createdAt,
	// key; attempts+1. It returns the leased rows (ReactionColumns) in no
	// particular order: sort them by createdAt, then key. Rows at their
	// attempts cap are skipped (ClaimDeadLetterExhausted handles them).
	ClaimLease = `UPDATE _sync_reactions SET status = 'leased', attempts = attempts + 1,
	lease_owner = ?5, lease_expires_at_ms = ?6, due_at_ms = ?6, updated_at_ms = ?2
WHERE partition = ?1 AND key IN (SELECT key FROM _sync_reactions
	WHERE partition = ?1 AND due_at_ms <= ?2 AND attempts < max_attempts AND ` + typesIn4 + `
	ORDER BY due_at_ms, created_at_ms, key LIMIT ?3)
RETURNING ` + ReactionColumns

	// ClaimDeadLetterExhaustedAcross is ClaimDeadLetterExhausted over
	// every partition (?4 NULL) or those of the JSON array ?4 (RX-12): ?1
	// now, ?2 types (JSON array, NULL = every type), ?3 ExhaustedCode.
	// Served by _sync_reactions_exhausted_all.
	ClaimDeadLetterExhaustedAcross = `UPDATE _sync_reactions SET status = 'dead_letter', due_at_ms = NULL,
	available_at_ms = ?1, lease_owner = '', lease_expires_at_ms = 0,
	failure_code = ?3, failure_details = NULL, failure_at_ms = ?1, updated_at_ms = ?1
WHERE due_at_ms <= ?1 AND attempts >= max_attempts AND (?2 IS NULL OR type IN (SELECT value FROM json_each(?2)))
	AND (?4 IS NULL OR partition IN (SELECT value FROM json_each(?4)))`

	// ClaimLeaseAcross leases, for owner ?4 until ?5 (now + lease), at
	// most ?2 rows due at ?1 now of the types in the JSON array ?3 (NULL
	// = every type), of every partition (?6 NULL) or those of the JSON
	// array ?6, chosen fairly (RX-12): each due row is ranked in its
	// partition's claim order (due time, createdAt, key) and rows are
	// taken by rank, then due time, createdAt, partition, key. attempts+1.
	// It returns partition then ReactionColumns, in no particular order.
	// Rows at their attempts cap are skipped (run
	// ClaimDeadLetterExhaustedAcross first). The due rows are found
	// through _sync_reactions_due_all (INDEXED BY: left to itself the
	// planner walks _sync_reactions_due whole for the window's order, rows
	// due later included): an idle store costs one empty range whatever
	// its number of partitions; a backlog costs a ranking of the due rows.
	ClaimLeaseAcross = `UPDATE _sync_reactions SET status = 'leased', attempts = attempts + 1,
	lease_owner = ?4, lease_expires_at_ms = ?5, due_at_ms = ?5, updated_at_ms = ?1
WHERE rowid IN (SELECT rid FROM (
	SELECT rowid AS rid, partition AS p, key AS k, due_at_ms AS d, created_at_ms AS c,
		row_number() OVER (PARTITION BY partition ORDER BY due_at_ms, created_at_ms, key) AS rk
	FROM _sync_reactions INDEXED BY _sync_reactions_due_all
	WHERE due_at_ms <= ?1 AND attempts < max_attempts AND (?3 IS NULL OR type IN (SELECT value FROM json_each(?3)))
		AND (?6 IS NULL OR partition IN (SELECT value FROM json_each(?6))))
	ORDER BY rk, d, c, p, k LIMIT ?2)
RETURNING partition, ` + ReactionColumns

	// CompleteReaction: ?1 partition, ?2 key, ?3 owner, ?4 now (RX-5).
	CompleteReaction = `UPDATE _sync_reactions SET status = 'completed', due_at_ms = NULL, lease_owner = '',
	lease_expires_at_ms = 0, updated_at_ms = ?4, completed_at_ms = ?4
WHERE partition = ?1 AND key = ?2 AND status = 'leased' AND lease_owner = ?3`

	// ExtendReactionLease: ?1 partition, ?2 key, ?3 owner, ?4 now, ?5 new
	// expiry (now + lease) (RX-5).
	ExtendReactionLease = `UPDATE _sync_reactions SET lease_expires_at_ms = ?5, due_at_ms = ?5, updated_at_ms = ?4
WHERE partition = ?1 AND key = ?2 AND status = 'leased' AND lease_owner = ?3`

	// FailReactionRetry: ?1 partition, ?2 key, ?3 owner, ?4 now, ?5 retryAt,
	// ?6 code, ?7 details (NULL: none). Pending at retryAt (RX-6).
	FailReactionRetry = `UPDATE _sync_reactions SET status = 'pending', available_at_ms = ?5, due_at_ms = ?5,
	lease_owner = '', lease_expires_at_ms = 0,
	failure_code = ?6, failure_details = ?7, failure_at_ms = ?4, updated_at_ms = ?4
WHERE partition = ?1 AND key = ?2 AND status = 'leased' AND lease_owner = ?3`

	// FailReactionDead: ?1 partition, ?2 key, ?3 owner, ?4 now, ?5 code,
	// ?6 details (NULL: none). Dead letter available at now (RX-6).
	FailReactionDead = `UPDATE _sync_reactions SET status = 'dead_letter', available_at_ms = ?4, due_at_ms = NULL,
	lease_owner = '', lease_expires_at_ms = 0,
	failure_code = ?5, failure_details = ?6, failure_at_ms = ?4, updated_at_ms = ?4
WHERE partition = ?1 AND key = ?2 AND status = 'leased' AND lease_owner = ?3`

	// RetryReaction: ?1 partition, ?2 key, ?3 now. Only a dead letter
	// becomes pending, attempts 0, due now; its last failure is cleared
	// (RX-7, as upstream does).
	RetryReaction = `UPDATE _sync_reactions SET status = 'pending', attempts = 0, available_at_ms = ?3,
	due_at_ms = ?3, updated_at_ms = ?3, failure_code = NULL, failure_details = NULL, failure_at_ms = NULL,
	completed_at_ms = NULL
WHERE partition = ?1 AND key = ?2 AND status = 'dead_letter'`

	// GetReaction: ?1 partition, ?2 key → the reaction (ReactionColumns),
	// no row when none (RX-11).
	GetReaction = `SELECT ` + ReactionColumns + ` FROM _sync_reactions WHERE partition = ?1 AND key = ?2`

	// ListReactions: ?1 partition; ?2…?5 include pending, leased,
	// completed, dead_letter (1/0); ?6 JSON array of types (NULL = all);
	// ?7 limit; ?8 the cursor's key and ?9 its createdAt (both NULL = from
	// the newest: ListCursor). Newest first: created_at_ms desc, key desc (RX-8), after
	// the cursor. Each status is read from _sync_reactions_list, at most
	// ?7 rows.
	ListReactions = `SELECT ` + ReactionColumns + ` FROM (
	SELECT * FROM (` + listOne + `'pending' AND ?2 ` + listTail + `)
	UNION ALL SELECT * FROM (` + listOne + `'leased' AND ?3 ` + listTail + `)
	UNION ALL SELECT * FROM (` + listOne + `'completed' AND ?4 ` + listTail + `)
	UNION ALL SELECT * FROM (` + listOne + `'dead_letter' AND ?5 ` + listTail + `)
) ORDER BY created_at_ms DESC, key DESC LIMIT ?7`

	listOne  = `SELECT ` + ReactionColumns + ` FROM _sync_reactions WHERE partition = ?1 AND status = `
	listTail = `AND ` + typesIn6 + `
	AND (created_at_ms, key) < (coalesce(?9, 9223372036854775807), coalesce(?8, x''))
	ORDER BY created_at_ms DESC, key DESC LIMIT ?7`

	// PruneReactions deletes at most ?4 terminal rows of partition ?1,
	// oldest updated_at_ms first: completed before ?2, dead letters before
	// ?3 (strict), and returns the status of each deleted row (RX-9).
	// Pending and leased rows (due_at_ms NOT NULL) are never candidates.
	PruneReactions = `DELETE FROM _sync_reactions WHERE partition = ?1 AND key IN (
	` + PruneCandidates + `)
RETURNING status`

	// PruneCandidates selects the keys of PruneReactions' candidates: at
	// most ?4 terminal rows of partition ?1, oldest updated_at_ms first,
	// completed before ?2 and dead letters before ?3 (strict) (RX-9).
	PruneCandidates = `SELECT key FROM (
		SELECT * FROM (SELECT key, updated_at_ms FROM _sync_reactions
			WHERE partition = ?1 AND status = 'completed' AND due_at_ms IS NULL AND updated_at_ms < ?2
			ORDER BY updated_at_ms, key LIMIT ?4)
		UNION ALL
		SELECT * FROM (SELECT key, updated_at_ms FROM _sync_reactions
			WHERE partition = ?1 AND status = 'dead_letter' AND due_at_ms IS NULL AND updated_at_ms < ?3
			ORDER BY updated_at_ms, key LIMIT ?4)
	) ORDER BY updated_at_ms, key LIMIT ?4`
)

// ReactionStatements lists every reaction statement, so a driver can
// prepare them once per connection. This file's init adds them to
// InfraStatements, and ListReactions (the one read) to ReadStatements.
var ReactionStatements = []string{
	EnqueueReactions, ClaimDeadLetterExhausted, ClaimLease, CompleteReaction, ExtendReactionLease,
	FailReactionRetry, FailReactionDead, RetryReaction, GetReaction, ListReactions, PruneReactions,
}

func init() {
	InfraDDL = append(InfraDDL, ReactionsDDL...)
	InfraStatements = append(InfraStatements, ReactionStatements...)
	ReadStatements = append(ReadStatements, ListReactions, GetReaction)
}

type reactionWire struct {
	Key                  string `json:"k"`
	Type                 string `json:"t"`
	Payload              string `json:"p"`
	MaxAttempts          int    `json:"m"`
	CreatedAtMs          int64  `json:"c"`
	Version              string `json:"v"` // decimal: exact beyond 2^53 through json_each
	SourceClientID       string `json:"ci"`
	SourceClientCommitID string `json:"cc"`
}

// EncodeReactionBatch encodes reactions as the JSON array
// EnqueueReactions expands: [{"k": key, "t": type, "p": payload text, "m":
// max attempts, "c": createdAt}, …]. Strings are valid UTF-8 (sync checked
// V-2 and the payload), so they decode byte-for-byte.
func EncodeReactionBatch(rs []driver.ReactionInput) (string, error) {
	w := make([]reactionWire, len(rs))
	for i, r := range rs {
		w[i] = reactionWire{Key: r.Key, Type: r.Type, Payload: string(r.Payload), MaxAttempts: r.MaxAttempts, CreatedAtMs: r.CreatedAtMs,
			Version: strconv.FormatInt(r.Version, 10), SourceClientID: r.SourceClientID, SourceClientCommitID: r.SourceClientCommitID}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return "", driver.Wrap(driver.CodeInternal, err, "encode reactions to enqueue")
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// EncodeTypes encodes a claim's or list's type filter for the JSON-array
// parameters of ClaimLease, ClaimDeadLetterExhausted and ListReactions:
// nil (SQL NULL, every type) when types is empty.
func EncodeTypes(types []string) (any, error) {
	if len(types) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(types)
	if err != nil {
		return nil, driver.Wrap(driver.CodeInternal, err, "encode reaction types")
	}
	return string(b), nil
}

// ListArgs returns ListReactions' ?1…?9 for q in partition: the status
// flags as 1/0 (rxorder.StatusFlags), the types' JSON array (EncodeTypes),
// the limit, and the cursor's key and createdAt (int64), both nil (SQL
// NULL: from the newest, a bound above every row — a BLOB sorts after
// every TEXT key) without a cursor.
func ListArgs(partition string, q driver.ReactionListQuery) ([]any, error) {
	types, err := EncodeTypes(q.Types)
	if err != nil {
		return nil, err
	}
	args := []any{partition}
	for _, on := range rxorder.StatusFlags(q.Statuses) {
		flag := int64(0)
		if on {
			flag = 1
		}
		args = append(args, flag)
	}
	args = append(args, types, q.Limit)
	if q.AfterKey == "" {
		return append(args, nil, nil), nil
	}
	return append(args, q.AfterKey, q.AfterCreatedAtMs), nil
}

// Format2InsertReaction writes a reaction as a format-2 store holds it
// (upgrade tests): ?1 partition, ?2 key, ?3 type, ?4 payload, ?5 status,
// ?6 attempts, ?7 max attempts, ?8 source commit seq, ?9 createdAt, ?10
// availableAt, ?11 due (NULL once terminal), ?12 updatedAt.
const Format2InsertReaction = `INSERT INTO _sync_reactions (partition, key, type, payload, status, attempts, max_attempts,
	source_commit_seq, created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, '', 0, ?12)`
