package mysql

import (
	"context"
	"database/sql"
	"strings"
)

// The reactions capability (docs/contract.md RX-1…RX-10) in MySQL's dialect.
//
// One table, _sync_reactions, keyed (p, k). due_at_ms is the time a row
// can next be claimed: available_at_ms while pending, the lease expiry
// while leased, NULL once terminal (completed, dead_letter). MySQL has no
// partial indexes, so two generated columns split it:
//
//	claim_due_ms    due_at_ms while attempts < max_attempts, else NULL: the rows a
//	                claim may lease (RX-2); index _sync_reactions_claim
//	                (p, claim_due_ms, created_at_ms, k) is walked in claim order
//	exhaust_due_ms  due_at_ms while attempts ≥ max_attempts, else NULL: the rows
//	                a claim must dead-letter (RX-4); index (p, exhaust_due_ms)
//
// two store-wide indexes serve claims across partitions (RX-12),
// _sync_reactions_claim_all (claim_due_ms) and _sync_reactions_exhausted_all
// (exhaust_due_ms): an idle store is two empty ranges whatever its number
// of partitions. A store from before them gets them on its next open
// (reactionIndexes, ensureReactionIndexes); they need no format change.
// Two more indexes serve listing (p, status, created_at_ms, k) and
// pruning (p, status, updated_at_ms, k). Every statement is served by an
// index (docs/performance.md: cost must not grow with the store). Strings are
// VARBINARY: keys and types order bytewise (RX-2).

// reactionsDDL creates the reactions table; idempotent, part of infraDDL
// (appended by this file's init), so every store has it from its first
// open. Key ≤ 256 bytes, type and owner ≤ 255 (V-2), failure code ≤ 128
// (V-8).
var reactionsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_reactions (
	p VARBINARY(255) NOT NULL,
	k VARBINARY(256) NOT NULL,
	type VARBINARY(255) NOT NULL,
	payload LONGBLOB NOT NULL,
	status VARBINARY(16) NOT NULL,
	attempts INT NOT NULL,
	max_attempts INT NOT NULL,
	source_commit_seq BIGINT NOT NULL,
	created_at_ms BIGINT NOT NULL,
	available_at_ms BIGINT NOT NULL,
	due_at_ms BIGINT NULL,
	lease_owner VARBINARY(255) NOT NULL,
	lease_expires_at_ms BIGINT NOT NULL,
	failure_code VARBINARY(255) NULL,
	failure_details LONGBLOB NULL,
	failure_at_ms BIGINT NULL,
	updated_at_ms BIGINT NOT NULL,
	version BIGINT NOT NULL DEFAULT 0,
	source_client_id VARBINARY(255) NOT NULL DEFAULT '',
	source_client_commit_id VARBINARY(255) NOT NULL DEFAULT '',
	completed_at_ms BIGINT NULL,
	claim_due_ms BIGINT AS (IF(attempts < max_attempts, due_at_ms, NULL)) STORED,
	exhaust_due_ms BIGINT AS (IF(attempts >= max_attempts, due_at_ms, NULL)) STORED,
	PRIMARY KEY (p, k),
	KEY _sync_reactions_claim (p, claim_due_ms, created_at_ms, k),
	KEY _sync_reactions_exhausted (p, exhaust_due_ms),
	KEY _sync_reactions_claim_all (claim_due_ms),
	KEY _sync_reactions_exhausted_all (exhaust_due_ms),
	KEY _sync_reactions_list (p, status, created_at_ms, k),
	KEY _sync_reactions_prune (p, status, updated_at_ms, k)
)` + tableOpts,
}

func init() { infraDDL = append(infraDDL, reactionsDDL...) }

// reactionColumns is the select list of every statement returning
// reactions, in scanReaction's order.
const reactionColumns = `k, type, payload, status, attempts, max_attempts, source_commit_seq, created_at_ms,
	available_at_ms, lease_owner, lease_expires_at_ms, failure_code, failure_details, failure_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id, completed_at_ms`

// upgradeFormat2 takes a format-2 store to format 3: the reaction record
// as upstream keeps it (RX-1, RX-11) — version, source client id and
// client commit id (0 and ” for reactions enqueued before, which did not
// record them) and completion time (the time of the last change of a
// reaction already completed, which is when it was completed). Each DDL
// step checks the catalog first, so an interrupted upgrade re-runs.
var upgradeFormat2 = []step{
	{sql: `ALTER TABLE _sync_reactions ADD COLUMN version BIGINT NOT NULL DEFAULT 0,
	ADD COLUMN source_client_id VARBINARY(255) NOT NULL DEFAULT '',
	ADD COLUMN source_client_commit_id VARBINARY(255) NOT NULL DEFAULT '',
	ADD COLUMN completed_at_ms BIGINT NULL`,
		done: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			ty, err := columnDataType(ctx, conn, "_sync_reactions", "completed_at_ms")
			return ty != "", err
		}},
	{sql: `UPDATE _sync_reactions SET completed_at_ms = updated_at_ms WHERE status = 'completed' AND completed_at_ms IS NULL`},
	{sql: `UPDATE _sync_meta SET v = '3' WHERE k = 'format' AND v = '2'`},
}

// keyAboveAll sorts after every reaction key (VARBINARY(256), bytewise):
// the list cursor's key when a listing starts from the newest.
var keyAboveAll = strings.Repeat("\xff", 257)

// exhaustedCode is the failure code a claim records when it dead-letters
// a reaction whose attempts reached maxAttempts (RX-4).
const exhaustedCode = "reaction.attempts_exhausted"

// enqueueRowArgs is the number of parameters of one enqueued reaction.
const enqueueRowArgs = 13

// enqueueBatchRows is the largest number of reactions one INSERT carries.
const enqueueBatchRows = 500

// enqueueReactions returns the INSERT of n pending reactions (RX-1),
// enqueueRowArgs parameters each: p, k, type, payload, max_attempts,
// source_commit_seq, then createdAt four times (created, available, due,
// updated). No ON DUPLICATE KEY: an existing key, stored or earlier in
// the same statement, fails with 1062 (CodeDuplicateReactionKey).
func enqueueReactions(n int) string {
	row := "(?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, '', 0, ?, ?, ?, ?)"
	var b strings.Builder
	b.WriteString(`INSERT INTO _sync_reactions (p, k, type, payload, status, attempts, max_attempts, source_commit_seq,
	created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms,
	version, source_client_id, source_client_commit_id) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// typesIn returns " AND type IN (?, …)" for n types, or "" for n = 0
