package mysql

import (
	"context"
	"database/sql"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// Index lookup (capability index-lookup, IXL-1…IXL-4): an exact lookup
// through a declared index, served by that index (partition, columns…),
// or by its twin when the table has one (servingIndex):
// values compare with <=>, so NULL matches NULL and the index still serves
// the lookup (ref access, rows in id order). Rows come back with the same
// select list as every row read, so their scopes are their scope columns
// (IXL-4).

var (
	_ driver.IndexLookupConn = (*Conn)(nil)
	_ driver.IndexLookupTx   = (*Tx)(nil)
)

func (c *Conn) scanRowsByIndex(ctx context.Context, tx *sql.Tx, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, err
	}
	ix, err := schemaplan.Index(x.def, q)
	if err != nil {
		return nil, err
	}
	query, args, err := x.indexLookup(partition, ix, q)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, tx, x, query, args, "mysql: index lookup")
}

// indexLookup returns the lookup statement of the declared index ix and
// its arguments: partition, the index values (converted like stored
// values; nil is NULL), the exclusive after-id, the limit. q holds one
// value per column of ix (schemaplan.Index). A value longer than a keyed
// column allows is bound as is: it matches nothing.
func (x *table) indexLookup(partition string, ix driver.Index, q driver.IndexQuery) (string, []any, error) {
	pk := quoteIdent(x.def.PrimaryKey)
	preds := []string{quoteIdent(partitionColumn) + " = ?"}
	args := []any{partition}
	for i, name := range ix.Columns {
		col, _ := x.def.Column(name)
		v, err := toSQL(col, false, q.Values[i])
		if err != nil {
			return "", nil, err
		}
		preds = append(preds, quoteIdent(name)+" <=> ?")
		args = append(args, v)
	}
	preds = append(preds, pk+" > ?")
	query := "SELECT " + x.sel + " FROM " + quoteIdent(x.def.Name) + " FORCE INDEX (" + quoteIdent(servingIndex(x.def, ix)) + ") WHERE " +
		strings.Join(preds, " AND ") + " ORDER BY " + pk + " LIMIT ?"
	return query, append(args, q.AfterRowID, int64(q.Limit)), nil
}

// readRows runs a row query of table x on tx (nil: committed data) and
// decodes its rows.
func (c *Conn) readRows(ctx context.Context, tx *sql.Tx, x *table, query string, args []any, what string) ([]driver.Row, error) {
	rows, err := c.query(ctx, tx, query, args, what)
	if err != nil {
		return nil, err
	}
	return sqlrows.Decode(rows, x.scanDest(), x.decodeRow, func(err error) error { return c.mapErr(ctx, err, what) })
}
