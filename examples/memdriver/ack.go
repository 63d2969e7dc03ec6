package memdriver

import (
	"context"
	"errors"
)

// AckClientCursor raises the cursor and time of the client's record when
// it is bound to actorID and cursor is at most the head, under the
// partition's write lock, so a PutClientRecord racing it lands wholly
// before or after (CR-6). Otherwise it writes nothing and returns false.
func (c *Conn) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error) {
	if err := c.check(ctx); err != nil {
		return false, err
	}
	err := c.s.write(ctx, partition, func(d *draft) error {
		rec, ok := d.p.clients[clientID]
		if !ok || rec.ActorID != actorID || cursor > d.p.maxSeq {
			return errNotAcked // publishes nothing
		}
		rec.Cursor, rec.UpdatedAtMs = max(rec.Cursor, cursor), max(rec.UpdatedAtMs, atMs)
		d.clientsForWrite()[clientID] = rec // the subscriptions are shared, never changed
		return nil
	}, nil)
	if err == errNotAcked {
		return false, nil
	}
	return err == nil, err
}

// errNotAcked stops AckClientCursor's write without publishing a draft.
var errNotAcked = errors.New("memory: not acked")
