package postgres

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/partgate"
	"github.com/syncstore/syncstore/internal/txstate"
)

// stmt is one statement of a pipeline.
type stmt struct {
	sql  string
	args []any
}

// Tx is a write transaction on one partition (driver.Tx). It holds its
// partition's gate in the Conn from Begin to its end (partGates: the
// Conn's Txs of one partition run one after another), and once its
// engine transaction is open it holds one pool connection and never takes
// a second (every statement of the Tx, capabilities included, runs on it)
// and the partition's row lock until its end (TX-1).
//
// Writes that cannot fail on valid input are buffered in pending and sent
// in one pipeline with the next statement that needs an answer: a read,
// an upsert of a table with a unique index, or COMMIT.
//
// Deferred Begin: when the Conn knows the partition's committed max seq
// (its last Tx of the partition ended under the row lock), Begin sends
// nothing and the Tx stays deferred — no connection, no engine
// transaction, seqs allocated from the known max. The first statement
// that needs an answer (a read, a unique upsert, As) opens the engine
// transaction in its own pipeline (BEGIN, the row lock, the savepoint, the
// buffered writes, the read: still one round trip); if the locked max seq
// differs from the known one after seqs were handed out, that fails with
// CodeWriteConflict (TX-9). A Tx that never needs an answer — W1's push:
// upserts, AppendCommit, PutPushResult, Commit — is sent whole in Commit's
// pipeline: ONE round trip, guarded by a conditional update of the
// partition's max seq (sqlGuardSeq): when another Conn committed in the
// partition since, Commit fails with CodeWriteConflict and writes nothing
// (TX-9), and the Conn forgets the max seq, so the retry begins on the
// engine.
type Tx struct {
	c         *Conn
	partition string
	beginCtx  context.Context         // Begin's ctx: As opens a deferred Tx's engine transaction on it
	gate      partgate.Entered[int64] // the partition's gate in the Conn, held until release
	pc        *pgxpool.Conn           // nil while deferred
	stop      func() bool             // stops the context watcher of Begin's ctx

	// state: finished (Commit, CommitRejected or Rollback was called,
	// TX-5), aborted (an engine error or an ended context: the engine tx
	// is gone, TX-6), and the lock guarding the fields below.
	state    txstate.State
	released bool // the Tx ended: pc (if any) was returned to the pool, the gate left
	deferred bool // Begin's statements are not sent yet (no pc, no engine transaction)
	pending  []stmt
	// bind is the client binding BindClient buffered, sent again by
	// CommitRejected after its rollback to the savepoint (CR-7).
	bind []stmt
	// baseSeq is the partition's committed max seq: read under the lock
	// (locked), or while deferred the max the Conn knows.
	baseSeq int64
	locked  bool    // baseSeq was read (or guarded) under the partition's row lock
	seqs    []int64 // seqs appended by this Tx
	// run is the multi-row upsert at the end of pending that the next
	// upsert of the same table extends (stageUpsert).
	run upsertRun
	// tombGuard is the guard of the guarded creates of run (guarded.go).
	tombGuard tombGuard
	// token is the random mark the Tx's first commit carries (tx_token):
	// with its seq, what settleByCommit looks for.
	token int64
	// endSeq is the partition's max seq once Commit or CommitRejected
	// landed (ended true); the gate remembers it for the next Tx.
	endSeq   int64
	ended    bool
	conflict bool // the max seq the Tx was deferred on had moved (TX-9)
	// xid (pg_current_xact_id) and be (its backend, as the server
	// reported it) identify the engine transaction when the answer to its
	// COMMIT is lost (TX-10).
	xid int64
	be  backend
}

var _ driver.Tx = (*Tx)(nil)

