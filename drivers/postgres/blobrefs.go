package postgres

import (
	"context"
	"strings"

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

var blobRefsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_blob_refs (
	partition ` + textC + ` NOT NULL,
	blob_id ` + textC + ` NOT NULL,
	tbl ` + textC + ` NOT NULL,
	row_id ` + textC + ` NOT NULL,
	PRIMARY KEY (partition, blob_id, tbl, row_id))`,
	`CREATE INDEX IF NOT EXISTS _sync_blob_refs_by_row ON _sync_blob_refs (partition, tbl, row_id, blob_id)`,
}

func init() { infraDDL = append(infraDDL, blobRefsDDL...) }

const (
	// sqlBlobRefsClearRow: $1 partition, $2 table, $3 row id.
	sqlBlobRefsClearRow = `DELETE FROM _sync_blob_refs WHERE partition = $1 AND tbl = $2 AND row_id = $3`
	// sqlBlobRefsInsert: $1 partition, $2 table, $3 row id, $4 blob ids
	// (text[]); a repeated id is one reference.
	sqlBlobRefsInsert = `INSERT INTO _sync_blob_refs (partition, blob_id, tbl, row_id)
SELECT DISTINCT $1, u.id, $2, $3 FROM unnest($4::text[]) AS u(id)
ON CONFLICT DO NOTHING`
	// sqlBlobRefsClearTable: $1 table, every partition (a migration
	// retiring the table, in its transaction).
	sqlBlobRefsClearTable = `DELETE FROM _sync_blob_refs WHERE tbl = $1`
	// sqlBlobRefsListIDs: $1 partition, $2 after blob id (exclusive), $3
	// limit → distinct blob ids ascending bytewise (a walk of the key).
	sqlBlobRefsListIDs = `SELECT DISTINCT blob_id FROM _sync_blob_refs WHERE partition = $1 AND blob_id > $2 ORDER BY blob_id LIMIT $3`
)

// SetBlobRefs replaces the set of blob ids the row (table, rowID)
// references with blobIDs (BLOB-1): an empty set clears it, a repeated id
// counts once. Buffered (no round trip); it lands with the Tx's commit
// and vanishes with its rollback. Errors: CodeUnknownTable (SCH-8).
func (t *Tx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) error {
	return t.op(ctx, func() error {
		if _, err := t.c.table(table); err != nil {
			return err
		}
		t.pending = append(t.pending, stmt{sqlBlobRefsClearRow, []any{t.partition, table, rowID}})
		if len(blobIDs) > 0 {
			t.pending = append(t.pending, stmt{sqlBlobRefsInsert, []any{t.partition, table, rowID, blobIDs}})
		}
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
	st := c.state.Load()
	if st == nil {
		return nil, nil
	}
	const what = "postgres: list rows referencing a blob"
	return blobrefs.ListRows(st.tables, limit, func(name string, x *table, n int) ([]driver.BlobRowRef, error) {
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

// blobRowsSQL lists the existing rows of the table referencing a blob: $1
// partition, $2 blob id, $3 the table's name as a value, $4 limit → row
// id, then the scope columns in def.Scopes order; ascending by row id.
func (x *table) blobRowsSQL() string {
	cols := []string{"r.row_id"}
	for _, s := range x.def.Scopes {
		cols = append(cols, "t."+quote(s.Column))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM _sync_blob_refs AS r JOIN " + quote(x.def.Name) + " AS t" +
		" ON t." + quote(partitionColumn) + " = r.partition AND t." + quote(x.def.PrimaryKey) + " = r.row_id" +
		" WHERE r.partition = $1 AND r.blob_id = $2 AND r.tbl = $3 ORDER BY r.row_id LIMIT $4"
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
