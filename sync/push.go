package sync

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Push applies one client commit to partition, all or nothing (rule group
// PUSH of docs/contract.md), in one Tx:
//
//   - Registry (REG-4): the Store's first push to a partition touches
//     it in the registry (a new partition gets a fresh epoch), so the
//     loops that list the registry (Worker, Prune) reach it; later
//     pushes send nothing for it.
//   - Replay (PUSH-1): when a result is stored for (ClientID,
//     ClientCommitID), it is returned as it is, with Replayed true, and
//     nothing is written — also when two identical pushes race: one
//     applies, both answer its result (PR-6). A stored result recorded
//     for a different request under the same key → CodeIdempotencyKeyReused
//     (PUSH-2), nothing written — or CodeClientActorMismatch when the
//     client id is bound to another actor than the request's (CR-7), so
//     a push under someone else's client id learns nothing of its keys.
//   - Binding (CR-7): otherwise the Tx binds ClientID to ActorID
//     (Tx.BindClient; not for a command, PushCommand): a client id the
//     partition has no record of gets a binding record (cursor −1, no
//     subscriptions), which lands with the commit or with its
//     rejection; a client id bound to another
//     actor → CodeClientActorMismatch, nothing written. Of two first
//     pushes (or a push and a pull) of one client id by two actors at
//     once exactly one lands.
//   - Ops in order (PUSH-10, PUSH-3, PUSH-6, PUSH-11): the current row
//     of every op is read in the Tx; then op by op, each seeing its row
//     and the partition as the earlier ops left them (a row may be
//     written by several ops): PushOptions.Authorize (if set) decides,
//     the op's BaseVersion (if set) must equal the row's server version
//     (0: no row), PushOptions.ValidateOp (if set) validates and may
//     replace the values, and the op is written. A refusal or a
//     mismatch rejects the commit.
//   - Apply (PUSH-4, PUSH-12, PUSH-18): an upsert writes the row with
//     server version current + 1 — for a missing row, its tombstone + 1
//     (ROW-5: the version it had when last deleted; 1 for a row id
//     never written), so a row's version never repeats — and scopes computed from
//     the values written by the table's declared scopes; a delete
//     removes the row (a missing row: nothing to do, nothing logged).
//     PushOptions.ValidateCommit (if set) sees the whole candidate
//     commit and may refuse it. The commit is appended with one change
//     per op (a delete under the old scopes first when an upsert moves
//     the row) built from the rows written, PushOptions.PlanReactions
//     (if set) plans reactions enqueued with it, the applied result is
//     stored, and the Tx commits. A driver with commit-fanout then wakes
//     the store's other instances (FAN-1).
//   - Reject (PUSH-5): a conflict, a refusal or a unique-index collision
//     (an op error with OpCodeConstraintViolation, never a raw engine
//     error) discards every staged write and stores the rejected result
//     with per-op results (CommitRejected, TX-8). A rejection is an
//     answer, not an error: err is nil and Status is PushRejected.
//   - Guarded (PUSH-9): a push whose ops are all upserts with a
//     BaseVersion, without Authorize, ValidateOp, ValidateCommit and
//     PlanReactions, over a driver that is a driver.GuardedBeginner, is
//     first written without reading: each row on the condition that it
//     is at its base version with the scopes it will have (as the
//     earlier ops left it, GW-1), the result on the condition that none
//     is stored. When a condition fails nothing is written and the push is
//     read and decided as above, in a new Tx: the answer and the writes
//     are the same either way; only the round trips differ.
//   - Outcomes (PUSH-7): a commit the engine may or may not have taken
//     (CodeCommitOutcomeUnknown, TX-10) is settled by reading the push
//     result again, in a new Tx that waits for the partition: a result
//     this call tried to store is answered as this call's (Replayed
//     false); none means nothing landed, and the push runs again. A
//     push is never applied twice, and never reported rejected when it
//     landed. When the outcome still cannot be learned (ctx ended, the
//     engine unreachable), Push returns CodeCommitOutcomeUnknown: push
//     the same request again later to learn it. Once an attempt may have
//     landed, Push answers only the settled result or
//     CodeCommitOutcomeUnknown (OUT-1): an error of a later attempt (the
//     engine unreachable at Begin, a hook's error, ctx ended) is not
//     answered, since it would say nothing was written; the result is
//     read once more instead, on a short context detached from ctx.
//   - Write conflicts (OUT-2): a Tx that lost a race of an optimistic
//     engine (TX-9) is retried inside Push with backoff and jitter until
//     ctx ends — then CodeUnavailable — or the Store's RetryPolicy's
//     MaxAttempts (default: no bound) ran out — then CodeWriteConflict,
//     nothing written.
//
// Validation (PUSH-8), before anything is read or written (V-9):
// partition V-1; ClientID V-2 and V-7 (CodeInvalidClientID);
// ClientCommitID and ActorID V-2; 1…MaxPushOps ops (none →
// CodeInvalidArgument; more → CodePushTooLarge); each op on a known table
// (CodeUnknownTable), its RowID V-2, Op upsert|delete, an upsert's Values
// the whole row of valid values with the primary key equal to RowID (V-3,
// V-4 → CodeInvalidValue naming the column), a delete without values, a
// BaseVersion ≥ 0 (CodeInvalidArgument); at most MaxPushBytes of values
// (CodePushTooLarge). Errors about one op carry its index in
// (*Error).OpIndex.
//
// Other errors: CodeClientActorMismatch (CR-7, above); a hook's own
// error, or an engine error, returned as it is, nothing written;
// CodeUnavailable when ctx ends. Push is safe for concurrent use; pushes
// on one partition are serialized by its Tx (TX-1).
func (s *Store) Push(ctx context.Context, partition string, req PushRequest) (_ PushResponse, err error) {
	defer s.observe(&ctx, "Store.Push", partition).done(&err)
	return s.pushCall(ctx, "Push", partition, req, s.pushOptions(), false)
}

// PushWith is Push with per-call options (PUSH-14): each field o sets
// replaces the Store's (SetPushOptions) for this call; a field o leaves
// nil keeps the Store's. A host whose hooks depend on the request — the
// actor's allowed scopes, resolved per request — passes them here
// without touching the Store's options, which other calls share.
// Everything else is Push's.
func (s *Store) PushWith(ctx context.Context, partition string, req PushRequest, o PushOptions) (_ PushResponse, err error) {
	defer s.observe(&ctx, "Store.PushWith", partition).done(&err)
	return s.pushCall(ctx, "PushWith", partition, req, s.pushOptions().over(o), false)
}

// PushCommand applies a commit the host makes as the server (PUSH-13):
// PushWith, except that req.ClientID must be in the server-command
// namespace V-7 reserves — it starts with RemoteCommandPrefix
// (CommandClientID makes one) — else CodeInvalidClientID, nothing
// written. req.ActorID is the actor the host runs the command as. A
// command is idempotent and replayed like any push (PUSH-1, PUSH-2):
// the same client id and client commit id answer the stored result; the
// host names each run of a command by them. The Store's hooks run for
// it as for a client's push, with o's fields over them. Client pushes
// and pulls (Push, PushWith, Pull) keep refusing the namespace, so a
// command's client id is not bound to its actor (CR-7): the host may run
// one command id as several actors, and no client record is written.
func (s *Store) PushCommand(ctx context.Context, partition string, req PushRequest, o PushOptions) (_ PushResponse, err error) {
	defer s.observe(&ctx, "Store.PushCommand", partition).done(&err)
	return s.pushCall(ctx, "PushCommand", partition, req, s.pushOptions().over(o), true)
}

// pushCall is Push, PushWith and PushCommand (named op in errors) with the
// options opts; command: req is a server command (PUSH-13).
func (s *Store) pushCall(ctx context.Context, op, partition string, req PushRequest, opts PushOptions, command bool) (resp PushResponse, err error) {
	defer func() {
		if !command && CodeOf(err) == CodeIdempotencyKeyReused {
			err = s.keyOfAnotherActor(ctx, op, partition, req, err)
		}
	}()
	if err := checkCtx(ctx, op); err != nil {
		return PushResponse{}, err
	}
	if err := idPartition.check(op, partition); err != nil {
		return PushResponse{}, err
	}
	p, err := s.schema.Load().checkPush(op, req, command)
	if err != nil {
		return PushResponse{}, err
	}
	p.partition = partition
	p.opts = opts
	p.command = command
	if p.opts.Now == nil {
		p.opts.Now = time.Now
	}
	if err := s.registerPartition(ctx, partition, p.opts.Now().UnixMilli()); err != nil {
		return PushResponse{}, err
	}
	// unknown is the error of the last attempt whose outcome was unknown:
	// from then on, every answer is the settled result or unknown (OUT-1).
	var unknown error
	if gb, ok := p.guarded(s); ok {
		resp, done, err := p.pushGuarded(ctx, s, gb)
		if done {
			return resp, err
		}
		if err != nil { // the outcome is unknown: settled as below (PUSH-7)
			p.attempts = append(p.attempts, resp)
			unknown = err
			if ctx.Err() != nil {
				return p.settleDetached(ctx, s, err)
			}
		}
	}
	for settle := 0; ; settle++ {
		var resp PushResponse
		var read driver.PushRead
		begin := func(ctx context.Context) (*Tx, error) {
			var tx *Tx
			var err error
			tx, read, err = p.begin(ctx, s)
			return tx, err
		}
		err := s.runInTx(ctx, partition, begin, func(ctx context.Context, tx *Tx) error {
			resp = PushResponse{}
			return p.apply(ctx, tx, read, &resp)
		})
		if err == nil {
			return resp, nil
		}
		switch code := CodeOf(err); {
		case code == CodeCommitOutcomeUnknown:
		case unknown == nil || code == CodeIdempotencyKeyReused:
			// Nothing of this call landed, or (key reused) the stored
			// result of another request says so.
			return PushResponse{}, err
		default:
			// An earlier attempt may have landed: this error does not say
			// whether it did (OUT-1).
			return p.settleDetached(ctx, s, unknownAfter(unknown, err))
		}
		// The Tx may have landed (TX-10): remember what it stored, then
		// learn whether it did (PUSH-7).
		p.attempts = append(p.attempts, resp)
		unknown = err
		if settle+1 < maxPushSettles && ctx.Err() == nil {
			continue // a new Tx waits for the partition, then replays or applies
		}
		return p.settleDetached(ctx, s, err)
	}
}

// keyOfAnotherActor is a push's answer when a result is stored under its
// key for another request (reused, CodeIdempotencyKeyReused): when the
// client id is bound to another actor, CodeClientActorMismatch instead
// (CR-7), so a push under someone else's client id learns nothing of the
// owner's keys or results. An identical request is the owner's (the
// digest covers the actor), so replays never come here. reused stays the
// answer when the record cannot be read: either way nothing was written.
func (s *Store) keyOfAnotherActor(ctx context.Context, op, partition string, req PushRequest, reused error) error {
	rec, found, err := s.conn.GetClientRecord(ctx, partition, req.ClientID)
	if err != nil || !found || rec.ActorID == req.ActorID {
		return reused
	}
	return driver.Errorf(CodeClientActorMismatch,
		"%s: the client id is bound to another actor; a client id belongs to the actor that first pushed or pulled with it; nothing was written (CR-7)", op)
}

// unknownAfter is Push's answer when an attempt whose outcome was unknown
// (unknown) was followed by one that failed with err before the outcome
// could be learned (OUT-1): CodeCommitOutcomeUnknown wrapping unknown,
// naming err's code.
func unknownAfter(unknown, err error) error {
	return &Error{Code: CodeCommitOutcomeUnknown, OpIndex: -1, Err: unknown,
		Message: fmt.Sprintf("Push: an attempt's commit may have landed and the next attempt failed (%s) before the outcome could be read; push the same request again to learn it (OUT-1)", codeOrUnknown(err))}
}

// codeOrUnknown is err's code, or "no code" for an error without one.
func codeOrUnknown(err error) string {
	if c := CodeOf(err); c != "" {
		return string(c)
	}
	return "no code"
}

// maxPushSettles bounds the Txs Push runs to settle unknown outcomes.
const maxPushSettles = 3

// pushSettleTimeout bounds the last read that settles an unknown outcome
// once the caller's ctx has ended.
const pushSettleTimeout = 5 * time.Second

// settleDetached reads the push result on a short context detached from
// ctx and answers it when it is there; otherwise unknown stays unknown.
func (p *pushPlan) settleDetached(ctx context.Context, s *Store, unknown error) (PushResponse, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushSettleTimeout)
	defer cancel()
	r, found, err := s.conn.GetPushResult(rctx, p.partition, p.req.ClientID, p.req.ClientCommitID)
	if err != nil || !found {
		return PushResponse{}, unknown
	}
	return p.replay(r)
}

