package sync

import (
	"context"
	gosync "sync"
)

// maxRegistered bounds the partitions a Store remembers as registered;
// past it the set starts again (a forgotten partition costs its next
// push one TouchPartition).
const maxRegistered = 1 << 16

// partitionSet is the partitions a Store knows are in the registry. The
// registry never forgets a partition (REG-1…REG-3 add and change entries,
// nothing deletes one), so a partition once registered stays registered.
type partitionSet struct {
	mu gosync.Mutex
	m  map[string]struct{}
}

func (ps *partitionSet) has(p string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	_, ok := ps.m[p]
	return ok
}

func (ps *partitionSet) add(p string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil || len(ps.m) >= maxRegistered {
		ps.m = make(map[string]struct{})
	}
	ps.m[p] = struct{}{}
}

// registerPartition makes sure the registry holds partition before a push
// writes it (REG-4): the first push of a partition in this Store touches
// it (TouchPartition at atMs with a fresh epoch: a new entry gets the
// epoch, an existing one keeps its own); later pushes send nothing.
func (s *Store) registerPartition(ctx context.Context, partition string, atMs int64) error {
	if s.registered.has(partition) {
		return nil
	}
	if _, err := s.conn.TouchPartition(ctx, partition, atMs, newLogEpoch()); err != nil {
		return err
	}
	s.registered.add(partition)
	return nil
}
