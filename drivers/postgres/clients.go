package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// GetClientRecord returns the client's record and true, or false (CR-1).
func (c *Conn) GetClientRecord(ctx context.Context, partition, clientID string) (driver.ClientRecord, bool, error) {
	noRow := func(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
	return adminview.ClientRecord(clientID, func(dest ...any) error {
		return c.queryRow(ctx, c.pool, sqlSelectClient, []any{partition, clientID}, dest...)
	}, noRow)
}

// PutClientRecord stores rec, replacing any record of rec.ClientID (CR-1).
func (c *Conn) PutClientRecord(ctx context.Context, partition string, rec driver.ClientRecord) error {
	subs, err := storelayout.EncodeSubscriptions(rec.Subscriptions)
	if err != nil {
		return err
	}
	_, err = c.exec(ctx, "postgres: put client record", sqlUpsertClient,
		partition, rec.ClientID, rec.ActorID, rec.WireVersion, rec.Cursor, rec.UpdatedAtMs, subs)
	return err
}

// ListClientCursors returns the cursors of the client records with
// client_id > afterClientID, ascending bytewise, at most limit (CR-2,
// CR-3): a walk of the clients' primary key that stops at the limit.
func (c *Conn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]driver.ClientCursor, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, sqlListClientCursors, partition, afterClientID, int64(limit))
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list client cursors")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.ClientCursor, error) {
		var cc driver.ClientCursor
		err := r.Scan(&cc.ClientID, &cc.Cursor, &cc.UpdatedAtMs)
		return cc, err
	})
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list client cursors")
	}
	return out, nil
}

// TouchPartition registers the partition (epoch initialEpoch,
// EpochRequired false) or refreshes only its UpdatedAtMs (REG-1), in one
// statement. Returns the stored entry.
func (c *Conn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (driver.PartitionEntry, error) {
	if initialEpoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "initial epoch must not be empty (REG-1)")
	}
	var e driver.PartitionEntry
	err := c.queryRow(ctx, c.pool, sqlTouchPartition, []any{partition, initialEpoch, atMs},
		&e.Partition, &e.Epoch, &e.EpochRequired, &e.UpdatedAtMs)
	return e, err
}

// RotatePartitionLogEpoch sets epoch, EpochRequired=true and UpdatedAtMs,
// registering the partition if needed, and deletes its client records and
// leases, in one transaction (REG-2, LEASE-5). Returns the stored entry.
func (c *Conn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	if epoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "epoch must not be empty (REG-2)")
	}
	var e driver.PartitionEntry
	err := c.inTx(ctx, "postgres: rotate partition epoch", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(sqlDeleteClients, partition)
		b.Queue(sqlDeleteLeases, partition)
		b.Queue(sqlRotateEpoch, partition, epoch, atMs).QueryRow(func(r pgx.Row) error {
			return r.Scan(&e.Partition, &e.Epoch, &e.EpochRequired, &e.UpdatedAtMs)
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return driver.PartitionEntry{}, err
	}
	return e, nil
}

// ListPartitionRegistry returns registry entries with partition >
// afterPartition, ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) ([]driver.PartitionEntry, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, sqlListRegistry, afterPartition, limit)
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list partition registry")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.PartitionEntry, error) {
		var e driver.PartitionEntry
		err := r.Scan(&e.Partition, &e.Epoch, &e.EpochRequired, &e.UpdatedAtMs)
		return e, err
	})
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list partition registry")
	}
	return out, nil
}

// ListPartitions returns registered partition names > afterPartition,
// ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, sqlListPartitions, afterPartition, limit)
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list partitions")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list partitions")
	}
	return out, nil
}
