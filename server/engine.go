package server

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/sync"
)

// engine is everything the server asks of storage: each method is one
// engine call (the protocol layer holds no storage logic).
type engine interface {
	// push applies one client commit with the per-call hooks (§3.4).
	push(ctx context.Context, partition string, req sync.PushRequest, h pushHooks) (sync.PushResponse, error)
	// pull serves one pull, streaming each subscription to sink in
	// request order, then writes the client record.
	pull(ctx context.Context, partition string, req pullRequest, sink pullSink) (sync.PullResponse, error)
	// readCommits returns the whole commits of partition after afterSeq
	// through throughSeq, oldest first, every change of every table.
	readCommits(ctx context.Context, partition string, afterSeq, throughSeq int64, limitChanges int) ([]sync.Commit, error)
	// ack raises a client's recorded cursor (SPEC §8.2) without touching
	// its subscriptions.
	ack(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) error
}

// pushHooks are the per-call hooks of a push: authorize is §3.4 steps 2–4
// (a *sync.Refusal refuses the op), validateOp §3.4 rule 5 (the values to
// write; nil keeps the pushed ones).
type pushHooks struct {
	authorize  func(ctx context.Context, in sync.AuthorizeInput) error
	validateOp func(ctx context.Context, in sync.OpInput) (sync.Values, error)
	// validateCommit is §6.8's whole-commit validator (nil: none).
	validateCommit func(ctx context.Context, tx *sync.Tx, c sync.CandidateCommit) error
	// blobRefs is the §5.9.6 existence check and §5.9.4 reference index
	// (blobs_push.go), run before validateOp (nil: blobs off).
	blobRefs func(ctx context.Context, tx *sync.Tx, in sync.OpInput) error
}

// pullRequest is a pull with the requested scopes the client record keeps
// per subscription (SPEC §8.1), beside the effective ones read.
type pullRequest struct {
	sync.PullRequest
	recordScopes []sync.ScopeFilter
}

// pullSink receives a streamed pull: per subscription, start, then pages
// (a bootstrap: more pages while page returns true) or commits (a window),
// then end.
type pullSink interface {
	start(ctx context.Context, r sync.PullResult) error
	page(ctx context.Context, p sync.PullPage) (more bool, err error)
	commits(ctx context.Context, commits []sync.Commit) error
	end(ctx context.Context, r sync.PullResult) error
}

func newEngine(store *sync.Store, now func() time.Time) engine { return storeEngine{store, now} }

// storeEngine is engine over a *sync.Store: PushWith with the hooks and
// the server clock, PullTo with SSP2's bootstrap restarts and the
// requested scopes recorded, ReadCommits, AckClientCursor.
type storeEngine struct {
	s   *sync.Store
	now func() time.Time
}

func (e storeEngine) push(ctx context.Context, partition string, req sync.PushRequest, h pushHooks) (sync.PushResponse, error) {
	o := sync.PushOptions{Now: e.now}
	if h.authorize != nil {
		o.Authorize = func(ctx context.Context, _ *sync.Tx, in sync.AuthorizeInput) error { return h.authorize(ctx, in) }
	}
	if h.validateOp != nil || h.blobRefs != nil {
		o.ValidateOp = func(ctx context.Context, tx *sync.Tx, in sync.OpInput) (sync.Values, error) {
			if h.blobRefs != nil {
				if err := h.blobRefs(ctx, tx, in); err != nil {
					return nil, err
				}
			}
			if h.validateOp == nil {
				return nil, nil
			}
			return h.validateOp(ctx, in)
		}
	}
	if h.validateCommit != nil {
		o.ValidateCommit = h.validateCommit
	}
	return e.s.PushWith(ctx, partition, req, o)
}

func (e storeEngine) pull(ctx context.Context, partition string, req pullRequest, sink pullSink) (sync.PullResponse, error) {
	r := req.PullRequest
	r.RestartBootstraps = true
	r.Subscriptions = append([]sync.PullSubscription(nil), r.Subscriptions...)
	for i := range r.Subscriptions {
		r.Subscriptions[i].RecordScopes = req.recordScopes[i]
	}
	return e.s.PullTo(ctx, partition, r, sinkAdapter{sink})
}

// sinkAdapter is a pullSink as a sync.PullSink.
type sinkAdapter struct{ s pullSink }

func (a sinkAdapter) Start(ctx context.Context, r sync.PullResult) error { return a.s.start(ctx, r) }
func (a sinkAdapter) Page(ctx context.Context, p sync.PullPage) (bool, error) {
	return a.s.page(ctx, p)
}
func (a sinkAdapter) Commits(ctx context.Context, cs []sync.Commit) error {
	return a.s.commits(ctx, cs)
}
func (a sinkAdapter) End(ctx context.Context, r sync.PullResult) error { return a.s.end(ctx, r) }

func (e storeEngine) readCommits(ctx context.Context, partition string, afterSeq, throughSeq int64, limitChanges int) ([]sync.Commit, error) {
	return e.s.ReadCommits(ctx, partition, sync.CommitsQuery{AfterSeq: afterSeq, ThroughSeq: throughSeq, LimitChanges: limitChanges})
}

func (e storeEngine) ack(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) error {
	_, err := e.s.AckClientCursor(ctx, partition, clientID, actorID, cursor, atMs)
	return err
}
