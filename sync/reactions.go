package sync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// This file is typed access to the reactions capability (docs/contract.md
// RX-1…RX-10): a durable outbox written in the push transaction, claimed
// by workers with a lease. Every method validates its input (group V)
// before the driver sees it, and returns CodeUnsupported with Capability
// "reactions" when the driver lacks the capability (ERR-2). Times are
// epoch milliseconds taken from the arguments: the store never reads a
// clock of its own. Worker (worker.go) is the runner built on these.

// MaxFailureDetailsBytes bounds FailRequest.Details (RX-6).
const MaxFailureDetailsBytes = 8192

// idLeaseOwner is the owner of a lease: an id under V-2.
var idLeaseOwner = idKind{"lease owner", MaxIDBytes, "V-2"}

// reactions returns the driver's reactions Conn half, or the ERR-2 error.
func (s *Store) reactions(op string) (driver.ReactionsConn, error) {
	rc, ok := s.conn.(driver.ReactionsConn)
	if !ok {
		return nil, s.unsupported(op, CapReactions)
	}
	return rc, nil
}

// EnqueueReactions writes reactions as pending rows of the Tx's partition,
// tied to the commit sourceCommitSeq (≥ 0; normally the seq AppendCommit
// returned in this Tx): attempts 0, available at CreatedAtMs. They land
// with the Tx's Commit and vanish with its Rollback (RX-1); the record
// keeps each input's Version, SourceClientID and SourceClientCommitID as
// given. Each input: Key 1…256 bytes and Type 1…255 bytes of valid UTF-8
// without NUL (V-2), MaxAttempts ≥ 1, Payload a valid JSON document,
// Version ≥ 0, SourceClientID and SourceClientCommitID "" or V-2 → else
// CodeInvalidArgument and nothing is staged (V-9). A key that already
// exists in the partition, or twice in the Tx, fails with
// CodeDuplicateReactionKey — from this call or, on engines that buffer
// writes, from Commit. An empty list is a no-op. The driver's Tx lacking
// the reactions Tx half → CodeUnsupported (ERR-2).
func (tx *Tx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []ReactionInput) (err error) {
	defer tx.observe(&ctx, "Tx.EnqueueReactions").done(&err)
	if err := checkCtx(ctx, "Tx.EnqueueReactions"); err != nil {
		return err
	}
	return tx.enqueueReactions(ctx, sourceCommitSeq, reactions)
}

// enqueueReactions is EnqueueReactions after checkCtx, unobserved (Push's
// Call covers it).
func (tx *Tx) enqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []ReactionInput) error {
	const op = "Tx.EnqueueReactions"
	rt, ok := tx.tx.(driver.ReactionsTx)
	if !ok {
		return tx.store.unsupported(op, CapReactions)
	}
	if err := checkSeq(op, "sourceCommitSeq", sourceCommitSeq, "RX-1"); err != nil {
		return err
	}
	for _, r := range reactions {
		if err := checkReactionInput(op, r); err != nil {
			return err
		}
	}
	if len(reactions) == 0 {
		return nil
	}
	return rt.EnqueueReactions(ctx, sourceCommitSeq, reactions)
}

func checkReactionInput(op string, r ReactionInput) error {
	if err := firstErr(idReactionKey.check(op, r.Key), idReactionType.check(op, r.Type)); err != nil {
		return err
	}
	if r.MaxAttempts < 1 {
		return argErr(op, "RX-1", "MaxAttempts %d is below 1", r.MaxAttempts)
	}
	if r.Version < 0 {
		return argErr(op, "RX-1", "Version %d is negative", r.Version)
	}
	if err := firstErr(idClient.checkOptional(op, r.SourceClientID), idClientCommit.checkOptional(op, r.SourceClientCommitID)); err != nil {
		return err
	}
	if !validJSON(r.Payload) {
		return argErr(op, "RX-1", "the payload is not a valid JSON document")
	}
	return nil
}

