package d1http

import (
	"bytes"
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The index-lookup capability (IXL-1…IXL-4): an exact lookup through a
// declared index, served by its engine index (INDEXED BY), values sent as
// one JSON parameter (VAL-1, any index width).

var (
	_ driver.IndexLookupConn = (*Conn)(nil)
	_ driver.IndexLookupTx   = (*Tx)(nil)
)

// ScanRowsByIndex returns committed rows whose index columns equal
// q.Values (NULL matches NULL), ascending id after q.AfterRowID, at most
// q.Limit (IXL-1). Errors in IXL-2's order: CodeUnknownTable,
// CodeIndexNotFound, CodeIndexValueCountMismatch, CodeInvalidValue.
// q.Limit is trusted: sync.Store refuses one outside 1…1,000 (V-5).
func (c *Conn) ScanRowsByIndex(ctx context.Context, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	x, ix, vals, err := c.indexQuery(q)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, x, d1sql.D1IndexLookup(x, ix), []any{partition, vals, q.AfterRowID, q.Limit})
}

// indexQuery checks q (IXL-2) and returns the table, the index and the
// JSON-encoded values.
func (c *Conn) indexQuery(q driver.IndexQuery) (*sqlitesql.Table, driver.Index, string, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, driver.Index{}, "", err
	}
	ix, err := schemaplan.Index(x.Def, q)
	if err != nil {
		return nil, driver.Index{}, "", err
	}
	cols := make([]driver.Column, len(ix.Columns))
	for i, name := range ix.Columns {
		cols[i], _ = x.Def.Column(name)
	}
	vals, err := d1sql.D1Values(cols, q.Values)
	if err != nil {
		return nil, driver.Index{}, "", err
	}
	return x, ix, vals, nil
}

// ScanRowsByIndex is the lookup inside the Tx: it sees staged upserts,
// moves and deletes (IXL-3), by reading the committed page with the limit
// raised by the number of staged rows of the table and merging them in.
func (t *Tx) ScanRowsByIndex(ctx context.Context, q driver.IndexQuery) (rows []driver.Row, err error) {
	err = t.op(func() error {
		x, ix, vals, err := t.c.indexQuery(q)
		if err != nil {
			return err
		}
		staged := t.ov.rows[q.Table]
		wide := q
		wide.Limit = q.Limit + len(staged)
		committed, err := t.c.readRows(ctx, x, d1sql.D1IndexLookup(x, ix), []any{t.partition, vals, q.AfterRowID, wide.Limit})
		if err != nil {
			return err
		}
		rows = t.ov.merge(x, committed, driver.ScanQuery{Table: q.Table, AfterRowID: q.AfterRowID, Limit: q.Limit},
			func(r driver.Row) bool { return indexMatch(ix, q.Values, r.Values) })
		return nil
	})
	return rows, err
}

// indexMatch reports whether a row holds want in ix's columns (IS: NULL matches NULL).
func indexMatch(ix driver.Index, want []any, got driver.Values) bool {
	for i, name := range ix.Columns {
		a, b := want[i], got[name]
		if a == nil || b == nil {
			if a != nil || b != nil {
				return false
			}
			continue
		}
		if x, ok := a.([]byte); ok {
			y, ok := b.([]byte)
			if !ok || !bytes.Equal(x, y) {
				return false
			}
			continue
		}
		if a != b {
			return false
		}
	}
	return true
}