// Begin starts a write transaction on partition (TX-1). It first waits
// while another Tx of this Conn holds the partition. Then, when the Conn
// knows the partition's max seq, it returns a deferred Tx at once, having
// sent nothing (see Tx); otherwise it opens the engine transaction in one
// round trip: BEGIN, create the partition's row if missing, lock it
// (SELECT … FOR UPDATE, reading the committed max seq) and open the
// savepoint that CommitRejected rolls back to, waiting while a Tx of
// another Conn holds the row. Either wait lasts until ctx ends
// (CodeUnavailable); it never waits for other partitions. When ctx ends
// later, the Tx is rolled back at once and its connection and partition
// released (TX-6).
//
// A pooled connection the server has ended while it sat idle (a
// terminated backend, a restarted server, a proxy's idle timeout) is
// noticed only when Begin uses it. Begin commits nothing, so when its
// pipeline fails on a connection that is now closed, the server has rolled
// back whatever of it ran, and Begin retries on another connection: at
// most once per connection the pool can hold, plus one fresh one. ctx's
// end, and every failure of a live connection (a lock timeout, a
// deadlock), is returned at once.
func (c *Conn) Begin(ctx context.Context, partition string) (driver.Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.replica {
		return nil, errReplica("postgres: begin")
	}
	if err := ctx.Err(); err != nil { // a deferred Begin sends nothing that would notice
		return nil, driver.Wrap(driver.CodeUnavailable, err, "postgres: begin: context ended")
	}
	gate, err := c.enterGate(ctx, partition)
	if err != nil {
		return nil, err
	}
	if gate.Known {
		t := &Tx{c: c, partition: partition, beginCtx: ctx, deferred: true, baseSeq: gate.V}
		if err := t.track(ctx, gate); err != nil {
			return nil, err
		}
		return t, nil
	}
	t, err := c.beginLive(ctx, partition, gate, nil)
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: begin")
	}
	return t, nil
}

// enterGate waits until no other Tx of the Conn holds partition (TX-1)
// and holds it; ctx ending first: CodeUnavailable.
func (c *Conn) enterGate(ctx context.Context, partition string) (partgate.Entered[int64], error) {
	gate, err := c.gates.Enter(ctx, partition)
	if err != nil {
		return gate, driver.Wrap(driver.CodeUnavailable, err,
			"postgres: begin: the context ended while another transaction of the partition was open (TX-1)")
	}
	return gate, nil
}

// beginLive opens the engine transaction of a Tx holding gate (Begin,
// BeginPush): one attempt per connection the pool can hold, plus one, as
// long as each fails on a connection that is now closed. On failure it
// leaves the gate.
func (c *Conn) beginLive(ctx context.Context, partition string, gate partgate.Entered[int64], queue func(b *pgx.Batch)) (*Tx, error) {
	for attempt := int32(0); ; attempt++ {
		t, retry, err := c.begin(ctx, partition, queue)
		if err == nil {
			if err := t.track(ctx, gate); err != nil {
				return nil, err
			}
			return t, nil
		}
		if !retry || ctx.Err() != nil || attempt >= c.pool.Config().MaxConns {
			c.gates.Leave(gate, 0, false, false)
			return nil, err
		}
	}
}

// queueBegin queues Begin's statements: BEGIN, the partition's row, its
// lock (scanned by readBegin) and the savepoint CommitRejected rolls back to.
func queueBegin(b *pgx.Batch, partition string) {
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(sqlEnsurePartition, partition)
	b.Queue(sqlLockPartition, partition)
	b.Queue(sqlSavepointTx)
}

// readBegin reads the results of queueBegin's statements: the locked max
// seq, the transaction's id and its backend.
func readBegin(br pgx.BatchResults) (maxSeq, xid int64, be backend, err error) {
	if _, err = br.Exec(); err == nil {
		if _, err = br.Exec(); err == nil {
			if err = br.QueryRow().Scan(&maxSeq, &xid, &be.pid, &be.start); err == nil {
				_, err = br.Exec()
			}
		}
	}
	return maxSeq, xid, be, err
}

// begin is one attempt of Begin. retry reports that it failed on a
// connection that is now closed, so nothing of it can have run. queue, if
// set, adds reads to Begin's pipeline, after its savepoint (BeginPush).
// The Tx it returns is not tracked yet (track).
func (c *Conn) begin(ctx context.Context, partition string, queue func(b *pgx.Batch)) (_ *Tx, retry bool, _ error) {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, false, c.mapErr(ctx, err, "postgres: begin: acquire a connection")
	}
	t := &Tx{c: c, partition: partition, beginCtx: ctx, pc: pc}
	b := &pgx.Batch{}
	queueBegin(b, partition)
	if queue != nil {
		queue(b)
	}
	br := pc.SendBatch(ctx, b)
	t.baseSeq, t.xid, t.be, err = readBegin(br)
	if err == nil {
		rememberBackend(pc.Conn().PgConn(), t.be)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dead := pc.Conn().IsClosed()
		t.release(true)
		return nil, dead, err
	}
	t.locked = true
	return t, false, nil
}

