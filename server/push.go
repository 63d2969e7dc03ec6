package server

import (
	"context"
	"errors"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// pushCommit runs one PUSH_COMMIT through the engine and writes its
// PUSH_RESULT (SPEC §6). Operation-level problems found before the engine
// (an unknown table, a payload the row codec refuses, a primary key other
// than the rowId) reject the commit without storing the rejection: the
// same commit is refused the same way when it is sent again.
func (r *round) pushCommit(ctx context.Context, i int, c *ssp2.PushCommit) error {
	req := sync.PushRequest{ClientID: r.req.Header.ClientID, ClientCommitID: c.ClientCommitID, ActorID: r.id.ActorID,
		Ops: make([]sync.PushOp, len(c.Operations))}
	for j, op := range c.Operations {
		t, ok := r.s.tables[op.Table]
		if !ok {
			return r.writeRejected(ctx, c.ClientCommitID, opError(j, ssp2.CodeUnknownTable, "the operation names a table this server does not serve (§1.7)"))
		}
		po := sync.PushOp{Table: op.Table, RowID: op.RowID, Op: op.Op.DriverOp()}
		if op.Op == ssp2.OpUpsert {
			vals, err := t.Codec.Decode(op.Payload)
			if err != nil {
				return r.writeRejected(ctx, c.ClientCommitID, opError(j, ssp2.CodeInvalidRequest, "the operation's payload fails the row codec (§1.7): "+ssp2Message(err)))
			}
			if pk, _ := vals[t.PrimaryKey].(string); pk != op.RowID {
				return r.writeRejected(ctx, c.ClientCommitID, opError(j, ssp2.CodeInvalidRequest, "the payload's primary key is not the operation's rowId"))
			}
			po.Values = vals
			po.BaseVersion = op.BaseVersion.Ptr()
		}
		req.Ops[j] = po
	}
	h := pushHooks{authorize: r.authorize, validateOp: r.validateOp}
	if r.s.cfg.ValidateCommit != nil {
		h.validateCommit = r.validateCommit
	}
	if r.s.blobs != nil {
		h.blobRefs = r.blobRefs
	}
	resp, err := r.s.eng.push(ctx, r.id.Partition, req, h)
	if err != nil {
		return r.pushFailed(ctx, c, req, err)
	}
	if r.applied != nil && resp.Status == sync.PushApplied && !resp.Replayed {
		r.applied(sync.Commit{Seq: resp.CommitSeq, ActorID: req.ActorID, Changes: resp.Changes})
	}
	return r.writePushResult(ctx, c, resp.PushResult, resp.Replayed)
}

// pushFailed answers a push the engine refused to run.
func (r *round) pushFailed(ctx context.Context, c *ssp2.PushCommit, req sync.PushRequest, err error) error {
	var e *sync.Error
	errors.As(err, &e)
	switch sync.CodeOf(err) {
	case sync.CodeIdempotencyKeyReused:
		// §2.3: a replay of the key answers its persisted result, whatever
		// the replay carries (an outbox re-encoded after a schema bump
		// differs byte-wise from the commit that was stored).
		stored, found, gerr := r.s.store.GetPushResult(ctx, r.id.Partition, req.ClientID, req.ClientCommitID)
		if gerr != nil {
			return gerr
		}
		if !found {
			return err
		}
		return r.writePushResult(ctx, c, stored, true)
	case sync.CodeIdempotencyCacheMiss:
		// §6.3: the retryable cache miss, never persisted.
		return r.writeRejected(ctx, c.ClientCommitID, ssp2.OpResult{OpIndex: 0, Status: ssp2.OpError,
			Code: string(ssp2.CodeIdempotencyCacheMiss), Message: "the stored result of this commit cannot be read right now; retry", Retryable: true})
	case sync.CodeInvalidValue, sync.CodeInvalidArgument:
		// A value the engine refuses (a non-finite float, an over-long key
		// value, a row written twice): the commit is malformed for this
		// server.
		return r.writeRejected(ctx, c.ClientCommitID, opError(opIndexOf(e), ssp2.CodeInvalidRequest, "the operation's row is not valid for this server"))
	case sync.CodePushTooLarge:
		return r.writeRejected(ctx, c.ClientCommitID, opError(opIndexOf(e), ssp2.CodeConstraintViolation, "the commit exceeds the server's bound for one commit (1,000 operations, 4 MiB of values)"))
	}
	return err
}

func opIndexOf(e *sync.Error) int {
	if e != nil && e.OpIndex >= 0 {
		return e.OpIndex
	}
	return 0
}

func opError(i int, code ssp2.Code, msg string) ssp2.OpResult {
	entry, _ := ssp2.Lookup(code)
	return ssp2.OpResult{OpIndex: int32(i), Status: ssp2.OpError, Code: string(code), Message: msg, Retryable: entry.Retryable}
}

// ssp2Message returns a codec error's message (never a value of the input).
func ssp2Message(err error) string {
	var e *ssp2.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "malformed"
}

// writeRejected writes a rejected PUSH_RESULT whose terminating record is
// res.
func (r *round) writeRejected(ctx context.Context, commitID string, res ssp2.OpResult) error {
	if err := r.begin(); err != nil {
		return err
	}
	return r.rw.PushResult(&ssp2.PushResult{ClientCommitID: commitID, Status: ssp2.PushRejected, Results: []ssp2.OpResult{res}})
}

// writePushResult maps the engine's stored result to PUSH_RESULT (§6.3):
// applied (cached when replayed) with one applied record per operation, or
// rejected with the terminating operation's record only — a conflict on
// an absent row (server version 0) being §6.2's sync.row_missing.
func (r *round) writePushResult(ctx context.Context, c *ssp2.PushCommit, res sync.PushResult, replayed bool) error {
	out := &ssp2.PushResult{ClientCommitID: c.ClientCommitID}
	var details *ssp2.PushResultDetails
	if res.Status == sync.PushApplied {
		out.Status, out.CommitSeq = ssp2.PushApplied, res.CommitSeq
		if replayed {
			out.Status = ssp2.PushCached
		}
		out.Results = make([]ssp2.OpResult, len(res.Ops))
		for j := range res.Ops {
			out.Results[j] = ssp2.OpResult{OpIndex: int32(j), Status: ssp2.OpApplied}
		}
	} else {
		out.Status = ssp2.PushRejected
		j := len(res.Ops) - 1
		if j < 0 {
			out.Results = []ssp2.OpResult{opError(0, ssp2.CodeInvalidRequest, "the commit was rejected")}
		} else {
			op := res.Ops[j]
			rec := ssp2.OpResult{OpIndex: int32(j)}
			switch op.Status {
			case sync.OpConflict:
				if op.ServerVersion == 0 {
					rec = opError(j, ssp2.CodeRowMissing, "the upsert's baseVersion names a row that does not exist (§6.2)")
				} else {
					rec.Status, rec.Code, rec.ServerVersion = ssp2.OpConflict, string(ssp2.CodeVersionConflict), op.ServerVersion
					rec.Message = "the row's version is not the operation's baseVersion (§6.2)"
					if j < len(c.Operations) {
						if t, ok := r.s.tables[c.Operations[j].Table]; ok {
							row, err := t.Codec.Append(nil, op.ServerRow)
							if err != nil {
								return err
							}
							rec.ServerRow = row
						}
					}
				}
			default:
				rec.Status, rec.Code, rec.Message, rec.Retryable = ssp2.OpError, op.Code, op.Message, op.Retryable
				if op.Code == sync.OpCodeConstraintViolation {
					// The engine's constraint violation is the catalog's
					// (§10.2); its unique-index collision gets wording
					// without the contract's rule ID, a validator's generic
					// rejection keeps its own.
					rec.Code = string(ssp2.CodeConstraintViolation)
					if op.Message != validatorRefusedMessage {
						rec.Message = "the write collides with another row on a unique index"
					}
				}
				if op.Details != "" && ssp2.CheckRejectionDetails(op.Details) == nil {
					details = &ssp2.PushResultDetails{ClientCommitID: c.ClientCommitID,
						Entries: []ssp2.DetailEntry{{OpIndex: int32(j), Details: op.Details}}}
				}
			}
			out.Results = []ssp2.OpResult{rec}
		}
	}
	if err := r.begin(); err != nil {
		return err
	}
	if err := r.rw.PushResult(out); err != nil {
		return err
	}
	if details != nil {
		return r.rw.PushResultDetails(details)
	}
	return nil
}

// authorize is §3.4 steps 2–4, run by the engine for each op: against the
// row as stored when it exists (an update or a delete), against the
// pushed row for an insert; a delete of an absent row needs no check
// (§6.2). Every variable the table declares must hold an allowed value.
func (r *round) authorize(_ context.Context, in sync.AuthorizeInput) error {
	t := r.s.tables[in.Op.Table]
	switch {
	case in.Exists:
		if !authorizeRow(t, in.Current.Scopes, r.g) {
			return forbidden()
		}
	case in.Op.Op == sync.OpDelete:
	default:
		if !authorizeRow(t, sync.ScopesOf(t.engine, in.Op.Values), r.g) {
			return forbidden()
		}
	}
	return nil
}

func forbidden() error {
	return &sync.Refusal{Code: string(ssp2.CodeForbidden), Message: "the write is outside the actor's scopes (§3.4)"}
}

// validateOp runs for each op that passed authorization and its base
// version, in the push's Tx: an upsert writing a crdt column writes the
// merge of the stored value and the pushed one (§5.10.3), refused with
// sync.crdt_merge_failed without a merger (§5.10.2) or when it fails;
// one referencing a blob is refused with blob.not_found when blobs are
// off (§6.6; on, blobRefs checks it) — stored with the result, as
// upstream does; and §3.4 rule 5: an upsert of an existing row keeps the
// stored values of the table's scope columns (a client cannot move a row
// across scopes).
func (r *round) validateOp(ctx context.Context, in sync.OpInput) (sync.Values, error) {
	var vals sync.Values
	var err error
	if in.Op.Op == sync.OpUpsert {
		vals, err = r.mergeCRDT(ctx, in, r.s.tables[in.Op.Table], nil)
	}
	if err == nil {
		vals, err = r.restoreScopes(in, vals)
	}
	if err != nil || r.s.cfg.Validate == nil {
		return vals, err
	}
	return vals, r.hostValidate(ctx, in, vals)
}

// restoreScopes is validateOp's protocol part after the crdt merge: the
// blob refusal and §3.4 rule 5. vals are the values so far (nil: the
// pushed ones); it returns them, changed or copied when a scope column
// is put back.
func (r *round) restoreScopes(in sync.OpInput, vals sync.Values) (sync.Values, error) {
	if in.Op.Op != sync.OpUpsert {
		return nil, nil
	}
	t := r.s.tables[in.Op.Table]
	for _, k := range t.blobCols {
		if r.s.blobs == nil && in.Op.Values[t.Columns[k].Name] != nil {
			return nil, &sync.Refusal{Code: string(ssp2.CodeBlobNotFound), Message: "the row references a blob and this server has no blob store (§5.9.6)"}
		}
	}
	if !in.Exists {
		return vals, nil
	}
	out := vals
	for _, sc := range t.engine.Scopes {
		stored := in.Current.Values[sc.Column]
		if in.Op.Values[sc.Column] == stored {
			continue
		}
		if out == nil {
			out = make(sync.Values, len(in.Op.Values))
			for k, v := range in.Op.Values {
				out[k] = v
			}
		}
		out[sc.Column] = stored
	}
	return out, nil
}