// pushPlan is a validated push and what applying it needs.
type pushPlan struct {
	partition string
	req       PushRequest // Ops and their Values maps copied
	tables    []*compiledTable
	identity  string
	opts      PushOptions
	// size is the request's values' size (MaxPushBytes).
	size int
	// prev[i] is the index of the last op before op i on its row, -1
	// when there is none; nil when no row has two ops (PUSH-10).
	prev []int
	// attempts are the responses of Txs whose outcome was unknown.
	attempts []PushResponse
	// command: a server command (PUSH-13), whose client id is not bound
	// to its actor (CR-7).
	command bool
}

// bind binds the push's client id to its actor in tx (CR-7); a command
// binds nothing.
func (p *pushPlan) bind(ctx context.Context, tx driver.Tx, nowMs int64) error {
	if p.command {
		return nil
	}
	return tx.BindClient(ctx, p.req.ClientID, p.req.ActorID, nowMs)
}

// begin starts a Tx on the push's partition and reads the stored result
// of its key and the current row of each op: in one call when the driver
// is a driver.PushBeginner, else Begin, GetPushResult and GetRow per row.
// A row that several ops write is read once, for its first op
// (readKeys).
func (p *pushPlan) begin(ctx context.Context, s *Store) (*Tx, driver.PushRead, error) {
	req := &p.req
	keys := p.readKeys()
	if pb, ok := s.conn.(driver.PushBeginner); ok {
		dtx, read, err := pb.BeginPush(ctx, p.partition, req.ClientID, req.ClientCommitID, keys)
		if err != nil {
			return nil, read, err
		}
		tx := s.newTx(dtx)
		if !read.HasResult && (len(read.Rows) != len(keys) || len(read.Found) != len(keys) || len(read.Tombstones) != len(keys)) {
			_ = tx.rollback(context.WithoutCancel(ctx))
			return nil, read, driver.Errorf(CodeInternal, "Push: the driver's BeginPush answered %d rows and %d tombstones for %d keys", len(read.Rows), len(read.Tombstones), len(keys))
		}
		return tx, p.spread(read), nil
	}
	tx, err := s.begin(ctx, p.partition)
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	read, err := readForPush(ctx, tx.tx, req, keys)
	if err != nil {
		_ = tx.rollback(context.WithoutCancel(ctx))
		return nil, read, err
	}
	return tx, p.spread(read), nil
}

