package mysql

import (
	"bytes"
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/txstate"
)

// The push path's statements (docs/performance.md "Raw-loop ratios per
// engine"): go-sql-driver/mysql has no pipelining, so every
// statement is a round trip (a write, a read and a wake-up). A commit's
// upserts of one table, its changes and its change-scope entries are
// written with one multi-row INSERT each, every value bound, split by
// batchRows rows, maxPlaceholders and Conn.stmtBytes.
//
// Writes that cannot fail on a constraint — upserts of a table without a
// declared unique index, a commit's log (AppendCommit) and the push
// result (PutPushResult) — are not sent when made: the Tx keeps them, in
// order, and writes them before its next operation that reaches the
// engine (a read, any other write) or at Commit. A Tx whose writes all
// wait for Commit (a push's) therefore never needs the TX-8 savepoint,
// which is taken before the first write sent ahead of Commit
// (savepointFirst): W1's commit makes 8 round trips, as the raw loop
// does (9 with the savepoint). Guarded writes (guarded.go) are kept
// the same way; a guard that fails makes the statement that carries it
// fail, and the Tx with it (flushStaged).

// stage adds a row of x (args: x.insertArgs, size: their argBytes) to the upserts staged in
// the Tx; staged rows of another table, or ones the row would not fit
// beside, become a deferred statement first (no round trip). Unless
// guarded, x has no declared unique index, so its multi-row INSERT … ON DUPLICATE KEY
// UPDATE replaces only on the primary key (SCH-10) and cannot fail on a
// constraint; args bind no NULL to a non-nullable column. The caller
// holds the Tx's lock (t.state). An ended ctx (or Begin's, which rolls
// the engine transaction back) fails the call and aborts the Tx, as a
// statement run under it would (TX-6).
//
// guarded stages a guarded create (GW-1, guarded.go) instead, of any
// table: rows staged together are of one kind, written by x.insertRows, a
// plain multi-row INSERT that fails with 1062 when a key exists — stored,
// written or staged earlier by the Tx (its writes are sent in order), or
// twice in the statement — and the failure aborts the Tx (GW-2).
func (t *Tx) stage(ctx context.Context, x *table, args []any, size int, guarded bool) error {
	if err := t.live(ctx, "mysql: upsert row"); err != nil {
		return err
	}
	t.closeGuardedRun()
	if t.stageRows > 0 && (t.stageTable != x || t.stageGuarded != guarded || t.stageRows == x.maxRows ||
		t.stageBytes+size > t.c.stmtBytes) {
		t.deferStaged()
	}
	cloneBytes(args)
	t.stageTable, t.stageGuarded = x, guarded
	t.stageArgs = append(t.stageArgs, args...)
	t.stageRows++
	t.stageBytes += size
	return nil
}

// cloneBytes replaces the byte slices among args with copies: a kept
// write waits for Commit, past the caller's AppendCommit that logs its
// values, and must not see the caller's buffer change.
func cloneBytes(args []any) {
	for i, a := range args {
		if b, ok := a.([]byte); ok {
			args[i] = bytes.Clone(b)
		}
	}
}

// live fails a write the Tx keeps instead of sending (stage, AppendCommit,
// PutPushResult) when ctx or Begin's has ended, as a statement run under
// it would: the error aborts the Tx (TX-6), so the kept write never lands.
func (t *Tx) live(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return t.c.mapErr(ctx, err, what)
	}
	if t.beginCtx.Err() != nil {
		return txstate.ErrBeginEnded("mysql", sql.ErrTxDone)
	}
	return nil
}

// deferredStmt is a write the Tx keeps until its next operation that
// reaches the engine, or its Commit (flushStaged).
type deferredStmt struct {
	q    string
	args []any
	// log: a statement of a commit's log, whose constraint violation
	// means the reserved seq was taken (AppendCommit).
	log bool
	// guard: a guarded write (GW-1, GW-3) and how its failure shows;
	// want: the rows a guardMatch statement must match.
	guard guardKind
	want  int64
}

