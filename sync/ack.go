package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// ackAttempts bounds the acks AckClientCursor tries when a record bound
// to the actor appears between its ack and its look at why the ack wrote
// nothing.
const ackAttempts = 3

// AckClientCursor records that client clientID of partition, acting as
// actorID, applied every commit through cursor contiguously, across all
// its subscriptions (SSP2 §8.2's ack), without a pull (CR-6). When a
// record of the client bound to actorID exists, its Cursor becomes
// max(Cursor, cursor) — never lower — and its UpdatedAtMs max(UpdatedAtMs,
// atMs), atomically against a Pull writing the record at the same time
// (the driver updates those two fields in place; a Pull's record lands
// whole, before or after), and AckClientCursor returns true. The record's
// subscriptions, actor and wire version are never touched.
//
// The record's Cursor is what retention's active-cursor floor holds
// (RET-1), so an ack raises the client's floor: ack only what the client
// acknowledged as contiguous for all its subscriptions. A subscription
// still bootstrapping below the ack may then find its commits pruned and
// be reset (cursor_expired, PULL-2) — never given a gap (HZ-4).
//
// Answers: no record of the client → false, nothing written (its record
// is written by its next Pull, PULL-8); a record bound to another actor →
// CodeClientActorMismatch, nothing written (PULL-9). Checks, before
// anything is written: V-1 partition; client id V-2 and V-7
// (CodeInvalidClientID); actor id V-2; cursor ≥ 0 and at most the
// partition's head, MaxCommitSeq (a cursor the store never issued) →
// CodeInvalidArgument. atMs is any int64, epoch milliseconds.
//
// It costs one statement when the ack lands; an ack that writes nothing
// costs two reads more, to say why.
func (s *Store) AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (_ bool, err error) {
	defer s.observe(&ctx, "Store.AckClientCursor", partition).done(&err)
	const op = "AckClientCursor"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition), checkClientID(op, clientID),
		idActor.check(op, actorID), checkSeq(op, "cursor", cursor, "CR-6")); err != nil {
		return false, err
	}
	for range ackAttempts {
		ok, err := s.conn.AckClientCursor(ctx, partition, clientID, actorID, cursor, atMs)
		if err != nil || ok {
			return ok, err
		}
		// Nothing was written: say why. The head never drops (SEQ-5), so
		// a cursor beyond it now was beyond it at the ack.
		head, err := s.conn.MaxCommitSeq(ctx, partition)
		if err != nil {
			return false, err
		}
		if cursor > head {
			return false, argErr(op, "CR-6", "cursor %d is beyond the partition's head %d: this store never issued it", cursor, head)
		}
		rec, found, err := s.conn.GetClientRecord(ctx, partition, clientID)
		switch {
		case err != nil:
			return false, err
		case !found:
			return false, nil
		case rec.ActorID != actorID:
			return false, driver.Errorf(CodeClientActorMismatch,
				"%s: the client id is bound to another actor; a client id belongs to the actor that first pulled with it (CR-6, PULL-9)", op)
		}
		// A record bound to actorID was written since the ack looked
		// (a first Pull racing the ack): ack again.
	}
	return false, nil
}
