package sync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	gosync "sync"
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
//     (PULL-2). A cursor equal to the horizon is served. With
//     req.RestartBootstraps, a subscription that cannot continue — but
//     for a cursor below the horizon — and one whose token does not
//     verify get a fresh bootstrap instead (PULL-11).
//
// Every subscription is served through one head, PullResponse.MaxCommitSeq,
// read once per pull (PULL-7). Then the client record is written — actor,
// wire version, subscriptions (each with its RecordScopes, or its Scopes
// when it has none, PULL-12), AtMs, and as cursor the smallest NextCursor
// of the subscriptions not reset (PullBootstrap when none), which is what
// retention's active-cursor floor holds (RET-1) — and the partition is
// touched in the registry (PULL-8).
//
// Pull is PullTo with a sink that keeps each subscription's first page or
// window in its result: use PullTo to serve several pages of a bootstrap
// in one call, or to stream a response without holding it.
//
// Errors: bad input → CodeInvalidArgument, CodeInvalidClientID,
// CodeUnknownTable, CodeScanRequiresScope or CodeInvalidLimit (PULL-1);
// a client id whose record is bound to another actor →
// CodeClientActorMismatch (PULL-9, CR-7). With those, nothing is written (and
// bad input reads nothing). A driver error stops the pull and
// is returned as is (retryable ones say so); when it comes from writing
// the client record or touching the partition, the record may have been
// written — harmless, the next pull writes it again — and no response is
// returned, so the client pulls again from the cursors it has.
//
// The first pull of a client id (no record yet) binds it to the actor in
// a Tx of the partition before writing the record (Tx.BindClient, CR-7):
// of two first calls of one client id by two actors at once — two pulls,
// or a pull and a push — exactly one lands, the other gets
// CodeClientActorMismatch having written nothing.
//
// Quiet pulls write nothing (PULL-13): the record is written only when
// the pull found none, when it changes in actor, wire version, cursor or
// subscriptions, or when the stored one is the Store's record refresh
// age (SetRecordRefresh) or more older than AtMs; the partition is
// touched only when the record was not found or this Store's last touch
// of it is PullTouchInterval or more of request time before AtMs (or
// after it), else the response carries that touch's epoch.
//
// A pull costs 4 + N round trips for N subscriptions (client record, head,
// one read per subscription, record write, registry touch), plus one
// horizon read when a bootstrap is resumed; a subscription already at the
// head reads nothing, and a quiet pull skips the two writes, so a
// caught-up client of a quiet partition costs 2; a client id's first
// pull adds the binding's Tx. The client record,
// head and horizon are read at once, then the subscriptions, four at a
// time, so a pull's latency is about three round trips plus ⌈N/4⌉.
func (s *Store) Pull(ctx context.Context, partition string, req PullRequest) (_ PullResponse, err error) {
	defer s.observe(&ctx, "Store.Pull", partition).done(&err)
	var c pullCollector
	resp, err := s.pull(ctx, "Pull", partition, req, &c)
	if err != nil {
		return PullResponse{}, err
	}
	resp.Subscriptions = c.results
	return resp, nil
}

// PullTo serves a pull as Pull does and streams it to sink (PULL-10):
// per subscription, in request order, sink.Start, then each bootstrap
// page as it is read (sink.Page, which says whether the next page of the
// bootstrap follows in this pull) or the window (sink.Commits), then
// sink.End with the subscription's next cursor and token. It serves
// several bootstrap pages per subscription in one call — all pinned at
// the bootstrap's one asOfCommitSeq, each after the last row of the one
// before, the token at the end resuming after the last page served
// (PULL-3…PULL-5) — and holds at most four pages or windows at once,
// whatever the bootstraps' sizes: the one being delivered and the first
// reads of the next three subscriptions; a page handed to the sink is
// not kept, and no page is read before the sink asks for it. Then the
// client record is written and the partition touched as by Pull
// (PULL-8).
//
// The response it returns has every subscription's result as End got it:
// no Rows and no Commits.
//
// Errors: Pull's; a nil sink → CodeInvalidArgument. An error a sink
// method returns stops the pull and is returned as it is: nothing more
// is read or delivered, no client record is written and the partition
// is not touched. The subscriptions the sink ended before stand (the
// client may keep their rows and cursors); the next pull serves the
// others from the cursors and tokens the client had.
//
// Round trips are Pull's, plus one scan per page after the first of a
// subscription in the pull.
func (s *Store) PullTo(ctx context.Context, partition string, req PullRequest, sink PullSink) (_ PullResponse, err error) {
	defer s.observe(&ctx, "Store.PullTo", partition).done(&err)
	return s.pull(ctx, "PullTo", partition, req, sink)
}