// track holds gate for t, records t as open (Close rolls it back, ERR-4)
// and watches ctx: when it ends before the Tx does, the Tx is rolled back
// and released at once (TX-6).
func (t *Tx) track(ctx context.Context, gate partgate.Entered[int64]) error {
	t.gate = gate
	if !t.c.txs.Add(t) { // Close ran meanwhile
		t.release(true)
		return errClosed()
	}
	t.stop = context.AfterFunc(ctx, func() {
		t.state.Lock()
		defer t.state.Unlock()
		if !t.released {
			t.state.Abort()
			t.release(true)
		}
	})
	return nil
}

// Partition returns the partition the Tx writes.
func (t *Tx) Partition() string { return t.partition }

// release rolls the engine transaction back (if rollback) on a context of
// its own, returns the connection to the pool, which discards it if it
// is not idle, and leaves the partition's gate, telling it the
// partition's max seq when it is certain: after Commit or CommitRejected
// landed (ended), after a rollback under the lock (the max is unchanged),
// or when nothing was sent (the known max stands). Called with the Tx's
// lock held, or before t is shared.
func (t *Tx) release(rollback bool) {
	if t.released {
		return
	}
	t.released = true
	if t.stop != nil {
		t.stop()
	}
	seq, known := t.endSeq, t.ended
	if t.pc == nil {
		seq, known = t.baseSeq, t.deferred
	} else {
		if rollback && !t.pc.Conn().IsClosed() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := t.pc.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
				_ = t.pc.Conn().Close(ctx)
			} else if !t.ended {
				// The max is unchanged, but a partition without commits may
				// have lost the row this Tx created: the next Tx ensures it.
				seq, known = t.baseSeq, t.locked && t.baseSeq > 0
			}
			cancel()
		}
		t.pc.Release()
	}
	t.c.gates.Leave(t.gate, seq, known, t.conflict)
	t.c.txs.Remove(t)
}

// op runs fn unless the Tx is finished (CodeTxFinished, TX-5) or aborted;
// an engine error or an ended context aborts the Tx: it is rolled back at
// once and every later call fails (TX-6). Logical errors (unknown table,
// invalid value, a unique collision) leave it usable.
func (t *Tx) op(ctx context.Context, fn func() error) error {
	// A Conn closed under the Tx rolled it back (ERR-4): t.c.check.
	e := txstate.Engine{Closed: t.c.check, IsAbort: isAbort, OnAbort: t.rollbackNow}
	return t.state.Do(ctx, e, func() error {
		if err := ctx.Err(); err != nil { // aborts the Tx (isAbort)
			return driver.Wrap(driver.CodeUnavailable, err, "postgres: context ended; the transaction was rolled back (TX-6)")
		}
		return fn()
	})
}

// abort aborts the Tx and rolls it back at once (TX-6). Called with the
// Tx's lock held.
func (t *Tx) abort() {
	t.state.Abort()
	t.rollbackNow()
}

// rollbackNow drops the buffered writes, rolls the engine transaction
// back and releases the Tx's connection and partition: what an aborted
// Tx does at once. Called with the Tx's lock held.
func (t *Tx) rollbackNow() {
	t.pending = nil
	t.release(true)
}

// isAbort reports whether err ended the engine transaction. A duplicate
// reaction key is a buffered enqueue that failed outside any savepoint:
// the engine transaction is gone, and RX-1 fails the whole Tx.
func isAbort(ctx context.Context, err error) bool {
	return txstate.IsAbort(ctx, err, driver.CodeDuplicateReactionKey)
}

