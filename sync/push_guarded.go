package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// guarded returns the driver's GuardedBeginner when p can be pushed by
// guarded writes (PUSH-9): every op an upsert with a base version, and no
// hook that must see the rows read (Authorize, ValidateOp,
// ValidateCommit) or must run only for a commit that will be applied
// (PlanReactions). Ops that write one row again are guarded like the
// others: a guard sees the Tx's earlier writes (GW-1), so each op's is
// checked against the row as the ops before it left it (PUSH-10).
func (p *pushPlan) guarded(s *Store) (driver.GuardedBeginner, bool) {
	o := &p.opts
	if o.Authorize != nil || o.ValidateOp != nil || o.ValidateCommit != nil || o.PlanReactions != nil {
		return nil, false
	}
	for _, o := range p.req.Ops {
		if o.Op != OpUpsert || o.BaseVersion == nil {
			return nil, false
		}
	}
	gb, ok := s.conn.(driver.GuardedBeginner)
	return gb, ok
}

// pushGuarded is one attempt of p by guarded writes (PUSH-9): each row
// written at its base version + 1 on the condition that it is at its base
// version with the scopes it will have, the commit appended, the result
// stored on the condition that none is. It reports whether the push is
// answered: false when a guard did not hold (nothing written) or the
// outcome is unknown (resp is then the attempt's, for PUSH-7), and Push
// reads and decides as usual; err is the unknown outcome's.
func (p *pushPlan) pushGuarded(ctx context.Context, s *Store, gb driver.GuardedBeginner) (resp PushResponse, done bool, err error) {
	var gtx driver.GuardedTx
	begin := func(ctx context.Context) (*Tx, error) {
		var err error
		if gtx, err = gb.BeginGuarded(ctx, p.partition); err != nil {
			return nil, err
		}
		return s.newTx(gtx), nil
	}
	err = s.runOnce(ctx, begin, func(ctx context.Context, _ *Tx) error {
		return p.applyGuarded(ctx, gtx, &resp)
	})
	switch CodeOf(err) {
	case "":
		return resp, true, nil
	case CodeWriteConflict, CodeConstraintViolation:
		return PushResponse{}, false, nil // a guard failed: read and decide (GW-2)
	case CodeCommitOutcomeUnknown:
		return resp, false, err
	}
	return PushResponse{}, true, err
}

// applyGuarded stages p's writes in gtx, each guarded, and fills resp
// with the result it stores.
func (p *pushPlan) applyGuarded(ctx context.Context, gtx driver.GuardedTx, resp *PushResponse) error {
	req := &p.req
	nowMs := p.opts.Now().UnixMilli()
	if err := p.bind(ctx, gtx, nowMs); err != nil {
		return err // CodeClientActorMismatch: nothing is written (CR-7)
	}
	results := make([]OpResult, len(req.Ops))
	changes := make([]Change, len(req.Ops))
	for i, o := range req.Ops {
		base := *o.BaseVersion
		row := Row{ID: o.RowID, ServerVersion: base + 1, Scopes: ScopesOf(p.tables[i].Table, o.Values), Values: o.Values}
		if err := gtx.UpsertRowGuarded(ctx, o.Table, row, base); err != nil {
			if CodeOf(err) == CodePushTooLarge {
				return withOpIndex(err, i) // the engine's own bound on one row (PUSH-17)
			}
			return err
		}
		results[i] = OpResult{Status: OpApplied, ServerVersion: row.ServerVersion}
		// The guard held the scopes: the row stays in the scopes it had,
		// so no delete under old scopes is logged (PUSH-4).
		changes[i] = Change{Table: o.Table, RowID: o.RowID, Op: OpUpsert, Scopes: row.Scopes, Values: row.Values,
			RowVersion: row.ServerVersion}
	}
	seq, err := gtx.AppendCommit(ctx, CommitInput{ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
		ActorID: req.ActorID, CreatedAtMs: nowMs, Changes: changes})
	if err != nil {
		return err
	}
	res := PushResult{Status: PushApplied, CommitSeq: seq, RecordedAtMs: nowMs, CacheIdentity: p.identity, Ops: results}
	*resp = PushResponse{PushResult: res, Changes: changes}
	return gtx.PutPushResultGuarded(ctx, req.ClientID, req.ClientCommitID, res)
}
