package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/syncstore/syncstore/sync"
)

// engine is everything the server asks of storage, in the shapes of the
// engine's streaming and hook APIs (Store.PushWith with per-call hooks,
// Store.PullTo with a sink, Store.ReadCommits, Store.AckClientCursor).
// The protocol layer holds no storage logic: each method is one engine
// call. interimEngine adapts the engine as it is today.
type engine interface {
	// push applies one client commit with the per-call hooks (§3.4).
	push(ctx context.Context, partition string, req sync.PushRequest, h pushHooks) (sync.PushResponse, error)
	// pull serves one pull, streaming each subscription to sink in
	// request order, then writes the client record.
	pull(ctx context.Context, partition string, req pullRequest, sink pullSink) (sync.PullResponse, error)
	// readCommits returns the whole commits of partition after afterSeq
	// through throughSeq, oldest first, at least every change matching
	// one of filters (filters only narrow what an engine without a
	// whole-commit read must fetch).
	readCommits(ctx context.Context, partition string, afterSeq, throughSeq int64, limitChanges int, filters []commitFilter) ([]sync.Commit, error)
	// ack raises a client's recorded cursor (SPEC §8.2) without touching
	// its subscriptions.
	ack(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) error
}

// pushHooks are the per-call hooks of a push: authorize is §3.4 steps 2–4
// (a *sync.Refusal refuses the op), validateOp §3.4 rule 5 (the values to
// write; nil keeps the pushed ones).
type pushHooks struct {
	authorize  func(ctx context.Context, in sync.AuthorizeInput) error
	validateOp func(ctx context.Context, in opInput) (sync.Values, error)
}

// opInput is what validateOp sees: the op and the row it replaces.
type opInput struct {
	Index   int
	Op      sync.PushOp
	Current sync.Row
	Exists  bool
}

// pullRequest is a pull with SSP2's options: restart unusable bootstraps
// instead of failing (SPEC §4.7), and the requested scopes the client
// record keeps per subscription (SPEC §8.1) beside the effective ones read.
type pullRequest struct {
	sync.PullRequest
	recordScopes []sync.ScopeFilter
}

// pullResult is one subscription's result as the sink gets it; fresh
// reports a bootstrap pinned by this pull.
type pullResult struct {
	sync.PullResult
	fresh bool
}

// pullPage is one bootstrap page.
type pullPage struct {
	Rows []sync.Row
	// AfterRowID is where the page starts ("" on a fresh bootstrap's
	// first page).
	AfterRowID string
	// More reports rows after the page.
	More bool
}

// pullSink receives a streamed pull: per subscription, start, then pages
// (a bootstrap: more pages while page returns true) or commits (a window),
// then end.
type pullSink interface {
	start(ctx context.Context, r pullResult) error
	page(ctx context.Context, p pullPage) (more bool, err error)
	commits(ctx context.Context, commits []sync.Commit) error
	end(ctx context.Context, r pullResult) error
}

// commitFilter is one registration's table and effective scopes.
type commitFilter struct {
	table  string
	filter sync.ScopeFilter
}

func newEngine(store *sync.Store, now func() time.Time) engine {
	store.SetPushOptions(sync.PushOptions{Now: now})
	return interimEngine{store}
}

// interimEngine adapts today's Store.Push and Store.Pull to engine. It
// differs from the designed calls in what is written down here, and only
// here:
//   - push: the commit clock is set with SetPushOptions (replacing the
//     host's push options); the hooks run before the push, on rows read outside its Tx, and
//     a refusal is answered without being stored (a replay decides again);
//   - pull: one bootstrap page per subscription per pull (the image lane
//     reads the remaining pages with ScanRows, off the pin); a bad token or
//     a cursor beyond the head is not restarted;
//   - the client record keeps the effective scopes;
//   - readCommits reads each filter's window and merges them;
//   - ack reads and rewrites the client record (not atomic against a pull).
type interimEngine struct{ s *sync.Store }

func (e interimEngine) push(ctx context.Context, partition string, req sync.PushRequest, h pushHooks) (sync.PushResponse, error) {
	for i := range req.Ops {
		op := &req.Ops[i]
		cur, exists, err := e.s.GetRow(ctx, partition, op.Table, op.RowID)
		if err != nil {
			return sync.PushResponse{}, err
		}
		if h.authorize != nil {
			err := h.authorize(ctx, sync.AuthorizeInput{Partition: partition, ClientID: req.ClientID,
				ClientCommitID: req.ClientCommitID, ActorID: req.ActorID, Index: i, Op: *op, Current: cur, Exists: exists})
			if ref := (*sync.Refusal)(nil); errors.As(err, &ref) {
				return refused(req, i, ref), nil
			}
			if err != nil {
				return sync.PushResponse{}, err
			}
		}
		if h.validateOp != nil && (op.Op == sync.OpUpsert || exists) {
			vals, err := h.validateOp(ctx, opInput{Index: i, Op: *op, Current: cur, Exists: exists})
			if ref := (*sync.Refusal)(nil); errors.As(err, &ref) {
				return refused(req, i, ref), nil
			}
			if err != nil {
				return sync.PushResponse{}, err
			}
			if vals != nil {
				op.Values = vals
			}
		}
	}
	return e.s.Push(ctx, partition, req)
}

