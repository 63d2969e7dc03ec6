package postgres

import (
	"context"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// maxIdleGates bounds how many partitions' gates (and cached max seqs) a
// Conn keeps while no Tx holds them; past it, idle gates are dropped and
// their partitions' next Tx begins on the engine (one extra round trip).
const maxIdleGates = 1 << 16

// partGates serializes the Txs of one Conn per partition in the process
// (TX-1: the partition is the Tx's from Begin to its end), and remembers
// each partition's committed max seq as this Conn last learnt it under the
// partition's row lock, so that a Tx whose partition's max seq is known
// can defer its Begin statements into its Commit pipeline (one round trip
// per push, docs/performance.md). The zero value is ready.
type partGates struct {
	mu gosync.Mutex
	m  map[string]*partGate
}

// partGate is one partition's gate: sem holds one token while a Tx of the
// Conn holds the partition; refs counts the Txs holding or waiting for it.
type partGate struct {
	sem   chan struct{}
	refs  int
	seq   int64 // the partition's committed max seq, when known
	known bool
}

// enter waits until no other Tx of the Conn holds partition, then holds it.
// It returns the gate and the partition's max seq if known. ctx ending
// first: CodeUnavailable, nothing held.
func (g *partGates) enter(ctx context.Context, partition string) (*partGate, int64, bool, error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*partGate{}
	}
	e := g.m[partition]
	if e == nil {
		e = &partGate{sem: make(chan struct{}, 1)}
		g.m[partition] = e
	}
	e.refs++
	g.mu.Unlock()
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		g.mu.Lock()
		e.refs--
		g.mu.Unlock()
		return nil, 0, false, driver.Wrap(driver.CodeUnavailable, ctx.Err(),
			"postgres: begin: context ended while another transaction of the partition was open (TX-1)")
	}
	g.mu.Lock()
	seq, known := e.seq, e.known
	g.mu.Unlock()
	return e, seq, known, nil
}

// leave releases a gate enter returned, recording its partition's max seq
// (known false: forget it, e.g. after an unknown outcome or a conflict).
func (g *partGates) leave(e *partGate, seq int64, known bool) {
	g.mu.Lock()
	e.seq, e.known = seq, known
	e.refs--
	if len(g.m) > maxIdleGates {
		for p, x := range g.m {
			if x.refs == 0 {
				delete(g.m, p)
			}
		}
	}
	g.mu.Unlock()
	<-e.sem
}