// pipeline sends the pending writes, then extra, in one round trip, then
// lets read (if any) consume one more result queued by queue; a deferred
// Tx's Begin statements go first in the same round trip (open). It
// returns the index in extra of a failing statement (-1 if a pending
// write or the read failed, or nothing did).
func (t *Tx) pipeline(ctx context.Context, extra []stmt, query *stmt, read func(pgx.Rows) error) (int, error) {
	all := append(t.pending, extra...)
	t.pending = nil
	b := &pgx.Batch{}
	opening := t.deferred
	if opening {
		if err := t.acquire(ctx); err != nil {
			return -1, err
		}
		queueBegin(b, t.partition)
	}
	for _, s := range all {
		b.Queue(s.sql, s.args...)
	}
	if query != nil {
		b.Queue(query.sql, query.args...)
	}
	br := t.pc.SendBatch(ctx, b)
	if opening {
		if err := t.open(br); err != nil {
			_ = br.Close()
			if driver.CodeOf(err) == driver.CodeWriteConflict {
				t.abort() // the buffered writes carry seqs another commit took
			}
			return -1, err
		}
	}
	for i := range all {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return i - (len(all) - len(extra)), err
		}
	}
	if query != nil {
		rows, err := br.Query()
		if err == nil {
			for rows.Next() {
				if err = read(rows); err != nil {
					break
				}
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil {
			_ = br.Close()
			return -1, err
		}
	}
	return -1, br.Close()
}

// acquire takes the pool connection of a deferred Tx.
func (t *Tx) acquire(ctx context.Context) error {
	pc, err := t.c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	t.pc = pc
	return nil
}

// open reads the Begin statements a deferred Tx sent first in br
// (pipeline): the Tx is no longer deferred. The locked max seq replaces
// the known one; when it differs and seqs were handed out already, the
// Tx is rolled back: CodeWriteConflict (TX-9), nothing written.
func (t *Tx) open(br pgx.BatchResults) error {
	t.deferred = false
	maxSeq, xid, be, err := readBegin(br)
	if err != nil {
		return err
	}
	rememberBackend(t.pc.Conn().PgConn(), be)
	known := t.baseSeq
	t.baseSeq, t.xid, t.be, t.locked = maxSeq, xid, be, true
	if len(t.seqs) > 0 && maxSeq != known {
		t.conflict = true
		return errSeqConflict()
	}
	return nil
}

// firstCommit is the Tx's first commit in the log, nil when it appended
// none (or CommitRejected dropped them).
func (t *Tx) firstCommit() *commitMark {
	if len(t.seqs) == 0 {
		return nil
	}
	return &commitMark{partition: t.partition, seq: t.seqs[0], token: t.token}
}

// errSeqConflict: a deferred Tx allocated seqs from a max seq that another
// Conn's commit has moved on since (TX-9).
func errSeqConflict() error {
	return &driver.Error{Code: driver.CodeWriteConflict, OpIndex: -1,
		Err:     errors.New("the partition's max seq moved"),
		Message: "postgres: another store committed in the partition since this one last did; nothing was written, retry the transaction", Rule: "TX-9"}
}

// read runs one query in the Tx after the pending writes (TX-3), calling
// fn for each row.
func (t *Tx) read(ctx context.Context, what, q string, args []any, fn func(pgx.Rows) error) error {
	_, err := t.pipeline(ctx, nil, &stmt{q, args}, fn)
	return t.c.mapErr(ctx, err, what)
}

// GetRow reads a row, seeing the Tx's own writes (TX-3).
func (t *Tx) GetRow(ctx context.Context, table, id string) (row driver.Row, found bool, err error) {
	err = t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		return t.read(ctx, "postgres: read a row", x.get, []any{t.partition, id}, func(r pgx.Rows) error {
			row, err = x.decodeRow(r)
			found = err == nil
			return err
		})
	})
	return row, found, err
}

// ScanRows scans rows, seeing the Tx's own writes (TX-3).
func (t *Tx) ScanRows(ctx context.Context, q driver.ScanQuery) (rows []driver.Row, err error) {
	err = t.op(ctx, func() error {
		x, query, args, none, err := t.c.scanQuery(t.partition, q)
		if err != nil || none {
			return err
		}
		return t.read(ctx, "postgres: scan rows", query, args, func(r pgx.Rows) error {
			row, err := x.decodeRow(r)
			rows = append(rows, row)
			return err
		})
	})
	return rows, err
}

// GetPushResult reads a push result, seeing one staged in the Tx (TX-3).
func (t *Tx) GetPushResult(ctx context.Context, clientID, clientCommitID string) (r driver.PushResult, found bool, err error) {
	err = t.op(ctx, func() error {
		var text string
		if err := t.read(ctx, "postgres: read a push result", sqlSelectPushResult, []any{t.partition, clientID, clientCommitID},
			func(rows pgx.Rows) error { found = true; return rows.Scan(&text) }); err != nil {
			return err
		}
		if found {
			r, err = driver.DecodePushResult([]byte(text))
			if err != nil {
				found = false
			}
		}
		return err
	})
	return r, found, err
}