// refused is the rejected result of a refusal of op i.
func refused(req sync.PushRequest, i int, r *sync.Refusal) sync.PushResponse {
	ops := make([]sync.OpResult, i+1)
	for j := range i {
		ops[j] = sync.OpResult{Status: sync.OpApplied}
	}
	ops[i] = sync.OpResult{Status: sync.OpError, Code: r.Code, Message: r.Message, Retryable: r.Retryable, Details: r.Details}
	return sync.PushResponse{PushResult: sync.PushResult{Status: sync.PushRejected, Ops: ops}}
}

func (e interimEngine) pull(ctx context.Context, partition string, req pullRequest, sink pullSink) (sync.PullResponse, error) {
	resp, err := e.s.Pull(ctx, partition, req.PullRequest)
	if err != nil {
		return resp, err
	}
	for i, r := range resp.Subscriptions {
		sub := req.Subscriptions[i]
		pr := pullResult{PullResult: r, fresh: r.Bootstrap && sub.BootstrapToken == ""}
		rows, commits := r.Rows, r.Commits
		pr.Rows, pr.Commits = nil, nil
		if err := sink.start(ctx, pr); err != nil {
			return resp, err
		}
		switch {
		case r.Status != sync.PullActive:
		case r.Bootstrap:
			after := ""
			if !pr.fresh {
				after = sub.BootstrapToken
			}
			p := pullPage{Rows: rows, AfterRowID: after, More: r.BootstrapToken != ""}
			more, err := sink.page(ctx, p)
			if err != nil {
				return resp, err
			}
			// The image lane takes every page: read the rest of the scope
			// off the pin (this adapter cannot page at the pin twice, nor
			// hand out a token after a page it read itself).
			im, _ := sink.(interface{ imaging() bool })
			for more && p.More && len(p.Rows) > 0 && im != nil && im.imaging() {
				last := p.Rows[len(p.Rows)-1].ID
				limit := min(sub.LimitRows+1, sync.MaxLimit)
				next, err := e.s.ScanRows(ctx, partition, sync.ScanQuery{Table: sub.Table, Filter: sub.Scopes, AfterRowID: last, Limit: limit})
				if err != nil {
					return resp, err
				}
				p = pullPage{Rows: next, AfterRowID: last, More: len(next) > sub.LimitRows || len(next) == sync.MaxLimit}
				if len(p.Rows) > sub.LimitRows {
					p.Rows = next[:sub.LimitRows]
				}
				if more, err = sink.page(ctx, p); err != nil {
					return resp, err
				}
				if !p.More {
					pr.BootstrapToken = ""
				}
			}
		default:
			if err := sink.commits(ctx, commits); err != nil {
				return resp, err
			}
		}
		if err := sink.end(ctx, pr); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

func (e interimEngine) readCommits(ctx context.Context, partition string, afterSeq, throughSeq int64, limitChanges int, filters []commitFilter) ([]sync.Commit, error) {
	bySeq := map[int64]*sync.Commit{}
	cutoff := throughSeq
	for _, f := range filters {
		cs, err := e.s.ReadCommitWindow(ctx, partition, sync.WindowQuery{Table: f.table, Filter: f.filter,
			AfterSeq: afterSeq, ThroughSeq: throughSeq, LimitChanges: limitChanges})
		if err != nil {
			return nil, err
		}
		n := 0
		for _, c := range cs {
			n += len(c.Changes)
		}
		if n >= limitChanges && len(cs) > 0 {
			cutoff = min(cutoff, cs[len(cs)-1].Seq)
		}
		for _, c := range cs {
			m, ok := bySeq[c.Seq]
			if !ok {
				cc := c
				cc.Changes = nil
				m = &cc
				bySeq[c.Seq] = m
			}
			for _, ch := range c.Changes {
				if ch.Table == "" {
					ch.Table = f.table
				}
				if !slices.ContainsFunc(m.Changes, func(x sync.Change) bool {
					return x.Table == ch.Table && x.RowID == ch.RowID && x.Op == ch.Op
				}) {
					m.Changes = append(m.Changes, ch)
				}
			}
		}
	}
	// A filter's read cut at the change limit is complete only through
	// its last seq: keep the commits up to the lowest such cut.
	out := make([]sync.Commit, 0, len(bySeq))
	for _, c := range bySeq {
		if c.Seq <= cutoff {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b sync.Commit) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out, nil
}

func (e interimEngine) ack(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) error {
	rec, found, err := e.s.GetClientRecord(ctx, partition, clientID)
	if err != nil || !found || rec.ActorID != actorID {
		return err
	}
	if cursor <= rec.Cursor && atMs <= rec.UpdatedAtMs {
		return nil
	}
	rec.Cursor = max(rec.Cursor, cursor)
	rec.UpdatedAtMs = max(rec.UpdatedAtMs, atMs)
	return e.s.PutClientRecord(ctx, partition, rec)
}
