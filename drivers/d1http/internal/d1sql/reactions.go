package d1sql

import (
	"strings"

	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The reactions capability (RX-1…RX-10) for a JSON transport (drivers/d1http).
//
// The statements are reactions.go's: a claim is ClaimDeadLetterExhausted
// then D1ClaimLease in ONE batch, which D1 applies atomically and alone
// (a D1 database runs one request at a time), so two claims never lease
// the same row (RX-3). What differs:
//
//   - integers come back as decimal text (D1ReactionColumns), so times and
//     seqs beyond 2^53 survive the JSON transport (VAL-1);
//   - a claim whose answer was lost after it landed is recovered with
//     D1ClaimRecover (the rows it leased are the rows leased to the owner
//     by a claim at the same now and expiry);
//   - a prune is split in two deletes around a note row, so the count per
//     status of a prune whose answer was lost can still be reported.

// D1ReactionColumns is ReactionColumns with every integer as text, in the
// same order.
const D1ReactionColumns = `key, type, payload, status, CAST(attempts AS TEXT), CAST(max_attempts AS TEXT),
	CAST(source_commit_seq AS TEXT), CAST(created_at_ms AS TEXT), CAST(available_at_ms AS TEXT), lease_owner,
	CAST(lease_expires_at_ms AS TEXT), failure_code, failure_details, CAST(failure_at_ms AS TEXT), CAST(updated_at_ms AS TEXT),
	CAST(version AS TEXT), source_client_id, source_client_commit_id, CAST(completed_at_ms AS TEXT)`

// D1GetReaction is GetReaction selecting D1ReactionColumns (same parameters).
var D1GetReaction = mustReplaceOnce(sqlitesql.GetReaction, "SELECT "+sqlitesql.ReactionColumns+" FROM", "SELECT "+D1ReactionColumns+" FROM")

// D1ClaimLease is ClaimLease returning D1ReactionColumns (same parameters).
var D1ClaimLease = mustReplaceOnce(sqlitesql.ClaimLease, "RETURNING "+sqlitesql.ReactionColumns, "RETURNING "+D1ReactionColumns)

// D1ClaimLeaseAcross is ClaimLeaseAcross returning the partition and
// D1ReactionColumns (same parameters).
var D1ClaimLeaseAcross = mustReplaceOnce(sqlitesql.ClaimLeaseAcross, "RETURNING partition, "+sqlitesql.ReactionColumns,
	"RETURNING partition, "+D1ReactionColumns)

// D1ClaimRecoverAcross: ?1 the lease expiry of the claim (now + lease),
// ?2 owner, ?3 the claim's now, ?4 limit → the rows a ClaimLeaseAcross at
// that now and expiry leased to the owner (partition, D1ReactionColumns),
// from any partition. Served by _sync_reactions_due_all.
const D1ClaimRecoverAcross = `SELECT partition, ` + D1ReactionColumns + ` FROM _sync_reactions
WHERE due_at_ms = ?1 AND status = 'leased' AND lease_owner = ?2 AND updated_at_ms = ?3
ORDER BY partition, created_at_ms, key LIMIT ?4`

// D1ListReactions is ListReactions selecting D1ReactionColumns (same parameters).
var D1ListReactions = mustReplaceOnce(sqlitesql.ListReactions, "SELECT "+sqlitesql.ReactionColumns+" FROM (", "SELECT "+D1ReactionColumns+" FROM (")

const (
	// D1ClaimRecover: ?1 partition, ?2 the lease expiry of the claim (now
	// + lease), ?3 owner, ?4 the claim's now, ?5 limit → the rows leased to
	// the owner by a claim at that now and expiry (D1ReactionColumns),
	// createdAt then key. Served by _sync_reactions_due (due_at_ms = the
	// expiry of a leased row).
	D1ClaimRecover = `SELECT ` + D1ReactionColumns + ` FROM _sync_reactions
WHERE partition = ?1 AND due_at_ms = ?2 AND status = 'leased' AND lease_owner = ?3 AND updated_at_ms = ?4
ORDER BY created_at_ms, key LIMIT ?5`

	// D1PruneCompleted: ?1 partition, ?2 completed cutoff, ?3 dead-letter
	// cutoff, ?4 limit. Deletes the completed rows among the ?4 oldest
	// terminal rows (PruneReactions' selection, RX-9). The dead letters
	// among them are the oldest ?4 - (completed deleted) dead letters:
	// D1PruneDeadLetters deletes those.
	D1PruneCompleted = `DELETE FROM _sync_reactions WHERE partition = ?1 AND status = 'completed' AND key IN (
	` + sqlitesql.PruneCandidates + `)`

	// D1PruneNote: ?1 note id, ?2 now ms. Follows D1PruneCompleted: keeps
	// its changes() in a note row of _sync_d1_tokens (state 'note',
	// expired with the tokens), for D1PruneDeadLetters and for a prune
	// whose answer was lost.
	D1PruneNote = `INSERT INTO _sync_d1_tokens (token, state, at_ms, n) VALUES (?1, 'note', ?2, changes())`

	// D1PruneDeadLetters: ?1 partition, ?2 dead-letter cutoff, ?3 limit,
	// ?4 the note id of D1PruneNote. Deletes the oldest ?3 - (completed
	// deleted) dead letters older than the cutoff (strict).
	D1PruneDeadLetters = `DELETE FROM _sync_reactions WHERE partition = ?1 AND key IN (
	SELECT key FROM _sync_reactions
	WHERE partition = ?1 AND status = 'dead_letter' AND due_at_ms IS NULL AND updated_at_ms < ?2
	ORDER BY updated_at_ms, key
	LIMIT max(0, ?3 - coalesce((SELECT n FROM _sync_d1_tokens WHERE token = ?4), 0)))`

	// D1NoteCount: ?1 note id → n (the completed rows a prune deleted).
	D1NoteCount = `SELECT n FROM _sync_d1_tokens WHERE token = ?1 AND state = 'note'`
)

// mustReplaceOnce replaces the one occurrence of old in s, and panics (at
// init) when s does not hold exactly one: the shared statement changed
// shape and the D1 variant must follow.
func mustReplaceOnce(s, old, repl string) string {
	if strings.Count(s, old) != 1 {
		panic("d1sql: a D1 reaction statement no longer matches its SQLite original")
	}
	return strings.Replace(s, old, repl, 1)
}
