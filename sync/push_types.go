package sync

import (
	"context"
	"fmt"
	"strings"
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

// ProtocolRefusalCodes are the reserved codes a push hook's Refusal may
// carry besides application codes (PUSH-15): the op error codes upstream
// Syncular's wire protocol puts in a push result — a write outside the
// actor's scopes (SSP2 §3.4), a CRDT column no merger took (§5.10), a row
// without its scope values (§3.1), a reference to a blob never uploaded
// (§6.6) — so the protocol layer's hooks (package server) store them with
// the commit's result and replay them exactly. Any other reserved code in
// a refusal → CodeInvalidArgument (V-8).
var ProtocolRefusalCodes = []string{"sync.forbidden", "sync.crdt_merge_failed", "sync.missing_scopes", "blob.not_found"}

// PushOp is one operation of a client commit.
type PushOp struct {
	// Table is a table of the ensured schema (SCH-8).
	Table string `json:"table"`
	// RowID is the row's id (V-2): the value of the table's primary-key
	// column.
	RowID string `json:"rowId"`
	// Op is OpUpsert (create or replace the whole row) or
	// OpDelete.
	Op Op `json:"op"`
	// Values are the whole new row of an upsert: every column of the
	// table, each of its column's Go type (V-3), the primary key equal to
	// RowID (V-4). A delete has none (nil or empty). Push keeps a copy of
	// the map; the values themselves are not copied.
	Values Values `json:"values,omitempty"`
	// BaseVersion is the server version the client's edit is based on:
	// nil for no check (the op applies over whatever is there: last
	// writer wins), else it must equal the row's current server version,
	// 0 meaning "the row does not exist" — a create (PUSH-3). Version(n)
	// makes one.
	BaseVersion *int64 `json:"baseVersion,omitempty"`
}

// Version returns a pointer to n, for PushOp.BaseVersion.
func Version(n int64) *int64 { return &n }

// PushRequest is one client commit: ordered ops applied all or nothing.
type PushRequest struct {
	// ClientID and ClientCommitID are the commit's idempotency key
	// (V-2; ClientID also V-7): a push of a key that already has a stored
	// result answers that result and writes nothing (PUSH-1).
	ClientID       string `json:"clientId"`
	ClientCommitID string `json:"clientCommitId"`
	// ActorID is who pushes (V-2, non-empty); it is logged with the
	// commit and handed to the hooks.
	ActorID string `json:"-"`
	// Ops are applied in order, 1…MaxPushOps of them (PUSH-8); a row
	// may be written by several, each seeing it as the ones before it
	// left it (PUSH-10).
	Ops []PushOp `json:"ops"`
}

// PushResponse is Push's answer.
type PushResponse struct {
	// PushResult is the commit's stored result (PR-1): Status applied
	// (CommitSeq > 0) or rejected (CommitSeq 0), RecordedAtMs, and per-op
	// results. An applied push has one result per op, each OpApplied with
	// ServerVersion the version the op gave its row (0 for a delete). A
	// rejected push has results for the ops up to and including the
	// one that failed — the earlier ones OpApplied ("passed its
	// checks", nothing of them written) — and that one OpConflict
	// (OpCodeVersionConflict) or OpError (a hook's refusal code,
	// OpCodeConstraintViolation). A ValidateCommit refusal fails the op
	// it blames (PUSH-12).
	PushResult
	// Replayed is true when the result was stored by an earlier push of
	// the same key (a client retry, or a racing identical push) and this
	// call wrote nothing (PUSH-1).
	Replayed bool `json:"replayed"`
	// Changes are the changes this call logged, in op order (an upsert's
	// values as written and new version, after a delete under the row's
	// old scopes when it moved; a delete's last scopes; a delete of a
	// missing row logs none). Nil for a replay or a rejection.
	Changes []Change `json:"changes,omitempty"`
}

// PushOptions configure a Store's Push calls (SetPushOptions), or one
// call (PushWith, PushCommand: a field set there replaces the Store's).
// The zero value runs no hooks and takes the time from time.Now.
//
// The hooks run inside the push's Tx, never for a replay (PUSH-6), op by
// op in op order: for op i, Authorize, the base-version check,
// ValidateOp, then its write — each seeing the partition through tx as
// ops 0…i-1 left it (TX-3, PUSH-10); after the last op, ValidateCommit;
// after the commit is appended, PlanReactions. A hook's *Refusal rejects
// the commit: its result is stored and replayed like a conflict's
// (PUSH-5). Any other error aborts the push: Push returns it and writes
// nothing. A hook must not modify the rows and values it is handed
// (except OpInput.Op.Values, which is its own copy) nor end tx.
type PushOptions struct {
	// Authorize, if set, is called once per op, before the op's base
	// version is checked — so a conflict never shows a server row to an
	// actor the op was not allowed for — and never for a replay
	// (PUSH-6). in.Current is the row as the earlier ops of the commit
	// left it (the stored row for a row's first op). It is not called
	// for the ops after one that failed. It returns nil to allow the
	// op, a *Refusal (errors.As) to reject the commit with an op error
	// carrying the refusal's code, or any other error to abort the push.
	Authorize func(ctx context.Context, tx *Tx, in AuthorizeInput) error
	// ValidateOp, if set, is called for an op that passed its base-version
	// check: every upsert, and a delete of a row that exists (deleting a
	// missing row has nothing to validate), with the row as the earlier
	// ops left it and the op's values (PUSH-11). It returns the values
	// to write: nil keeps the pushed ones; other values (merged CRDT
	// columns, scope columns put back) are checked as a pushed row's
	// (V-3, V-4: the whole row, the primary key unchanged → Push fails
	// with CodeInvalidValue, nothing written) and are what the row, its
	// logged change and its scopes are built from (PUSH-4). A delete's
	// ValidateOp returns nil (else CodeInvalidArgument). The values of a
	// push after ValidateOp count against MaxPushBytes too
	// (CodePushTooLarge). A *Refusal rejects the commit at this op.
	// Setting it makes every push read its rows first (PUSH-9).
	ValidateOp func(ctx context.Context, tx *Tx, in OpInput) (Values, error)
	// ValidateCommit, if set, is called once per commit whose every op
	// passed, after all of them are written in tx and before the commit
	// is appended, with each op's row before and after it (PUSH-12);
	// through tx it reads the candidate state (GetRow, ScanRows, index
	// lookups see the commit's writes). A *Refusal rejects the commit,
	// failing the op its OpIndex names (0, the first, unless set; an
	// index outside the commit → Push fails with CodeInvalidArgument,
	// nothing written). Setting it makes every push read its rows first
	// (PUSH-9).
	ValidateCommit func(ctx context.Context, tx *Tx, c CandidateCommit) error
	// PlanReactions, if set, is called once for a commit that will be
	// applied, inside its Tx, after its changes are staged and its commit
	// appended; the reactions it returns are enqueued with the commit
	// (RX-1), tied to its seq, and land or vanish with it. Never called
	// for a replay or a rejected commit (PUSH-6). An error aborts the
	// push, nothing written. Reactions on a driver without the reactions
	// capability → CodeUnsupported, nothing written.
	//
	// A returned Key is the planner's key, unique within the commit; the
	// stored key is ReactionKey(client id, client commit id, Key), so the
	// same planner key in another commit is another reaction (PUSH-16).
	// A key returned twice for one commit → CodeDuplicateReactionKey
	// naming it, nothing written. The stored SourceClientID and
	// SourceClientCommitID are the commit's, whatever the planner set.
	PlanReactions func(ctx context.Context, tx *Tx, c AppliedCommit) ([]ReactionInput, error)
	// Now is the clock of the commit's CreatedAtMs and the result's
	// RecordedAtMs (epoch ms). Default time.Now.
	Now func() time.Time
}

// over returns o with each field that call sets replaced by call's.
func (o PushOptions) over(call PushOptions) PushOptions {
	if call.Authorize != nil {
		o.Authorize = call.Authorize
	}
	if call.ValidateOp != nil {
		o.ValidateOp = call.ValidateOp
	}
	if call.ValidateCommit != nil {
		o.ValidateCommit = call.ValidateCommit
	}
	if call.PlanReactions != nil {
		o.PlanReactions = call.PlanReactions
	}
	if call.Now != nil {
		o.Now = call.Now
	}
	return o
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
	// Current is the op's row as the earlier ops of the commit left it
	// (the stored row when none wrote it), and Exists whether there is
	// one.
	Current Row
	Exists  bool
}

// OpInput is what PushOptions.ValidateOp validates: one op that passed
// its checks, and the row it replaces.
type OpInput struct {
	Partition      string
	ClientID       string
	ClientCommitID string
	ActorID        string
	// Index is the op's position in the request.
	Index int
	// Op is the op as pushed. For an upsert, Op.Values is a copy of its
	// values, the hook's to change and return; nil for a delete.
	Op PushOp
	// Current is the row as the earlier ops of the commit left it (the
	// stored row when none wrote it), and Exists whether there is one
	// (always, for a delete).
	Current Row
	Exists  bool
}

// CandidateCommit is what PushOptions.ValidateCommit decides on: a
// commit whose ops all passed and are written in the Tx, not yet
// appended.
type CandidateCommit struct {
	Partition      string
	ClientID       string
	ClientCommitID string
	ActorID        string
	// Ops are the commit's ops in order: Ops[i] is op i.
	Ops []CandidateOp
}

// CandidateOp is one op of a CandidateCommit.
type CandidateOp struct {
	// Op is the op as pushed.
	Op PushOp
	// Current is the row before the op — as the earlier ops of the
	// commit left it — and Exists whether there was one (false for a
	// delete of a missing row, which wrote nothing).
	Current Row
	Exists  bool
	// Written is the row an upsert wrote: its new server version, the
	// scopes and the values written (ValidateOp's, when it changed
	// them). The zero Row for a delete.
	Written Row
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
	// Ops are the commit's ops in order, as ValidateCommit sees them
	// (CandidateOp): Ops[i].Current is the row before op i — the row as
	// it was before the commit for the first op that writes it — and
	// Written the row it wrote (PUSH-16).
	Ops []CandidateOp
}

// Refusal is the error a push hook (Authorize, ValidateOp,
// ValidateCommit) returns to reject the commit: the failing op's result
// is an OpError with Code, Message, Retryable and Details, stored and
// replayed as any rejection (PUSH-5). Code is an application code (V-8:
// not starting "sync." and the other reserved prefixes),
// OpCodeConstraintViolation for a write a hook finds breaks an invariant
// it has no code of its own for, or one of ProtocolRefusalCodes (a
// protocol layer's, PUSH-15); Details is "" or a JSON document
// (upstream's bounded rejection details, SSP2 §6.3.1, are such a
// document). Otherwise Push fails with CodeInvalidArgument and writes
// nothing.
type Refusal struct {
	Code      string
	Message   string
	Retryable bool
	Details   JSON
	// OpIndex is the op a ValidateCommit refusal fails: 0 (the first)
	// unless set, and within the commit. Authorize and ValidateOp refuse
	// the op they were called for; there it is ignored.
	OpIndex int
}

// Error implements error.
func (r *Refusal) Error() string {
	if r.Message == "" {
		return "push op refused: " + r.Code
	}
	return "push op refused: " + r.Code + ": " + r.Message
}

// SetPushOptions sets the options of this Store's Push calls, which are
// also those of PushWith and PushCommand where their own options set no
// field. Safe for concurrent use; calls already running keep the options
// they started with.
func (s *Store) SetPushOptions(o PushOptions) {
	s.push.Store(&o)
}

func (s *Store) pushOptions() PushOptions {
	if p := s.push.Load(); p != nil {
		return *p
	}
	return PushOptions{}
}

// CommandClientID returns a client id of the server-command namespace
// (PUSH-13): the JSON array of "remote-command", first and more, written
// as JavaScript's JSON.stringify writes it, so it starts with
// RemoteCommandPrefix. Upstream Syncular names the commands a client
// runs CommandClientID(actorID, clientID). The id must still be V-2's:
// PushCommand refuses one over MaxIDBytes or not valid UTF-8.
func CommandClientID(first string, more ...string) string {
	var b strings.Builder
	b.WriteString(RemoteCommandPrefix)
	for i, part := range append([]string{first}, more...) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for j := 0; j < len(part); j++ {
			switch c := part[j]; {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}
