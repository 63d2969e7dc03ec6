package sqlite

import (
	"context"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/driver/fanpoll"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

var _ driver.CommitFanoutConn = (*Conn)(nil)

// SubscribeCommits (driver.CommitFanoutConn, FAN-1) wakes on commits to
// the store's file, and closes the channel when the Conn closes too.
// Commits made by any Conn of this process on the same file
// wake at once (an in-process hub keyed by the file's path); commits of
// other processes are seen by polling the partitions' heads every 100 ms
// (driver/fanpoll: one range read of _sync_partitions per poll for all
// subscribers of the Conn). A failed poll is followed by a catch-up wake
// for every partition that moved. Errors: CodeClosed after Close;
// CodeUnavailable when the first read of the heads fails.
func (c *Conn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.fan.Subscribe(ctx)
}

// commitHeads is the fanout Hub's HeadsFunc.
func (c *Conn) commitHeads(ctx context.Context, after string, limit int) ([]driver.CommitWake, error) {
	rows, err := c.query(ctx, c.reader(), sqlitesql.SelectCommitHeads, []any{after, int64(limit)})
	return sqlrows.Read(ctx, rows, err, sqlrows.CommitWake, c.mapErr, "sqlite: read the partitions' heads")
}

// hubs is the in-process half of fanout: the Hubs of every open Conn by
// the store file they write, so a commit wakes every Conn of the same
// file in this process at once.
var hubs = struct {
	mu     gosync.Mutex
	byFile map[string]map[*fanpoll.Hub]struct{}
}{byFile: map[string]map[*fanpoll.Hub]struct{}{}}

// joinFanout registers the Conn's Hub under the store's file.
func (c *Conn) joinFanout(file string) {
	c.fan.Heads, c.fanFile = c.commitHeads, file
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	if hubs.byFile[file] == nil {
		hubs.byFile[file] = map[*fanpoll.Hub]struct{}{}
	}
	hubs.byFile[file][&c.fan] = struct{}{}
}

// leaveFanout ends the Conn's subscriptions and unregisters its Hub.
func (c *Conn) leaveFanout() {
	c.fan.Close()
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	delete(hubs.byFile[c.fanFile], &c.fan)
	if len(hubs.byFile[c.fanFile]) == 0 {
		delete(hubs.byFile, c.fanFile)
	}
}

// publish wakes the subscribers of every Conn of the store's file in this
// process (a commit of this Conn landed).
func (c *Conn) publish(w driver.CommitWake) {
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	for h := range hubs.byFile[c.fanFile] {
		h.Publish(w)
	}
}
