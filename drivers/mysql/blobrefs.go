package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/blobrefs"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// Blob references (capability blob-refs, BLOB-1).
//
// One table, _sync_blob_refs, keyed (p, blob_id, tbl, row_id), so the
// distinct referenced ids of a partition are a walk of the primary key in
// order and the rows referencing one blob are a key range; a second index
// (p, tbl, row_id, blob_id) serves replacing and clearing a row's set.
// The set of a row is written in the push transaction (it lands with the
// commit and vanishes with a rollback); DeleteRow clears it, and retiring
// a table (SCH-6) clears its rows' sets (migrate.go).

var (
	_ driver.BlobRefsConn = (*Conn)(nil)
	_ driver.BlobRefsTx   = (*Tx)(nil)
)

// SetBlobRefs replaces the set of blob ids the row (table, rowID)
// references with blobIDs (BLOB-1): an empty set clears it, a repeated id
// counts once. It lands with the Tx's commit and vanishes with its
// rollback. Errors: CodeUnknownTable (SCH-8).
func (t *Tx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) error {
	clear := func() error { return t.clearBlobRefs(ctx, table, rowID) }
	return blobrefs.Set(ctx, t.op, t.c.state.Table, table, blobIDs, clear, func(ids []string) error {
		ids = dedupe(ids)
		for len(ids) > 0 {
			part := ids[:min(len(ids), batchRows)]
			ids = ids[len(part):]
			args := make([]any, 0, 4*len(part))
			for _, id := range part {
				args = append(args, t.partition, id, table, rowID)
			}
			if _, err := t.exec(ctx, blobRefsInsert(len(part)), args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// clearBlobRefs removes the blob references of a deleted row (BLOB-1);
// called by DeleteRow inside the Tx's operation.
func (t *Tx) clearBlobRefs(ctx context.Context, table, rowID string) error {
	_, err := t.exec(ctx, blobRefsClearRow, t.partition, table, rowID)
	return err
}

// ListRowsReferencingBlob returns the existing rows of partition that
// reference blobID, with their current scopes, at most limit (1…10,000),
// ordered by table name then row id (BLOB-1).
func (c *Conn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]driver.BlobRowRef, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	const what = "mysql: list rows referencing a blob"
	return blobrefs.ListRows(c.state.Tables(), limit, func(name string, x *table, n int) ([]driver.BlobRowRef, error) {
		rows, err := c.query(ctx, nil, x.blobRefsRows(), []any{partition, blobID, name, int64(n)}, what)
		return sqlrows.Read(ctx, rows, err, func(r *sql.Rows) (driver.BlobRowRef, error) {
			return blobrefs.Scan(r.Scan, x.def.Name, x.def.Scopes)
		}, c.mapErr, what)
	})
}

// ListReferencedBlobIDs returns the distinct blob ids referenced in
// partition that are > afterBlobID, ascending bytewise, at most limit
// (1…10,000) (BLOB-1).
func (c *Conn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.query(ctx, nil, blobRefsListIDs, []any{partition, afterBlobID, int64(limit)}, "mysql: list referenced blob ids")
	return sqlrows.Read(ctx, rows, err, sqlrows.String, c.mapErr, "mysql: list referenced blob ids")
}
