package conformance_test

import (
	"context"
	"regexp"
	"sort"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestSuiteCatchesBrokenReactions runs the RX cases against wrappers of the
// SQLite driver that each break one reaction rule, and checks that exactly
// that rule fails. The wrappers keep both halves of the
// reactions capability (a wrapper that dropped one would be caught by
// ERR-3, not by these cases).
func TestSuiteCatchesBrokenReactions(t *testing.T) {
	broken := []struct {
		name string
		wrap func(*rxWrap) driver.Conn
		want []string
	}{
		{"complete-ignores-owner", func(w *rxWrap) driver.Conn { return &rxAnyOwnerCompletes{w} }, []string{"RX-5"}},
		{"prune-ignores-limit", func(w *rxWrap) driver.Conn { return &rxPruneUnbounded{w} }, []string{"RX-9"}},
		{"rollback-keeps-reactions", func(w *rxWrap) driver.Conn { return &rxEnqueueOutsideTx{w} }, []string{"RX-1"}},
	}
	// Every RX case but RX-3's 10,000-reaction run, which none of these
	// breakages touches.
	match := regexp.MustCompile(`^RX-([124-9]|10)/`)
	list := make([]brokenDriver, 0, len(broken))
	for _, b := range broken {
		list = append(list, brokenDriver{name: b.name, want: b.want, match: match,
			caps: []driver.Capability{driver.CapReactions},
			wrap: func(c driver.Conn) driver.Conn { return b.wrap(&rxWrap{Conn: c, rc: c.(driver.ReactionsConn)}) }})
	}
	list = append(list, brokenDriver{name: "claim-across-greedy", want: []string{"RX-12"}, match: regexp.MustCompile(`^RX-12/`),
		caps: []driver.Capability{driver.CapReactions, driver.CapReactionsAcross},
		wrap: func(c driver.Conn) driver.Conn {
			return &rxGreedyAcross{rxWrap: &rxWrap{Conn: c, rc: c.(driver.ReactionsConn)}, parts: map[string]bool{}}
		}})
	runBroken(t, list)
}

// rxWrap forwards the core Conn and both halves of the reactions
// capability; the broken wrappers override one method each.
type rxWrap struct {
	driver.Conn
	rc driver.ReactionsConn
}

type rxTxWrap struct {
	driver.Tx
	rt driver.ReactionsTx
}

func (w *rxWrap) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := w.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &rxTxWrap{Tx: tx, rt: tx.(driver.ReactionsTx)}, nil
}

func (t *rxTxWrap) EnqueueReactions(ctx context.Context, seq int64, rs []driver.ReactionInput) error {
	return t.rt.EnqueueReactions(ctx, seq, rs)
}

func (w *rxWrap) ClaimReactions(ctx context.Context, p string, req driver.ClaimRequest) ([]driver.Reaction, error) {
	return w.rc.ClaimReactions(ctx, p, req)
}

func (w *rxWrap) CompleteReaction(ctx context.Context, p, key, owner string, now int64) (bool, error) {
	return w.rc.CompleteReaction(ctx, p, key, owner, now)
}

func (w *rxWrap) ExtendReactionLease(ctx context.Context, p, key, owner string, now, lease int64) (bool, error) {
	return w.rc.ExtendReactionLease(ctx, p, key, owner, now, lease)
}

func (w *rxWrap) FailReaction(ctx context.Context, p, key, owner string, req driver.FailRequest) (bool, error) {
	return w.rc.FailReaction(ctx, p, key, owner, req)
}

func (w *rxWrap) GetReaction(ctx context.Context, p, key string) (driver.Reaction, bool, error) {
	return w.rc.GetReaction(ctx, p, key)
}

func (w *rxWrap) RetryReaction(ctx context.Context, p, key string, now int64) (bool, error) {
	return w.rc.RetryReaction(ctx, p, key, now)
}

func (w *rxWrap) ListReactions(ctx context.Context, p string, q driver.ReactionListQuery) ([]driver.Reaction, error) {
	return w.rc.ListReactions(ctx, p, q)
}

