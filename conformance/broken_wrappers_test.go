package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Deliberately broken drivers: each wraps a real SQLite Conn and breaks
// one promise of the contract. broken_test.go runs the suite against each
// and asserts that exactly the rules it breaks fail (a suite that is
// never shown failing is untested).

// connWrap forwards every core method to the wrapped Conn. Embedding the
// interface drops the wrapped Conn's optional capabilities, which is what
// these wrappers want.
type connWrap struct{ driver.Conn }

type txWrap struct{ driver.Tx }

// Begin wraps the Tx too, so the wrapped Tx's capability halves are dropped
// with the Conn's (a wrapper must never declare half a capability).
func (c connWrap) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return txWrap{tx}, nil
}

// ---- leaky partitions: ScanRows returns rows of every partition (P-1) ----

type leakyScan struct {
	connWrap
	mu    gosync.Mutex
	parts map[string]bool
}

func (c *leakyScan) Begin(ctx context.Context, p string) (driver.Tx, error) {
	c.mu.Lock()
	c.parts[p] = true
	c.mu.Unlock()
	return c.connWrap.Begin(ctx, p)
}

func (c *leakyScan) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	c.mu.Lock()
	parts := []string{p}
	for other := range c.parts {
		if other != p {
			parts = append(parts, other)
		}
	}
	c.mu.Unlock()
	var all []driver.Row
	for _, part := range parts {
		rows, err := c.Conn.ScanRows(ctx, part, q)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	if len(all) > q.Limit {
		all = all[:q.Limit]
	}
	return all, nil
}

// ---- a rollback burns a commit number (SEQ-2) ----

type burnOnRollback struct{ connWrap }

type burnTx struct {
	txWrap
	conn driver.Conn
	done bool
}

func (c *burnOnRollback) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &burnTx{txWrap: txWrap{tx}, conn: c.Conn}, nil
}

func (t *burnTx) Rollback(ctx context.Context) error {
	if err := t.Tx.Rollback(ctx); err != nil || t.done {
		return err
	}
	t.done = true
	// The broken part: the number was "allocated" outside the transaction,
	// so it is gone after the rollback.
	tx, err := t.conn.Begin(ctx, t.Partition())
	if err != nil {
		return err
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1}); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func (t *burnTx) Commit(ctx context.Context) error {
	t.done = true
	return t.Tx.Commit(ctx)
}

// ---- a window read splits the last commit at the limit (WIN-4) ----

type splitAtLimit struct{ connWrap }

func (c *splitAtLimit) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	commits, err := c.Conn.ReadCommitWindow(ctx, p, q)
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range commits {
		if n+len(commits[i].Changes) > q.LimitChanges {
			commits[i].Changes = commits[i].Changes[:q.LimitChanges-n]
			return commits[:i+1], nil
		}
		n += len(commits[i].Changes)
	}
	return commits, nil
}

// ---- a later push result overwrites the first (PR-3) ----

type lastWriterWins struct {
	connWrap
	mu     gosync.Mutex
	latest map[string]driver.PushResult
}

type lwwTx struct {
	txWrap
	c      *lastWriterWins
	staged map[string]driver.PushResult
}

func resultKey(p, client, commit string) string { return fmt.Sprintf("%q/%q/%q", p, client, commit) }

func (c *lastWriterWins) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &lwwTx{txWrap: txWrap{tx}, c: c, staged: map[string]driver.PushResult{}}, nil
}

func (c *lastWriterWins) GetPushResult(ctx context.Context, p, client, commit string) (driver.PushResult, bool, error) {
	c.mu.Lock()
	r, ok := c.latest[resultKey(p, client, commit)]
	c.mu.Unlock()
	if ok {
		return r, true, nil
	}
	return c.Conn.GetPushResult(ctx, p, client, commit)
}

func (t *lwwTx) PutPushResult(ctx context.Context, client, commit string, r driver.PushResult) error {
	if err := t.Tx.PutPushResult(ctx, client, commit, r); err != nil {
		return err
	}
	t.staged[resultKey(t.Partition(), client, commit)] = r
	return nil
}

