package memdriver

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Conn is an open in-memory store. It implements driver.Conn, the Conn
// half of index-lookup (driver.IndexLookupConn) and driver.EngineVersioner,
// and is safe for concurrent use.
type Conn struct {
	s      *store
	closed atomic.Bool
}

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.IndexLookupConn = (*Conn)(nil)
	_ driver.EngineVersioner = (*Conn)(nil)
)

// check fails when the Conn is closed or ctx has ended (ERR-1).
func (c *Conn) check(ctx context.Context) error {
	if c.closed.Load() {
		return driver.Errorf(driver.CodeUnavailable, "memory: the connection is closed")
	}
	if err := ctx.Err(); err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "memory: context ended")
	}
	return nil
}

// EngineVersion names the engine for reports.
func (c *Conn) EngineVersion(ctx context.Context) (string, error) {
	return "memdriver (Go maps, in-process)", c.check(ctx)
}

// Close marks the Conn closed; the store lives on for other Conns of its
// name. A second Close is a no-op.
func (c *Conn) Close() error {
	c.closed.Store(true)
	return nil
}

// Begin starts a write transaction on partition; see Tx.
func (c *Conn) Begin(ctx context.Context, partition string) (driver.Tx, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	tx, err := begin(ctx, c.s, partition)
	if err != nil {
		return nil, err // never a typed nil (*Tx)(nil) inside the interface
	}
	return tx, nil
}

// MaxCommitSeq returns the highest committed seq of the partition (SEQ-5).
func (c *Conn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	return c.s.current(partition).maxSeq, nil
}

// ReadCommitWindow returns the commits selected by q (WIN-1…WIN-6). The
// cursor is checked against the horizon and head of the same immutable
// partition version the commits are read from: below the horizon →
// CodeCursorExpired (HZ-4), beyond the head → CodeCursorAhead (WIN-8).
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	if _, err := c.s.table(q.Table); err != nil {
		return nil, err
	}
	p := c.s.current(partition)
	if err := driver.CheckWindowCursor(q.AfterSeq, p.horizon, p.maxSeq); err != nil {
		return nil, err
	}
	return readWindow(p, q), nil
}

// CommitSeqBefore returns the largest retained seq created strictly
// before atMs, else 0 (HZ-3).
func (c *Conn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	var best int64
	for _, cm := range c.s.current(partition).commits {
		if cm.CreatedAtMs < atMs && cm.Seq > best {
			best = cm.Seq
		}
	}
	return best, nil
}

// GetRow returns the committed row, or false (ROW-4).
func (c *Conn) GetRow(ctx context.Context, partition, table, id string) (driver.Row, bool, error) {
	if err := c.check(ctx); err != nil {
		return driver.Row{}, false, err
	}
	t, err := c.s.table(table)
	if err != nil {
		return driver.Row{}, false, err
	}
	r, ok := getRow(c.s.current(partition), t, id)
	return r, ok, nil
}

// ScanRows returns committed rows selected by q (SCAN-1…SCAN-4).
func (c *Conn) ScanRows(ctx context.Context, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	t, err := c.s.table(q.Table)
	if err != nil {
		return nil, err
	}
	return scanRows(c.s.current(partition), t, q), nil
}

// ScanRowsByIndex is the index-lookup capability (IXL-1, IXL-2).
func (c *Conn) ScanRowsByIndex(ctx context.Context, partition string, q driver.IndexQuery) ([]driver.Row, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	t, err := c.s.table(q.Table)
	if err != nil {
		return nil, err
	}
	return lookupRows(c.s.current(partition), t, q)
}

// GetPushResult returns the committed push result, or false (PR-2, PR-5).
func (c *Conn) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	if err := c.check(ctx); err != nil {
		return driver.PushResult{}, false, err
	}
	return getPushResult(c.s.current(partition), clientID, clientCommitID)
}

// HorizonSeq returns the pruning horizon, 0 by default (HZ-1).
func (c *Conn) HorizonSeq(ctx context.Context, partition string) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	return c.s.current(partition).horizon, nil
}

// SetHorizonSeq raises the horizon to seq; lower is a no-op, above
// MaxCommitSeq is CodeInvalidHorizon (HZ-1).
func (c *Conn) SetHorizonSeq(ctx context.Context, partition string, seq int64) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.s.write(ctx, partition, func(d *draft) error {
		if seq > d.p.maxSeq {
			return driver.Errorf(driver.CodeInvalidHorizon, "memory: horizon %d is above the max commit seq %d (HZ-1)", seq, d.p.maxSeq)
		}
		d.p.horizon = max(d.p.horizon, seq)
		return nil
	}, nil)
}

// PruneCommitsThrough deletes the commits ≤ seq, which must not pass the
// horizon, and returns how many it removed (HZ-2). Nothing else changes.
func (c *Conn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	var removed int64
	err := c.s.write(ctx, partition, func(d *draft) error {
		if seq > d.p.horizon {
			return driver.Errorf(driver.CodeInvalidHorizon, "memory: prune bound %d is above the horizon %d (HZ-2)", seq, d.p.horizon)
		}
		keep := slices.DeleteFunc(slices.Clone(d.p.commits), func(cm driver.Commit) bool { return cm.Seq <= seq })
		removed = int64(len(d.p.commits) - len(keep))
		d.p.commits = keep
		d.owned["commits"] = true
		return nil
	}, nil)
	return removed, err
}

// GetClientRecord returns the client's record, or false (CR-1).
func (c *Conn) GetClientRecord(ctx context.Context, partition, clientID string) (driver.ClientRecord, bool, error) {
	if err := c.check(ctx); err != nil {
		return driver.ClientRecord{}, false, err
	}
	r, ok := c.s.current(partition).clients[clientID]
	if !ok {
		return driver.ClientRecord{}, false, nil
	}
	return cloneClientRecord(r), true, nil
}

// PutClientRecord stores rec, replacing the client's record (CR-1).
func (c *Conn) PutClientRecord(ctx context.Context, partition string, rec driver.ClientRecord) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.s.write(ctx, partition, func(d *draft) error {
		d.clientsForWrite()[rec.ClientID] = cloneClientRecord(rec)
		return nil
	}, nil)
}

// ListClientCursors returns the cursors of the clients with an id
// bytewise above afterClientID, ascending, at most limit (CR-2, CR-3).
func (c *Conn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]driver.ClientCursor, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	clients := c.s.current(partition).clients
	ids := slices.Sorted(maps.Keys(clients))
	ids = ids[sort.Search(len(ids), func(i int) bool { return ids[i] > afterClientID }):]
	ids = ids[:min(len(ids), limit)]
	out := make([]driver.ClientCursor, len(ids))
	for i, id := range ids {
		r := clients[id]
		out[i] = driver.ClientCursor{ClientID: id, Cursor: r.Cursor, UpdatedAtMs: r.UpdatedAtMs}
	}
	return out, nil
}