// (every type).
func typesIn(n int) string {
	if n == 0 {
		return ""
	}
	return " AND type IN (" + qmarks(n) + ")"
}

// keysIn returns "k IN (?, …)" for n keys.
func keysIn(n int) string { return "k IN (" + qmarks(n) + ")" }

// claimSelectExhausted: p, now, types… → the keys of due rows at their
// attempts cap (RX-4), through _sync_reactions_exhausted, locked (rows
// another claim holds are skipped: it handles them).
func claimSelectExhausted(nTypes int) string {
	return `SELECT k FROM _sync_reactions FORCE INDEX (_sync_reactions_exhausted)
WHERE p = ? AND exhaust_due_ms <= ?` + typesIn(nTypes) + ` FOR UPDATE SKIP LOCKED`
}

// claimDeadLetter: now, code, now, now, p, keys… dead-letters locked exhausted rows
// (RX-4), re-checking their state.
func claimDeadLetter(nKeys int) string {
	return `UPDATE _sync_reactions SET status = 'dead_letter', due_at_ms = NULL, available_at_ms = ?,
	lease_owner = '', lease_expires_at_ms = 0, failure_code = ?, failure_details = NULL,
	failure_at_ms = ?, updated_at_ms = ?
WHERE p = ? AND attempts >= max_attempts AND due_at_ms IS NOT NULL AND ` + keysIn(nKeys)
}

// claimSelect: p, now, types…, limit → up to limit due rows below their
// attempts cap, in claim order (due time, createdAt, key: RX-2), walking
// _sync_reactions_claim and locking what it returns; rows locked by
// another claim are skipped, never waited for (RX-3).
func claimSelect(nTypes int) string {
	return `SELECT ` + reactionColumns + ` FROM _sync_reactions FORCE INDEX (_sync_reactions_claim)
WHERE p = ? AND claim_due_ms <= ?` + typesIn(nTypes) + `
ORDER BY claim_due_ms, created_at_ms, k LIMIT ? FOR UPDATE SKIP LOCKED`
}

// claimLease: owner, expiry, expiry, now, p, keys… leases the rows claimSelect
// locked: attempts+1, owner, expiry, due at expiry (RX-2).
func claimLease(nKeys int) string {
	return `UPDATE _sync_reactions SET status = 'leased', attempts = attempts + 1, lease_owner = ?,
	lease_expires_at_ms = ?, due_at_ms = ?, updated_at_ms = ?
WHERE p = ? AND ` + keysIn(nKeys)
}

