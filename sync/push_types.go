package sync

import (
	"context"
	"time"
)

// The types of Store.Push (push.go), rule group PUSH of docs/contract.md.

// Bounds of one push (PUSH-8). Over either → CodePushTooLarge, nothing
// written.
const (
	// MaxPushOps bounds the operations of one push. A client with more
	// offline edits splits them over several commits.
	MaxPushOps = 1000
	// MaxPushBytes bounds the size of one push's values: the sum over its
	// upserts of every string, JSON and bytes value's length, plus 8 bytes
	// per other value. It keeps one commit within what every engine
	// takes in one transaction (D1's batch, MySQL's max_allowed_packet).
	MaxPushBytes = 4 << 20
)

// Op codes of the per-op results Push stores (PR-1). They start with the
// reserved "sync." prefix (V-8), so they never collide with an
// application's refusal codes.
const (
	// OpCodeVersionConflict: the op's base version is not the row's
	// current server version (PUSH-3). The result carries ServerVersion
	// (0: the row does not exist) and ServerRow (nil then).
	OpCodeVersionConflict = "sync.version_conflict"
	// OpCodeConstraintViolation: the op's row collides with another row
	// of the partition on a declared unique index (SCH-10, PUSH-5). The
	// same text as CodeConstraintViolation.
	OpCodeConstraintViolation = string(CodeConstraintViolation)
)

// PushOp is one operation of a client commit.
type PushOp struct {
	// Table is a table of the ensured schema (SCH-8).
	Table string
	// RowID is the row's id (V-2): the value of the table's primary-key
	// column.
	RowID string
	// Op is OpUpsert (create or replace the whole row) or
	// OpDelete.
	Op Op
	// Values are the whole new row of an upsert: every column of the
	// table, each of its column's Go type (V-3), the primary key equal to
	// RowID (V-4). A delete has none (nil or empty). Push keeps a copy of
	// the map; the values themselves are not copied.
	Values Values
	// BaseVersion is the server version the client's edit is based on:
	// nil for no check (the op applies over whatever is there: last
	// writer wins), else it must equal the row's current server version,
	// 0 meaning "the row does not exist" — a create (PUSH-3). Version(n)
	// makes one.
	BaseVersion *int64
}

// Version returns a pointer to n, for PushOp.BaseVersion.
func Version(n int64) *int64 { return &n }

// PushRequest is one client commit: ordered ops applied all or nothing.
type PushRequest struct {
	// ClientID and ClientCommitID are the commit's idempotency key
	// (V-2; ClientID also V-7): a push of a key that already has a stored
	// result answers that result and writes nothing (PUSH-1).
	ClientID       string
	ClientCommitID string
	// ActorID is who pushes (V-2, non-empty); it is logged with the
	// commit and handed to the hooks.
	ActorID string
	// Ops are applied in order: 1…MaxPushOps of them, each row at most
	// once (PUSH-8).
	Ops []PushOp
}

// PushResponse is Push's answer.
type PushResponse struct {
	// PushResult is the commit's stored result (PR-1): Status applied
	// (CommitSeq > 0) or rejected (CommitSeq 0), RecordedAtMs, and per-op
	// results. An applied push has one result per op, each OpApplied with
	// ServerVersion the row's new server version (0 for a delete). A
	// rejected push has results for the ops up to and including the
	// first that failed — the earlier ones OpApplied ("passed its
	// checks", nothing of them written) — and that one OpConflict
	// (OpCodeVersionConflict) or OpError (an application refusal code,
	// OpCodeConstraintViolation).
	PushResult
	// Replayed is true when the result was stored by an earlier push of
	// the same key (a client retry, or a racing identical push) and this
	// call wrote nothing (PUSH-1).
	Replayed bool
	// Changes are the changes this call logged, in op order (an upsert's
	// values and new version, a delete's last scopes; a delete of a
	// missing row logs none). Nil for a replay or a rejection.
	Changes []Change
}

// PushOptions configure a Store's Push calls (SetPushOptions). The zero
// value runs no hooks and takes the time from time.Now.
type PushOptions struct {
	// Authorize, if set, is called once per op, in order, inside the
	// push's Tx, after the current rows were read and before the op's
	// base version is checked — so a conflict never shows a server row
	// to an actor the op was not allowed for — and never for a replay
	// (PUSH-6). It sees the partition as it was before the commit
	// (nothing of the commit is staged yet), and must not modify in.Op's
	// values. It is not called for the ops after one it refused or whose
	// base version conflicts. It returns nil to allow the
	// op, a *Refusal (errors.As) to reject the commit with an op error
	// carrying the refusal's code, or any other error to abort the push:
	// Push returns that error and writes nothing.
	Authorize func(ctx context.Context, tx *Tx, in AuthorizeInput) error
	// PlanReactions, if set, is called once for a commit that will be
	// applied, inside its Tx, after its changes are staged and its commit
	// appended; the reactions it returns are enqueued with the commit
	// (RX-1), tied to its seq, and land or vanish with it. Never called
	// for a replay or a rejected commit (PUSH-6). An error aborts the
	// push, nothing written. Reactions on a driver without the reactions
	// capability → CodeUnsupported, nothing written.
	PlanReactions func(ctx context.Context, tx *Tx, c AppliedCommit) ([]ReactionInput, error)
	// Now is the clock of the commit's CreatedAtMs and the result's
	// RecordedAtMs (epoch ms). Default time.Now.
	Now func() time.Time
}

// AuthorizeInput is what PushOptions.Authorize decides on.
type AuthorizeInput struct {
	Partition      string
	ClientID       string
	ClientCommitID string
	ActorID        string
	// Index is the op's position in the request.
	Index int
	Op    PushOp
	// Current is the op's row as the Tx sees it before the commit, and
	// Exists whether there is one.
	Current Row
	Exists  bool
}

// AppliedCommit is what PushOptions.PlanReactions plans for.
type AppliedCommit struct {
	Partition      string
	CommitSeq      int64
	ClientID       string
	ClientCommitID string
	ActorID        string
	CreatedAtMs    int64
	// Changes are the changes the commit logs, in op order.
	Changes []Change
}

// Refusal is the error an Authorize hook returns to refuse an op: the
// commit is rejected, and the op's result is an OpError with Code,
// Message, Retryable and Details. Code follows V-8 (an application code:
// not starting "sync." and the other reserved prefixes) and Details is ""
// or a JSON document; otherwise Push fails with CodeInvalidArgument and
// writes nothing.
type Refusal struct {
	Code      string
	Message   string
	Retryable bool
	Details   JSON
}

// Error implements error.
func (r *Refusal) Error() string {
	if r.Message == "" {
		return "push op refused: " + r.Code
	}
	return "push op refused: " + r.Code + ": " + r.Message
}

// SetPushOptions sets the options of this Store's Push calls. Safe for
// concurrent use; calls already running keep the options they started
// with.
func (s *Store) SetPushOptions(o PushOptions) {
	s.push.Store(&o)
}

func (s *Store) pushOptions() PushOptions {
	if p := s.push.Load(); p != nil {
		return *p
	}
	return PushOptions{}
}
