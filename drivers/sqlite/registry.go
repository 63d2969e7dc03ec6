package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// TouchPartition registers the partition (epoch initialEpoch,
// EpochRequired false) or refreshes only its UpdatedAtMs (REG-1), in one
// statement. Returns the stored entry.
func (c *Conn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (driver.PartitionEntry, error) {
	if initialEpoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "initial epoch must not be empty (REG-1)")
	}
	return c.registryWrite(ctx, "sqlite: touch partition", nil, sqlitesql.TouchPartition, partition, initialEpoch, atMs)
}

// RotatePartitionLogEpoch sets epoch, EpochRequired=true and UpdatedAtMs,
// registering the partition if needed, and deletes its client records and
// leases, in one transaction (REG-2, LEASE-5). Returns the stored entry.
func (c *Conn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	if epoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "epoch must not be empty (REG-2)")
	}
	return c.registryWrite(ctx, "sqlite: rotate partition epoch", []string{sqlitesql.DeleteClients, sqlitesql.DeleteLeases}, sqlitesql.RotateEpoch, partition, epoch, atMs)
}

// registryWrite runs the registry upsert q (…RETURNING the entry) and,
// before it, each statement of pre with the partition as only argument,
// in one transaction.
func (c *Conn) registryWrite(ctx context.Context, what string, pre []string, q, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	var e driver.PartitionEntry
	err := c.writeTx(ctx, what, func(t *txStmts) error {
		for _, p := range pre {
			if err := t.exec(ctx, p, partition); err != nil {
				return err
			}
		}
		var req int64
		if err := c.queryRow(ctx, t, q, []any{partition, epoch, atMs}, &e.Partition, &e.Epoch, &req, &e.UpdatedAtMs); err != nil {
			return err
		}
		e.EpochRequired = req != 0
		return nil
	})
	if err != nil {
		return driver.PartitionEntry{}, err
	}
	return e, nil
}

// ListPartitionRegistry returns registry entries with partition >
// afterPartition, ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) ([]driver.PartitionEntry, error) {
	rows, err := c.query(ctx, c.reader(), sqlitesql.ListRegistry, []any{afterPartition, limit})
	return sqlrows.Read(ctx, rows, err, sqlrows.PartitionEntry, c.mapErr, "sqlite: list partition registry")
}

// ListPartitions returns registered partition names > afterPartition,
// ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error) {
	rows, err := c.query(ctx, c.reader(), sqlitesql.ListPartitions, []any{afterPartition, limit})
	return sqlrows.Read(ctx, rows, err, sqlrows.String, c.mapErr, "sqlite: list partitions")
}
