package d1http

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/partgate"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Tx is a write transaction on one partition (driver.Tx). Writes are
// buffered and sent as one batch at Commit; reads go out at once and see
// the buffered writes (TX-3). The batch starts with a guard on the stamp
// read at Begin, so the Tx commits only if no other Tx of the partition
// committed since: otherwise CodeWriteConflict and nothing is written
// (TX-1, TX-9).
//
// When the Conn knows the partition's stamp and max seq from its last Tx
// of the partition (partgate; one Tx of the Conn uses them at a time),
// Begin reads nothing and the Tx begins on them: a W1 push is then ONE
// request, its Commit batch. A stale stamp (another store committed
// since) fails the guard as above, and the partition's Begins read again
// for partgate.Backoff.
type Tx struct {
	c         *Conn
	partition string
	beginCtx  context.Context
	gate      partgate.Entered[counters] // held until the Tx ends (leave)
	stopWatch func() bool                // stops leaving the gate when beginCtx ends

	// state: finished (TX-5; a D1 Tx is never aborted: nothing is sent
	// before Commit) and the lock guarding the fields below.
	state   txstate.State
	stamp   int64 // the partition's stamp at Begin
	baseMax int64 // the partition's max seq at Begin
	commits int64 // commits appended so far
	writes  []stmt
	// run is the multi-row upsert at the end of writes that the next
	// upsert of the same table extends (stageUpsert).
	run upsertRun
	ov  overlay
	// extra are statements a capability adds to the batch after the writes.
	extra []stmt
	// rxKeys are the reaction keys enqueued in the Tx (RX-1).
	rxKeys map[string]bool
	// bind is the client binding BindClient staged: its statements go
	// right after the stamp guard of Commit's and CommitRejected's batch
	// (CR-7).
	bind []stmt
}

var _ driver.Tx = (*Tx)(nil)

// Begin returns at once: D1 serializes optimistically (TX-9). When the
// Conn knows the partition's stamp and max seq (Tx) it sends nothing;
// otherwise it reads them in one request. Errors: CodeUnavailable when
// ctx has ended, or D1 cannot be reached within it (TX-7; a Begin that
// sends nothing learns that at Commit, within Commit's ctx). ctx governs
// the Tx: if it ends before Commit, Commit fails and nothing is written
// (TX-6).
func (c *Conn) Begin(ctx context.Context, partition string) (driver.Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, driver.Wrap(driver.CodeUnavailable, err, "d1http: begin: context ended")
	}
	gate, held := c.gates.TryEnter(partition)
	if held && gate.Known {
		t := &Tx{c: c, partition: partition, beginCtx: ctx, ov: newOverlay(), stamp: gate.V.stamp, baseMax: gate.V.max}
		t.hold(gate)
		return t, nil
	}
	rows, err := c.rows(ctx, "d1http: begin", d1sql.D1BeginRead, partition)
	if err != nil {
		c.gates.Leave(gate, counters{}, false, false)
		return nil, err
	}
	t, err := c.newTx(ctx, partition, rows)
	if err != nil {
		c.gates.Leave(gate, counters{}, false, false)
		return nil, err
	}
	t.hold(gate)
	return t, nil
}

// newTx returns the Tx whose Begin read (D1BeginRead) answered rows.
func (c *Conn) newTx(ctx context.Context, partition string, rows [][]json.RawMessage) (*Tx, error) {
	if len(rows) != 1 || len(rows[0]) != 2 {
		return nil, driver.Errorf(driver.CodeInternal, "d1http: begin: malformed answer")
	}
	t := &Tx{c: c, partition: partition, beginCtx: ctx, ov: newOverlay()}
	var err error
	if t.stamp, err = rawInt(rows[0][0]); err == nil {
		t.baseMax, err = rawInt(rows[0][1])
	}
	if err != nil {
		return nil, driver.Errorf(driver.CodeInternal, "d1http: begin: partition counters are not integers")
	}
	return t, nil
}

// hold makes t the holder of gate (a zero gate: none) until it ends, or
// until its Begin ctx ends (then it can commit nothing).
func (t *Tx) hold(gate partgate.Entered[counters]) {
	t.gate = gate
	t.stopWatch = context.AfterFunc(t.beginCtx, func() {
		t.state.Lock()
		defer t.state.Unlock()
		t.leave(counters{t.stamp, t.baseMax}, true, false)
	})
}

