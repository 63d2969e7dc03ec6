package d1http

import (
	"context"

	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// AckClientCursor raises the cursor and time of the client's record in
// place, in one statement (sqlitesql.AckClient, its integers bound as
// decimal text), when the record is bound to actorID and cursor is at
// most the head (CR-6). D1 runs a statement atomically, so a
// PutClientRecord racing it lands wholly before or after. It reports
// whether it acked; otherwise nothing was written.
func (c *Conn) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error) {
	a, err := c.write(ctx, "d1http: ack client cursor", st(sqlitesql.AckClient, partition, clientID, actorID, dec(cursor), dec(atMs)))
	if err != nil {
		return false, err
	}
	if a.lost {
		return a.n > 0, nil
	}
	return a.res[0].Meta.Changes > 0, nil
}
