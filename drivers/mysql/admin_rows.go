package mysql

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// ListRows returns one page of the current rows of table, ascending by id
// after afterRowID, at most limit (ADM-3): a range read of the table's
// primary key. Errors: CodeUnknownTable.
func (c *Conn) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]driver.Row, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, nil, x, x.listRows(), []any{partition, afterRowID, int64(limit)}, "mysql: list rows")
}