// leave releases the Tx's gate once, recording what the partition's
// counters are now (known false: not certain). Called with the Tx's lock held.
func (t *Tx) leave(now counters, known, conflict bool) {
	if t.stopWatch != nil {
		t.stopWatch()
	}
	t.c.gates.Leave(t.gate, now, known, conflict)
	t.gate = partgate.Entered[counters]{}
}

// Partition returns the partition the Tx writes.
func (t *Tx) Partition() string { return t.partition }

// op runs fn unless the Conn is closed (ERR-4), the Tx is finished (TX-5)
// or its Begin context ended (TX-6).
func (t *Tx) op(fn func() error) error {
	return t.state.Do(t.beginCtx, txstate.Engine{Closed: t.c.check}, func() error {
		if err := t.beginCtx.Err(); err != nil {
			return driver.Wrap(driver.CodeUnavailable, err, "d1http: the transaction's context ended; nothing will be written (TX-6)")
		}
		return fn()
	})
}

// opCtx is op for the shared Tx frames (txstate), which pass a context:
// the Tx's operations run under Begin's.
func (t *Tx) opCtx(_ context.Context, fn func() error) error { return t.op(fn) }

// GetRow reads a row, seeing the Tx's own writes (TX-3).
func (t *Tx) GetRow(ctx context.Context, table, id string) (row driver.Row, found bool, err error) {
	err = t.op(func() error {
		if s, ok := t.ov.row(table, id); ok {
			if _, err := t.c.state.Table(table); err != nil {
				return err
			}
			row, found = s.copyRow(), !s.deleted
			if !found {
				row = driver.Row{}
			}
			return nil
		}
		row, found, err = t.c.GetRow(ctx, t.partition, table, id)
		return err
	})
	return row, found, err
}

// ScanRows scans rows, seeing the Tx's own writes (TX-3): it reads the
// committed page with the limit raised by the number of rows the Tx
// staged in the table (each can hide at most one committed row), then
// merges the staged rows in, so a short page still means the end (SCAN-3).
func (t *Tx) ScanRows(ctx context.Context, q driver.ScanQuery) (rows []driver.Row, err error) {
	err = t.op(func() error {
		staged := t.ov.rows[q.Table]
		wide := q
		wide.Limit = q.Limit + len(staged)
		committed, err := t.c.ScanRows(ctx, t.partition, wide)
		if err != nil {
			return err
		}
		x, _ := t.c.state.Table(q.Table)
		rows = t.ov.merge(x, committed, q, func(r driver.Row) bool { return matchesFilter(x, r, q.Filter) })
		return nil
	})
	return rows, err
}

// GetPushResult reads a push result: the committed one, else one staged
// in the Tx (TX-3, PR-3).
func (t *Tx) GetPushResult(ctx context.Context, clientID, clientCommitID string) (r driver.PushResult, found bool, err error) {
	err = t.op(func() error {
		if r, found, err = t.c.GetPushResult(ctx, t.partition, clientID, clientCommitID); err != nil || found {
			return err
		}
		r, found = t.ov.results[[2]string{clientID, clientCommitID}]
		return nil
	})
	return r, found, err
}

// UpsertRow stages a create-or-replace of the row (ROW-1, ROW-2). A
// collision on a declared unique index with another row — committed or
// staged — fails now with CodeConstraintViolation, stages nothing and
// leaves the Tx usable (SCH-10, TX-8). A row whose row parameter or
// logged change would pass d1RowBudget (1,800,000 bytes) fails now with
// CodePushTooLarge, stages nothing and leaves the Tx usable (PUSH-17).
// Errors: CodeUnknownTable.
func (t *Tx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return t.op(func() error {
		x, u, err := t.c.tableUpserts(table)
		if err != nil {
			return err
		}
		args, err := d1sql.D1RowArgs(x, t.partition, row)
		if err != nil {
			return err
		}
		if err := checkRowSize(x, row, args[1].(string)); err != nil {
			return err
		}
		if err := t.checkUnique(ctx, x, row); err != nil {
			return err
		}
		t.stageUpsert(x, u, args, row.ID)
		t.ov.put(table, row)
		t.afterRowWrite(x, row.ID, false)
		return nil
	})
}

