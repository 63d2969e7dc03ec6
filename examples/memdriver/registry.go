package memdriver

import (
	"context"
	"maps"
	"slices"

	"github.com/syncstore/syncstore/driver"
)

// TouchPartition registers the partition (epoch initialEpoch,
// EpochRequired false) or refreshes only the UpdatedAtMs of its entry
// (REG-1). Returns the stored entry.
func (c *Conn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (driver.PartitionEntry, error) {
	if err := c.check(ctx); err != nil {
		return driver.PartitionEntry{}, err
	}
	if initialEpoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "memory: the initial epoch must not be empty (REG-1)")
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.registry[partition]
	if !ok {
		e = driver.PartitionEntry{Partition: partition, Epoch: initialEpoch}
	}
	e.UpdatedAtMs = atMs
	s.registry[partition] = e
	return e, nil
}

// RotatePartitionLogEpoch sets the entry's epoch, EpochRequired and
// UpdatedAtMs, registering the partition if needed, and deletes the
// partition's client records, in one step (REG-2). Like every write to a
// partition, it waits for the partition's open Tx, if any.
func (c *Conn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	if err := c.check(ctx); err != nil {
		return driver.PartitionEntry{}, err
	}
	if epoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "memory: the epoch must not be empty (REG-2)")
	}
	e := driver.PartitionEntry{Partition: partition, Epoch: epoch, EpochRequired: true, UpdatedAtMs: atMs}
	err := c.s.write(ctx, partition, func(d *draft) error {
		d.p.clients = nil
		return nil
	}, func() { c.s.registry[partition] = e }) // runs under s.mu, with the publish
	if err != nil {
		return driver.PartitionEntry{}, err
	}
	return e, nil
}

// ListPartitionRegistry returns the entries after afterPartition,
// ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) ([]driver.PartitionEntry, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []driver.PartitionEntry
	for _, p := range slices.Sorted(maps.Keys(s.registry)) {
		if p > afterPartition && len(out) < limit {
			out = append(out, s.registry[p])
		}
	}
	return out, nil
}

// ListPartitions returns the registered partition names after
// afterPartition, ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error) {
	entries, err := c.ListPartitionRegistry(ctx, afterPartition, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Partition
	}
	return out, nil
}