// UpsertRow creates or fully replaces the row (ROW-1, ROW-2). For a table
// without a unique declared index the write is buffered (it cannot fail
// on valid input). Otherwise it runs at once inside a savepoint: a
// collision fails with CodeConstraintViolation, is rolled back alone, and
// the Tx stays usable (SCH-10, TX-8). Errors: CodeUnknownTable.
func (t *Tx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return t.op(ctx, func() error {
		x, args, err := t.rowArgs(table, row)
		if err != nil {
			return err
		}
		if !x.unique {
			t.stageUpsert(x, row.ID, args, false)
			return nil
		}
		at, err := t.pipeline(ctx, []stmt{{sqlSavepointOp, nil}, {x.upsert, args}, {sqlReleaseOp, nil}}, nil, nil)
		if err == nil {
			return nil
		}
		err = t.c.mapErr(ctx, err, "postgres: upsert a row")
		if at == 1 && driver.CodeOf(err) == driver.CodeConstraintViolation {
			// Simple protocol: the aborted transaction accepts no Parse.
			if _, rerr := t.pc.Exec(ctx, sqlRollbackToOp+"; "+sqlReleaseOp, pgx.QueryExecModeSimpleProtocol); rerr != nil {
				return t.c.mapErr(ctx, rerr, "postgres: recover from a unique collision")
			}
		}
		return err
	})
}

// rowArgs returns the table of a row's write and its upsertArgs.
// Errors: CodeUnknownTable, those of upsertArgs.
func (t *Tx) rowArgs(name string, row driver.Row) (*table, []any, error) {
	x, err := t.c.state.Table(name)
	if err != nil {
		return nil, nil, err
	}
	args, err := x.upsertArgs(t.partition, row)
	return x, args, err
}

// upsertRun is the multi-row write being staged: pending[at] holds n
// rows of table x (x.upsertN(n), or x.insertN(n) when insert), whose ids
// are ids.
type upsertRun struct {
	x      *table
	insert bool
	at, n  int
	ids    map[string]struct{}
}

// sql is the statement of r's rows.
func (r *upsertRun) sql() string {
	if r.insert {
		return r.x.insertN(r.n)
	}
	return r.x.upsertN(r.n)
}

// stageUpsert buffers the upsert of one row (args: upsertArgs), or its
// create when insert (UpsertRowGuarded at base 0). Adjacent writes of one
// kind to one table share one statement (upsertN, insertN) of up to
// x.upsertRows() rows and distinct ids, applied in order, so the state is
// the single-row statements': one statement for W1's 10 rows instead of
// 10. Anything buffered in between (a delete, blob refs, a commit)
// starts a new statement, so the order of writes is kept. Called with
// the Tx's lock held.
func (t *Tx) stageUpsert(x *table, id string, args []any, insert bool) {
	r := &t.run
	if r.x == x && r.insert == insert && r.at == len(t.pending)-1 && r.n < x.upsertRows() && t.pending[r.at].sql == r.sql() {
		if _, dup := r.ids[id]; !dup {
			r.n++
			r.ids[id] = struct{}{}
			p := &t.pending[r.at]
			p.sql, p.args = r.sql(), append(p.args, args...)
			return
		}
	}
	*r = upsertRun{x: x, insert: insert, at: len(t.pending), n: 1, ids: map[string]struct{}{id: {}}}
	t.pending = append(t.pending, stmt{r.sql(), args})
}

// DeleteRow removes the row and clears its blob references (buffered); a
// missing row is a no-op (ROW-3, BLOB-1).
func (t *Tx) DeleteRow(ctx context.Context, table, id string) error {
	return t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		t.pending = append(t.pending, stmt{x.delete, []any{t.partition, id, table}}, // ROW-5: keeps the tombstone
			stmt{sqlBlobRefsClearRow, []any{t.partition, table, id}}) // BLOB-1
		return nil
	})
}

