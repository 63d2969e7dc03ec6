package sqlite

import "context"

// storeSizeSQL is the database's size: its page count times its page size.
const storeSizeSQL = `SELECT p.page_count * s.page_size FROM pragma_page_count() AS p, pragma_page_size() AS s`

// StoreSizeBytes returns the size of the database in bytes: page count ×
// page size, what the main file holds once the WAL is checkpointed (the
// WAL itself is not counted). It implements conformance.SizeReporter, so
// the standard benchmark reports the store's size after W1. Errors:
// CodeUnavailable after Close.
func (c *Conn) StoreSizeBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := c.queryRow(ctx, c.reader(), storeSizeSQL, nil, &n); err != nil {
		return 0, err
	}
	return n, nil
}
