package memdriver

import (
	"context"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// Tx is a write transaction on one partition. It holds the partition's
// write lock from Begin to its end (TX-1) and stages every write in a
// copy-on-write draft of the partition (TX-3); Commit publishes the draft
// at once (TX-2), Rollback drops it. It implements driver.Tx and the Tx
// half of index-lookup (driver.IndexLookupTx).
type Tx struct {
	c         *Conn
	s         *store
	partition string

	mu       gosync.Mutex // guards the fields below: the Begin context can end the Tx from another goroutine
	draft    *draft
	unlock   func()               // releases the partition's write lock
	stop     func() bool          // stops watching the Begin context
	finished error                // nil while open, then what every method returns
	bind     *driver.ClientRecord // the binding BindClient staged, kept by CommitRejected (CR-7)
}

var (
	_ driver.Tx            = (*Tx)(nil)
	_ driver.IndexLookupTx = (*Tx)(nil)
)

var errFinished = driver.Errorf(driver.CodeTxFinished, "memory: the transaction has finished (TX-5)")

// begin takes p's write lock and starts a Tx on a draft of its committed
// state. When ctx ends before Commit, the Tx is rolled back at once and
// its lock released (TX-6), as database/sql's BeginTx does; when c is
// closed, too (ERR-4).
func begin(ctx context.Context, c *Conn, p string) (*Tx, error) {
	s := c.s
	unlock, err := s.lock(ctx, p)
	if err != nil {
		return nil, err
	}
	tx := &Tx{c: c, s: s, partition: p, draft: newDraft(s.current(p)), unlock: unlock}
	if !c.track(tx) { // Close ran meanwhile
		unlock()
		return nil, errClosed
	}
	tx.mu.Lock() // the callback may run at once: let it wait for tx.stop
	defer tx.mu.Unlock()
	tx.stop = context.AfterFunc(ctx, func() {
		tx.mu.Lock()
		defer tx.mu.Unlock()
		tx.end(driver.Wrap(driver.CodeUnavailable, ctx.Err(), "memory: the transaction's context ended; it was rolled back (TX-6)"))
	})
	return tx, nil
}

// end finishes the Tx: drops the draft, releases the lock, and makes every
// later call return reason. The caller holds tx.mu.
func (tx *Tx) end(reason error) {
	if tx.finished != nil {
		return
	}
	tx.finished = reason
	tx.draft = nil
	tx.stop()
	tx.unlock()
	tx.c.forget(tx)
}

// closedOr returns errClosed once the Conn is closed (ERR-4), else the
// reason the Tx finished (nil while open). The caller holds tx.mu.
func (tx *Tx) closedOr() error {
	if tx.c.closed.Load() {
		return errClosed
	}
	return tx.finished
}

// do runs f on the draft while the Tx is open and ctx has not ended.
func (tx *Tx) do(ctx context.Context, f func(d *draft) error) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.closedOr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "memory: context ended")
	}
	return f(tx.draft)
}

// Partition returns the partition the Tx writes.
func (tx *Tx) Partition() string { return tx.partition }

// GetRow reads a row as the Tx sees it (TX-3).
func (tx *Tx) GetRow(ctx context.Context, table, id string) (row driver.Row, found bool, err error) {
	err = tx.do(ctx, func(d *draft) error {
		t, err := tx.s.table(table)
		if err == nil {
			row, found = getRow(&d.p, t, id)
		}
		return err
	})
	return row, found, err
}

// ScanRows scans rows as the Tx sees them (TX-3).
func (tx *Tx) ScanRows(ctx context.Context, q driver.ScanQuery) (rows []driver.Row, err error) {
	err = tx.do(ctx, func(d *draft) error {
		t, err := tx.s.table(q.Table)
		if err == nil {
			rows = scanRows(&d.p, t, q)
		}
		return err
	})
	return rows, err
}

// ScanRowsByIndex looks rows up through an index as the Tx sees them (IXL-3).
func (tx *Tx) ScanRowsByIndex(ctx context.Context, q driver.IndexQuery) (rows []driver.Row, err error) {
	err = tx.do(ctx, func(d *draft) error {
		t, err := tx.s.table(q.Table)
		if err == nil {
			rows, err = lookupRows(&d.p, t, q)
		}
		return err
	})
	return rows, err
}

// GetPushResult reads a push result, staged ones included (TX-3).
func (tx *Tx) GetPushResult(ctx context.Context, clientID, clientCommitID string) (r driver.PushResult, found bool, err error) {
	err = tx.do(ctx, func(d *draft) error {
		r, found, err = getPushResult(&d.p, clientID, clientCommitID)
		return err
	})
	return r, found, err
}

// UpsertRow creates or replaces the row (ROW-1). A row that would share
// the values of a unique index with another row of the partition fails
// with CodeConstraintViolation and changes nothing (SCH-10); as in SQL, a
// NULL never collides.
func (tx *Tx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return tx.do(ctx, func(d *draft) error {
		t, err := tx.s.table(table)
		if err != nil {
			return err
		}
		for _, ix := range t.Indexes {
			if ix.Unique && collides(ix, d.p.rows[table], row) {
				return driver.Errorf(driver.CodeConstraintViolation,
					"memory: unique index %s of table %s already holds the row's value (SCH-10)", ix.Name, table)
			}
		}
		d.rowsForWrite(table)[row.ID] = cloneRow(row)
		return nil
	})
}

