// Package stmtcache prepares each statement text once on a *sql.DB, for
// the drivers built on database/sql (sqlite, mysql); database/sql
// re-prepares a statement on each connection as needed.
package stmtcache

import (
	"context"
	"database/sql"
	gosync "sync"
	"time"
)

// Cache is the prepared statements of one *sql.DB by text. Safe for
// concurrent use.
type Cache struct {
	db      *sql.DB
	mu      gosync.Mutex
	m       map[string]*sql.Stmt
	warming map[string]bool // texts being prepared in the background
	closed  bool
	// The background preparations run on ctx, which Close cancels; Close
	// then waits for them, so none uses db after the Conn's Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     gosync.WaitGroup
}

// New returns an empty Cache preparing on db.
func New(db *sql.DB) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{db: db, m: map[string]*sql.Stmt{}, warming: map[string]bool{}, ctx: ctx, cancel: cancel}
}

// Peek returns the cached statement of q, nil when there is none.
func (s *Cache) Peek(q string) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[q]
}

// Warm prepares q on the pool in the background (within a minute), once,
// unless it is cached or the Cache is closed; a failure leaves it to the
// next use.
func (s *Cache) Warm(q string) {
	s.mu.Lock()
	if s.closed || s.m[q] != nil || s.warming[q] {
		s.mu.Unlock()
		return
	}
	s.warming[q] = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		st, err := s.db.PrepareContext(ctx, q)
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.warming, q)
		if err != nil {
			return
		}
		if s.closed || s.m[q] != nil {
			_ = st.Close()
			return
		}
		s.m[q] = st
	}()
}

// Get returns the prepared statement of q, preparing it on first use
// (the engine's error unmapped). Two concurrent first uses keep one.
func (s *Cache) Get(ctx context.Context, q string) (*sql.Stmt, error) {
	if st := s.Peek(q); st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.m[q]; ok {
		_ = st.Close()
		return prev, nil
	}
	s.m[q] = st
	return st, nil
}

// Close stops and waits for the background preparations and closes every
// cached statement; later Warms do nothing, a later Get prepares again.
func (s *Cache) Close() {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		_ = st.Close()
	}
	s.m = map[string]*sql.Stmt{}
}