// RowTombstone reads the id's tombstone, seeing the Tx's own writes
// (ROW-5, TX-3): the row's version while it exists, else the version it
// had when last deleted, else 0.
func (t *Tx) RowTombstone(ctx context.Context, table, id string) (v int64, err error) {
	err = t.op(ctx, func() error {
		x, err := t.c.state.Table(table)
		if err != nil {
			return err
		}
		return t.read(ctx, "postgres: read a tombstone", x.tombstone, []any{t.partition, id, table}, func(r pgx.Rows) error {
			return r.Scan(&v)
		})
	})
	return v, err
}

// AppendCommit allocates the next seq of the partition — the committed max
// read under the partition lock, plus the commits this Tx appended — and
// buffers the commit, its changes and its change-scope entries (three
// statements whatever the commit's size). The counter is written at
// Commit, so a rollback or CommitRejected consumes nothing (SEQ-1…SEQ-3).
func (t *Tx) AppendCommit(ctx context.Context, in driver.CommitInput) (int64, error) {
	ins, err := changeStatements(in.Changes)
	if err != nil {
		return 0, err
	}
	return txstate.Value(ctx, t.op, func() (int64, error) {
		seq := t.baseSeq + int64(len(t.seqs)) + 1
		var token any // NULL on every commit but the Tx's first
		if len(t.seqs) == 0 {
			t.token = rand.Int64N(math.MaxInt64) + 1
			token = t.token
		}
		t.pending = append(t.pending, stmt{sqlInsertCommit, []any{t.partition, seq, in.ClientID, in.ClientCommitID, in.ActorID, in.CreatedAtMs, token}})
		for _, s := range ins {
			t.pending = append(t.pending, stmt{s.sql, append([]any{t.partition, seq}, s.args...)})
		}
		t.seqs = append(t.seqs, seq)
		return seq, nil
	})
}

// PutPushResult buffers r; the insert keeps a result already stored or
// staged under the key: first writer wins (PR-3).
func (t *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.op, func(text []byte) error {
		t.pending = append(t.pending, stmt{sqlInsertPushResult, []any{t.partition, clientID, clientCommitID, string(text)}})
		return nil
	})
}

// BindClient buffers the binding of clientID to actorID (CR-7): the
// binding record's insert, which waits for a racing insert of the same
// key to end, then a guard that fails the transaction
// (CodeClientActorMismatch) when the record is another actor's. They go
// out with the next round trip of the Tx, at the latest with Commit's
// pipeline: no round trip of their own.
func (t *Tx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	return t.op(ctx, func() error {
		t.bind = []stmt{{sqlBindClient, []any{t.partition, clientID, actorID, atMs}},
			{sqlBindGuard, []any{t.partition, clientID, actorID}}}
		t.pending = append(t.pending, t.bind...)
		return nil
	})
}

// CommitRejected drops the buffered writes, rolls back to the savepoint
// opened at Begin (after the partition lock, so the partition is never
// released), stores r as PutPushResult does and commits — one round trip
// (TX-8). Its outcome is reported as Commit's (TX-10).
func (t *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	text, encErr := driver.EncodePushResult(r)
	return t.finish(ctx, func() error {
		if encErr != nil {
			return encErr
		}
		t.pending, t.seqs = nil, nil
		if t.deferred { // open the engine transaction: the rejection must wait for the partition's lock
			if _, err := t.pipeline(ctx, nil, nil, nil); err != nil {
				return err
			}
		}
		rejected := append([]stmt{{sqlRollbackToTx, nil}}, t.bind...) // the binding stays (CR-7)
		return t.commitWith(ctx, t.baseSeq, append(rejected,
			stmt{sqlInsertPushResult, []any{t.partition, clientID, clientCommitID, string(text)}}))
	})
}

