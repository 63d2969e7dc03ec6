package sync

import "context"

// The retention primitives under Prune (PR-7, CR-4, CR-5): driver.Conn's,
// after group V. Hosts normally call Prune, which runs them with the
// retention rule; they are public for special cases (a host's own
// schedule, an operator's tool).

// DeletePushResultsBefore is a primitive (PR-7): hosts apply retention with
// [Store.Prune], which calls it.
//
// DeletePushResultsBefore is driver.Conn's, after V-1 and limit 1…10,000
// (V-5): it deletes at most limit push results of partition recorded
// (PushResult.RecordedAtMs) strictly before beforeMs, oldest first, and
// returns how many it deleted (PR-7). A client that retries a push whose
// result is gone gets the push applied again, so keep results at least as
// long as a client may retry (RetentionPolicy.PushResultRetention).
func (s *Store) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (_ int64, err error) {
	defer s.observe(&ctx, "Store.DeletePushResultsBefore", partition).done(&err)
	const op = "DeletePushResultsBefore"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return 0, err
	}
	return s.conn.DeletePushResultsBefore(ctx, partition, beforeMs, limit)
}

// DeleteClientRecordsBefore is a primitive (CR-4): hosts apply retention
// with [Store.Prune], which calls it.
//
// DeleteClientRecordsBefore is driver.Conn's, after V-1 and limit
// 1…10,000 (V-5): it deletes at most limit client records of partition
// whose UpdatedAtMs is strictly before beforeMs, oldest first, and returns
// how many it deleted; a record refreshed meanwhile is never deleted
// (CR-4).
func (s *Store) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (_ int64, err error) {
	defer s.observe(&ctx, "Store.DeleteClientRecordsBefore", partition).done(&err)
	const op = "DeleteClientRecordsBefore"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return 0, err
	}
	return s.conn.DeleteClientRecordsBefore(ctx, partition, beforeMs, limit)
}

// MinClientCursor is a primitive (CR-5): hosts apply retention with
// [Store.Prune], which calls it.
//
// MinClientCursor is driver.Conn's, after V-1 and atLeast ≥ 0
// (CodeInvalidArgument): the smallest cursor ≥ atLeast among partition's
// client records updated at or after updatedSinceMs, and true; 0 and
// false when there is none (CR-5).
func (s *Store) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (_ int64, _ bool, err error) {
	defer s.observe(&ctx, "Store.MinClientCursor", partition).done(&err)
	const op = "MinClientCursor"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition), checkSeq(op, "atLeast", atLeast, "CR-5")); err != nil {
		return 0, false, err
	}
	return s.conn.MinClientCursor(ctx, partition, updatedSinceMs, atLeast)
}
