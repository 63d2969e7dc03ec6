package postgres

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rowcodec"
	"github.com/syncstore/syncstore/internal/schemaplan"
)

// Index lookup (capability index-lookup, IXL-1…IXL-4). A lookup is an
// exact match on a declared index's columns, served by that index
// ("_sync_partition", columns…) named declaredIndexName. A nil value
// matches NULL: the statement says `col IS NULL` for it (which a B-tree
// serves) and `col = $n` for the others, so there is one statement text
// per index and NULL pattern — never `IS NOT DISTINCT FROM`, which no
// index serves. The Tx half runs on the Tx's connection after its
// buffered writes, so it sees them (IXL-3). Rows use the same select list
// as every row read, so their scopes are their scope columns (IXL-4).

var (
	_ driver.IndexLookupConn = (*Conn)(nil)
	_ driver.IndexLookupTx   = (*Tx)(nil)
)

// ScanRowsByIndex returns the committed rows of partition whose index
// columns equal q.Values position by position (nil matches NULL), with id
// > q.AfterRowID, ascending bytewise by id, at most q.Limit (IXL-1). One
// round trip. Errors, in IXL-2's order: CodeUnknownTable (SCH-8),
// CodeIndexNotFound, CodeIndexValueCountMismatch, CodeInvalidValue (naming
// the column, never the value, V-10). q.Limit is trusted: sync.Store
// refuses one outside 1…1,000 before the driver runs (V-5).
func (c *Conn) ScanRowsByIndex(ctx context.Context, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	x, sql, args, err := c.indexLookup(partition, q)
	if err != nil {
		return nil, err
	}
	return c.queryRows(ctx, x, sql, args)
}

// ScanRowsByIndex is Conn.ScanRowsByIndex inside the Tx, on its
// connection: it sees the Tx's own upserts, moves and deletes (IXL-3,
// TX-3) and carries the buffered writes in the same round trip.
func (t *Tx) ScanRowsByIndex(ctx context.Context, q driver.IndexQuery) (rows []driver.Row, err error) {
	err = t.op(ctx, func() error {
		x, sql, args, err := t.c.indexLookup(t.partition, q)
		if err != nil {
			return err
		}
		return t.read(ctx, "postgres: index lookup", sql, args, func(r pgx.Rows) error {
			row, err := x.decodeRow(r)
			rows = append(rows, row)
			return err
		})
	})
	return rows, err
}

// indexLookup checks q in IXL-2's order and returns the table, the
// statement and its arguments: $1 partition, one parameter per non-nil
// value, then the exclusive after-id and the limit.
func (c *Conn) indexLookup(partition string, q driver.IndexQuery) (*table, string, []any, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, "", nil, err
	}
	ix, err := schemaplan.Index(x.def, q)
	if err != nil {
		return nil, "", nil, err
	}
	args := []any{partition}
	preds := []string{quote(partitionColumn) + " = $1"}
	for i, name := range ix.Columns {
		col, _ := x.def.Column(name)
		v, err := lookupValue(name, col.Type, q.Values[i])
		if err != nil {
			return nil, "", nil, err
		}
		if v == nil {
			preds = append(preds, quote(name)+" IS NULL")
			continue
		}
		args = append(args, v)
		preds = append(preds, quote(name)+" = $"+strconv.Itoa(len(args)))
	}
	pk := quote(x.def.PrimaryKey)
	args = append(args, q.AfterRowID, int64(q.Limit))
	n := len(args)
	preds = append(preds, pk+" > $"+strconv.Itoa(n-1))
	sql := "SELECT " + x.selectList("") + " FROM " + quote(x.def.Name) +
		" WHERE " + strings.Join(preds, " AND ") + " ORDER BY " + pk + " LIMIT $" + strconv.Itoa(n)
	return x, sql, args, nil
}

// lookupValue is rowcodec.Bind for a lookup value, refusing strings the server
// would reject (NUL, invalid UTF-8: V-3) before they reach it. Like a
// stored value, an empty []byte is an empty bytea and a nil one is NULL.
func lookupValue(col string, t driver.ColumnType, v any) (any, error) {
	if s, ok := v.(string); ok && t == driver.TypeString && (strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)) {
		return nil, &driver.Error{Code: driver.CodeInvalidValue, Column: col, OpIndex: -1,
			Message: "value of column " + col + " is not valid UTF-8 without NUL", Rule: "V-3"}
	}
	return rowcodec.Bind(col, t, v, false)
}