// pull is Pull and PullTo: it checks req, reads what every subscription
// needs, streams the subscriptions to sink, writes the client record
// and touches the registry.
func (s *Store) pull(ctx context.Context, op, partition string, req PullRequest, sink PullSink) (PullResponse, error) {
	if err := firstErr(checkCtx(ctx, op), idPartition.check(op, partition)); err != nil {
		return PullResponse{}, err
	}
	if sink == nil {
		return PullResponse{}, argErr(op, "PULL-10", "the sink is nil")
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
	stored := rec
	resp := PullResponse{MaxCommitSeq: head, Subscriptions: make([]PullResult, len(plans))}
	served := pullServer{s: s, op: op, partition: partition, head: head, horizon: horizon, restart: req.RestartBootstraps}
	if err := served.stream(ctx, plans, sink, resp.Subscriptions); err != nil {
		return PullResponse{}, err
	}

	at := req.AtMs
	if at == 0 {
		at = time.Now().UnixMilli()
	}
	rec = ClientRecord{ClientID: req.ClientID, ActorID: req.ActorID, WireVersion: req.WireVersion,
		Cursor: PullBootstrap, UpdatedAtMs: at, Subscriptions: make([]Subscription, len(plans))}
	for i, p := range plans {
		scopes := p.sub.RecordScopes
		if scopes == nil {
			scopes = p.sub.Scopes
		}
		rec.Subscriptions[i] = Subscription{ID: p.sub.ID, Table: p.sub.Table, Scopes: scopes}
		if r := resp.Subscriptions[i]; r.Status == PullActive && (rec.Cursor < 0 || r.NextCursor < rec.Cursor) {
			rec.Cursor = r.NextCursor
		}
	}
	if !found {
		// A client id's first pull binds it in a Tx, atomically against
		// racing first pushes and pulls of another actor (CR-7).
		if err := s.bindClient(ctx, partition, req.ClientID, req.ActorID, at); err != nil {
			return PullResponse{}, err
		}
	}
	if !found || !s.recordQuiet(stored, rec) {
		if err := s.conn.PutClientRecord(ctx, partition, rec); err != nil {
			return PullResponse{}, err
		}
	}
	entry, err := s.touchForPull(ctx, partition, at, found)
	if err != nil {
		return PullResponse{}, err
	}
	resp.Epoch = entry.Epoch
	return resp, nil
}

// recordQuiet reports whether a pull may leave stored, the client's
// record as the pull read it, unwritten instead of writing rec (PULL-13):
// the two agree in actor, wire version, cursor and subscriptions (ids,
// tables, recorded scopes, in order), and stored was updated less than
// the Store's record refresh age before rec.
func (s *Store) recordQuiet(stored, rec ClientRecord) bool {
	refresh := s.recordRefresh.Load()
	if refresh <= 0 || rec.UpdatedAtMs-stored.UpdatedAtMs >= refresh {
		return false
	}
	if stored.ActorID != rec.ActorID || stored.WireVersion != rec.WireVersion || stored.Cursor != rec.Cursor ||
		len(stored.Subscriptions) != len(rec.Subscriptions) {
		return false
	}
	for i, a := range stored.Subscriptions {
		b := rec.Subscriptions[i]
		if a.ID != b.ID || a.Table != b.Table || len(a.Scopes) != len(b.Scopes) {
			return false
		}
		for k, av := range a.Scopes {
			bv, ok := b.Scopes[k]
			if !ok || !slices.Equal(av, bv) {
				return false
			}
		}
	}
	return true
}

// pullCollector is Pull's sink: it keeps each subscription's result
// with its first page or its window, and stops every bootstrap after
// that page.
type pullCollector struct {
	results []PullResult
	cur     PullResult
}

func (c *pullCollector) Start(_ context.Context, r PullResult) error {
	c.cur = r
	return nil
}

func (c *pullCollector) Page(_ context.Context, p PullPage) (bool, error) {
	c.cur.Rows = p.Rows
	return false, nil
}

func (c *pullCollector) Commits(_ context.Context, commits []Commit) error {
	c.cur.Commits = commits
	return nil
}

func (c *pullCollector) End(_ context.Context, r PullResult) error {
	r.Rows, r.Commits = c.cur.Rows, c.cur.Commits
	c.results = append(c.results, r)
	c.cur = PullResult{}
	return nil
}

// pullParallelReads bounds the subscriptions a pull reads ahead: reads in
// flight and first reads held, the subscription being delivered included
// (PULL-10).
const pullParallelReads = 4

// pullPlan is one validated subscription of a pull.
type pullPlan struct {
	sub          PullSubscription
	empty        bool       // a filter key with no values: nothing matches
	binding      []byte     // what its bootstrap tokens are bound to
	token        *pullToken // a bootstrap to resume, or nil
	badToken     bool       // a token that did not verify, with RestartBootstraps
	limitChanges int
	limitRows    int
}

// planPull checks a pull request (PULL-1) in argument order — client id,
// actor id, the number of subscriptions, then each subscription's id
// (distinct), table, scopes, record scopes, cursor, limits and token —
// and returns one plan per subscription. With RestartBootstraps a token
// that does not verify is not an error: the plan bootstraps afresh.
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
		if sub.RecordScopes != nil {
			if _, err := checkFilterEntries(sop+" RecordScopes", sub.RecordScopes); err != nil {
				return nil, err
			}
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
			switch {
			case err == nil:
				p.token = &t
			case req.RestartBootstraps:
				p.badToken = true // PULL-11: a fresh bootstrap instead
			default:
				return nil, err
			}
		}
		plans[i] = p
	}
	return plans, nil
}