// guardKind is how a deferred guarded write reports that its guard did
// not hold (flushStaged): then nothing of the Tx is written (GW-2).
type guardKind uint8

// The zero guardKind is a write without a guard.
const (
	// guardDup: a plain INSERT whose 1062 on the primary key means a guard
	// failed (a row or a result exists): CodeWriteConflict. Used only
	// where the primary key is the only unique key.
	guardDup guardKind = iota + 1
	// guardMatch: an UPDATE that must match exactly want rows
	// (ClientFoundRows counts matched rows): fewer means a row is
	// missing, at another version or in other scopes — CodeWriteConflict.
	guardMatch
	// guardBind: bindClient, whose erBadNull means the client id is
	// bound to another actor — CodeClientActorMismatch (CR-7).
	guardBind
)

// deferStmt keeps a write for later, after the staged upserts (which
// become a deferred statement first, so the order of the Tx's writes is
// kept). args is the statement's own. The caller holds the Tx's lock.
func (t *Tx) deferStmt(q string, args []any, log bool) {
	t.deferGuarded(deferredStmt{q: q, args: args, log: log})
}

// deferGuarded keeps d for later, as deferStmt.
func (t *Tx) deferGuarded(d deferredStmt) {
	t.deferStaged()
	t.deferred = append(t.deferred, d)
}

// guardedRun is guarded updates (GW-1) of one table without a unique
// declared index, gathered in order, of distinct ids: one goes out as the
// table's guardedUpdate, several as two statements — a guard that matches
// them all (guardTouch) and the multi-row upsert that writes them — where
// one UPDATE each would cost a round trip each (closeGuardedRun).
type guardedRun struct {
	x     *table
	rows  [][]any // x.insertArgs of each row
	bases []int64
	bytes int
	ids   map[any]struct{}
}

// gatherGuarded adds the guarded update of a row of x (args: its
// insertArgs, size: their argBytes) to the run, after the staged upserts
// (deferred first, so the order of the Tx's writes is kept); a run of
// another table, full, or holding the id already is closed first. The
// caller holds the Tx's lock.
func (t *Tx) gatherGuarded(x *table, args []any, size int, base int64) {
	r := &t.grun
	id := args[x.pkArg]
	if len(r.rows) > 0 {
		_, dup := r.ids[id]
		if r.x != x || dup || len(r.rows) == x.maxRows || r.bytes+size > t.c.stmtBytes {
			t.closeGuardedRun()
		}
	}
	if t.stageRows > 0 {
		t.deferStaged() // the run is empty: upserts and a run are never open together
	}
	if len(r.rows) == 0 {
		*r = guardedRun{x: x, ids: map[any]struct{}{}}
	}
	r.rows, r.bases = append(r.rows, args), append(r.bases, base)
	r.bytes += size
	r.ids[id] = struct{}{}
}

// closeGuardedRun turns the gathered guarded updates into deferred
// statements (see guardedRun).
func (t *Tx) closeGuardedRun() {
	r := &t.grun
	if len(r.rows) == 0 {
		return
	}
	x, n := r.x, len(r.rows)
	if n == 1 {
		t.deferred = append(t.deferred, deferredStmt{q: x.guardedUpdate, args: x.guardedUpdateArgs(r.rows[0], r.bases[0]),
			guard: guardMatch, want: 1})
	} else {
		guard := []any{r.rows[0][0]} // the partition
		var rows []any
		for i, row := range r.rows {
			guard = append(guard, row[x.pkArg], r.bases[i])
			for _, c := range x.guardCols {
				guard = append(guard, row[c])
			}
			rows = append(rows, row...)
		}
		t.deferred = append(t.deferred, deferredStmt{q: x.guardTouch(n), args: guard, guard: guardMatch, want: int64(n)},
			deferredStmt{q: x.upsertRows[n], args: rows})
	}
	*r = guardedRun{}
}