func validJSON(j JSON) bool {
	return utf8.ValidString(string(j)) && json.Valid([]byte(j))
}

// checkLease requires 0 < leaseMs and nowMs + leaseMs within int64.
func checkLease(op string, nowMs, leaseMs int64) error {
	if leaseMs <= 0 {
		return argErr(op, "RX-2", "the lease %d ms is not positive", leaseMs)
	}
	if nowMs > 0 && leaseMs > math.MaxInt64-nowMs {
		return argErr(op, "RX-2", "now + lease overflows int64 milliseconds")
	}
	return nil
}

// ClaimReactions is a primitive (RX-2): hosts run reactions with a
// [Worker], which claims them.
//
// ClaimReactions leases up to req.Limit due reactions of partition to
// req.Owner (RX-2): pending rows with availableAt ≤ NowMs and leased rows
// whose lease expired (leaseExpiresAt ≤ NowMs), of req.Types, chosen by
// due time, then createdAt, then key. Each gets
// attempts+1, owner req.Owner and expiry NowMs+LeaseMs; the result is
// sorted by createdAt, then key (bytewise). A due row whose attempts
// reached maxAttempts is dead-lettered instead, with failure code
// "reaction.attempts_exhausted" (RX-4), and does not count against the
// limit. Concurrent claims never return the same row (RX-3).
// Input: V-1; Owner and each type V-2 (CodeInvalidArgument); at least one
// type — an empty list is CodeInvalidArgument and claims nothing (RX-2: a
// worker names the types it handles; "every type" is never implied);
// LeaseMs > 0 (CodeInvalidArgument); Limit 1…10,000 (CodeInvalidLimit).
func (s *Store) ClaimReactions(ctx context.Context, partition string, req ClaimRequest) (_ []Reaction, err error) {
	defer s.observe(&ctx, "Store.ClaimReactions", partition).done(&err)
	if err := checkCtx(ctx, "ClaimReactions"); err != nil {
		return *new([]Reaction), err
	}
	const op = "ClaimReactions"
	rc, err := s.reactions(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), idLeaseOwner.check(op, req.Owner)); err != nil {
		return nil, err
	}
	if len(req.Types) == 0 {
		return nil, argErr(op, "RX-2", "no reaction type to claim (name the types the worker handles)")
	}
	for _, t := range req.Types {
		if err := idReactionType.check(op, t); err != nil {
			return nil, err
		}
	}
	if err := firstErr(checkLease(op, req.NowMs, req.LeaseMs), checkLimit(op, "Limit", req.Limit, MaxLimit)); err != nil {
		return nil, err
	}
	return rc.ClaimReactions(ctx, partition, req)
}

// ClaimDueReactions is a primitive (RX-12): hosts run reactions with a
// [Worker], which uses it when the driver has it.
//
// ClaimDueReactions leases up to req.Limit due reactions of req.Types
// across partitions in one driver call — every partition of the store
// when req.Partitions is nil, else those listed — fairly: rows are taken
// by their rank in their partition's claim order first, so with k
// partitions due each gets at least floor(Limit/k) rows (or all of its
// due rows). RX-2…RX-4 hold in every partition. The result is sorted by
// partition, then createdAt, then key. Input as ClaimReactions, plus
// Partitions: nil, or 1…driver.MaxDuePartitions partitions (V-1) without
// duplicates (CodeInvalidArgument; CodeInvalidLimit for the count).
// Errors: CodeUnsupported when the driver lacks the reactions-across
// capability (ERR-2).
func (s *Store) ClaimDueReactions(ctx context.Context, req DueClaimRequest) (_ []PartitionReaction, err error) {
	defer s.observe(&ctx, "Store.ClaimDueReactions", "").done(&err)
	const op = "ClaimDueReactions"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	ac, ok := s.conn.(driver.ReactionsAcrossConn)
	if !ok {
		return nil, s.unsupported(op, CapReactionsAcross)
	}
	if err := checkClaim(op, req.ClaimRequest); err != nil {
		return nil, err
	}
	if req.Partitions != nil {
		if err := checkLimit(op, "len(Partitions)", len(req.Partitions), driver.MaxDuePartitions); err != nil {
			return nil, err
		}
		seen := make(map[string]struct{}, len(req.Partitions))
		for _, p := range req.Partitions {
			if err := idPartition.check(op, p); err != nil {
				return nil, err
			}
			if _, dup := seen[p]; dup {
				return nil, argErr(op, "RX-12", "a partition is listed twice")
			}
			seen[p] = struct{}{}
		}
	}
	return ac.ClaimDueReactions(ctx, req)
}

