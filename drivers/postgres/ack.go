package postgres

import "context"

// AckClientCursor raises the cursor and time of the client's record in
// place, in one statement (sqlAckClient), when the record is bound to
// actorID and cursor is at most the head (CR-6). It reports whether it
// acked; otherwise nothing was written.
func (c *Conn) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error) {
	n, err := c.exec(ctx, "postgres: ack client cursor", sqlAckClient, partition, clientID, actorID, cursor, atMs)
	return n > 0, err
}
