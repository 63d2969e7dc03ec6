package sync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/syncstore/syncstore/driver"
)

// Pull serves one client's pull on partition (rule group PULL): for each
// subscription, in request order, independently,
//
//   - a bootstrap (Cursor PullBootstrap, or a BootstrapToken): one page of
//     the scope's current rows in ascending id order, at most LimitRows.
//     The first page pins the bootstrap at asOfCommitSeq, the partition's
//     head as this pull read it; while rows remain the result carries a
//     BootstrapToken for the next page; NextCursor is asOfCommitSeq
//     throughout, so once the last page is in, incremental pulls deliver
//     every commit after the pin and nothing that changed during the
//     bootstrap is lost (PULL-3…PULL-5);
//   - an incremental pull (Cursor ≥ 0): the whole commits after Cursor
//     through the partition's head that touched the scope, oldest first,
//     each with its matching changes, stopping once LimitChanges changes
//     are in (a commit is never split, PULL-6). NextCursor moves past
//     commits that missed the scope: to the head when fewer than
//     LimitChanges changes came back, else to the last commit returned
//     (PULL-7), so a client whose scope is quiet never reads the log
//     again;
//   - a reset (PullReset, NextCursor PullBootstrap) when the subscription
//     cannot continue: its cursor, or its bootstrap's pin, is below the
//     partition's horizon (Reason CodeCursorExpired, decided by the window
//     read in its own snapshot, HZ-4) or beyond the head (CodeCursorAhead)
//     (PULL-2). A cursor equal to the horizon is served.
//
// Every subscription is served through one head, PullResponse.MaxCommitSeq,
// read once per pull (PULL-7). Then the client record is written — actor,
// wire version, subscriptions, AtMs, and as cursor the smallest NextCursor
// of the subscriptions not reset (PullBootstrap when none), which is what
// retention's active-cursor floor holds (RET-1) — and the partition is
// touched in the registry (PULL-8).
//
// Errors: bad input → CodeInvalidArgument, CodeInvalidClientID,
// CodeUnknownTable, CodeScanRequiresScope or CodeInvalidLimit (PULL-1);
// a client id whose record is bound to another actor →
// CodeClientActorMismatch (PULL-9). With those, nothing is written (and
// bad input reads nothing). A driver error stops the pull and
// is returned as is (retryable ones say so); when it comes from writing
// the client record or touching the partition, the record may have been
// written — harmless, the next pull writes it again — and no response is
// returned, so the client pulls again from the cursors it has.
//
// The actor check reads the stored record and has no compare-and-set
// behind it: two first pulls of one new client id by two actors that race
// each other may both pass, and the record written last binds the id.
//
// A pull costs 4 + N round trips for N subscriptions (client record, head,
// one read per subscription, record write, registry touch), plus one
// horizon read when a bootstrap is resumed; a subscription already at the
// head reads nothing, so a caught-up client costs 4. The client record,
// head and horizon are read at once, then the subscriptions, four at a
// time, so a pull's latency is about three round trips plus ⌈N/4⌉.
func (s *Store) Pull(ctx context.Context, partition string, req PullRequest) (_ PullResponse, err error) {
	defer s.observe(&ctx, "Store.Pull", partition).done(&err)
	const op = "Pull"
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition)); err != nil {
		return PullResponse{}, err
	}
	plans, err := s.schema.Load().planPull(op, partition, req)
	if err != nil {
		return PullResponse{}, err
	}
	// The client record, the head and (when a bootstrap is resumed) the
	// horizon are read at once; then every subscription, at most
	// pullParallelReads at a time, all through the one head.
	var (
		rec     ClientRecord
		found   bool
		head    int64
		horizon int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		rec, found, err = s.conn.GetClientRecord(gctx, partition, req.ClientID)
		return err
	})
	g.Go(func() (err error) {
		head, err = s.conn.MaxCommitSeq(gctx, partition)
		return err
	})
	if slices.ContainsFunc(plans, func(p pullPlan) bool { return p.token != nil }) {
		g.Go(func() (err error) {
			horizon, err = s.conn.HorizonSeq(gctx, partition)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return PullResponse{}, err
	}
	if found && rec.ActorID != req.ActorID {
		return PullResponse{}, driver.Errorf(CodeClientActorMismatch,
			"%s: the client id is bound to another actor; a client id belongs to the actor that first pulled with it (PULL-9)", op)
	}
	resp := PullResponse{MaxCommitSeq: head, Subscriptions: make([]PullResult, len(plans))}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(pullParallelReads)
	for i, p := range plans {
		g.Go(func() (err error) {
			resp.Subscriptions[i], err = s.servePull(gctx, partition, p, head, horizon)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return PullResponse{}, err
	}

	at := req.AtMs
	if at == 0 {
		at = time.Now().UnixMilli()
	}
	rec = ClientRecord{ClientID: req.ClientID, ActorID: req.ActorID, WireVersion: req.WireVersion,
		Cursor: PullBootstrap, UpdatedAtMs: at, Subscriptions: make([]Subscription, len(plans))}
	for i, p := range plans {
		rec.Subscriptions[i] = Subscription{ID: p.sub.ID, Table: p.sub.Table, Scopes: p.sub.Scopes}
		if r := resp.Subscriptions[i]; r.Status == PullActive && (rec.Cursor < 0 || r.NextCursor < rec.Cursor) {
			rec.Cursor = r.NextCursor
		}
	}
	if err := s.conn.PutClientRecord(ctx, partition, rec); err != nil {
		return PullResponse{}, err
	}
	entry, err := s.conn.TouchPartition(ctx, partition, at, newLogEpoch())
	if err != nil {
		return PullResponse{}, err
	}
	resp.Epoch = entry.Epoch
	return resp, nil
}

// pullParallelReads bounds the reads one pull has in flight at once.
const pullParallelReads = 4

// pullPlan is one validated subscription of a pull.
type pullPlan struct {
	sub          PullSubscription
	empty        bool       // a filter key with no values: nothing matches
	binding      []byte     // what its bootstrap tokens are bound to
	token        *pullToken // a bootstrap to resume, or nil
	limitChanges int
	limitRows    int
}

// planPull checks a pull request (PULL-1) in argument order — client id,
// actor id, the number of subscriptions, then each subscription's id
// (distinct), table, scopes, cursor, limits and token — and returns one
// plan per subscription.
func (cs *compiledSchema) planPull(op, partition string, req PullRequest) ([]pullPlan, error) {
	if err := firstErr(checkClientID(op, req.ClientID), idActor.check(op, req.ActorID)); err != nil {
		return nil, err
	}
	if n := len(req.Subscriptions); n > MaxPullSubscriptions {
		return nil, argErr(op, "PULL-1", "%d subscriptions, over the limit of %d", n, MaxPullSubscriptions)
	}
	plans := make([]pullPlan, len(req.Subscriptions))
	seen := make(map[string]bool, len(req.Subscriptions))
	for i, sub := range req.Subscriptions {
		sop := fmt.Sprintf("%s: subscription %d", op, i)
		if err := idSubscription.check(sop, sub.ID); err != nil {
			return nil, err
		}
		if seen[sub.ID] {
			return nil, argErr(sop, "PULL-1", "subscription id repeats an earlier one")
		}
		seen[sub.ID] = true
		if _, err := cs.table(sop, sub.Table); err != nil {
			return nil, err
		}
		empty, err := checkFilter(sop, sub.Scopes)
		if err != nil {
			return nil, err
		}
		if sub.Cursor < PullBootstrap {
			return nil, argErr(sop, "PULL-1", "cursor %d is below -1 (PullBootstrap)", sub.Cursor)
		}
		p := pullPlan{sub: sub, empty: empty, limitChanges: sub.LimitChanges, limitRows: sub.LimitRows}
		if p.limitChanges == 0 {
			p.limitChanges = DefaultPullLimitChanges
		}
		if p.limitRows == 0 {
			p.limitRows = DefaultPullLimitRows
		}
		if err := firstErr(checkLimit(sop, "limitChanges", p.limitChanges, MaxLimit),
			checkLimit(sop, "limitRows", p.limitRows, MaxLimit)); err != nil {
			return nil, err
		}
		p.binding = pullBinding(partition, sub.Table, sub.Scopes)
		if sub.BootstrapToken != "" {
			t, err := decodePullToken(sop, sub.BootstrapToken, p.binding)
			if err != nil {
				return nil, err
			}
			p.token = &t
		}
		plans[i] = p
	}
	return plans, nil
}

// servePull serves one subscription through head; horizon is the
// partition's horizon when p resumes a bootstrap.
func (s *Store) servePull(ctx context.Context, partition string, p pullPlan, head, horizon int64) (PullResult, error) {
	res := PullResult{ID: p.sub.ID, Status: PullActive}
	reset := func(reason Code) (PullResult, error) {
		return PullResult{ID: p.sub.ID, Status: PullReset, Reason: reason, NextCursor: PullBootstrap}, nil
	}
	switch {
	case p.token != nil:
		switch {
		case p.token.asOf < horizon:
			return reset(CodeCursorExpired)
		case p.token.asOf > head:
			return reset(CodeCursorAhead)
		}
		return s.pullPage(ctx, partition, p, p.token.asOf, p.token.lastRowID)
	case p.sub.Cursor == PullBootstrap:
		return s.pullPage(ctx, partition, p, head, "")
	case p.sub.Cursor > head:
		return reset(CodeCursorAhead)
	case p.sub.Cursor == head:
		// Caught up: nothing lies after the cursor through head, and the
		// horizon never passes the head (HZ-1), so there is nothing to
		// read. A prune that raised the horizon since the head was read
		// shows at the next pull, as a reset.
		res.NextCursor = head
		return res, nil
	}
	commits, err := s.conn.ReadCommitWindow(ctx, partition, WindowQuery{Table: p.sub.Table,
		Filter: p.sub.Scopes, AfterSeq: p.sub.Cursor, ThroughSeq: head, LimitChanges: p.limitChanges})
	switch code := CodeOf(err); {
	case code == CodeCursorExpired || code == CodeCursorAhead:
		return reset(code)
	case err != nil:
		return PullResult{}, err
	}
	res.Commits, res.NextCursor = commits, head
	changes := 0
	for _, c := range commits {
		changes += len(c.Changes)
	}
	if changes >= p.limitChanges {
		// The window may have stopped early (WIN-4): resume after the
		// last commit it returned. Fewer changes prove none is left
		// through head (WIN-5).
		res.NextCursor = commits[len(commits)-1].Seq
	}
	return res, nil
}

// pullPage reads one bootstrap page of p pinned at asOf, after
// afterRowID ("" = the first page).
func (s *Store) pullPage(ctx context.Context, partition string, p pullPlan, asOf int64, afterRowID string) (PullResult, error) {
	res := PullResult{ID: p.sub.ID, Status: PullActive, Bootstrap: true, AsOfCommitSeq: asOf, NextCursor: asOf}
	if p.empty {
		return res, nil
	}
	// One row past the page says whether another page follows, so the
	// last page never comes back empty; at MaxLimit a full page gets a
	// token and the next one may be empty.
	read := min(p.limitRows+1, MaxLimit)
	rows, err := s.conn.ScanRows(ctx, partition, ScanQuery{Table: p.sub.Table, Filter: p.sub.Scopes,
		AfterRowID: afterRowID, Limit: read})
	if err != nil {
		return PullResult{}, err
	}
	if len(rows) > p.limitRows || len(rows) == read && read == p.limitRows {
		rows = rows[:p.limitRows]
		res.BootstrapToken = encodePullToken(p.binding, pullToken{asOf: asOf, lastRowID: rows[len(rows)-1].ID})
	}
	res.Rows = rows
	return res, nil
}

// newLogEpoch returns a fresh epoch for a partition Pull registers for the
// first time (REG-1): 16 random bytes in hex, so a log that is recreated
// never repeats an epoch a client saw.
func newLogEpoch() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