// pullServer serves the subscriptions of one pull through its head.
type pullServer struct {
	s         *Store
	op        string
	partition string
	head      int64
	horizon   int64 // read when a plan resumes a bootstrap
	restart   bool  // RestartBootstraps (PULL-11)
}

// pullFirst is a subscription's first read: its result so far (no Rows,
// Commits, BootstrapToken) and its first page or its window.
type pullFirst struct {
	res     PullResult
	page    PullPage
	commits []Commit
}

// stream serves plans to sink in order, each result into results[i]
// (PULL-10). The first read of each subscription runs ahead, at most
// pullParallelReads subscriptions at a time, the one being delivered
// included: a subscription holds its slot until the sink has its End,
// and slots are taken in request order, so the subscription being
// delivered always has one. A bootstrap's further pages are read one at
// a time as the sink asks for them, never ahead. So a pull holds at most
// pullParallelReads first reads and one further page at once, whatever
// the bootstraps' sizes.
func (ps *pullServer) stream(ctx context.Context, plans []pullPlan, sink PullSink, results []PullResult) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	type slot struct {
		first pullFirst
		err   error
		done  chan struct{}
	}
	slots := make([]slot, len(plans))
	for i := range slots {
		slots[i].done = make(chan struct{})
	}
	sem := make(chan struct{}, pullParallelReads)
	wg.Go(func() {
		for i, p := range plans {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer close(slots[i].done)
				slots[i].first, slots[i].err = ps.serve(ctx, p)
			})
		}
	})
	for i, p := range plans {
		select {
		case <-slots[i].done:
		case <-ctx.Done():
			return driver.Wrap(CodeUnavailable, ctx.Err(), "%s: the context ended", ps.op)
		}
		if err := slots[i].err; err != nil {
			return err
		}
		var err error
		if results[i], err = ps.deliver(ctx, p, &slots[i].first, sink); err != nil {
			return err
		}
		<-sem
	}
	return nil
}

// serve makes the first read of one subscription: a bootstrap's first
// page, an incremental window, or none (a reset, a subscription at the
// head).
func (ps *pullServer) serve(ctx context.Context, p pullPlan) (pullFirst, error) {
	reset := func(reason Code) (pullFirst, error) {
		return pullFirst{res: PullResult{ID: p.sub.ID, Status: PullReset, Reason: reason, NextCursor: PullBootstrap}}, nil
	}
	// cannot answers a subscription that cannot go on from where the
	// client is: a reset, or with RestartBootstraps a fresh bootstrap
	// (PULL-11).
	cannot := func(reason Code) (pullFirst, error) {
		if ps.restart {
			return ps.bootstrap(ctx, p, ps.head, "")
		}
		return reset(reason)
	}
	switch {
	case p.token != nil:
		switch {
		case p.token.asOf < ps.horizon:
			return cannot(CodeCursorExpired)
		case p.token.asOf > ps.head:
			return cannot(CodeCursorAhead)
		}
		return ps.bootstrap(ctx, p, p.token.asOf, p.token.lastRowID)
	case p.badToken || p.sub.Cursor == PullBootstrap:
		return ps.bootstrap(ctx, p, ps.head, "")
	case p.sub.Cursor > ps.head:
		return cannot(CodeCursorAhead)
	case p.sub.Cursor == ps.head:
		// Caught up: nothing lies after the cursor through head, and the
		// horizon never passes the head (HZ-1), so there is nothing to
		// read. A prune that raised the horizon since the head was read
		// shows at the next pull, as a reset.
		return pullFirst{res: PullResult{ID: p.sub.ID, Status: PullActive, NextCursor: ps.head}}, nil
	}
	commits, err := ps.s.conn.ReadCommitWindow(ctx, ps.partition, WindowQuery{Table: p.sub.Table,
		Filter: p.sub.Scopes, AfterSeq: p.sub.Cursor, ThroughSeq: ps.head, LimitChanges: p.limitChanges})
	switch code := CodeOf(err); {
	case code == CodeCursorExpired:
		return reset(code) // with RestartBootstraps too (PULL-11)
	case code == CodeCursorAhead:
		return cannot(code)
	case err != nil:
		return pullFirst{}, err
	}
	res := PullResult{ID: p.sub.ID, Status: PullActive, NextCursor: ps.head}
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
	return pullFirst{res: res, commits: commits}, nil
}