// readForPush makes a push's first reads one by one.
func readForPush(ctx context.Context, dtx driver.Tx, req *PushRequest, keys []driver.RowKey) (driver.PushRead, error) {
	var read driver.PushRead
	var err error
	read.Result, read.HasResult, err = dtx.GetPushResult(ctx, req.ClientID, req.ClientCommitID)
	if err != nil || read.HasResult {
		return read, err
	}
	read.Rows, read.Found, read.Tombstones = make([]Row, len(keys)), make([]bool, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		if read.Rows[i], read.Found[i], err = dtx.GetRow(ctx, k.Table, k.ID); err != nil {
			return read, err
		}
		if !read.Found[i] {
			if read.Tombstones[i], err = dtx.RowTombstone(ctx, k.Table, k.ID); err != nil {
				return read, err
			}
		}
	}
	return read, nil
}

// readKeys returns the rows a push reads first: each op's, in op order,
// but a row written by several ops once (driver.PushBeginner takes
// distinct keys).
func (p *pushPlan) readKeys() []driver.RowKey {
	keys := make([]driver.RowKey, 0, len(p.req.Ops))
	for i, o := range p.req.Ops {
		if p.prev == nil || p.prev[i] < 0 {
			keys = append(keys, driver.RowKey{Table: o.Table, ID: o.RowID})
		}
	}
	return keys
}

