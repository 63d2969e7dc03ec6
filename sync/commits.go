package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// CommitsQuery selects whole commits for ReadCommits (driver.CommitsQuery:
// AfterSeq exclusive, ThroughSeq inclusive, LimitChanges 1…10,000).
type CommitsQuery = driver.CommitsQuery

// ReadCommits returns the whole commits of partition with q.AfterSeq <
// seq ≤ q.ThroughSeq, oldest first, each with its metadata and every
// change it logged, of every table, in their original order (LOG-1):
// upserts with their values and row version, deletes with neither, both
// with their scopes (Change.Table names each change's table). Commits
// without changes and pruned commits never appear. Reading stops after
// the commit that brings the changes returned to ≥ q.LimitChanges; a
// commit is never split, so one with more changes than the limit comes
// alone; fewer changes than the limit mean the read reached q.ThroughSeq
// (or the head, when q.ThroughSeq lies beyond it) (LOG-2). Resume after
// the last seq returned.
//
// It is the read a server fans landed commits out with: a wake
// (SubscribeCommits) names a partition and a seq, and every instance reads
// what landed since its own cursor and filters it per connection in
// memory. The read walks the log's primary key; it never scans the log
// (LOG-4).
//
// Checks: V-1 partition; q.LimitChanges 1…10,000 (CodeInvalidLimit,
// V-5); 0 ≤ q.AfterSeq ≤ q.ThroughSeq (CodeInvalidArgument, LOG-3). The
// driver then checks the cursor in the snapshot of the read: q.AfterSeq
// below the partition's horizon → CodeCursorExpired (HZ-4: commits after
// it may be gone), beyond its head → CodeCursorAhead (WIN-8); no commit is
// returned with either (LOG-3). The primary serves it, marked for a
// replica or not.
func (s *Store) ReadCommits(ctx context.Context, partition string, q CommitsQuery) (_ []Commit, err error) {
	defer s.observe(&ctx, "Store.ReadCommits", partition).done(&err)
	const op = "ReadCommits"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition),
		checkLimit(op, "limitChanges", q.LimitChanges, MaxLimit), checkSeq(op, "afterSeq", q.AfterSeq, "LOG-3")); err != nil {
		return nil, err
	}
	if q.ThroughSeq < q.AfterSeq {
		return nil, argErr(op, "LOG-3", "afterSeq is above throughSeq")
	}
	return s.conn.ReadCommits(ctx, partition, q)
}
