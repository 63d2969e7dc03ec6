package postgres

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// ListRows returns one page of the current rows of table, ascending by id
// after afterRowID, at most limit (ADM-3): a walk of the table's primary
// key. Errors: CodeUnknownTable.
func (c *Conn) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]driver.Row, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return nil, err
	}
	return c.queryRows(ctx, x, x.listRows(), []any{partition, afterRowID, int64(limit)})
}