// collides reports whether another row than row has row's values in the
// columns of ix, none of them NULL.
func collides(ix driver.Index, rows map[string]driver.Row, row driver.Row) bool {
	for _, col := range ix.Columns {
		if row.Values[col] == nil {
			return false
		}
	}
	for id, other := range rows {
		if id != row.ID && sameIndexKey(ix, other.Values, row.Values) {
			return true
		}
	}
	return false
}

// DeleteRow removes the row; a missing row is a no-op (ROW-3).
func (tx *Tx) DeleteRow(ctx context.Context, table, id string) error {
	return tx.do(ctx, func(d *draft) error {
		if _, err := tx.s.table(table); err != nil {
			return err
		}
		if row, ok := d.p.rows[table][id]; ok {
			d.tombsForWrite(table)[id] = row.ServerVersion // ROW-5
			delete(d.rowsForWrite(table), id)
		}
		return nil
	})
}

// RowTombstone returns the version the row had when last deleted, 0 when
// never (ROW-5), as the Tx sees it (TX-3).
func (tx *Tx) RowTombstone(ctx context.Context, table, id string) (v int64, err error) {
	err = tx.do(ctx, func(d *draft) error {
		if _, err := tx.s.table(table); err != nil {
			return err
		}
		v = d.p.tombs[table][id]
		return nil
	})
	return v, err
}

// AppendCommit stages a commit numbered max + 1 (SEQ-1, SEQ-3); the
// number is used only if the Tx commits, since the counter is part of the
// draft (SEQ-2).
func (tx *Tx) AppendCommit(ctx context.Context, c driver.CommitInput) (seq int64, err error) {
	err = tx.do(ctx, func(d *draft) error {
		seq = d.p.maxSeq + 1
		d.appendCommit(driver.Commit{Seq: seq, ClientID: c.ClientID, ClientCommitID: c.ClientCommitID,
			ActorID: c.ActorID, CreatedAtMs: c.CreatedAtMs, Changes: cloneChanges(c.Changes)})
		d.p.maxSeq = seq
		return nil
	})
	return seq, err
}

// PutPushResult stages r unless a result is stored or staged under the
// key: the first writer wins (PR-3).
func (tx *Tx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return tx.do(ctx, func(d *draft) error { return putResult(d, clientID, clientCommitID, r) })
}

func putResult(d *draft, clientID, clientCommitID string, r driver.PushResult) error {
	key := resultKey{clientID, clientCommitID}
	if _, ok := d.p.results[key]; ok {
		return nil
	}
	data, err := driver.EncodePushResult(r)
	if err != nil {
		return err
	}
	d.resultsForWrite()[key] = data
	return nil
}

// BindClient binds clientID to actorID (CR-7): it stages the binding
// record when the partition holds none; another actor's record →
// CodeClientActorMismatch. The Tx holds the partition's lock, so nothing
// binds the client between the check and the write.
func (tx *Tx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	return tx.do(ctx, func(d *draft) error {
		if rec, ok := d.p.clients[clientID]; ok {
			if rec.ActorID != actorID {
				return driver.Errorf(driver.CodeClientActorMismatch, "memory: the client id is bound to another actor (CR-7)")
			}
			return nil
		}
		rec := driver.ClientRecord{ClientID: clientID, ActorID: actorID, Cursor: -1, UpdatedAtMs: atMs}
		d.clientsForWrite()[clientID] = rec
		tx.bind = &rec
		return nil
	})
}

// CommitRejected drops every staged write, stores r (first writer wins)
// and finishes the Tx, all while holding the partition's lock (TX-8).
func (tx *Tx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.closedOr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		tx.end(driver.Wrap(driver.CodeUnavailable, err, "memory: context ended; the transaction was rolled back (TX-6)"))
		return tx.finished
	}
	d := newDraft(tx.s.current(tx.partition))
	if tx.bind != nil { // the binding stays (CR-7)
		if _, ok := d.p.clients[tx.bind.ClientID]; !ok {
			d.clientsForWrite()[tx.bind.ClientID] = *tx.bind
		}
	}
	if err := putResult(d, clientID, clientCommitID, r); err != nil {
		return err
	}
	tx.s.publish(tx.partition, d, nil)
	tx.end(errFinished)
	return nil
}

// Commit publishes every staged write at once (TX-2). With ctx ended, the
// Tx is rolled back instead and Commit fails (TX-6). Publishing is one
// in-memory step, so the outcome is never in doubt: nil means published,
// an error means nothing was (TX-10).
func (tx *Tx) Commit(ctx context.Context) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.closedOr(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		tx.end(driver.Wrap(driver.CodeUnavailable, err, "memory: context ended; the transaction was rolled back (TX-6)"))
		return tx.finished
	}
	tx.s.publish(tx.partition, tx.draft, nil)
	tx.end(errFinished)
	return nil
}

// Rollback drops every staged write (TX-2); once finished, it is a no-op
// (TX-5).
func (tx *Tx) Rollback(context.Context) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.end(errFinished)
	return nil
}
