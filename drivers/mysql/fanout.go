package mysql

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

var _ driver.CommitFanoutConn = (*Conn)(nil)

// SubscribeCommits (driver.CommitFanoutConn, FAN-1) wakes on commits from
// any Conn of any process or Galera node, and closes the channel when the
// Conn closes. MySQL has no
// notification channel, so the Conn polls (driver/fanpoll): every 100 ms
// (fanpoll.DefaultInterval) one range read of the partitions' heads for
// all subscribers of the Conn (ceil(partitions/1,000) statements), and
// commits made through this Conn wake its subscribers at once. A failed
// poll is followed by a catch-up wake for every partition that moved.
// Latency for other processes: up to one interval plus one poll
// (docs/scaling.md). Errors: CodeClosed after Close; CodeUnavailable when
// the first read of the heads fails.
func (c *Conn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.fan.Subscribe(ctx)
}

// commitHeads is the fanout Hub's HeadsFunc.
func (c *Conn) commitHeads(ctx context.Context, after string, limit int) ([]driver.CommitWake, error) {
	rows, err := c.query(ctx, nil, selectCommitHeads, []any{after, limit}, "mysql: read the partitions' heads")
	return sqlrows.Read(ctx, rows, err, sqlrows.CommitWake, c.mapErr, "mysql: read the partitions' heads")
}