// checkClaim checks a claim's owner, types, lease and limit (RX-2, V).
func checkClaim(op string, req ClaimRequest) error {
	if err := idLeaseOwner.check(op, req.Owner); err != nil {
		return err
	}
	if len(req.Types) == 0 {
		return argErr(op, "RX-2", "no reaction type to claim (name the types the worker handles)")
	}
	for _, t := range req.Types {
		if err := idReactionType.check(op, t); err != nil {
			return err
		}
	}
	return firstErr(checkLease(op, req.NowMs, req.LeaseMs), checkLimit(op, "Limit", req.Limit, MaxLimit))
}

// checkOwnerOp checks the arguments every owner operation shares.
func checkOwnerOp(op, partition, key, owner string) error {
	return firstErr(idPartition.check(op, partition), idReactionKey.check(op, key), idLeaseOwner.check(op, owner))
}

// CompleteReaction is a primitive (RX-5): hosts run reactions with a
// [Worker], which completes them.
//
// CompleteReaction marks the reaction completed at nowMs and reports true
// when it is leased to owner; otherwise it reports false and changes
// nothing (RX-5). A lease stays owner's after its expiry until another
// claim takes the row. Input: V-1, V-2 (CodeInvalidArgument).
func (s *Store) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (_ bool, err error) {
	defer s.observe(&ctx, "Store.CompleteReaction", partition).done(&err)
	if err := checkCtx(ctx, "CompleteReaction"); err != nil {
		return *new(bool), err
	}
	const op = "CompleteReaction"
	rc, err := s.reactions(op)
	if err != nil {
		return false, err
	}
	if err := checkOwnerOp(op, partition, key, owner); err != nil {
		return false, err
	}
	return rc.CompleteReaction(ctx, partition, key, owner, nowMs)
}

// ExtendReactionLease is a primitive (RX-5): hosts run reactions with a
// [Worker], which extends running leases.
//
// ExtendReactionLease sets the lease of a reaction leased to owner to
// expire at nowMs + leaseMs and reports true; otherwise false, nothing
// changed (RX-5). A worker's heartbeat: false means ownership is lost.
// Input: V-1, V-2, leaseMs > 0 (CodeInvalidArgument).
func (s *Store) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (_ bool, err error) {
	defer s.observe(&ctx, "Store.ExtendReactionLease", partition).done(&err)
	if err := checkCtx(ctx, "ExtendReactionLease"); err != nil {
		return *new(bool), err
	}
	const op = "ExtendReactionLease"
	rc, err := s.reactions(op)
	if err != nil {
		return false, err
	}
	if err := firstErr(checkOwnerOp(op, partition, key, owner), checkLease(op, nowMs, leaseMs)); err != nil {
		return false, err
	}
	return rc.ExtendReactionLease(ctx, partition, key, owner, nowMs, leaseMs)
}

// FailReaction is a primitive (RX-6): hosts run reactions with a [Worker],
// which records failures and retries.
//
// FailReaction records a failed attempt of a reaction leased to owner and
// reports true; otherwise false, nothing changed (RX-5). With req.Retry the
// reaction becomes pending at req.RetryAtMs; without, it is dead-lettered
// at req.NowMs (available at NowMs). The failure {Code, Details, NowMs}
// becomes its LastFailure; attempts are unchanged (RX-6). Input: V-1, V-2;
// Code an application code (V-8: a letter, then letters, digits or
// "._:-", ≤ 128 bytes, reserved prefixes such as "reaction." refused);
// Details "" or a valid JSON document of ≤ 8,192 bytes
// (MaxFailureDetailsBytes). Never store exception text in Details.
func (s *Store) FailReaction(ctx context.Context, partition, key, owner string, req FailRequest) (bool, error) {
	return s.failReaction(ctx, "FailReaction", partition, key, owner, req, false)
}