// Commit sends the buffered writes, the partition's new max seq, the
// fanout NOTIFY of each appended commit (delivered by the server only if
// the transaction commits, FAN-1) and COMMIT in one round trip (TX-2).
// A deferred Tx that appended commits sends its Begin in the same round
// trip, guarded (sqlGuardSeq): CodeWriteConflict when another Conn
// committed in the partition since this Conn learnt its max seq, nothing
// written (TX-9). A deferred Tx without commits opens its engine
// transaction first (one more round trip) if it wrote anything, and
// sends nothing if it did not. It returns when the server answers or ctx
// ends, whichever is first.
//
// Outcome (TX-10): nil only if the transaction committed. When the answer
// was lost after the pipeline went out (ctx ended, the connection broke),
// Commit asks the server on a connection of its own, outside the pool and
// within outcomeLookupTimeout, for the transaction's status
// (pg_xact_status of the id read at Begin, or in Commit's own pipeline);
// a transaction still in progress has its backend — the one the server
// reported with the id, on the same server incarnation — ended
// (pg_terminate_backend: a commit already in its critical section still
// completes) and is asked about again; after a server restart the Tx's
// first commit in the log decides (settleCommit). A deferred Tx whose
// answer was lost before its id arrived is settled by ending its
// connection's backend, when that can be identified for sure, and then
// looking for its first commit in the log by the random token that commit
// carries (settleByCommit: never another store's commit at the same seq,
// whatever its client key); behind a pooler it cannot be, and the answer
// is CodeCommitOutcomeUnknown. Then nil if it committed, CodeUnavailable
// if it was rolled back (nothing written), CodeCommitOutcomeUnknown if
// the look-up failed. Every other error means nothing was written. The Tx
// is finished afterwards.
func (t *Tx) Commit(ctx context.Context) error {
	return t.finish(ctx, func() error {
		n := len(t.seqs)
		if t.deferred && n == 0 {
			if len(t.pending) == 0 {
				t.endSeq, t.ended = t.baseSeq, true
				return nil // nothing to write
			}
			if _, err := t.pipeline(ctx, nil, nil, nil); err != nil {
				return err
			}
		}
		var extra []stmt
		last := t.baseSeq
		if n > 0 {
			last = t.seqs[n-1]
			if !t.deferred {
				extra = append(extra, stmt{sqlSetMaxSeq, []any{t.partition, last}})
			}
			frame, err := EncodeFrame(t.partition, last)
			if err != nil {
				return err
			}
			extra = append(extra, stmt{sqlNotify, []any{notifyChannel, frame}})
		}
		if t.deferred {
			return t.commitDeferred(ctx, last, extra)
		}
		return t.commitWith(ctx, last, extra)
	})
}

// commitWith sends the pending writes, extra and COMMIT, and checks that
// the server committed; the partition's max seq is then last.
func (t *Tx) commitWith(ctx context.Context, last int64, extra []stmt) error {
	b := &pgx.Batch{}
	for _, s := range append(t.pending, extra...) {
		b.Queue(s.sql, s.args...)
	}
	t.pending = nil
	var tag string
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error { tag = ct.String(); return nil })
	if err := t.pc.SendBatch(ctx, b).Close(); err != nil {
		if tag == "COMMIT" {
			return nil // the server said it committed; only what followed was lost
		}
		var pe *pgconn.PgError
		if (errors.As(err, &pe) && pe.SeverityUnlocalized == "ERROR") || pgconn.SafeToRetry(err) {
			// The server answered with an error (the transaction is
			// aborted), or nothing was sent: nothing was written. A FATAL
			// (a terminated backend) is no such answer: the backend
			// finishes a commit it has begun before it acts on the
			// signal, so it is settled like a lost answer.
			return err
		}
		if err := t.c.settleCommit(ctx, t.xid, t.be, t.firstCommit(), err); err != nil {
			return err
		}
		t.endSeq, t.ended = last, true
		return nil
	}
	if tag != "COMMIT" {
		return driver.Errorf(driver.CodeUnavailable, "postgres: the server rolled the transaction back; nothing was written (TX-6)")
	}
	t.endSeq, t.ended = last, true
	return nil
}

// commitDeferred sends a deferred Tx whole in one pipeline: BEGIN, the
// guard (the row lock, max seq baseSeq → last, the transaction's id), the
// buffered writes, extra, COMMIT. A guard that finds another max fails
// the pipeline before anything is written: CodeWriteConflict (TX-9).
// When the answer is lost, the outcome is settled as commitWith's, by the
// transaction's id if it arrived, else by the Tx's first commit
// (settleByCommit). The Tx has appended at least one commit.
//
// A pool connection that died while idle (the server restarted or ended
// its backend less than the pool's health-check period ago) fails the
// pipeline before it answers anything. The Tx is then known to have
// written nothing (nothing was sent, or settleByCommit found no commit
// once the backend was gone), and it read nothing from the engine (it is
// deferred), so the same pipeline is sent again on another connection:
// one attempt per connection the pool can hold, plus one, as Begin does
// (beginLive), while ctx lasts.
func (t *Tx) commitDeferred(ctx context.Context, last int64, extra []stmt) error {
	stmts := append(t.pending, extra...)
	t.pending = nil
	t.deferred = false
	for attempt := int32(0); ; attempt++ {
		again, err := t.sendDeferred(ctx, last, stmts)
		if !again || ctx.Err() != nil || attempt >= t.c.pool.Config().MaxConns {
			return err
		}
		t.pc.Release() // closed: the pool drops it
		t.pc = nil
	}
}