func (w *rxWrap) PruneReactions(ctx context.Context, p string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	return w.rc.PruneReactions(ctx, p, req)
}

// ---- Complete succeeds for any owner while the row is leased (RX-5) ----

type rxAnyOwnerCompletes struct{ *rxWrap }

func (w *rxAnyOwnerCompletes) CompleteReaction(ctx context.Context, p, key, owner string, now int64) (bool, error) {
	ok, err := w.rc.CompleteReaction(ctx, p, key, owner, now)
	if ok || err != nil {
		return ok, err
	}
	leased, err := w.rc.ListReactions(ctx, p, driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionLeased}, Limit: 10000})
	if err != nil {
		return false, err
	}
	for _, r := range leased {
		if r.Key == key {
			return w.rc.CompleteReaction(ctx, p, key, r.LeaseOwner, now)
		}
	}
	return false, nil
}

// ---- Prune ignores its limit (RX-9) ----

type rxPruneUnbounded struct{ *rxWrap }

func (w *rxPruneUnbounded) PruneReactions(ctx context.Context, p string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	req.Limit = 10000
	return w.rc.PruneReactions(ctx, p, req)
}

// ---- a rollback keeps the Tx's reactions (RX-1) ----

type rxEnqueueOutsideTx struct{ *rxWrap }

// rxOutsideTx remembers what it enqueued and, when rolled back, writes it
// again in a Tx of its own: as if the reactions had gone out before the
// push committed.
type rxOutsideTx struct {
	*rxTxWrap
	conn   driver.Conn
	seq    int64
	staged []driver.ReactionInput
	done   bool
}

func (w *rxEnqueueOutsideTx) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := w.rxWrap.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &rxOutsideTx{rxTxWrap: tx.(*rxTxWrap), conn: w.Conn}, nil
}

func (t *rxOutsideTx) EnqueueReactions(ctx context.Context, seq int64, rs []driver.ReactionInput) error {
	if err := t.rt.EnqueueReactions(ctx, seq, rs); err != nil {
		return err
	}
	t.seq, t.staged = seq, append(t.staged, rs...)
	return nil
}

func (t *rxOutsideTx) Commit(ctx context.Context) error {
	t.done = true
	return t.rxTxWrap.Commit(ctx)
}

func (t *rxOutsideTx) Rollback(ctx context.Context) error {
	if err := t.rxTxWrap.Rollback(ctx); err != nil || t.done || len(t.staged) == 0 {
		return err
	}
	t.done = true
	tx, err := t.conn.Begin(ctx, t.Partition())
	if err != nil {
		return err
	}
	if err := tx.(driver.ReactionsTx).EnqueueReactions(ctx, t.seq, t.staged); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// ---- a claim across partitions that is not fair (RX-12) ----

// rxGreedyAcross claims across partitions the obvious unfair way: the
// partitions in name order, each drained up to what is left of the limit,
// so one partition's backlog starves the partitions after it. It knows
// the partitions it saw a Tx begin in.
type rxGreedyAcross struct {
	*rxWrap
	mu    gosync.Mutex
	parts map[string]bool
}

func (w *rxGreedyAcross) Begin(ctx context.Context, p string) (driver.Tx, error) {
	w.mu.Lock()
	w.parts[p] = true
	w.mu.Unlock()
	return w.rxWrap.Begin(ctx, p)
}

func (w *rxGreedyAcross) ClaimDueReactions(ctx context.Context, req driver.DueClaimRequest) ([]driver.PartitionReaction, error) {
	parts := req.Partitions
	if parts == nil {
		w.mu.Lock()
		for p := range w.parts {
			parts = append(parts, p)
		}
		w.mu.Unlock()
	}
	sort.Strings(parts)
	var out []driver.PartitionReaction
	for _, p := range parts {
		left := req.Limit - len(out)
		if left == 0 {
			break
		}
		one := req.ClaimRequest
		one.Limit = left
		rs, err := w.rc.ClaimReactions(ctx, p, one)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, driver.PartitionReaction{Partition: p, Reaction: r})
		}
	}
	return out, nil
}