// failReaction is FailReaction; reserved lets the Worker record the SDK's
// own "reaction." codes. Its calls, the Worker's too, report
// Store.FailReaction to the hooks.
func (s *Store) failReaction(ctx context.Context, op, partition, key, owner string, req FailRequest, reserved bool) (_ bool, err error) {
	defer s.observe(&ctx, "Store.FailReaction", partition).done(&err)
	if err := checkCtx(ctx, op); err != nil {
		return false, err
	}
	rc, err := s.reactions(op)
	if err != nil {
		return false, err
	}
	if err := checkOwnerOp(op, partition, key, owner); err != nil {
		return false, err
	}
	if err := checkFailure(op, req.Code, req.Details, reserved); err != nil {
		return false, err
	}
	return rc.FailReaction(ctx, partition, key, owner, req)
}

// checkFailure enforces V-8 on code (the reserved prefixes only when
// !reserved) and RX-6's bound on details.
func checkFailure(op, code string, details JSON, reserved bool) error {
	if reserved {
		if why := codeSyntax(code); why != "" {
			return argErr(op, "V-8", "the failure code %s", why)
		}
	} else if err := ValidateApplicationCode(code); err != nil {
		if e, ok := err.(*Error); ok {
			e.Message = op + ": failure code: " + e.Message
		}
		return err
	}
	if details == "" {
		return nil
	}
	if len(details) > MaxFailureDetailsBytes {
		return argErr(op, "RX-6", "failure details are %d bytes, over the %d-byte limit", len(details), MaxFailureDetailsBytes)
	}
	if !validJSON(details) {
		return argErr(op, "RX-6", "failure details are not a valid JSON document")
	}
	return nil
}

// RetryReaction is an admin call (RX-7), an operator's retry of a dead
// letter; a [Worker] runs reactions.
//
// RetryReaction turns a dead-letter reaction into pending at nowMs with
// attempts 0 and reports true; any other state, or a missing key, reports
// false and changes nothing (RX-7). Its last failure is cleared, as
// upstream does (the failure that dead-lettered it is in the operator's
// hands when they retry). Input: V-1, V-2.
func (s *Store) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (_ bool, err error) {
	defer s.observe(&ctx, "Store.RetryReaction", partition).done(&err)
	if err := checkCtx(ctx, "RetryReaction"); err != nil {
		return *new(bool), err
	}
	const op = "RetryReaction"
	rc, err := s.reactions(op)
	if err != nil {
		return false, err
	}
	if err := firstErr(idPartition.check(op, partition), idReactionKey.check(op, key)); err != nil {
		return false, err
	}
	return rc.RetryReaction(ctx, partition, key, nowMs)
}

// GetReaction is an admin call (RX-11), made beside the engine: a [Worker]
// runs reactions.
//
// GetReaction returns the reaction of partition with key, and false when
// there is none (RX-11). Input: V-1, key V-2 (CodeInvalidArgument).
func (s *Store) GetReaction(ctx context.Context, partition, key string) (_ Reaction, _ bool, err error) {
	defer s.observe(&ctx, "Store.GetReaction", partition).done(&err)
	if err := checkCtx(ctx, "GetReaction"); err != nil {
		return *new(Reaction), *new(bool), err
	}
	const op = "GetReaction"
	rc, err := s.reactions(op)
	if err != nil {
		return Reaction{}, false, err
	}
	if err := firstErr(idPartition.check(op, partition), idReactionKey.check(op, key)); err != nil {
		return Reaction{}, false, err
	}
	return rc.GetReaction(ctx, partition, key)
}