// Owner operations: one UPDATE by primary key whose matched-row count
// (clientFoundRows) is the result: 1 = true, 0 = false (RX-5). Values
// that two columns share are bound twice: no statement relies on MySQL's
// left-to-right evaluation of assignments.
const (
	// completeReaction: now, p, key, owner.
	completeReaction = `UPDATE _sync_reactions SET status = 'completed', due_at_ms = NULL, lease_owner = '',
	lease_expires_at_ms = 0, updated_at_ms = ?, completed_at_ms = updated_at_ms
WHERE p = ? AND k = ? AND status = 'leased' AND lease_owner = ?`
	// extendReactionLease: expiry, expiry, now, p, key, owner.
	extendReactionLease = `UPDATE _sync_reactions SET lease_expires_at_ms = ?, due_at_ms = ?, updated_at_ms = ?
WHERE p = ? AND k = ? AND status = 'leased' AND lease_owner = ?`
	// failReactionRetry: retryAt, retryAt, code, details, now, now, p,
	// key, owner. Pending at retryAt; attempts unchanged (RX-6).
	failReactionRetry = `UPDATE _sync_reactions SET status = 'pending', available_at_ms = ?, due_at_ms = ?,
	lease_owner = '', lease_expires_at_ms = 0, failure_code = ?, failure_details = ?, failure_at_ms = ?,
	updated_at_ms = ?
WHERE p = ? AND k = ? AND status = 'leased' AND lease_owner = ?`
	// failReactionDead: now, code, details, now, now, p, key, owner. Dead
	// letter available at now (RX-6).
	failReactionDead = `UPDATE _sync_reactions SET status = 'dead_letter', available_at_ms = ?, due_at_ms = NULL,
	lease_owner = '', lease_expires_at_ms = 0, failure_code = ?, failure_details = ?,
	failure_at_ms = ?, updated_at_ms = ?
WHERE p = ? AND k = ? AND status = 'leased' AND lease_owner = ?`
	// retryReaction: now, now, now, p, key. Only a dead letter becomes
	// pending, attempts 0, due now; its last failure is cleared (RX-7).
	retryReaction = `UPDATE _sync_reactions SET status = 'pending', attempts = 0, available_at_ms = ?,
	due_at_ms = ?, updated_at_ms = ?, failure_code = NULL, failure_details = NULL, failure_at_ms = NULL,
	completed_at_ms = NULL
WHERE p = ? AND k = ? AND status = 'dead_letter'`
)

// listReactions returns the listing of the given statuses (RX-8): one
// branch per status, each walking _sync_reactions_list newest first and
// stopping at the limit, merged newest first (createdAt desc, key desc).
// Parameters per branch: p, status, types…, limit; then the limit.
func listReactions(statuses []string, nTypes int) string {
	parts := make([]string, len(statuses))
	for i := range statuses {
		parts[i] = `(SELECT ` + reactionColumns + ` FROM _sync_reactions FORCE INDEX (_sync_reactions_list)
	WHERE p = ? AND status = ?` + typesIn(nTypes) + ` AND (created_at_ms < ? OR (created_at_ms = ? AND k < ?))
	ORDER BY created_at_ms DESC, k DESC LIMIT ?)`
	}
	return strings.Join(parts, "\nUNION ALL\n") + "\nORDER BY created_at_ms DESC, k DESC LIMIT ?"
}

// pruneCandidates: p, completedBefore, limit, p, deadBefore, limit, limit
// → (key, status) of at most limit terminal rows, oldest updated_at_ms
// first (RX-9), each branch walking _sync_reactions_prune.
// getReaction: partition, key → the reaction, no row when none (RX-11).
const getReaction = `SELECT ` + reactionColumns + ` FROM _sync_reactions WHERE p = ? AND k = ?`

const pruneCandidates = `(SELECT k, status, updated_at_ms FROM _sync_reactions FORCE INDEX (_sync_reactions_prune)
	WHERE p = ? AND status = 'completed' AND updated_at_ms < ? ORDER BY updated_at_ms, k LIMIT ?)
UNION ALL
(SELECT k, status, updated_at_ms FROM _sync_reactions FORCE INDEX (_sync_reactions_prune)
	WHERE p = ? AND status = 'dead_letter' AND updated_at_ms < ? ORDER BY updated_at_ms, k LIMIT ?)
ORDER BY updated_at_ms, k LIMIT ?`

// pruneDelete: p, status, cutoff, keys… deletes candidates that are still
// of that status and older than the cutoff (a concurrent retry wins over
// a prune it committed before: RX-9).
func pruneDelete(nKeys int) string {
	return `DELETE FROM _sync_reactions WHERE p = ? AND status = ? AND updated_at_ms < ? AND ` + keysIn(nKeys)
}

