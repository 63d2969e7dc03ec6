package sync

import (
	"context"
	gosync "sync"
	"time"
)

// maxRegistered bounds the partitions a Store remembers as registered;
// past it the set starts again (a forgotten partition costs its next
// push or pull one TouchPartition).
const maxRegistered = 1 << 16

// PullTouchInterval is how often, in request time, a Store's pulls touch
// a partition in the registry (PULL-13): a pull touches it when this
// Store's last touch of it (by a pull, a push or a rotation) is this long
// or longer before the pull's time, or after it; otherwise the pull
// answers the epoch of that touch and the entry's time stays as it was.
const PullTouchInterval = time.Second

// partitionSet is the partitions a Store knows are in the registry, each
// with the entry and request time of its last touch by this Store. The
// registry never forgets a partition (REG-1…REG-3 add and change entries,
// nothing deletes one), so a partition once registered stays registered.
// It holds at most maxRegistered partitions (REG-4, PULL-13).
type partitionSet struct {
	mu gosync.Mutex
	m  map[string]partitionMemo
}

// partitionMemo is a Store's last touch of one partition: the entry the
// registry answered and the request time (epoch ms) it was touched at.
type partitionMemo struct {
	entry PartitionEntry
	atMs  int64
}

func (ps *partitionSet) has(p string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	_, ok := ps.m[p]
	return ok
}

// fresh returns p's entry when this Store touched p less than
// PullTouchInterval of request time before atMs (and not after it).
func (ps *partitionSet) fresh(p string, atMs int64) (PartitionEntry, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	m, ok := ps.m[p]
	if !ok || atMs < m.atMs || atMs-m.atMs >= PullTouchInterval.Milliseconds() {
		return PartitionEntry{}, false
	}
	return m.entry, true
}

func (ps *partitionSet) add(p string, e PartitionEntry, atMs int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil || len(ps.m) >= maxRegistered {
		ps.m = make(map[string]partitionMemo)
	}
	ps.m[p] = partitionMemo{entry: e, atMs: atMs}
}

// registerPartition makes sure the registry holds partition before a push
// writes it (REG-4): the first push of a partition in this Store touches
// it (TouchPartition at atMs with a fresh epoch: a new entry gets the
// epoch, an existing one keeps its own); later pushes send nothing.
func (s *Store) registerPartition(ctx context.Context, partition string, atMs int64) error {
	if s.registered.has(partition) {
		return nil
	}
	_, err := s.touch(ctx, partition, atMs)
	return err
}

// touchForPull returns partition's registry entry for a pull at atMs
// (PULL-8, PULL-13): this Store's last touch of it when that is fresh
// and the pull found its client record, else a TouchPartition, which is
// remembered.
func (s *Store) touchForPull(ctx context.Context, partition string, atMs int64, recordFound bool) (PartitionEntry, error) {
	if recordFound {
		if e, ok := s.registered.fresh(partition, atMs); ok {
			return e, nil
		}
	}
	return s.touch(ctx, partition, atMs)
}

// touch touches partition in the registry at atMs (REG-1) and remembers
// the entry as this Store's last touch of it (REG-4, PULL-13).
func (s *Store) touch(ctx context.Context, partition string, atMs int64) (PartitionEntry, error) {
	e, err := s.conn.TouchPartition(ctx, partition, atMs, newLogEpoch())
	if err != nil {
		return PartitionEntry{}, err
	}
	s.registered.add(partition, e, atMs)
	return e, nil
}