// upsertRun is a multi-row upsert statement being staged: writes[at]
// holds n rows of table x (D1Upserts.SQL(n)), or, insert, n guarded
// creates (D1Upserts.InsertSQL(n)). When some rows of an upsert are
// guarded (UpsertRowGuarded), writes[at-1] is their guard statement
// (D1RowGuard), guard its entries; ids are the rows' ids.
type upsertRun struct {
	x      *sqlitesql.Table
	at, n  int
	insert bool
	guard  []byte
	ids    []string
}

// stageUpsert stages the upsert of one row (args: D1RowArgs). Adjacent
// upserts of one table share one statement of up to u.MaxRows rows (D1's
// 100 parameters and 100,000 bytes per statement), applied in order, so
// the batch leaves the state the single-row statements would (D1 parses
// and bills per statement). Anything staged in between (a
// delete, blob refs, a commit, reactions) starts a new statement, so the
// order of writes is kept. The caller holds the Tx's lock.
func (t *Tx) stageUpsert(x *sqlitesql.Table, u *d1sql.D1Upserts, args []any, id string) {
	if !t.extendRun(x, u, args, id, false) {
		t.newRun(x, u, args, id, false)
	}
}

// extendRun adds the row to the upsert (insert: the insert) at the end of
// writes when it is one of table x with room left, and reports whether it did.
func (t *Tx) extendRun(x *sqlitesql.Table, u *d1sql.D1Upserts, args []any, id string, insert bool) bool {
	r := &t.run
	if r.x != x || r.insert != insert || r.at != len(t.writes)-1 || r.n >= u.MaxRows() {
		return false
	}
	r.n++
	w := &t.writes[r.at]
	w.SQL, w.Params = runSQL(u, r.n, insert), append(w.Params, args[1])
	r.ids = append(r.ids, id)
	return true
}

// newRun stages the row as a new upsert (insert: insert) statement.
func (t *Tx) newRun(x *sqlitesql.Table, u *d1sql.D1Upserts, args []any, id string, insert bool) {
	t.writes = append(t.writes, st(runSQL(u, 1, insert), args...))
	t.run = upsertRun{x: x, at: len(t.writes) - 1, n: 1, insert: insert, ids: append(make([]string, 0, 16), id)}
}

func runSQL(u *d1sql.D1Upserts, n int, insert bool) string {
	if insert {
		return u.InsertSQL(n)
	}
	return u.SQL(n)
}

// DeleteRow stages the removal of the row; a missing row is a no-op (ROW-3).
func (t *Tx) DeleteRow(ctx context.Context, table, id string) error {
	return t.op(func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		t.writes = append(t.writes, st(x.KeepTombstone, t.partition, id, table), st(x.Delete, t.partition, id)) // ROW-5
		t.ov.del(table, id)
		t.afterRowWrite(x, id, true)
		return nil
	})
}

// RowTombstone returns the id's tombstone as the Tx sees it (ROW-5,
// TX-3): the version of a row the Tx staged and then deleted, without a
// request; else D1's answer (x.Tombstone) — for a committed row the Tx
// deleted, its version, since the delete is not sent yet.
func (t *Tx) RowTombstone(ctx context.Context, table, id string) (v int64, err error) {
	err = t.op(func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		if s, ok := t.ov.row(table, id); ok {
			switch {
			case !s.deleted:
				v = s.row.ServerVersion
				return nil
			case s.tombKnown:
				v = s.tomb
				return nil
			}
		}
		v, err = t.c.tombstone(ctx, x, t.partition, id)
		return err
	})
	return v, err
}

// afterRowWrite lets capabilities add statements after a row write.
func (t *Tx) afterRowWrite(x *sqlitesql.Table, id string, deleted bool) {
	if deleted {
		t.writes = append(t.writes, st(sqlitesql.BlobRefsClearRow, t.partition, x.Def.Name, id))
	}
}

// AppendCommit stages a commit with the next seq: the partition's max at
// Begin + 1, + 1 per commit already appended in the Tx (SEQ-1…SEQ-3). The
// guard on the stamp (and the commits' primary key) makes a seq another
// Tx took fail the batch (SEQ-4); a rolled-back Tx consumes nothing (SEQ-2).
func (t *Tx) AppendCommit(ctx context.Context, in driver.CommitInput) (int64, error) {
	return txstate.Value(ctx, t.opCtx, func() (int64, error) {
		seq := t.baseMax + t.commits + 1
		var parts []stmt
		if len(in.Changes) > 0 {
			var err error
			if parts, err = changeParts(t.partition, seq, in.Changes); err != nil {
				return 0, err
			}
		}
		t.commits++
		t.writes = append(t.writes, st(sqlitesql.InsertCommit, t.partition, seq, in.ClientID, in.ClientCommitID, in.ActorID, dec(in.CreatedAtMs)))
		t.writes = append(t.writes, parts...)
		return seq, nil
	})
}

