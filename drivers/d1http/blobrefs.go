package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/blobrefs"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// The blob-refs capability (BLOB-1), with the SQLite dialect's SQL: a
// row's set is replaced in the push batch (so it lands with the commit);
// deleting a row clears it (Tx.afterRowWrite).

var (
	_ driver.BlobRefsConn = (*Conn)(nil)
	_ driver.BlobRefsTx   = (*Tx)(nil)
)

// SetBlobRefs stages the replacement of the row's blob set; empty clears
// it (BLOB-1). Errors: CodeUnknownTable.
func (t *Tx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) error {
	clear := func() error {
		t.writes = append(t.writes, st(sqlitesql.BlobRefsClearRow, t.partition, table, rowID))
		return nil
	}
	return blobrefs.Set(ctx, t.opCtx, t.c.state.Table, table, blobIDs, clear, func(ids []string) error {
		list, err := storelayout.JSONList(ids)
		if err != nil {
			return err
		}
		t.writes = append(t.writes, st(sqlitesql.BlobRefsInsert, t.partition, table, rowID, list))
		return nil
	})
}

// ListRowsReferencingBlob returns the existing rows of the partition that
// reference blobID, with their scopes, tables by name then row id, at most
// limit (1…10,000) (BLOB-1).
func (c *Conn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]driver.BlobRowRef, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return blobrefs.ListRows(c.state.Tables(), limit, func(name string, x *sqlitesql.Table, n int) ([]driver.BlobRowRef, error) {
		rows, err := c.rows(ctx, "d1http: list rows referencing a blob", x.BlobRefsRowsSQL(), partition, blobID, name, n)
		if err != nil {
			return nil, err
		}
		refs := make([]driver.BlobRowRef, 0, len(rows))
		for _, r := range rows {
			if len(r) != 1+len(x.Def.Scopes) {
				return nil, driver.Errorf(driver.CodeInternal, "d1http: malformed blob reference")
			}
			vals := make([]string, len(r))
			for i := range r {
				vals[i], _ = rawString(r[i])
			}
			refs = append(refs, blobrefs.Ref(name, x.Def.Scopes, vals))
		}
		return refs, nil
	})
}

// ListReferencedBlobIDs returns the distinct referenced blob ids >
// afterBlobID, ascending bytewise, at most limit (1…10,000) (BLOB-1).
func (c *Conn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error) {
	rows, err := c.rows(ctx, "d1http: list referenced blob ids", sqlitesql.BlobRefsListIDs, partition, afterBlobID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		id, err := rawString(r[0])
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: blob id is not text")
		}
		out = append(out, id)
	}
	return out, nil
}