// bootstrap reads the first page of p's bootstrap pinned at asOf, after
// afterRowID: "" starts a fresh bootstrap.
func (ps *pullServer) bootstrap(ctx context.Context, p pullPlan, asOf int64, afterRowID string) (pullFirst, error) {
	if afterRowID == "" && p.sub.SkipSnapshot != nil {
		skip, err := p.sub.SkipSnapshot(ctx, asOf)
		if err != nil {
			return pullFirst{}, err
		}
		if skip { // PULL-14: the caller serves the snapshot
			return pullFirst{res: PullResult{ID: p.sub.ID, Status: PullActive, Bootstrap: true, Fresh: true,
				AsOfCommitSeq: asOf, NextCursor: asOf, Skipped: true}}, nil
		}
	}
	page, err := ps.page(ctx, p, afterRowID)
	if err != nil {
		return pullFirst{}, err
	}
	return pullFirst{res: PullResult{ID: p.sub.ID, Status: PullActive, Bootstrap: true, Fresh: afterRowID == "",
		AsOfCommitSeq: asOf, NextCursor: asOf}, page: page}, nil
}

// page reads the page of p's bootstrap after afterRowID ("" = the first).
func (ps *pullServer) page(ctx context.Context, p pullPlan, afterRowID string) (PullPage, error) {
	page := PullPage{AfterRowID: afterRowID}
	if p.empty {
		return page, nil
	}
	// One row past the page says whether another page follows, so the
	// last page never comes back empty; at MaxLimit a full page says
	// More and the next one may be empty.
	read := min(p.limitRows+1, MaxLimit)
	rows, err := ps.s.conn.ScanRows(ctx, ps.partition, ScanQuery{Table: p.sub.Table, Filter: p.sub.Scopes,
		AfterRowID: afterRowID, Limit: read})
	if err != nil {
		return PullPage{}, err
	}
	if len(rows) > p.limitRows || len(rows) == read && read == p.limitRows {
		clear(rows[p.limitRows:]) // the row past the page is not kept
		rows, page.More = rows[:p.limitRows], true
	}
	page.Rows = rows
	return page, nil
}

// deliver hands one subscription to sink — Start, its pages or its
// window, End — reading further pages of a bootstrap while the sink asks
// for them, and returns its result (without Rows and Commits). It takes
// what first holds and clears it: a page handed to the sink is not kept.
func (ps *pullServer) deliver(ctx context.Context, p pullPlan, first *pullFirst, sink PullSink) (PullResult, error) {
	res, page, commits := first.res, first.page, first.commits
	*first = pullFirst{}
	if err := sink.Start(ctx, res); err != nil {
		return PullResult{}, err
	}
	switch {
	case res.Status != PullActive, res.Skipped:
	case res.Bootstrap:
		for {
			next, err := sink.Page(ctx, page)
			if err != nil {
				return PullResult{}, err
			}
			more, last := page.More, ""
			if more {
				last = page.Rows[len(page.Rows)-1].ID
			}
			page = PullPage{} // not kept while the next page is read
			if !more {
				break
			}
			if !next {
				res.BootstrapToken = encodePullToken(p.binding, pullToken{asOf: res.AsOfCommitSeq, lastRowID: last})
				break
			}
			if page, err = ps.page(ctx, p, last); err != nil {
				return PullResult{}, err
			}
			if len(page.Rows) == 0 {
				break // the page before was full at MaxLimit and the last
			}
		}
	default:
		err := sink.Commits(ctx, commits)
		commits = nil
		if err != nil {
			return PullResult{}, err
		}
	}
	if err := sink.End(ctx, res); err != nil {
		return PullResult{}, err
	}
	return res, nil
}

// bindClient binds clientID to actorID in partition (CR-7) in a Tx of
// its own: CodeClientActorMismatch when another actor holds it.
func (s *Store) bindClient(ctx context.Context, partition, clientID, actorID string, atMs int64) error {
	return s.runInTx(ctx, partition, nil, func(ctx context.Context, tx *Tx) error {
		return tx.tx.BindClient(ctx, clientID, actorID, atMs)
	})
}

// newLogEpoch returns a fresh epoch for a partition Pull registers for the
// first time (REG-1): 16 random bytes in hex, so a log that is recreated
// never repeats an epoch a client saw.
func newLogEpoch() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