// ListReactions is an admin call (RX-8), made beside the engine: a [Worker]
// runs reactions.
//
// ListReactions returns reactions of partition in q.Statuses and q.Types
// (empty = all), newest first (createdAt desc, then key desc), at most
// q.Limit (RX-8), after the cursor (q.AfterCreatedAtMs, q.AfterKey) — the
// last reaction of the previous page — when q.AfterKey is not "": paging
// so reaches every reaction exactly once, however many (a page shorter
// than Limit is the last). Input: V-1; statuses among the four of driver
// (else CodeInvalidArgument); types V-2; AfterKey "" or V-2; Limit
// 1…10,000 (CodeInvalidLimit).
func (s *Store) ListReactions(ctx context.Context, partition string, q ReactionListQuery) (_ []Reaction, err error) {
	defer s.observe(&ctx, "Store.ListReactions", partition).done(&err)
	if err := checkCtx(ctx, "ListReactions"); err != nil {
		return *new([]Reaction), err
	}
	const op = "ListReactions"
	rc, err := s.reactions(op)
	if err != nil {
		return nil, err
	}
	if err := idPartition.check(op, partition); err != nil {
		return nil, err
	}
	for _, st := range q.Statuses {
		switch st {
		case ReactionPending, ReactionLeased, ReactionCompleted, ReactionDeadLetter:
		default:
			return nil, argErr(op, "RX-8", "unknown reaction status (want pending, leased, completed or dead_letter)")
		}
	}
	for _, t := range q.Types {
		if err := idReactionType.check(op, t); err != nil {
			return nil, err
		}
	}
	if err := firstErr(idReactionKey.checkOptional(op, q.AfterKey), checkLimit(op, "Limit", q.Limit, MaxLimit)); err != nil {
		return nil, err
	}
	return rc.ListReactions(ctx, partition, q)
}

// PruneReactions is an admin call (RX-9): no engine call prunes reactions;
// run it on a schedule beside [Store.Prune].
//
// PruneReactions deletes at most req.Limit terminal reactions of
// partition, oldest (UpdatedAtMs) first: completed ones with UpdatedAtMs <
// CompletedBeforeMs and dead letters with UpdatedAtMs < DeadLetterBeforeMs
// (strict). Pending and leased reactions are never pruned; nothing but
// reactions changes (RX-9, RX-10). It returns the number deleted per
// status. Input: V-1; Limit 1…10,000 (CodeInvalidLimit).
func (s *Store) PruneReactions(ctx context.Context, partition string, req ReactionPruneRequest) (_ map[ReactionStatus]int64, err error) {
	defer s.observe(&ctx, "Store.PruneReactions", partition).done(&err)
	if err := checkCtx(ctx, "PruneReactions"); err != nil {
		return *new(map[ReactionStatus]int64), err
	}
	const op = "PruneReactions"
	rc, err := s.reactions(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), checkLimit(op, "Limit", req.Limit, MaxLimit)); err != nil {
		return nil, err
	}
	return rc.PruneReactions(ctx, partition, req)
}

// ReactionKey is the key Push stores for a reaction that PlanReactions
// returns with key plannerKey in the client commit (clientID,
// clientCommitID) (PUSH-16): the JSON array [clientID, clientCommitID,
// plannerKey] (no HTML escaping) when it is at most MaxReactionKeyBytes
// long, else "sha256:" and the 64 lowercase hex digits of that array's
// SHA-256. Distinct triples give distinct keys (the two forms cannot
// meet: one starts with '[', the other with 's'), so one planner key
// names one reaction per commit. Keys of reactions enqueued directly
// (Tx.EnqueueReactions) are stored as given.
func ReactionKey(clientID, clientCommitID, plannerKey string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode([]string{clientID, clientCommitID, plannerKey}) // strings always encode
	k := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(k) <= MaxReactionKeyBytes {
		return string(k)
	}
	sum := sha256.Sum256(k)
	return "sha256:" + hex.EncodeToString(sum[:])
}
