package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
)

// Index lookup (capability index-lookup, IXL-1…IXL-4): both halves run
// sqlitesql's lookup statement, served by the declared index; the Tx
// half runs it inside the write transaction, so it sees the Tx's staged
// upserts, moves and deletes (IXL-3).

var (
	_ driver.IndexLookupConn = (*Conn)(nil)
	_ driver.IndexLookupTx   = (*Tx)(nil)
)

// ScanRowsByIndex returns the committed rows of partition whose index
// columns equal q.Values position by position (nil matches NULL), with id
// > q.AfterRowID, ascending bytewise by id, at most q.Limit (IXL-1).
// Errors, in IXL-2's order: CodeUnknownTable (SCH-8), CodeIndexNotFound,
// CodeIndexValueCountMismatch, CodeInvalidValue. q.Limit is trusted:
// sync.Store refuses one outside 1…1,000 before the driver runs (V-5).
func (c *Conn) ScanRowsByIndex(ctx context.Context, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	return c.scanRowsByIndex(ctx, c.reader(), partition, q)
}

// ScanRowsByIndex is Conn.ScanRowsByIndex inside the Tx: it sees the Tx's
// own writes (IXL-3, TX-3).
func (t *Tx) ScanRowsByIndex(ctx context.Context, q driver.IndexQuery) (rows []driver.Row, err error) {
	err = t.op(ctx, func() error {
		rows, err = t.c.scanRowsByIndex(ctx, t.st, t.partition, q)
		return err
	})
	return rows, err
}

func (c *Conn) scanRowsByIndex(ctx context.Context, r runner, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, err
	}
	ix, err := schemaplan.Index(x.Def, q)
	if err != nil {
		return nil, err
	}
	args, err := x.IndexLookupArgs(partition, ix, q)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, r, x, x.IndexLookupSQL(ix), args, "sqlite: index lookup")
}
