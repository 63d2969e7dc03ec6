package sync

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/syncstore/syncstore/driver"
)

// apply is one attempt of a push inside tx (read: what begin read); it
// fills resp with the result it stores (RunInTx commits the Tx when apply
// returns nil and has not ended it).
func (p *pushPlan) apply(ctx context.Context, tx *Tx, read driver.PushRead, resp *PushResponse) error {
	if read.HasResult {
		if err := tx.rollback(ctx); err != nil {
			return err
		}
		var err error
		*resp, err = p.replay(read.Result)
		return err
	}
	nowMs := p.opts.Now().UnixMilli()
	if err := p.bind(ctx, tx.tx, nowMs); err != nil {
		return err // CodeClientActorMismatch: nothing is written (CR-7)
	}
	n := len(p.req.Ops)
	r := &pushRun{p: p, tx: tx, resp: resp, nowMs: nowMs, size: p.size,
		cur: read.Rows, exists: read.Found, tomb: read.Tombstones, written: make([]Row, n),
		results: make([]OpResult, 0, n), changes: make([]Change, 0, n), pending: make([]int, 0, n)}
	err := r.run(ctx)
	if err == errPushAnswered {
		return nil
	}
	return err
}

// errPushAnswered ends a pushRun whose rejection is stored: resp holds it.
var errPushAnswered = errors.New("sync: the push is answered")

// pushRun is the state of one attempt of a push (PUSH-10): ops decided
// one by one, each against its row as the earlier ops left it, and
// written in op order. Writes wait in pending until a hook is about to
// see the Tx (so it sees them, TX-3) or the last op is decided (so a push
// without hooks that is rejected writes nothing first).
type pushRun struct {
	p     *pushPlan
	tx    *Tx
	resp  *PushResponse
	nowMs int64
	// size is the values' size: the request's, then with ValidateOp's
	// values in place of the ops' (MaxPushBytes).
	size int
	// cur[i] and exists[i] are op i's row before it: what begin read
	// for a row's first op, the row the previous op on it left for the
	// others. written[i] is the row upsert i writes.
	cur    []Row
	exists []bool
	// tomb[i] is op i's row's tombstone when it is missing (ROW-5): the
	// version it had when last deleted — by an earlier op of the push,
	// or as begin read it — 0 when never.
	tomb    []int64
	written []Row
	results []OpResult
	changes []Change
	// pending are the ops decided but not yet written, in order.
	pending []int
}