// deferStaged turns the gathered guarded updates, or the staged upserts,
// into deferred statements.
func (t *Tx) deferStaged() {
	t.closeGuardedRun()
	if t.stageRows == 0 {
		return
	}
	x := t.stageTable
	// The statement takes the staged arguments over (no copy on the push
	// path): the next row staged starts a new slice.
	if t.stageGuarded && len(t.stageIDs) > 0 {
		// GW-1, ROW-5: base 0 is a row id with no tombstone either; the
		// guard matches no tombstone of the creates' ids.
		args := append([]any{t.partition, x.def.Name}, t.stageIDs...)
		t.deferred = append(t.deferred, deferredStmt{q: guardNoTombstonesSQL(len(t.stageIDs)), args: args, guard: guardMatch, want: 0})
	}
	d := deferredStmt{args: t.stageArgs}
	t.stageArgs = nil
	switch {
	case !t.stageGuarded:
		d.q = x.upsertRows[t.stageRows]
	case x.unique: // a 1062 may be a collision on the unique index: kept (GW-2)
		d.q = x.insertRows[t.stageRows]
	default:
		d.q, d.guard = x.insertRows[t.stageRows], guardDup
	}
	t.deferred = append(t.deferred, d)
	t.dropUpserts()
}

// flushStaged writes the deferred statements, then the staged upserts,
// in the order the Tx made them: one statement each. Any failure aborts
// the Tx, which then writes nothing (TX-6): the engine's or the
// context's; a commit's log colliding on its seq, a lost race
// (CodeWriteConflict, TX-9); a guarded write whose guard did not hold
// (CodeWriteConflict, or CodeConstraintViolation for a collision that may
// be on a unique declared index: GW-2). Ahead of Commit the first of them
// takes the TX-8 savepoint (t.exec). The caller holds the Tx's lock
// (t.state).
func (t *Tx) flushStaged(ctx context.Context) error {
	if len(t.deferred) == 0 && t.stageRows == 0 && len(t.grun.rows) == 0 {
		return nil
	}
	t.deferStaged() // after every deferred statement (deferStmt)
	var err error
	for _, d := range t.deferred {
		var res sql.Result
		if d.guard == guardBind {
			if err = t.execBind(ctx, d.args); err != nil {
				t.guardErr = err // Commit reports it
				break
			}
			continue
		}
		if res, err = t.exec(ctx, d.q, d.args...); err != nil {
			if d.log && driver.CodeOf(err) == driver.CodeConstraintViolation {
				// The seq this Tx reserved is taken: impossible on one
				// server (the partition row's lock serializes Begin), but
				// on a Galera node a concurrent commit of the partition
				// certified on another node is applied here before this Tx
				// is aborted for it. A lost race: nothing of this Tx will
				// be written (the error aborts it) and it may be run again
				// (TX-9).
				err = driver.Errorf(driver.CodeWriteConflict,
					"mysql: append commit: another node committed this partition's next seq first; nothing was written (TX-9)")
			}
			if driver.CodeOf(err) == driver.CodeConstraintViolation {
				// Only a guarded write can collide here (the others are
				// upserts on the primary key, or the log's, mapped above).
				if d.guard == guardDup {
					err = errGuard("a row or push result under the key exists")
				}
				t.guardErr = err // Commit reports it (GW-2)
			}
			break
		}
		if d.guard == guardMatch {
			n, rerr := res.RowsAffected()
			if rerr != nil {
				err = t.c.mapErr(ctx, rerr, "mysql: guarded upsert row")
				break
			}
			if n != d.want {
				err = errGuard("the row is missing, at another version or in other scopes")
				t.guardErr = err // Commit reports it (GW-2)
				break
			}
		}
	}
	t.dropStaged()
	if err != nil {
		t.state.Abort()
	}
	return err
}

