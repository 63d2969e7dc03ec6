package sqlite

import (
	"context"
	"math/rand/v2"
	gosync "sync"
)

// writerGate orders the Conn's takers of its one writer connection.
// Every write of the Conn (Begin, writeTx, writeOne and its kin, the
// record batches) passes the gate first, so at most one of them waits in
// database/sql's pool and the gate picks who is next. It picks as
// database/sql would among its waiters — at random, each waiter as likely
// as another — except that the record batch (recordBatcher: the client
// records of concurrent pulls, PULL-8) weighs as many waiters as the
// records it would write then: each waiting write, a push's transaction
// or one pull's record, is as likely to be next as before, and the
// records go in one transaction instead of one each. A Begin holds the
// gate only until its transaction has the connection (BEGIN IMMEDIATE
// done); writeCount and writeTx until they are done. The gate orders
// this Conn's writes only; other Conns and processes still meet SQLite's
// write lock (_busy_timeout).
type writerGate struct {
	mu     gosync.Mutex
	busy   bool
	weight func() int // the records the waiting batch would write now
	hi, lo []*gateWaiter
}

type gateWaiter struct {
	ch      chan struct{}
	granted bool // under writerGate.mu
}

// acquire waits for the gate (batch: the record batch, weighed by its
// records) or for ctx to end (ctx's error, the gate not held).
func (g *writerGate) acquire(ctx context.Context, batch bool) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ch: make(chan struct{})}
	if batch {
		g.hi = append(g.hi, w)
	} else {
		g.lo = append(g.lo, w)
	}
	g.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted { // granted as ctx ended: pass it on
		g.mu.Unlock()
		g.release()
		return ctx.Err()
	}
	q := &g.lo
	if batch {
		q = &g.hi
	}
	for i, x := range *q {
		if x == w {
			*q = append((*q)[:i], (*q)[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	return ctx.Err()
}

// release hands the gate to the next waiter, or frees it.
func (g *writerGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w *gateWaiter
	weight := 0
	if len(g.hi) > 0 {
		weight = max(1, g.weight())
	}
	switch i := rand.IntN(max(1, weight+len(g.lo))); {
	case weight+len(g.lo) == 0:
		g.busy = false
		return
	case i < weight:
		w, g.hi = g.hi[0], g.hi[1:]
	default:
		i -= weight
		w = g.lo[i]
		g.lo[i] = g.lo[len(g.lo)-1]
		g.lo = g.lo[:len(g.lo)-1]
	}
	w.granted = true
	close(w.ch)
}

// waiting returns the number of batch and other waiters (tests).
func (g *writerGate) waiting() (batches, others int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.hi), len(g.lo)
}