// PutPushResult stages r unless a result is stored or staged under the
// key: the first writer wins (PR-3), in the batch too (ON CONFLICT DO NOTHING).
func (t *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.opCtx, func(text []byte) error {
		t.writes = append(t.writes, st(sqlitesql.InsertPushResult, t.partition, clientID, clientCommitID, string(text)))
		key := [2]string{clientID, clientCommitID}
		if _, ok := t.ov.results[key]; !ok {
			t.ov.results[key] = r
		}
		return nil
	})
}

// BindClient stages the binding of clientID to actorID (CR-7): the
// batch of Commit or CommitRejected stores the binding record unless the
// client has one, then checks the record's actor (D1BindGuard), failing
// the whole batch with CodeClientActorMismatch when it is another's. D1
// applies a batch alone, so of two batches binding one client id to two
// actors exactly one lands. Nothing is sent here.
func (t *Tx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	return t.opCtx(ctx, func() error {
		t.bind = []stmt{st(sqlitesql.BindClient, t.partition, clientID, actorID, dec(atMs)),
			st(d1sql.D1BindGuard, t.partition, clientID, actorID)}
		return nil
	})
}

// CommitRejected drops every buffered write and sends a batch holding
// only the stamp guard, as Commit's (TX-9), and the rejected result
// (first writer wins). The guard bumps the stamp, so every Tx of the
// partition begun before it — e.g. a push of the same key that read "no
// result" — fails with CodeWriteConflict and, retried, finds the stored
// result (TX-8, PR-6); and when another Tx of the partition committed
// since Begin — e.g. that very push, which stored "applied" — the guard
// fails this batch instead: CodeWriteConflict, nothing written, and the
// caller, retrying, replays the stored result rather than answering
// "rejected". Its outcome is reported as Commit's (TX-10).
func (t *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	text, encErr := driver.EncodePushResult(r)
	return t.finish(ctx, func() []stmt {
		if encErr != nil {
			return nil
		}
		t.commits = 0                                                                    // the rejected Tx's commits are dropped
		batch := append([]stmt{st(d1sql.D1StampGuard, t.partition, t.stamp)}, t.bind...) // the binding stays (CR-7)
		return append(batch, st(sqlitesql.InsertPushResult, t.partition, clientID, clientCommitID, string(text)))
	}, encErr)
}

// Commit sends every buffered write as one batch (TX-2): the stamp guard,
// the writes in order, the partition's new max seq, then capability
// statements. A Tx without writes sends nothing. CodeWriteConflict: another
// Tx of the partition committed first; nothing was written (TX-9).
//
// Outcome (TX-10): nil only if the batch landed. When its answer is lost
// (the context ended while it was in flight, a timeout, a reset, a 5xx),
// the batch's idempotency token is fenced on a detached context within
// outcomeLookupTimeout (client.write): nil if it landed,
// CodeUnavailable if it did not (and now never will), and
// CodeCommitOutcomeUnknown only if the fence could not be sent.
func (t *Tx) Commit(ctx context.Context) error {
	commits := t.commits
	err := t.finish(ctx, func() []stmt {
		commits = t.commits
		if len(t.writes) == 0 && len(t.extra) == 0 && len(t.bind) == 0 {
			return nil
		}
		batch := make([]stmt, 0, len(t.bind)+len(t.writes)+len(t.extra)+2)
		batch = append(batch, st(d1sql.D1StampGuard, t.partition, t.stamp))
		batch = append(batch, t.bind...)
		batch = append(batch, t.writes...)
		if t.commits > 0 {
			batch = append(batch, st(sqlitesql.SetMaxSeq, t.partition, t.baseMax+t.commits))
		}
		return append(batch, t.extra...)
	}, nil)
	if err == nil && commits > 0 {
		t.c.fan.Publish(driver.CommitWake{Partition: t.partition, CommitSeq: t.baseMax + commits}) // FAN-1, this Conn at once
	}
	return err
}

