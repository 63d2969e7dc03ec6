package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// OpValidation is one operation as Config.Validate sees it (SPEC §6.7)
// and as Config.ValidateCommit sees each of a commit's (§6.8).
type OpValidation struct {
	// OpIndex is the operation's index in its commit.
	OpIndex int
	// Op is sync.OpUpsert or sync.OpDelete.
	Op           sync.Op
	Table, RowID string
	// Row is the row that will persist, keyed by column name — for an
	// upsert after the scope columns of a stored row are put back (§3.4
	// rule 5); nil for a delete.
	Row sync.Values
	// Stored is the row as it is before the operation (as the commit's
	// earlier operations left it), nil when there is none (an insert, or
	// the delete of an absent row, which only ValidateCommit sees);
	// StoredVersion is its server version (0: none).
	Stored        sync.Values
	StoredVersion int64
	// NextVersion is the server version an upsert writes; 0 in
	// Config.Validate (not yet written) and for a delete.
	NextVersion int64
}

// CommitValidation is a whole commit as Config.ValidateCommit sees it
// (SPEC §6.8): every operation staged in the push's transaction, not yet
// appended to the log.
type CommitValidation struct {
	Partition, ActorID, ClientID, ClientCommitID string
	// Ops are the commit's operations in order (Ops[i].OpIndex == i).
	Ops []OpValidation
}

// CandidateReader reads the candidate state of a commit under validation:
// the partition as the commit's staged writes leave it (SPEC §6.8),
// inside the push's transaction. ScanRows needs a scope filter. A
// validator reads through it only; it never writes.
type CandidateReader interface {
	GetRow(ctx context.Context, table, id string) (sync.Row, bool, error)
	ScanRows(ctx context.Context, q sync.ScanQuery) ([]sync.Row, error)
}

// Rejection is a validator's deliberate rejection (SPEC §6.7, §6.8): the
// commit is rejected with Code — a host code, never one of the
// protocol's families (sync., blob., operation., presence., client.) —
// Message and, optionally, Details, the bounded correction hint of
// §6.3.1 (JSON; ssp2.CheckRejectionDetails's shape). OpIndex is the
// operation a ValidateCommit rejection names (0 unless set); Validate
// rejects the operation it was called for. The rejection is stored with
// the commit's result and replayed to a retransmit (never re-validated).
// A reserved code or malformed Details is a host bug: the request fails
// as on a storage failure (logged, answered 503 sync.rate_limited), nothing
// is stored.
type Rejection struct {
	Code    string
	Message string
	Details sync.JSON
	OpIndex int
}

func (r *Rejection) Error() string { return "validation rejected: " + r.Code + ": " + r.Message }

// reservedCodePrefixes are the protocol's code families (SPEC §6.7).
var reservedCodePrefixes = []string{"sync.", "blob.", "operation.", "presence.", "client."}

// refusal maps a validator's error onto the engine's: a *Rejection
// becomes a *sync.Refusal carrying its code (a reserved code or bad
// details: an error, the push fails); a storage error passes through
// (the push fails, nothing stored); any other error is the generic
// sync.constraint_violation without its text (§6.7).
func refusal(err error) error {
	if err == nil {
		return nil
	}
	var rj *Rejection
	if errors.As(err, &rj) {
		if rj.Code == "" {
			return errors.New("server: a validator's Rejection has no code")
		}
		for _, p := range reservedCodePrefixes {
			if strings.HasPrefix(rj.Code, p) {
				return fmt.Errorf("server: a validator's Rejection uses the reserved code family %q (SPEC §6.7)", p)
			}
		}
		if len(rj.Details) > 0 {
			if derr := ssp2.CheckRejectionDetails(rj.Details); derr != nil {
				return fmt.Errorf("server: a validator's Rejection details: %w", derr)
			}
		}
		return &sync.Refusal{Code: rj.Code, Message: rj.Message, Details: rj.Details, OpIndex: rj.OpIndex}
	}
	var se *sync.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &sync.Refusal{Code: sync.OpCodeConstraintViolation, Message: validatorRefusedMessage}
}

// validatorRefusedMessage is the op message of a validator's generic
// rejection (an error that is not a Rejection); the push result keeps it
// rather than the unique-index wording of the engine's own
// constraint_violation.
const validatorRefusedMessage = "the server's validator refused the write"

// hostValidate runs Config.Validate for one op (after §3.4 and the scope
// columns put back): vals is what will persist (nil: the pushed values).
func (r *round) hostValidate(ctx context.Context, in sync.OpInput, vals sync.Values) error {
	v := OpValidation{OpIndex: in.Index, Op: in.Op.Op, Table: in.Op.Table, RowID: in.Op.RowID}
	if in.Op.Op == sync.OpUpsert {
		v.Row = vals
		if v.Row == nil {
			v.Row = in.Op.Values
		}
	}
	if in.Exists {
		v.Stored, v.StoredVersion = in.Current.Values, in.Current.ServerVersion
	}
	return refusal(r.s.cfg.Validate(ctx, r.id, v))
}

// validateCommit runs Config.ValidateCommit on the candidate commit.
func (r *round) validateCommit(ctx context.Context, tx *sync.Tx, c sync.CandidateCommit) error {
	cv := CommitValidation{Partition: c.Partition, ActorID: c.ActorID, ClientID: c.ClientID, ClientCommitID: c.ClientCommitID,
		Ops: make([]OpValidation, len(c.Ops))}
	for i, op := range c.Ops {
		v := OpValidation{OpIndex: i, Op: op.Op.Op, Table: op.Op.Table, RowID: op.Op.RowID}
		if op.Exists {
			v.Stored, v.StoredVersion = op.Current.Values, op.Current.ServerVersion
		}
		if op.Op.Op == sync.OpUpsert {
			v.Row, v.NextVersion = op.Written.Values, op.Written.ServerVersion
		}
		cv.Ops[i] = v
	}
	return refusal(r.s.cfg.ValidateCommit(ctx, tx, cv))
}
