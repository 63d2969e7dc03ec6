package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// SubscribeCommits returns a channel of commit wakes — (partition,
// commitSeq) — for every commit that lands in the store after it returns,
// made by this or any other instance (process, host, node), until ctx
// ends or the Store closes; then the channel is closed (FAN-1,
// capability commit-fanout). A host uses it to tell its waiting pullers
// (long polls, websockets) of one partition to pull now. Wakes may repeat
// or coalesce: treat one as "pull from your cursor", never as a count;
// after any gap (a lost connection, a failed poll) a catch-up wake names
// every partition that moved, never silence.
//
// Every bundled driver declares it: postgres by LISTEN/NOTIFY (one
// connection per Conn, shared by its subscriptions), mysql and d1http by
// polling the partitions' heads (every 100 ms and 1 s by default, one
// poll per Conn for all its subscriptions), sqlite by an in-process hub
// plus polling for other processes. Latency per driver:
// docs/scaling.md. Without the capability → CodeUnsupported (ERR-2); a
// closed Store → CodeClosed; CodeUnavailable when the engine cannot be
// reached to start the subscription.
func (s *Store) SubscribeCommits(ctx context.Context) (_ <-chan CommitWake, err error) {
	defer s.observe(&ctx, "Store.SubscribeCommits", "").done(&err)
	const op = "SubscribeCommits"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	f, ok := s.conn.(driver.CommitFanoutConn)
	if !ok {
		return nil, s.unsupported(op, CapCommitFanout)
	}
	return f.SubscribeCommits(ctx)
}