// sendDeferred is one attempt of commitDeferred. again reports that it
// failed on a connection that is now closed, before any answer, and wrote
// nothing.
func (t *Tx) sendDeferred(ctx context.Context, last int64, stmts []stmt) (again bool, err error) {
	if err := t.acquire(ctx); err != nil {
		return false, err
	}
	// The connection's backend, if the server reported it before and it
	// is fixed for the connection's life (settleByCommit).
	connBackend, direct := directBackend(t.pc.Conn().PgConn())
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(sqlGuardSeq, t.partition, t.baseSeq, last)
	for _, s := range stmts {
		b.Queue(s.sql, s.args...)
	}
	b.Queue("COMMIT")
	br := t.pc.SendBatch(ctx, b)
	gotXid, guardFailed := false, false
	var tag pgconn.CommandTag
	_, err = br.Exec()
	answered := err == nil
	if err == nil {
		var one int
		if err = br.QueryRow().Scan(&t.xid, &t.be.pid, &t.be.start, &one); err == nil {
			gotXid = true
			rememberBackend(t.pc.Conn().PgConn(), t.be)
		} else {
			var pe *pgconn.PgError
			guardFailed = errors.As(err, &pe) && pe.Code == "22012"
		}
	}
	for i := 0; err == nil && i < b.Len()-3; i++ {
		_, err = br.Exec()
	}
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case tag.String() == "COMMIT": // the server said it committed; only what followed may be lost
		t.locked, t.endSeq, t.ended = true, last, true
		return false, nil
	case err == nil:
		return false, driver.Errorf(driver.CodeUnavailable, "postgres: the server rolled the transaction back; nothing was written (TX-6)")
	case guardFailed:
		t.conflict = true
		return false, errSeqConflict()
	}
	deadBefore := !answered && t.pc.Conn().IsClosed()
	var pe *pgconn.PgError
	if (errors.As(err, &pe) && pe.SeverityUnlocalized == "ERROR") || pgconn.SafeToRetry(err) {
		if gotXid {
			t.locked = true // the guard held: the max seq is baseSeq until the rollback
		}
		return deadBefore && pgconn.SafeToRetry(err), err // see commitWith
	}
	if gotXid {
		err = t.c.settleCommit(ctx, t.xid, t.be, t.firstCommit(), err)
	} else {
		err = t.c.settleByCommit(ctx, t.pc.Conn().PgConn(), connBackend, direct, *t.firstCommit(), err)
	}
	if err != nil {
		// CodeUnavailable from settleByCommit: the backend is gone and
		// the commit is not in the log.
		return deadBefore && !gotXid && driver.CodeOf(err) == driver.CodeUnavailable, err
	}
	t.endSeq, t.ended = last, true
	return false, nil
}

// finish runs fn (which ends the engine transaction on success) once and
// releases the connection; on failure it rolls back. Afterwards the Tx is
// finished (TX-5).
func (t *Tx) finish(ctx context.Context, fn func() error) error {
	t.state.Lock()
	defer t.state.Unlock()
	// Begin's ctx too: its end rolls the Tx back from a context.AfterFunc,
	// which may not have run yet (TX-6; d1http checks it the same way).
	if err := t.state.End(txstate.Engine{Closed: t.c.check}, t.rollbackNow, ctx, t.beginCtx); err != nil {
		return err
	}
	if err := fn(); err != nil {
		t.release(true)
		return t.c.mapErr(ctx, err, "postgres: commit")
	}
	t.release(false)
	return nil
}

// Rollback discards every write of the Tx (TX-2); a second call, or one
// after Commit or after the Conn's Close (which rolled it back, ERR-4), is
// a no-op (TX-5).
func (t *Tx) Rollback(ctx context.Context) error {
	t.state.Lock()
	defer t.state.Unlock()
	if !t.state.Finish() {
		t.rollbackNow()
	}
	return nil
}
