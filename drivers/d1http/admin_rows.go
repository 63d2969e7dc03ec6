package d1http

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
)

// ListRows returns one page of the current rows of table, ascending by id
// after afterRowID, at most limit (ADM-3): a walk of the table's primary
// key, in one request. Errors: CodeUnknownTable.
func (c *Conn) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]driver.Row, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, x, d1sql.D1Rows(x, x.ListRows()), []any{partition, afterRowID, limit})
}