// finish ends the Tx once: it sends the batch build returns (if any).
func (t *Tx) finish(ctx context.Context, build func() []stmt, pre error) error {
	t.state.Lock()
	defer t.state.Unlock()
	defer t.leave(counters{t.stamp, t.baseMax}, true, false) // nothing sent; a no-op once left below
	// A closed Conn: nothing was sent, the Tx is rolled back with its
	// Conn (ERR-4). No context is checked here: a Tx without writes
	// commits whatever ctx, and the batch's request answers for ctx.
	if err := t.state.End(txstate.Engine{Closed: t.c.check}, nil); err != nil {
		return err
	}
	if pre != nil {
		return pre
	}
	if err := t.beginCtx.Err(); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "d1http: the transaction's context ended; nothing was written (TX-6)")
	}
	batch := build()
	if len(batch) == 0 {
		t.leave(counters{t.stamp, t.baseMax}, true, false)
		return nil
	}
	_, err := t.c.write(ctx, "d1http: commit", batch...)
	if err == nil {
		// The guard bumped the stamp; the commits moved the max seq.
		t.leave(counters{t.stamp + 1, t.baseMax + t.commits}, true, false)
		return nil
	}
	conflict := driver.CodeOf(err) == driver.CodeWriteConflict
	now, known := counters{}, false
	if stampHeld(err) {
		// The batch failed past its first statement, the stamp guard: the
		// partition's counters are still those the Tx began on, and no
		// other store was involved (no backoff: the next Begin sends nothing).
		now, known, conflict = counters{t.stamp, t.baseMax}, true, false
	}
	defer func() { t.leave(now, known, conflict) }()
	if dup := duplicateReactionKey(err); dup != nil {
		return dup
	}
	if driver.CodeOf(err) == driver.CodeConstraintViolation && strings.Contains(err.Error(), "_sync_commits.") {
		// The commit seq was taken: a lost race, never a constraint violation (TX-9).
		conflict = true
		return &driver.Error{Code: driver.CodeWriteConflict, OpIndex: -1, Err: err,
			Message: "d1http: another transaction of the partition took the commit seq; nothing was written", Rule: "TX-9"}
	}
	if driver.CodeOf(err) == driver.CodeConstraintViolation && t.keyCollision(err) {
		// A guarded create's INSERT found its key taken (GW-2).
		return &driver.Error{Code: driver.CodeWriteConflict, OpIndex: -1, Err: err,
			Message: "d1http: a guarded create's row exists; nothing was written", Rule: "GW-2"}
	}
	return err
}

// keyCollision reports whether err names the primary key of a table the
// Tx wrote: SQLite's "UNIQUE constraint failed: t._sync_partition, t.pk".
func (t *Tx) keyCollision(err error) bool {
	msg := err.Error()
	for name := range t.ov.rows {
		x, xerr := t.c.state.Table(name)
		if xerr != nil {
			continue
		}
		key := "UNIQUE constraint failed: " + name + "." + sqlitesql.PartitionColumn + ", " + name + "." + x.Def.PrimaryKey
		if i := strings.Index(msg, key); i >= 0 {
			rest := msg[i+len(key):]
			if rest == "" || !(rest[0] == '_' || rest[0] >= '0' && rest[0] <= '9' || rest[0]|0x20 >= 'a' && rest[0]|0x20 <= 'z') {
				return true
			}
		}
	}
	return false
}

// stampHeld reports whether err is a batch's failure known to come after
// its stamp guard held: a guarded write's guard (GW-2), or a unique index
// collision of a row (SCH-10; not of a commit seq, which is a lost race).
func stampHeld(err error) bool {
	var e *attemptErr
	if !errors.As(err, &e) || e.out != outRefused {
		return false
	}
	return strings.Contains(e.msg, d1sql.GuardConstraint) || strings.Contains(e.msg, d1sql.BindConstraint) ||
		strings.Contains(e.msg, d1sql.PushResultsKeyCollision) ||
		(strings.Contains(e.msg, "UNIQUE constraint failed") && !strings.Contains(e.msg, "_sync_commits."))
}

// Rollback discards the buffered writes (TX-2); nothing was sent. A second
// call is a no-op (TX-5).
func (t *Tx) Rollback(ctx context.Context) error {
	t.state.Lock()
	defer t.state.Unlock()
	t.leave(counters{t.stamp, t.baseMax}, true, false)
	t.state.Finish()
	t.writes, t.extra, t.rxKeys, t.run, t.bind = nil, nil, nil, upsertRun{}, nil
	return nil
}