// spread turns a read of readKeys into one row per op: an op whose row
// an earlier op writes gets none here (apply takes the row that op left).
func (p *pushPlan) spread(read driver.PushRead) driver.PushRead {
	if read.HasResult || p.prev == nil {
		return read
	}
	n := len(p.req.Ops)
	rows, found, tombs := make([]Row, n), make([]bool, n), make([]int64, n)
	k := 0
	for i := range n {
		if p.prev[i] < 0 {
			rows[i], found[i], tombs[i] = read.Rows[k], read.Found[k], read.Tombstones[k]
			k++
		}
	}
	read.Rows, read.Found, read.Tombstones = rows, found, tombs
	return read
}

// reject stores the rejected result with the per-op results so far and
// ends the Tx (TX-8).
func (p *pushPlan) reject(ctx context.Context, tx *Tx, nowMs int64, results []OpResult, resp *PushResponse) error {
	res := PushResult{Status: PushRejected, RecordedAtMs: nowMs, CacheIdentity: p.identity, Ops: results}
	*resp = PushResponse{PushResult: res}
	return tx.commitRejectedKey(ctx, p.req.ClientID, p.req.ClientCommitID, res)
}

// replay answers a stored result (PUSH-1): as this call's own when an
// attempt of this call whose outcome was unknown stored it (PUSH-7), as
// a replay otherwise; CodeIdempotencyKeyReused when it was recorded for
// another request (PUSH-2).
func (p *pushPlan) replay(r PushResult) (PushResponse, error) {
	for _, a := range p.attempts {
		if sameResult(a.PushResult, r) {
			return PushResponse{PushResult: r, Changes: a.Changes}, nil
		}
	}
	if isPushIdentity(r.CacheIdentity) && r.CacheIdentity != p.identity {
		e := driver.Errorf(CodeIdempotencyKeyReused, "Push: a result is stored for this client id and client commit id, recorded for a different request (other ops, values, base versions or actor); push new ops under a new client commit id; nothing was written (PUSH-2)")
		return PushResponse{}, e
	}
	return PushResponse{PushResult: r, Replayed: true}, nil
}

