package conformance_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestPushCasesCatchBrokenDrivers runs the PUSH cases (sync.Store.Push
// over a driver) against wrappers of the SQLite driver that each break
// one promise Push relies on, and checks that exactly the expected rules
// fail: the engine is only as right as the driver
// under it, and the suite says which rule a driver breaks.
func TestPushCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^PUSH-[0-9]+/`)
	runBroken(t, []brokenDriver{
		// A Tx that never sees stored results (TX-3, PR-3): every retry
		// applies again, a reused key is never noticed, hooks run for
		// replays, a landed commit whose answer was lost is applied twice.
		{name: "tx-blind-to-push-results", match: match, want: []string{"PUSH-1", "PUSH-2", "PUSH-6", "PUSH-7"},
			wrap: func(c driver.Conn) driver.Conn { return &blindResults{connWrap{c}} }},
		// A Tx whose GetRow reports an older server version than stored
		// (ROW-2): base checks and version bumps go wrong.
		{name: "tx-row-version-off-by-one", match: match, want: []string{"PUSH-3", "PUSH-4"},
			also: []string{"PUSH-1", "PUSH-5", "PUSH-6", "PUSH-7"},
			wrap: func(c driver.Conn) driver.Conn { return &staleVersions{connWrap{c}} }},
		// CommitRejected that commits what the Tx staged (TX-8): a commit
		// rejected after some of its ops were written is half applied.
		{name: "commit-rejected-keeps-writes", match: match, want: []string{"PUSH-5"},
			wrap: func(c driver.Conn) driver.Conn { return &rejectKeepsWrites{connWrap{c}} }},
		// A driver.PushBeginner that files each row under the next key:
		// its own case fails, and so do the pushes that trust it. (caps
		// not nil: runBroken then adds no wrapper of its own, which would
		// hide BeginPush.)
		{name: "push-beginner-rows-shifted", match: match, want: []string{"PUSH-3"}, caps: []driver.Capability{},
			also: []string{"PUSH-1", "PUSH-2", "PUSH-4", "PUSH-5", "PUSH-6", "PUSH-7"},
			wrap: func(c driver.Conn) driver.Conn { return &shiftedPushReads{connWrap{c}} }},
	})
}

type blindResults struct{ connWrap }

func (c *blindResults) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return blindResultsTx{txWrap{tx}}, nil
}

type blindResultsTx struct{ txWrap }

func (blindResultsTx) GetPushResult(context.Context, string, string) (driver.PushResult, bool, error) {
	return driver.PushResult{}, false, nil
}

type staleVersions struct{ connWrap }

func (c *staleVersions) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return staleVersionsTx{txWrap{tx}}, nil
}

type staleVersionsTx struct{ txWrap }

func (t staleVersionsTx) GetRow(ctx context.Context, table, id string) (driver.Row, bool, error) {
	r, found, err := t.Tx.GetRow(ctx, table, id)
	if found {
		r.ServerVersion--
	}
	return r, found, err
}

type rejectKeepsWrites struct{ connWrap }

func (c *rejectKeepsWrites) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return rejectKeepsWritesTx{txWrap{tx}}, nil
}

type rejectKeepsWritesTx struct{ txWrap }

func (t rejectKeepsWritesTx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	if err := t.Tx.PutPushResult(ctx, clientID, clientCommitID, r); err != nil {
		return err
	}
	return t.Tx.Commit(ctx)
}

type shiftedPushReads struct{ connWrap }

func (c *shiftedPushReads) BeginPush(ctx context.Context, p, clientID, commitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	tx, read, err := c.Conn.(driver.PushBeginner).BeginPush(ctx, p, clientID, commitID, keys)
	if err != nil {
		return nil, read, err
	}
	if n := len(read.Rows); n > 1 {
		read.Rows = append(read.Rows[1:], read.Rows[0])
		read.Found = append(read.Found[1:], read.Found[0])
	}
	return txWrap{tx}, read, nil
}
