package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/blobrefs"
)

// Blob references (capability blob-refs, BLOB-1). One table,
// _sync_blob_refs, keyed (partition, blob_id, tbl, row_id): listing the
// distinct referenced ids of a partition walks the primary key in order
// and the rows referencing one blob are a key range. A second index
// (partition, tbl, row_id, blob_id) serves replacing a row's set and
// clearing it when the row is deleted. A row's set is written in the
// push transaction as buffered writes (a delete and an insert … ON
// CONFLICT DO NOTHING cannot fail on valid input), so it costs no round
// trip, lands with the commit and vanishes with a rollback. DeleteRow
// clears the row's set; retiring a table clears its rows' sets (SCH-6).

var (
	_ driver.BlobRefsConn = (*Conn)(nil)
	_ driver.BlobRefsTx   = (*Tx)(nil)
)

// SetBlobRefs replaces the set of blob ids the row (table, rowID)
// references with blobIDs (BLOB-1): an empty set clears it, a repeated id
// counts once. Buffered (no round trip); it lands with the Tx's commit
// and vanishes with its rollback. Errors: CodeUnknownTable (SCH-8).
func (t *Tx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) error {
	clear := func() error {
		t.pending = append(t.pending, stmt{sqlBlobRefsClearRow, []any{t.partition, table, rowID}})
		return nil
	}
	return blobrefs.Set(ctx, t.op, t.c.state.Table, table, blobIDs, clear, func(ids []string) error {
		t.pending = append(t.pending, stmt{sqlBlobRefsInsert, []any{t.partition, table, rowID, ids}})
		return nil
	})
}

// ListRowsReferencingBlob returns the existing rows of partition that
// reference blobID, with their current scopes, at most limit (1…10,000),
// ordered by table name then row id (BLOB-1). One statement per table of
// the ensured schema until the limit is reached, each a key range of
// _sync_blob_refs joined to the table by primary key.
func (c *Conn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]driver.BlobRowRef, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	const what = "postgres: list rows referencing a blob"
	return blobrefs.ListRows(c.state.Tables(), limit, func(name string, x *table, n int) ([]driver.BlobRowRef, error) {
		rows, err := c.pool.Query(ctx, x.blobRowsSQL(), partition, blobID, name, int64(n))
		if err != nil {
			return nil, c.mapErr(ctx, err, what)
		}
		refs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.BlobRowRef, error) {
			return blobrefs.Scan(r.Scan, name, x.def.Scopes)
		})
		return refs, c.mapErr(ctx, err, what)
	})
}

// ListReferencedBlobIDs returns the distinct blob ids referenced in
// partition that are > afterBlobID, ascending bytewise, at most limit
// (1…10,000) (BLOB-1).
func (c *Conn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, sqlBlobRefsListIDs, partition, afterBlobID, int64(limit))
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: list referenced blob ids")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, c.mapErr(ctx, err, "postgres: list referenced blob ids")
}
