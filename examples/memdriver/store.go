package memdriver

import (
	"context"
	"maps"
	"slices"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// store is one in-memory store, shared by every Conn opened on its name.
type store struct {
	ensureMu gosync.Mutex // one EnsureSchema at a time (SCH-7)

	mu       gosync.RWMutex
	schema   driver.Schema                    // Version 0 until EnsureSchema succeeds
	parts    map[string]*partition            // committed state per partition; replaced, never changed
	locks    map[string]chan struct{}         // the write lock of each partition (TX-1)
	registry map[string]driver.PartitionEntry // the partition registry (REG)
}

func newStore() *store {
	return &store{parts: map[string]*partition{}, locks: map[string]chan struct{}{},
		registry: map[string]driver.PartitionEntry{}}
}

// partition is the committed state of one partition. A published
// partition is never modified: writers build a new one (see draft).
type partition struct {
	rows    map[string]map[string]driver.Row // table → row id → row
	commits []driver.Commit                  // the retained log, ascending by Seq
	maxSeq  int64                            // never drops, pruning included (SEQ-5)
	horizon int64
	results map[resultKey][]byte // push results, driver.EncodePushResult
	clients map[string]driver.ClientRecord
	// tombs are the tombstones of deleted rows (ROW-5): table → row id →
	// the version the row had when last deleted.
	tombs map[string]map[string]int64
}

// resultKey identifies a push result inside a partition (PR-3).
type resultKey struct{ clientID, clientCommitID string }

var emptyPartition = &partition{}

// current returns the committed state of p; an unknown partition reads as
// empty (P-2).
func (s *store) current(p string) *partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if st, ok := s.parts[p]; ok {
		return st
	}
	return emptyPartition
}

// currentSchema returns the ensured schema (Version 0: none yet).
func (s *store) currentSchema() driver.Schema {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.schema
}

// table returns the ensured table called name, or CodeUnknownTable (SCH-8).
func (s *store) table(name string) (driver.Table, error) {
	if t, ok := s.currentSchema().Table(name); ok {
		return t, nil
	}
	return driver.Table{}, driver.Errorf(driver.CodeUnknownTable, "memory: table %s is not in the ensured schema (SCH-8)", name)
}

// lock takes the write lock of partition p, waiting until it is free or
// ctx ends (TX-1, TX-6), and returns the function that releases it (safe
// to call more than once).
func (s *store) lock(ctx context.Context, p string) (func(), error) {
	s.mu.Lock()
	ch, ok := s.locks[p]
	if !ok {
		ch = make(chan struct{}, 1)
		s.locks[p] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, driver.Wrap(driver.CodeUnavailable, ctx.Err(), "memory: wait for the partition's write lock")
	}
	if err := ctx.Err(); err != nil { // both were ready: honour the context
		<-ch
		return nil, driver.Wrap(driver.CodeUnavailable, err, "memory: wait for the partition's write lock")
	}
	var once gosync.Once
	return func() { once.Do(func() { <-ch }) }, nil
}

// publish makes d the committed state of p in one step (TX-2). Tables that
// an EnsureSchema retired while d was being written are dropped from it.
// also, if set, runs under the same lock (for the registry, REG-2). The
// caller holds p's write lock.
func (s *store) publish(p string, d *draft, also func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for table := range d.p.rows {
		if _, ok := s.schema.Table(table); !ok {
			d.ownRows()
			delete(d.p.rows, table)
		}
	}
	next := d.p
	s.parts[p] = &next
	if also != nil {
		also()
	}
}

// write runs change on a draft of p's committed state while holding p's
// write lock, and publishes the draft when change succeeds: a Conn-level
// write is a one-statement transaction.
func (s *store) write(ctx context.Context, p string, change func(d *draft) error, also func()) error {
	unlock, err := s.lock(ctx, p)
	if err != nil {
		return err
	}
	defer unlock()
	d := newDraft(s.current(p))
	if err := change(d); err != nil {
		return err
	}
	s.publish(p, d, also)
	return nil
}

// draft is a partition being changed: a shallow copy of a committed
// partition whose maps and log are copied the first time they are written
// (copy-on-write), so the committed partition, which readers use without
// locks, never changes.
type draft struct {
	p     partition
	owned map[string]bool // which maps are already this draft's own copies
}

func newDraft(base *partition) *draft {
	return &draft{p: *base, owned: map[string]bool{}}
}

// own runs copy the first time it is called with name.
func (d *draft) own(name string, copy func()) {
	if !d.owned[name] {
		copy()
		d.owned[name] = true
	}
}

func (d *draft) ownRows() {
	d.own("rows", func() { d.p.rows = cloneOrNew(d.p.rows) })
}

// rowsForWrite returns the draft's own row map of table.
func (d *draft) rowsForWrite(table string) map[string]driver.Row {
	d.ownRows()
	d.own("rows/"+table, func() { d.p.rows[table] = cloneOrNew(d.p.rows[table]) })
	return d.p.rows[table]
}

// tombsForWrite returns the draft's own tombstone map of table.
func (d *draft) tombsForWrite(table string) map[string]int64 {
	d.own("tombs", func() { d.p.tombs = cloneOrNew(d.p.tombs) })
	d.own("tombs/"+table, func() { d.p.tombs[table] = cloneOrNew(d.p.tombs[table]) })
	return d.p.tombs[table]
}

func (d *draft) resultsForWrite() map[resultKey][]byte {
	d.own("results", func() { d.p.results = cloneOrNew(d.p.results) })
	return d.p.results
}

func (d *draft) clientsForWrite() map[string]driver.ClientRecord {
	d.own("clients", func() { d.p.clients = cloneOrNew(d.p.clients) })
	return d.p.clients
}

// appendCommit appends c to the draft's own copy of the log.
func (d *draft) appendCommit(c driver.Commit) {
	d.own("commits", func() { d.p.commits = slices.Clone(d.p.commits) })
	d.p.commits = append(d.p.commits, c)
}

// cloneOrNew returns a shallow copy of m, or a new map when m is nil.
func cloneOrNew[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return maps.Clone(m)
}
