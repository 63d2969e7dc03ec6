// Package txset tracks the transactions a driver's Conn has open, so that
// Close can roll back every one of them (ERR-4: nothing of a Tx open at
// Close lands, and its partition is free for other Conns at once), and a
// Begin that races Close never leaves one behind.
package txset

import gosync "sync"

// Set is the open transactions of one Conn. The zero value is an empty,
// open Set, safe for concurrent use.
type Set[T comparable] struct {
	mu     gosync.Mutex
	open   map[T]struct{}
	closed bool
}

// Add records t as open and reports true; once Close has run it records
// nothing and reports false: the caller then ends t itself and fails with
// CodeClosed.
func (s *Set[T]) Add(t T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.open == nil {
		s.open = map[T]struct{}{}
	}
	s.open[t] = struct{}{}
	return true
}

// Remove forgets t; called when t ends (commit, rollback). Removing a
// transaction that is not in the Set does nothing.
func (s *Set[T]) Remove(t T) {
	s.mu.Lock()
	delete(s.open, t)
	s.mu.Unlock()
}

// Close closes the Set and returns the transactions still open, for the
// caller to roll back; every later Add fails. A second Close returns none.
func (s *Set[T]) Close() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out := make([]T, 0, len(s.open))
	for t := range s.open {
		out = append(out, t)
	}
	s.open = nil
	return out
}
