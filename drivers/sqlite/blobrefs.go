package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/blobrefs"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Blob references (capability blob-refs, BLOB-1): the set of a row lives
// in _sync_blob_refs (internal/sqlitesql/blobrefs.go), written in the push
// transaction; DeleteRow clears it (clearBlobRefs).

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
		list, err := storelayout.JSONList(ids)
		if err != nil {
			return err
		}
		return t.st.exec(ctx, sqlitesql.BlobRefsInsert, t.partition, table, rowID, list)
	})
}

// clearBlobRefs removes the blob references of a deleted row (BLOB-1);
// called by DeleteRow inside the Tx's operation.
func (t *Tx) clearBlobRefs(ctx context.Context, table, rowID string) error {
	return t.st.exec(ctx, sqlitesql.BlobRefsClearRow, t.partition, table, rowID)
}

// ListRowsReferencingBlob returns the existing rows of partition that
// reference blobID, with their current scopes, at most limit (1…10,000),
// ordered by table name then row id (BLOB-1).
func (c *Conn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]driver.BlobRowRef, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	const what = "sqlite: list rows referencing a blob"
	return blobrefs.ListRows(c.state.Tables(), limit, func(name string, x *sqlitesql.Table, n int) ([]driver.BlobRowRef, error) {
		rows, err := c.query(ctx, c.reader(), x.BlobRefsRowsSQL(), []any{partition, blobID, name, int64(n)})
		return sqlrows.Read(ctx, rows, err, func(r *sql.Rows) (driver.BlobRowRef, error) {
			return blobrefs.Scan(r.Scan, name, x.Def.Scopes)
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
	rows, err := c.query(ctx, c.reader(), sqlitesql.BlobRefsListIDs, []any{partition, afterBlobID, int64(limit)})
	return sqlrows.Read(ctx, rows, err, sqlrows.String, c.mapErr, "sqlite: list referenced blob ids")
}