// run decides and writes every op, then appends the commit and stores
// the applied result.
func (r *pushRun) run(ctx context.Context) error {
	p, req := r.p, &r.p.req
	for i := range req.Ops {
		if p.prev != nil && p.prev[i] >= 0 {
			j := p.prev[i]
			r.cur[i], r.exists[i] = r.written[j], req.Ops[j].Op == OpUpsert
			r.tomb[i] = r.last(j) // a delete's row leaves its version as the tombstone
		}
		if err := r.decide(ctx, i); err != nil {
			return err
		}
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	if p.opts.ValidateCommit != nil {
		if err := r.validateCommit(ctx); err != nil {
			return err
		}
	}
	dtx := r.tx.tx
	seq, err := dtx.AppendCommit(ctx, CommitInput{ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
		ActorID: req.ActorID, CreatedAtMs: r.nowMs, Changes: r.changes})
	if err != nil {
		return err
	}
	if p.opts.PlanReactions != nil {
		if err := r.planReactions(ctx, seq); err != nil {
			return err
		}
	}
	res := PushResult{Status: PushApplied, CommitSeq: seq, RecordedAtMs: r.nowMs,
		CacheIdentity: p.identity, Ops: r.results}
	if err := dtx.PutPushResult(ctx, req.ClientID, req.ClientCommitID, res); err != nil {
		return err
	}
	*r.resp = PushResponse{PushResult: res, Changes: r.changes}
	return nil
}

// planReactions calls PlanReactions for the commit appended at seq and
// enqueues what it returns under keys derived from the commit (PUSH-16):
// each input checked as Tx.EnqueueReactions checks it, a planner key
// repeated in the commit → CodeDuplicateReactionKey naming it, nothing
// enqueued.
func (r *pushRun) planReactions(ctx context.Context, seq int64) error {
	p, req := r.p, &r.p.req
	c := AppliedCommit{Partition: p.partition, CommitSeq: seq, ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
		ActorID: req.ActorID, CreatedAtMs: r.nowMs, Changes: r.changes, Ops: make([]CandidateOp, len(req.Ops))}
	for i, o := range req.Ops {
		c.Ops[i] = CandidateOp{Op: o, Current: r.cur[i], Exists: r.exists[i], Written: r.written[i]}
	}
	rs, err := p.opts.PlanReactions(ctx, r.tx, c)
	if err != nil || len(rs) == 0 {
		return err
	}
	const op = "Push: PlanReactions"
	seen := make(map[string]int, len(rs))
	out := make([]ReactionInput, len(rs))
	for i, x := range rs {
		if err := checkReactionInput(op, x); err != nil {
			return err
		}
		if j, dup := seen[x.Key]; dup {
			e := driver.Errorf(CodeDuplicateReactionKey, "%s: reactions %d and %d of the commit have the key %q: a planner key names one reaction of a commit (PUSH-16)", op, j, i, x.Key)
			return e
		}
		seen[x.Key] = i
		x.Key = ReactionKey(req.ClientID, req.ClientCommitID, x.Key)
		x.SourceClientID, x.SourceClientCommitID = req.ClientID, req.ClientCommitID
		out[i] = x
	}
	return r.tx.enqueueReactions(ctx, seq, out)
}

// decide runs op i's checks — Authorize, the base version, ValidateOp —
// against its row as the earlier ops left it (PUSH-10), and queues its
// write.
func (r *pushRun) decide(ctx context.Context, i int) error {
	p, req := r.p, &r.p.req
	o := req.Ops[i]
	if p.opts.Authorize != nil {
		if err := r.flush(ctx); err != nil {
			return err
		}
		in := AuthorizeInput{Partition: p.partition, ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
			ActorID: req.ActorID, Index: i, Op: o, Current: r.cur[i], Exists: r.exists[i]}
		if err := r.refused(ctx, "Authorize", i, p.opts.Authorize(ctx, r.tx, in)); err != nil {
			return err
		}
	}
	version := int64(0)
	if r.exists[i] {
		version = r.cur[i].ServerVersion
	}
	if o.BaseVersion != nil && *o.BaseVersion != version {
		c := OpResult{Status: OpConflict, Code: OpCodeVersionConflict, ServerVersion: version,
			Message: fmt.Sprintf("base version %d, server version %d", *o.BaseVersion, version)}
		if r.exists[i] {
			c.ServerRow = r.cur[i].Values
		}
		return r.reject(ctx, i, c)
	}
	values := o.Values
	if p.opts.ValidateOp != nil && (o.Op == OpUpsert || r.exists[i]) {
		var err error
		if values, err = r.validateOp(ctx, i); err != nil {
			return err
		}
	}
	if o.Op == OpUpsert {
		next := r.last(i) + 1 // PUSH-4, PUSH-18
		r.written[i] = Row{ID: o.RowID, ServerVersion: next, Scopes: ScopesOf(p.tables[i].Table, values), Values: values}
		r.results = append(r.results, OpResult{Status: OpApplied, ServerVersion: next})
	} else {
		r.results = append(r.results, OpResult{Status: OpApplied})
	}
	r.pending = append(r.pending, i)
	return nil
}

// last is the last version op i's row had before op i: its server
// version when it exists, else its tombstone (0: never written). An
// upsert writes last + 1, so a row's version never repeats, across a
// delete and a re-create too (PUSH-18).
func (r *pushRun) last(i int) int64 {
	if r.exists[i] {
		return r.cur[i].ServerVersion
	}
	return r.tomb[i]
}

// validateOp calls ValidateOp for op i (PUSH-11) and returns the values
// to write: the op's, or the hook's, checked as a pushed row's.
func (r *pushRun) validateOp(ctx context.Context, i int) (Values, error) {
	p, req := r.p, &r.p.req
	o := req.Ops[i]
	if err := r.flush(ctx); err != nil {
		return nil, err
	}
	in := OpInput{Partition: p.partition, ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
		ActorID: req.ActorID, Index: i, Op: o, Current: r.cur[i], Exists: r.exists[i]}
	if o.Values != nil {
		in.Op.Values = maps.Clone(o.Values)
	}
	v, err := p.opts.ValidateOp(ctx, r.tx, in)
	if err != nil {
		return nil, r.refused(ctx, "ValidateOp", i, err)
	}
	if v == nil {
		return o.Values, nil
	}
	op := fmt.Sprintf("Push: op %d: ValidateOp's values", i)
	if o.Op == OpDelete {
		return nil, withOpIndex(argErr(op, "PUSH-11", "a delete writes no values: ValidateOp returns nil for it"), i)
	}
	t := p.tables[i]
	if err := t.checkValues(op, v); err != nil {
		return nil, withOpIndex(err, i)
	}
	if v[t.PrimaryKey] != o.RowID {
		return nil, withOpIndex(valueErr(op, t.PrimaryKey, "V-4, PUSH-11", "the primary-key column %q is changed: ValidateOp keeps the row id", t.PrimaryKey), i)
	}
	r.size += valuesSize(v) - valuesSize(o.Values)
	if r.size > MaxPushBytes {
		return nil, withOpIndex(driver.Errorf(CodePushTooLarge, "%s: the values written by ops 0…%d exceed the %d-byte limit of one push (PUSH-11)", op, i, MaxPushBytes), i)
	}
	return maps.Clone(v), nil
}

// validateCommit calls ValidateCommit on the candidate commit (PUSH-12).
func (r *pushRun) validateCommit(ctx context.Context) error {
	p, req := r.p, &r.p.req
	c := CandidateCommit{Partition: p.partition, ClientID: req.ClientID, ClientCommitID: req.ClientCommitID,
		ActorID: req.ActorID, Ops: make([]CandidateOp, len(req.Ops))}
	for i, o := range req.Ops {
		c.Ops[i] = CandidateOp{Op: o, Current: r.cur[i], Exists: r.exists[i], Written: r.written[i]}
	}
	err := p.opts.ValidateCommit(ctx, r.tx, c)
	var ref *Refusal
	if err == nil || !errors.As(err, &ref) {
		return err
	}
	if ref.OpIndex < 0 || ref.OpIndex >= len(req.Ops) {
		return argErr("Push: ValidateCommit's refusal", "PUSH-12", "it fails op %d of a commit of %d ops", ref.OpIndex, len(req.Ops))
	}
	return r.refused(ctx, "ValidateCommit", ref.OpIndex, err)
}

// refused handles a hook's error for op i: nil goes on; a *Refusal
// (V-8) rejects the commit at op i; any other error aborts the push.
func (r *pushRun) refused(ctx context.Context, hook string, i int, err error) error {
	if err == nil {
		return nil
	}
	var ref *Refusal
	if !errors.As(err, &ref) {
		return err
	}
	if err := checkRefusal(hook, i, ref); err != nil {
		return err
	}
	return r.reject(ctx, i, OpResult{Status: OpError, Code: ref.Code, Message: ref.Message,
		Retryable: ref.Retryable, Details: ref.Details})
}

// flush writes the pending ops in order and logs their changes (PUSH-4):
// an upsert that moves its row logs a delete under the old scopes
// first; a delete of a missing row writes and logs nothing. A unique
// collision rejects the commit at its op (PUSH-5).
func (r *pushRun) flush(ctx context.Context) error {
	dtx := r.tx.tx
	for _, i := range r.pending {
		o := &r.p.req.Ops[i]
		switch o.Op {
		case OpUpsert:
			row := r.written[i]
			if err := dtx.UpsertRow(ctx, o.Table, row); err != nil {
				if CodeOf(err) == CodePushTooLarge {
					return withOpIndex(err, i) // the engine's own bound on one row (PUSH-17)
				}
				if CodeOf(err) != CodeConstraintViolation {
					return err
				}
				return r.reject(ctx, i, OpResult{Status: OpError, Code: OpCodeConstraintViolation,
					Message: "the row collides with another row of the partition on a unique index (SCH-10)"})
			}
			if r.exists[i] && !maps.Equal(r.cur[i].Scopes, row.Scopes) {
				// The row leaves scope values it had: a delete under its
				// old scopes tells their subscribers to drop it; the
				// upsert after it reaches the new ones.
				r.changes = append(r.changes, Change{Table: o.Table, RowID: o.RowID, Op: OpDelete, Scopes: r.cur[i].Scopes})
			}
			r.changes = append(r.changes, Change{Table: o.Table, RowID: o.RowID, Op: OpUpsert,
				Scopes: row.Scopes, Values: row.Values, RowVersion: row.ServerVersion})
		case OpDelete:
			if !r.exists[i] {
				continue
			}
			if err := dtx.DeleteRow(ctx, o.Table, o.RowID); err != nil {
				return err
			}
			r.changes = append(r.changes, Change{Table: o.Table, RowID: o.RowID, Op: OpDelete, Scopes: r.cur[i].Scopes})
		}
	}
	r.pending = r.pending[:0]
	return nil
}

// reject stores the rejected result — ops 0…i-1 applied (checked,
// nothing written), op i's result res — ends the Tx (TX-8) and returns
// errPushAnswered, or the error of storing it.
func (r *pushRun) reject(ctx context.Context, i int, res OpResult) error {
	results := r.results[:i]
	for j := range results {
		results[j] = OpResult{Status: OpApplied} // nothing of the commit is written
	}
	results = append(results, res)
	if err := r.p.reject(ctx, r.tx, r.nowMs, results, r.resp); err != nil {
		return err
	}
	return errPushAnswered
}