// sameResult reports whether stored is the result an attempt tried to
// store: the same request, status, seq and record time.
func sameResult(tried, stored PushResult) bool {
	return tried.Status == stored.Status && tried.CommitSeq == stored.CommitSeq &&
		tried.RecordedAtMs == stored.RecordedAtMs && tried.CacheIdentity == stored.CacheIdentity
}

// checkRefusal enforces V-8 on a hook's refusal of op i: an
// application code, OpCodeConstraintViolation, or one of
// ProtocolRefusalCodes (PUSH-15).
func checkRefusal(hook string, i int, r *Refusal) error {
	op := fmt.Sprintf("Push: op %d: %s's refusal", i, hook)
	if r.Code != OpCodeConstraintViolation && !slices.Contains(ProtocolRefusalCodes, r.Code) {
		if err := ValidateApplicationCode(r.Code); err != nil {
			return withOpIndex(err, i)
		}
	}
	return withOpIndex(checkOpResult(op, OpResult{Status: OpError, Code: r.Code, Message: r.Message, Details: r.Details}), i)
}

// checkPush validates req (PUSH-8) and returns the plan to apply it:
// ops with copies of their Values maps, their tables, the request's
// identity.
func (cs *compiledSchema) checkPush(op string, req PushRequest, command bool) (*pushPlan, error) {
	checkClient := checkClientID
	if command {
		checkClient = checkCommandClientID
	}
	if err := firstErr(checkClient(op, req.ClientID), idClientCommit.check(op, req.ClientCommitID),
		idActor.check(op, req.ActorID)); err != nil {
		return nil, err
	}
	n := len(req.Ops)
	if n == 0 {
		return nil, argErr(op, "PUSH-8", "a push needs at least one op")
	}
	if n > MaxPushOps {
		return nil, driver.Errorf(CodePushTooLarge, "%s: %d ops, over the %d-op limit of one push; split the commit (PUSH-8)", op, n, MaxPushOps)
	}
	p := &pushPlan{req: req, tables: make([]*compiledTable, n)}
	p.req.Ops = make([]PushOp, n)
	seen := make(map[[2]string]int, n)
	size := 0
	for i, o := range req.Ops {
		oop := fmt.Sprintf("%s: op %d", op, i)
		t, err := cs.table(oop, o.Table)
		if err != nil {
			return nil, withOpIndex(err, i)
		}
		if err := idRow.check(oop, o.RowID); err != nil {
			return nil, withOpIndex(err, i)
		}
		if o.BaseVersion != nil && *o.BaseVersion < 0 {
			return nil, withOpIndex(argErr(oop, "PUSH-8", "base version %d is negative", *o.BaseVersion), i)
		}
		switch o.Op {
		case OpUpsert:
			if err := t.checkValues(oop, o.Values); err != nil {
				return nil, withOpIndex(err, i)
			}
			if o.Values[t.PrimaryKey] != o.RowID {
				return nil, withOpIndex(valueErr(oop, t.PrimaryKey, "V-4", "the row id does not equal the primary-key column %q", t.PrimaryKey), i)
			}
			size += valuesSize(o.Values)
			v := make(Values, len(o.Values))
			for k, x := range o.Values {
				v[k] = x
			}
			o.Values = v
		case OpDelete:
			if len(o.Values) != 0 {
				return nil, withOpIndex(argErr(oop, "PUSH-8", "a delete carries no values"), i)
			}
			o.Values = nil
		default:
			return nil, withOpIndex(argErr(oop, "PUSH-8", "op must be %q or %q", OpUpsert, OpDelete), i)
		}
		key := [2]string{o.Table, o.RowID}
		if j, again := seen[key]; again {
			if p.prev == nil {
				p.prev = make([]int, n)
				for k := range p.prev {
					p.prev[k] = -1
				}
			}
			p.prev[i] = j
		}
		seen[key] = i
		if size > MaxPushBytes {
			return nil, withOpIndex(driver.Errorf(CodePushTooLarge, "%s: the values of ops 0…%d exceed the %d-byte limit of one push; split the commit (PUSH-8)", op, i, MaxPushBytes), i)
		}
		p.req.Ops[i], p.tables[i] = o, t
	}
	p.identity = pushIdentity(&p.req)
	p.size = size
	return p, nil
}

