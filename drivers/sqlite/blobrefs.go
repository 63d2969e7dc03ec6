package sqlite

import (
	"context"
	"sort"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
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
	return t.op(ctx, func() error {
		if _, err := t.c.table(table); err != nil {
			return err
		}
		if err := t.st.exec(ctx, sqlitesql.BlobRefsClearRow, t.partition, table, rowID); err != nil {
			return err
		}
		if len(blobIDs) == 0 {
			return nil
		}
		list, err := storelayout.JSONList(blobIDs)
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
	st := c.state.Load()
	if st == nil {
		return nil, nil
	}
	names := make([]string, 0, len(st.tables))
	for name := range st.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []driver.BlobRowRef
	for _, name := range names {
		if len(out) >= limit {
			break
		}
		x := st.tables[name]
		rows, err := c.query(ctx, c.reader(), x.BlobRefsRowsSQL(), []any{partition, blobID, name, int64(limit - len(out))})
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			vals := make([]string, 1+len(x.Def.Scopes))
			dest := make([]any, len(vals))
			for i := range vals {
				dest[i] = &vals[i]
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, c.mapErr(ctx, err, "sqlite: list rows referencing a blob")
			}
			ref := driver.BlobRowRef{Table: name, RowID: vals[0], Scopes: make(driver.Scopes, len(x.Def.Scopes))}
			for i, s := range x.Def.Scopes {
				ref.Scopes[s.Variable] = vals[1+i]
			}
			out = append(out, ref)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, c.mapErr(ctx, err, "sqlite: list rows referencing a blob")
		}
	}
	return out, nil
}

// ListReferencedBlobIDs returns the distinct blob ids referenced in
// partition that are > afterBlobID, ascending bytewise, at most limit
// (1…10,000) (BLOB-1).
func (c *Conn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.query(ctx, c.reader(), sqlitesql.BlobRefsListIDs, []any{partition, afterBlobID, int64(limit)})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, c.mapErr(ctx, err, "sqlite: list referenced blob ids")
		}
		out = append(out, id)
	}
	return out, c.mapErr(ctx, rows.Err(), "sqlite: list referenced blob ids")
}