// reactionIndexes are RX-12's store-wide indexes: a store created before
// them gets them on open (ensureReactionIndexes), each only if missing.
var reactionIndexes = []struct{ name, add string }{
	{"_sync_reactions_claim_all", `ALTER TABLE _sync_reactions ADD KEY _sync_reactions_claim_all (claim_due_ms)`},
	{"_sync_reactions_exhausted_all", `ALTER TABLE _sync_reactions ADD KEY _sync_reactions_exhausted_all (exhaust_due_ms)`},
}

// selectReactionIndex: index name → 1 when _sync_reactions has it.
const selectReactionIndex = `SELECT COUNT(*) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_sync_reactions' AND INDEX_NAME = ?`

// partsIn returns " AND p IN (?, …)" for n partitions, or "" for n = 0
// (every partition).
func partsIn(n int) string {
	if n == 0 {
		return ""
	}
	return " AND p IN (" + qmarks(n) + ")"
}

// claimDueCandidates: now, types…, parts…, now, types…, parts…, limit →
// (p, k, rank) of the due rows a claim across partitions handles (RX-12),
// read without locks: every due row at its attempts cap (rank 0, through
// _sync_reactions_exhausted_all: dead-letter them, RX-4), then at most
// limit due rows below it ranked fairly — each by its rank in its
// partition's claim order (due time, createdAt, key), taken by rank, due
// time, createdAt, partition, key (through _sync_reactions_claim_all). An
// idle store answers with no row after two empty index ranges.
func claimDueCandidates(nTypes, nParts int) string {
	return `(SELECT p, k, 0 AS rk FROM _sync_reactions FORCE INDEX (_sync_reactions_exhausted_all)
	WHERE exhaust_due_ms <= ?` + typesIn(nTypes) + partsIn(nParts) + `)
UNION ALL
(SELECT p, k, rk FROM (
	SELECT p, k, claim_due_ms, created_at_ms,
		ROW_NUMBER() OVER (PARTITION BY p ORDER BY claim_due_ms, created_at_ms, k) AS rk
	FROM _sync_reactions FORCE INDEX (_sync_reactions_claim_all)
	WHERE claim_due_ms <= ?` + typesIn(nTypes) + partsIn(nParts) + `) AS ranked
	ORDER BY rk, claim_due_ms, created_at_ms, p, k LIMIT ?)`
}

// pairsIn returns "((p = ? AND k IN (?, …)) OR …)" for the key counts of
// each partition, in order: the primary-key ranges of rows of several
// partitions.
func pairsIn(nKeys []int) string {
	var b strings.Builder
	b.WriteString("(")
	for i, n := range nKeys {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(p = ? AND " + keysIn(n) + ")")
	}
	b.WriteString(")")
	return b.String()
}

// claimDueDeadLetter: now, code, now, now, now, pairs… dead-letters the
// exhausted candidates of pairsIn (RX-4), re-checking on their newest
// version that they are still due and at their cap.
func claimDueDeadLetter(nKeys []int) string {
	return `UPDATE _sync_reactions SET status = 'dead_letter', due_at_ms = NULL, available_at_ms = ?,
	lease_owner = '', lease_expires_at_ms = 0, failure_code = ?, failure_details = NULL,
	failure_at_ms = ?, updated_at_ms = ?
WHERE exhaust_due_ms <= ? AND ` + pairsIn(nKeys)
}

// claimDueLock: now, pairs… → p then reactionColumns of the candidates of
// pairsIn still due below their cap on their newest version, locked
// through primary-key probes (FORCE INDEX: on a small table the planner
// took the due range instead, locking what it walked); rows another
// claim holds are skipped, never waited for (RX-3).
func claimDueLock(nKeys []int) string {
	return `SELECT p, ` + reactionColumns + ` FROM _sync_reactions FORCE INDEX (PRIMARY)
WHERE claim_due_ms <= ? AND ` + pairsIn(nKeys) + ` FOR UPDATE SKIP LOCKED`
}

// claimDueLease: owner, expiry, expiry, now, pairs… leases the rows
// claimDueLock locked and the claim chose: attempts+1, owner, expiry (RX-2).
func claimDueLease(nKeys []int) string {
	return `UPDATE _sync_reactions SET status = 'leased', attempts = attempts + 1, lease_owner = ?,
	lease_expires_at_ms = ?, due_at_ms = ?, updated_at_ms = ?
WHERE ` + pairsIn(nKeys)
}
