package d1http

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// GetClientRecord returns the client's record (CR-1).
func (c *Conn) GetClientRecord(ctx context.Context, partition, clientID string) (driver.ClientRecord, bool, error) {
	rows, err := c.rows(ctx, "d1http: read a client record", d1sql.D1SelectClient, partition, clientID)
	if err != nil || len(rows) == 0 {
		return driver.ClientRecord{}, false, err
	}
	r := rows[0]
	rec := driver.ClientRecord{ClientID: clientID}
	var subs string
	err = firstErr(
		func() (e error) { rec.ActorID, e = rawString(r[0]); return },
		func() (e error) { rec.WireVersion, e = rawInt(r[1]); return },
		func() (e error) { rec.Cursor, e = rawInt(r[2]); return },
		func() (e error) { rec.UpdatedAtMs, e = rawInt(r[3]); return },
		func() (e error) { subs, e = rawString(r[4]); return },
	)
	if err != nil {
		return driver.ClientRecord{}, false, driver.Errorf(driver.CodeInternal, "d1http: stored client record is malformed")
	}
	if rec.Subscriptions, err = storelayout.DecodeSubscriptions(subs); err != nil {
		return driver.ClientRecord{}, false, err
	}
	return rec, true, nil
}

// ListClientCursors returns the cursors of the client records with
// client_id > afterClientID, ascending bytewise, at most limit (CR-2,
// CR-3): a walk of the clients' primary key that stops at the limit.
func (c *Conn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]driver.ClientCursor, error) {
	rows, err := c.rows(ctx, "d1http: list client cursors", d1sql.D1ListClientCursors, partition, afterClientID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]driver.ClientCursor, 0, len(rows))
	for _, r := range rows {
		var cc driver.ClientCursor
		err := firstErr(
			func() (e error) { cc.ClientID, e = rawString(r[0]); return },
			func() (e error) { cc.Cursor, e = rawInt(r[1]); return },
			func() (e error) { cc.UpdatedAtMs, e = rawInt(r[2]); return },
		)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: stored client cursor is malformed")
		}
		out = append(out, cc)
	}
	return out, nil
}

// PutClientRecord stores rec, replacing any record of rec.ClientID (CR-1).
// Integers are bound as decimal text: the INTEGER columns store them exactly.
func (c *Conn) PutClientRecord(ctx context.Context, partition string, rec driver.ClientRecord) error {
	subs, err := storelayout.EncodeSubscriptions(rec.Subscriptions)
	if err != nil {
		return err
	}
	_, err = c.write(ctx, "d1http: put client record", st(d1sql.D1UpsertClient, partition, rec.ClientID, rec.ActorID,
		dec(rec.WireVersion), dec(rec.Cursor), dec(rec.UpdatedAtMs), subs))
	return err
}

// TouchPartition registers the partition or refreshes only its
// UpdatedAtMs (REG-1) and returns the stored entry.
func (c *Conn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (driver.PartitionEntry, error) {
	if initialEpoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "initial epoch must not be empty (REG-1)")
	}
	return c.registryWrite(ctx, "d1http: touch partition", partition,
		st(sqlitesql.TouchPartition, partition, initialEpoch, dec(atMs)))
}

// RotatePartitionLogEpoch sets epoch, EpochRequired=true and UpdatedAtMs
// and deletes the partition's client records and leases, in one batch
// (REG-2, LEASE-5).
func (c *Conn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (driver.PartitionEntry, error) {
	if epoch == "" {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInvalidArgument, "epoch must not be empty (REG-2)")
	}
	return c.registryWrite(ctx, "d1http: rotate partition epoch", partition,
		st(sqlitesql.DeleteClients, partition), st(sqlitesql.DeleteLeases, partition), st(sqlitesql.RotateEpoch, partition, epoch, dec(atMs)))
}

// registryWrite applies stmts followed by a read of the entry, in one
// batch; if the answer was lost after the batch landed, the entry is read again.
func (c *Conn) registryWrite(ctx context.Context, what, partition string, stmts ...stmt) (driver.PartitionEntry, error) {
	a, err := c.write(ctx, what, append(stmts, st(d1sql.D1SelectRegistry, partition))...)
	if err != nil {
		return driver.PartitionEntry{}, err
	}
	var rows [][]json.RawMessage
	if a.lost {
		if rows, err = c.rows(ctx, what, d1sql.D1SelectRegistry, partition); err != nil {
			return driver.PartitionEntry{}, err
		}
	} else {
		rows = a.res[len(a.res)-1].Results.Rows
	}
	if len(rows) != 1 {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInternal, "%s: the entry is missing", what)
	}
	return decodeEntry(rows[0])
}

func decodeEntry(r []json.RawMessage) (driver.PartitionEntry, error) {
	var e driver.PartitionEntry
	var req int64
	err := firstErr(
		func() (err error) { e.Partition, err = rawString(r[0]); return },
		func() (err error) { e.Epoch, err = rawString(r[1]); return },
		func() (err error) { req, err = rawInt(r[2]); return },
		func() (err error) { e.UpdatedAtMs, err = rawInt(r[3]); return },
	)
	if err != nil {
		return driver.PartitionEntry{}, driver.Errorf(driver.CodeInternal, "d1http: stored registry entry is malformed")
	}
	e.EpochRequired = req != 0
	return e, nil
}

// ListPartitionRegistry returns registry entries with partition >
// afterPartition, ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) ([]driver.PartitionEntry, error) {
	rows, err := c.rows(ctx, "d1http: list partition registry", d1sql.D1ListRegistry, afterPartition, limit)
	if err != nil {
		return nil, err
	}
	out := make([]driver.PartitionEntry, 0, len(rows))
	for _, r := range rows {
		e, err := decodeEntry(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ListPartitions returns registered partition names > afterPartition,
// ascending bytewise, at most limit (REG-3).
func (c *Conn) ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error) {
	rows, err := c.rows(ctx, "d1http: list partitions", sqlitesql.ListPartitions, afterPartition, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		p, err := rawString(r[0])
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: stored partition name is not text")
		}
		out = append(out, p)
	}
	return out, nil
}

// dec binds an int64 as decimal text, for INTEGER columns (exact at any size).
func dec(i int64) string { return strconv.FormatInt(i, 10) }

func firstErr(fns ...func() error) error {
	for _, f := range fns {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
