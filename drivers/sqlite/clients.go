package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/adminview"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// GetClientRecord returns the client's record (CR-1).
func (c *Conn) GetClientRecord(ctx context.Context, partition, clientID string) (driver.ClientRecord, bool, error) {
	noRow := func(err error) bool { return err == sql.ErrNoRows }
	return adminview.ClientRecord(clientID, func(dest ...any) error {
		return c.queryRow(ctx, c.reader(), sqlitesql.SelectClient, []any{partition, clientID}, dest...)
	}, noRow)
}

// ListClientCursors returns the cursors of the client records with
// client_id > afterClientID, ascending bytewise, at most limit (CR-2,
// CR-3): a walk of the clients' primary key that stops at the limit.
func (c *Conn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]driver.ClientCursor, error) {
	rows, err := c.query(ctx, c.reader(), sqlitesql.ListClientCursors, []any{partition, afterClientID, int64(limit)})
	return sqlrows.Read(ctx, rows, err, sqlrows.ClientCursor, c.mapErr, "sqlite: list client cursors")
}

// PutClientRecord stores rec, replacing any record of rec.ClientID (CR-1).
// Concurrent calls share writer transactions (recordBatcher): N records
// queued while the writer is busy are written in one transaction.
func (c *Conn) PutClientRecord(ctx context.Context, partition string, rec driver.ClientRecord) error {
	subs, err := storelayout.EncodeSubscriptions(rec.Subscriptions)
	if err != nil {
		return err
	}
	return c.putRecord(ctx, partition, rec.ClientID, rec.ActorID, rec.WireVersion, rec.Cursor, rec.UpdatedAtMs, subs)
}
