package ssp2conf

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// faultConn is the driver.Conn an instance's server runs on: the
// instance's own Conn, passed through, except that a push's first read
// (driver.PushBeginner.BeginPush: the stored result of the commit's key
// and its rows) fails once with driver.CodeIdempotencyCacheMiss after
// failNextIdempotencyLookup armed it — what a stored result that cannot
// be decoded answers (PR-5). It is the storage-level failure upstream's
// idempotency-fault capability asks for (SPEC §6.3): the engine's
// idempotency is untouched, the lookup itself fails, nothing is written
// and the identical retry runs normally.
//
// It forwards the optional interfaces the server and the host use — the
// push's one-round-trip read, commit fanout (realtime), the admin views
// (readRows), As — and nothing else: the store's other capabilities are
// not the server's business.
type faultConn struct {
	driver.Conn
	pb    driver.PushBeginner
	fan   driver.CommitFanoutConn
	admin driver.AdminConn
	armed *atomic.Bool
}

var (
	_ driver.PushBeginner     = faultConn{}
	_ driver.CommitFanoutConn = faultConn{}
	_ driver.AdminConn        = faultConn{}
	_ driver.Aser             = faultConn{}
)

// newFaultConn wraps c, which must serve the push read, commit fanout and
// the admin views (every driver the host runs does).
func newFaultConn(c driver.Conn, armed *atomic.Bool) (faultConn, error) {
	pb, ok1 := c.(driver.PushBeginner)
	fan, ok2 := c.(driver.CommitFanoutConn)
	admin, ok3 := c.(driver.AdminConn)
	if !ok1 || !ok2 || !ok3 {
		return faultConn{}, fmt.Errorf("ssp2conf: the store's Conn (%T) lacks BeginPush, commit fanout or the admin views", c)
	}
	return faultConn{Conn: c, pb: pb, fan: fan, admin: admin, armed: armed}, nil
}

// Close does nothing: the instance's own Store owns the Conn and closes it.
func (c faultConn) Close() error { return nil }

// BeginPush is the Conn's, or, once armed, the idempotency cache miss.
func (c faultConn) BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	if c.armed.CompareAndSwap(true, false) {
		return nil, driver.PushRead{}, &driver.Error{Code: driver.CodeIdempotencyCacheMiss, OpIndex: -1,
			Message: "injected: the stored push result cannot be read (the host's failNextIdempotencyLookup)"}
	}
	return c.pb.BeginPush(ctx, partition, clientID, clientCommitID, keys)
}

func (c faultConn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	return c.fan.SubscribeCommits(ctx)
}

func (c faultConn) ListClientRecords(ctx context.Context, partition string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	return c.admin.ListClientRecords(ctx, partition, q)
}

func (c faultConn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]driver.CommitMeta, error) {
	return c.admin.ListCommitMeta(ctx, partition, beforeSeq, limit)
}

func (c faultConn) ScopeActivity(ctx context.Context, partition, table string, filter driver.ScopeFilter, afterSeq, throughSeq int64) (driver.ScopeActivity, error) {
	return c.admin.ScopeActivity(ctx, partition, table, filter, afterSeq, throughSeq)
}

func (c faultConn) RowScopes(ctx context.Context, partition, table, rowID string) (driver.Scopes, bool, error) {
	return c.admin.RowScopes(ctx, partition, table, rowID)
}

func (c faultConn) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]driver.Row, error) {
	return c.admin.ListRows(ctx, partition, table, afterRowID, limit)
}

func (c faultConn) As(target any) bool { return driver.AsOf(c.Conn, target) }
