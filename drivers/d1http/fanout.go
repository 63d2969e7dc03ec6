package d1http

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

var _ driver.CommitFanoutConn = (*Conn)(nil)

// defaultFanoutPoll is the DSN's fanout_poll_ms default.
const defaultFanoutPoll = time.Second

// SubscribeCommits delivers a wake for every commit that lands in the
// database, from any Conn of any process (FAN-1), until ctx ends or the
// Conn closes; then it closes the channel. D1 has no notification
// channel, so the Conn polls (driver/fanpoll): every fanout_poll_ms
// (default 1 s) one read request of the partitions' heads per 1,000
// partitions, for all subscribers of the Conn; commits made through this
// Conn wake its subscribers at once. A failed poll is followed by a
// catch-up wake for every partition that moved. Errors: CodeClosed after
// Close; CodeUnavailable when the first read of the heads fails.
func (c *Conn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.fan.Subscribe(ctx)
}

// commitHeads is the fanout Hub's HeadsFunc.
func (c *Conn) commitHeads(ctx context.Context, after string, limit int) ([]driver.CommitWake, error) {
	rows, err := c.rows(ctx, "d1http: read the partitions' heads", sqlitesql.SelectCommitHeads, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]driver.CommitWake, 0, len(rows))
	for _, r := range rows {
		p, err := rawString(r[0])
		if err != nil {
			return nil, driver.Wrap(driver.CodeInternal, err, "d1http: read the partitions' heads")
		}
		seq, err := rawInt(r[1])
		if err != nil {
			return nil, driver.Wrap(driver.CodeInternal, err, "d1http: read the partitions' heads")
		}
		out = append(out, driver.CommitWake{Partition: p, CommitSeq: seq})
	}
	return out, nil
}