func (t *lwwTx) GetPushResult(ctx context.Context, client, commit string) (driver.PushResult, bool, error) {
	r, ok, err := t.Tx.GetPushResult(ctx, client, commit) // keeps tx_finished
	if err != nil {
		return r, ok, err
	}
	if latest, staged := t.staged[resultKey(t.Partition(), client, commit)]; staged {
		return latest, true, nil
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if latest, committed := t.c.latest[resultKey(t.Partition(), client, commit)]; committed {
		return latest, true, nil
	}
	return r, ok, nil
}

func (t *lwwTx) Commit(ctx context.Context) error {
	if err := t.Tx.Commit(ctx); err != nil {
		return err
	}
	t.c.mu.Lock()
	for k, r := range t.staged {
		t.c.latest[k] = r
	}
	t.c.mu.Unlock()
	return nil
}

// ---- a capability's Conn half without its Tx half (ERR-3) ----

type halfCapability struct{ connWrap }

// ScanRowsByIndex declares the Conn half of index-lookup; the Tx returned
// by Begin (the wrapped one) has no Tx half.
func (c *halfCapability) ScanRowsByIndex(ctx context.Context, p string, q driver.IndexQuery) ([]driver.Row, error) {
	return nil, driver.Errorf(driver.CodeUnsupported, "half a capability")
}

// ---- DeleteRow keeps the row (ROW-3) ----

type deleteIsNoop struct{ connWrap }

type noDeleteTx struct{ txWrap }

func (c *deleteIsNoop) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &noDeleteTx{txWrap{tx}}, nil
}

// DeleteRow keeps the row, but still reports an unknown table or a finished
// Tx, so only ROW-3 is broken.
func (t *noDeleteTx) DeleteRow(ctx context.Context, table, id string) error {
	_, _, err := t.Tx.GetRow(ctx, table, id)
	return err
}

// ---- scans in descending id order (SCAN-1) ----

type descendingScan struct{ connWrap }

func (c *descendingScan) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	rows, err := c.Conn.ScanRows(ctx, p, q)
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows, err
}

// ---- integers travel through float64 (VAL-1) ----

type lossyIntegers struct{ connWrap }

func (c *lossyIntegers) GetRow(ctx context.Context, p, table, id string) (driver.Row, bool, error) {
	r, ok, err := c.Conn.GetRow(ctx, p, table, id)
	for k, v := range r.Values {
		if i, isInt := v.(int64); isInt {
			r.Values[k] = int64(float64(i))
		}
	}
	return r, ok, err
}

// ---- pruning ignores its bound and prunes through the horizon (HZ-2) ----

type pruneToHorizon struct{ connWrap }

func (c *pruneToHorizon) PruneCommitsThrough(ctx context.Context, p string, seq int64) (int64, error) {
	h, err := c.Conn.HorizonSeq(ctx, p)
	if err != nil {
		return 0, err
	}
	if seq <= h {
		seq = h
	}
	return c.Conn.PruneCommitsThrough(ctx, p, seq)
}

// ---- errors lose their type after Close (ERR-1) ----

type untypedErrors struct {
	connWrap
	closed atomic.Bool
}

func (c *untypedErrors) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *untypedErrors) MaxCommitSeq(ctx context.Context, p string) (int64, error) {
	if c.closed.Load() {
		return 0, errors.New("sql: database is closed")
	}
	return c.Conn.MaxCommitSeq(ctx, p)
}

// ---- MaxCommitSeq is the highest retained commit, so it drops after
// pruning (SEQ-5) ----

type maxFromRetained struct{ connWrap }

func (c *maxFromRetained) MaxCommitSeq(ctx context.Context, p string) (int64, error) {
	return c.Conn.CommitSeqBefore(ctx, p, math.MaxInt64)
}

// ---- a closed store reported as unavailable: retryable, so hosts and
// workers retry it forever (ERR-4) ----

type closedIsUnavailable struct{ connWrap }

func unavailableIfClosed(err error) error {
	if driver.CodeOf(err) == driver.CodeClosed {
		return driver.Errorf(driver.CodeUnavailable, "store is closed")
	}
	return err
}

func (c closedIsUnavailable) MaxCommitSeq(ctx context.Context, p string) (int64, error) {
	seq, err := c.Conn.MaxCommitSeq(ctx, p)
	return seq, unavailableIfClosed(err)
}

func (c closedIsUnavailable) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.connWrap.Begin(ctx, p)
	return tx, unavailableIfClosed(err)
}

// ---- Commit lies about its outcome (TX-10) ----

// lyingCommit's Tx lies on every fifth Commit: with landed, it commits and
// returns an error that says nothing was written; without, it rolls back
// and returns nil.
type lyingCommit struct {
	connWrap
	landed bool
	n      atomic.Int64
}

type lyingTx struct {
	txWrap
	c *lyingCommit
}

func (c *lyingCommit) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &lyingTx{txWrap: txWrap{tx}, c: c}, nil
}

func (t *lyingTx) Commit(ctx context.Context) error {
	if t.c.n.Add(1)%5 != 0 {
		return t.Tx.Commit(ctx)
	}
	if !t.c.landed {
		return t.Tx.Rollback(ctx)
	}
	if err := t.Tx.Commit(ctx); err != nil {
		return err
	}
	return driver.Errorf(driver.CodeUnavailable, "broken: the answer was lost; nothing was written")
}
