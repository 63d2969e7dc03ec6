package sqlite

import (
	"context"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// maxRecordBatch bounds the client records one writer transaction of the
// record batcher writes; more pending records wait for the next one.
const maxRecordBatch = 256

// recordBatcher group-commits the Conn's PutClientRecord calls. SQLite
// has one writer, and under concurrent pushes every Pull that moves its
// client's cursor (PULL-8, PULL-13) needs it too: written one autocommit
// statement each, N concurrent record writes were N waits for the writer,
// each a place in the same queue as the pushes. The batcher makes them
// one: a call queues its record; one goroutine at a time (started by the
// call that finds none running) takes the writer (BEGIN IMMEDIATE), then
// takes every record queued by then — those that arrived while it waited
// for the writer included — and writes them, in arrival order, in that
// one transaction; then it starts again while records are queued.
//
// Each call's outcome is its own record's as if written alone: the batch
// commits all or, when a statement or the commit fails, each record of it
// is written again alone and each call gets its own result; a failure to
// take the writer (busy, closed) is every taken call's. A call whose ctx
// ends before its record is taken removes it and returns the ctx's error,
// nothing written; once taken, it waits for the transaction (already
// holding the writer) and returns its result.
type recordBatcher struct {
	mu      gosync.Mutex
	pending []*recordWrite
	running bool
	txs     atomic.Int64 // batch transactions begun (tests)
}

type recordWrite struct {
	args  []any
	taken bool       // under recordBatcher.mu
	done  chan error // buffered 1
}

// putRecord writes one client record (sqlitesql.UpsertClient's args)
// through the batcher.
func (c *Conn) putRecord(ctx context.Context, args ...any) error {
	const what = "sqlite: put client record"
	if err := c.check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return c.mapErr(ctx, err, what)
	}
	w := &recordWrite{args: args, done: make(chan error, 1)}
	b := &c.recs
	b.mu.Lock()
	b.pending = append(b.pending, w)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go c.runRecordBatches()
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if !w.taken {
		for i, p := range b.pending {
			if p == w {
				b.pending = append(b.pending[:i], b.pending[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
		return c.mapErr(ctx, ctx.Err(), what)
	}
	b.mu.Unlock()
	return <-w.done
}

// runRecordBatches writes queued records, one writer transaction per
// batch, until none is queued.
func (c *Conn) runRecordBatches() {
	b := &c.recs
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		c.writeRecordBatch()
	}
}

// writeRecordBatch takes the writer, then the queued records (at most
// maxRecordBatch), and writes them in one transaction.
func (c *Conn) writeRecordBatch() {
	const what = "sqlite: put client record"
	ctx := context.Background()
	b := &c.recs
	take := func() []*recordWrite {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := min(len(b.pending), maxRecordBatch)
		batch := append([]*recordWrite(nil), b.pending[:n]...)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		for _, w := range batch {
			w.taken = true
		}
		return batch
	}
	if err := c.check(); err != nil {
		for _, w := range take() {
			w.done <- err
		}
		return
	}
	_ = c.gate.acquire(ctx, true) // ctx never ends
	tx, err := c.w.BeginTx(ctx, nil)
	c.gate.release()
	b.txs.Add(1)
	batch := take()
	if err != nil {
		err = c.mapErr(ctx, err, what+": begin")
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	if len(batch) == 0 { // every caller left while the writer was taken
		_ = tx.Rollback()
		return
	}
	st := newTxStmts(c, c.wr, tx)
	for _, w := range batch {
		if err = st.exec(ctx, sqlitesql.UpsertClient, w.args...); err != nil {
			break
		}
	}
	if err == nil {
		err = tx.Commit()
	} else {
		_ = tx.Rollback()
	}
	if err == nil {
		for _, w := range batch {
			w.done <- nil
		}
		return
	}
	// Not written as one: each record alone, each its own outcome.
	for _, w := range batch {
		w.done <- c.writeOne(ctx, what, sqlitesql.UpsertClient, w.args...)
	}
}

// queued returns the number of records waiting for a batch.
func (b *recordBatcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
