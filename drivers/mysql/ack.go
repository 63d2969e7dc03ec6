package mysql

import "context"

// AckClientCursor raises the cursor and time of the client's record in
// place, in one statement (ackClient), retried on lock conflicts, when
// the record is bound to actorID and cursor is at most the head (CR-6).
// It reports whether it acked; otherwise nothing was written.
func (c *Conn) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error) {
	if err := c.check(); err != nil {
		return false, err
	}
	var n int64
	err := c.retry(ctx, func() error {
		res, err := c.exec(ctx, nil, ackClient, cursor, atMs, partition, clientID, actorID, cursor, partition)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, c.mapErr(ctx, err, "mysql: ack client cursor")
	}
	return n > 0, nil
}
