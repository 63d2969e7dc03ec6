package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// GetClientRecord returns the client's record (CR-1).
func (c *Conn) GetClientRecord(ctx context.Context, partition, clientID string) (driver.ClientRecord, bool, error) {
	noRow := func(err error) bool { return err == sql.ErrNoRows }
	return adminview.ClientRecord(clientID, func(dest ...any) error {
		return c.queryRow(ctx, nil, selectClient, []any{partition, clientID}, dest...)
	}, noRow)
}

// ListClientCursors returns the cursors of the client records with
// client_id > afterClientID, ascending bytewise, at most limit (CR-2,
// CR-3): a range read of the clients' primary key that stops at the
// limit.
func (c *Conn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]driver.ClientCursor, error) {
	rows, err := c.query(ctx, nil, listClientCursors, []any{partition, afterClientID, int64(limit)}, "mysql: list client cursors")
	return sqlrows.Read(ctx, rows, err, sqlrows.ClientCursor, c.mapErr, "mysql: list client cursors")
}

// PutClientRecord stores rec, replacing any record of rec.ClientID (CR-1).
func (c *Conn) PutClientRecord(ctx context.Context, partition string, rec driver.ClientRecord) error {
	subs, err := storelayout.EncodeSubscriptions(rec.Subscriptions)
	if err != nil {
		return err
	}
	return c.execRetry(ctx, "mysql: put client record", upsertClient,
		partition, rec.ClientID, rec.ActorID, rec.WireVersion, rec.Cursor, rec.UpdatedAtMs, subs)
}

// TouchPartition registers the partition (epoch initialEpoch,
// EpochRequired false) or refreshes only its UpdatedAtMs (REG-1), and
// returns the stored entry, in one transaction.
func (c *Conn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (driver.PartitionEntry, error) {
	if initialEpoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "initial epoch must not be empty (REG-1)")
	}
	return c.registryWrite(ctx, "mysql: touch partition", false, touchPartition, partition, initialEpoch, atMs)
}

// RotatePartitionLogEpoch sets epoch, EpochRequired=true and UpdatedAtMs,
// registering the partition if needed, and deletes its client records and
// leases, in one transaction (REG-2, LEASE-5). Returns the stored entry.
func (c *Conn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	if epoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "epoch must not be empty (REG-2)")
	}
	return c.registryWrite(ctx, "mysql: rotate partition epoch", true, rotateEpoch, partition, epoch, atMs)
}

func (c *Conn) registryWrite(ctx context.Context, what string, clearClients bool, q, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	var e driver.PartitionEntry
	err := c.writeTx(ctx, what, func(tx *sql.Tx) error {
		if clearClients {
			if _, err := c.exec(ctx, tx, deleteClients, partition); err != nil {
				return err
			}
			if _, err := c.exec(ctx, tx, deleteLeases, partition); err != nil {
				return err
			}
		}
		if _, err := c.exec(ctx, tx, q, partition, epoch, atMs); err != nil {
			return err
		}
		var req int64
		st, err := c.stmt(ctx, tx, selectRegistry)
		if err != nil {
			return err
		}
		if err := st.QueryRowContext(ctx, partition).Scan(&e.Partition, &e.Epoch, &req, &e.UpdatedAtMs); err != nil {
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
	rows, err := c.query(ctx, nil, listRegistry, []any{afterPartition, int64(limit)}, "mysql: list partition registry")
	return sqlrows.Read(ctx, rows, err, sqlrows.PartitionEntry, c.mapErr, "mysql: list partition registry")
}

// ListPartitions returns registered partition names > afterPartition,
// ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error) {
	rows, err := c.query(ctx, nil, listPartitions, []any{afterPartition, int64(limit)}, "mysql: list partitions")
	return sqlrows.Read(ctx, rows, err, sqlrows.String, c.mapErr, "mysql: list partitions")
}
