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
