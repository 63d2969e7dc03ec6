package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// AckClientCursor raises the cursor and time of the client's record in
// place, in one statement on the writer (sqlitesql.AckClient), when the
// record is bound to actorID and cursor is at most the head (CR-6); the
// writer serializes it with every other write, a PutClientRecord
// included. It reports whether it acked; otherwise nothing was written.
func (c *Conn) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error) {
	n, err := c.writeCount(ctx, "sqlite: ack client cursor", sqlitesql.AckClient, partition, clientID, actorID, cursor, atMs)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}
