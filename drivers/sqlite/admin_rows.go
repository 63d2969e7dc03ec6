package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// ListRows returns one page of the current rows of table, ascending by id
// after afterRowID, at most limit (ADM-3): a walk of the table's primary
// key on a reader. Errors: CodeUnknownTable.
func (c *Conn) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]driver.Row, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, c.reader(), x, x.ListRows(), []any{partition, afterRowID, int64(limit)}, "sqlite: list rows")
}