// withOpIndex sets the op index of err, an *Error made by a check.
func withOpIndex(err error, i int) error {
	var e *Error
	if errors.As(err, &e) {
		e.OpIndex = i
	}
	return err
}

// valuesSize is the size of an upsert's values for MaxPushBytes.
func valuesSize(v Values) int {
	n := 0
	for k, x := range v {
		n += len(k)
		switch x := x.(type) {
		case string:
			n += len(x)
		case JSON:
			n += len(x)
		case []byte:
			n += len(x)
		default:
			n += 8
		}
	}
	return n
}

// pushIdentityPrefix starts the identity Push stores as a result's
// CacheIdentity: a digest of the request, compared on replay (PUSH-2).
// A result stored otherwise (the primitives) has none and is replayed as
// it is.
const pushIdentityPrefix = "push-v1:"

func isPushIdentity(s string) bool {
	return len(s) == len(pushIdentityPrefix)+2*sha256.Size && s[:len(pushIdentityPrefix)] == pushIdentityPrefix
}

// pushIdentity is the SHA-256 of the request's actor and ops — tables,
// row ids, kinds, base versions, values by column name with their types —
// in an unambiguous encoding (lengths before bytes, a tag before each
// value), hex, after pushIdentityPrefix.
func pushIdentity(req *PushRequest) string {
	h := sha256.New()
	var buf []byte
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	str(req.ActorID)
	buf = binary.AppendUvarint(buf, uint64(len(req.Ops)))
	for _, o := range req.Ops {
		str(o.Table)
		str(o.RowID)
		str(string(o.Op))
		if o.BaseVersion == nil {
			buf = append(buf, 0)
		} else {
			buf = append(buf, 1)
			buf = binary.BigEndian.AppendUint64(buf, uint64(*o.BaseVersion))
		}
		keys := sortedKeys(o.Values)
		buf = binary.AppendUvarint(buf, uint64(len(keys)))
		for _, k := range keys {
			str(k)
			switch x := o.Values[k].(type) {
			case nil:
				buf = append(buf, 'n')
			case string:
				buf = append(buf, 's')
				str(x)
			case int64:
				buf = append(buf, 'i')
				buf = binary.BigEndian.AppendUint64(buf, uint64(x))
			case float64:
				buf = append(buf, 'f')
				buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(x))
			case bool:
				buf = append(buf, 'b')
				if x {
					buf = append(buf, 1)
				} else {
					buf = append(buf, 0)
				}
			case JSON:
				buf = append(buf, 'j')
				str(string(x))
			case []byte:
				buf = append(buf, 'x')
				str(string(x))
			}
		}
		if len(buf) > 32<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return pushIdentityPrefix + hex.EncodeToString(h.Sum(nil))
}