// errClientBound is the failure of a client binding (CR-7): the Tx is
// aborted and writes nothing.
func errClientBound() error {
	return driver.Errorf(driver.CodeClientActorMismatch, "mysql: the client id is bound to another actor; nothing was written (CR-7)")
}

// errGuard is the error of a guarded write whose guard did not hold
// (GW-2): the Tx is aborted and writes nothing.
func errGuard(why string) error {
	return driver.Errorf(driver.CodeWriteConflict, "mysql: guarded write: %s; nothing of the transaction is written (GW-2)", why)
}

// dropStaged forgets the staged upserts and the deferred statements (the
// Tx discards them).
func (t *Tx) dropStaged() {
	t.dropUpserts()
	t.grun = guardedRun{}
	clear(t.deferred) // no references kept to the rows' values
	t.deferred = t.deferred[:0]
}

// dropUpserts forgets the staged upserts.
func (t *Tx) dropUpserts() {
	t.stageTable, t.stageGuarded, t.stageRows, t.stageBytes = nil, false, 0, 0
	t.stageIDs = t.stageIDs[:0]
	clear(t.stageArgs) // no references kept to the rows' values
	t.stageArgs = t.stageArgs[:0]
}

// savepointFirst takes the TX-8 savepoint CommitRejected rolls back to,
// unless it is taken or the Tx is finishing (Commit and CommitRejected
// write nothing CommitRejected would have to discard). Every statement
// that writes ahead of Commit runs after it (t.exec, EnqueueReactions,
// As). The caller holds the Tx's lock.
func (t *Tx) savepointFirst(ctx context.Context) error {
	if t.saved || t.finishing {
		return nil
	}
	if _, err := t.c.exec(ctx, t.tx, savepoint); err != nil {
		t.state.Abort() // the engine's or the context's: the Tx may be gone (TX-6)
		return t.c.mapErr(ctx, err, "mysql: savepoint")
	}
	t.saved = true
	return nil
}

// deferBatches keeps tuples (each one row of stmt, all of one width) as
// the multi-row statements stmt[n] (batchLen) for the Tx's next write
// (deferStmt); log as deferStmt's.
func (t *Tx) deferBatches(stmt *[batchRows + 1]string, tuples [][]any, log bool) {
	for len(tuples) > 0 {
		n := batchLen(tuples, batchRows, t.c.stmtBytes)
		args := make([]any, 0, n*len(tuples[0]))
		for _, tu := range tuples[:n] {
			args = append(args, tu...)
		}
		t.deferStmt(stmt[n], args, log)
		tuples = tuples[n:]
	}
}

// batchLen returns how many of tuples (at least 1 when there are any) the
// next statement carries: at most maxRows, their argBytes within
// maxBytes unless the first alone is larger.
func batchLen(tuples [][]any, maxRows, maxBytes int) int {
	n, size := 0, 0
	for n < len(tuples) && n < maxRows {
		s := argBytes(tuples[n])
		if n > 0 && size+s > maxBytes {
			break
		}
		size += s
		n++
	}
	return n
}

// packetSlack is what a statement packet needs besides its bound values
// (bytes): the header, the statement id, flags and type bytes of the
// parameters.
const packetSlack = 4096

// fitsPacket refuses args (one row, one logged change) whose values
// cannot travel in one statement under the server's max_allowed_packet:
// the server would drop the connection and the write would look
// retryable. CodeInvalidValue; nothing is sent. size is their argBytes.
func (c *Conn) fitsPacket(args []any, what string) (size int, err error) {
	size = argBytes(args)
	if size+packetSlack > c.maxPacket {
		return size, errPacket(what)
	}
	return size, nil
}

// argBytes estimates what args take in a statement packet (bytes).
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v) + 9
		case []byte:
			n += len(v) + 9
		default:
			n += 10
		}
	}
	return n
}
