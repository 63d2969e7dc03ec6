package sync_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Hooks on the real SQLite driver: what they see, what they cannot
// change, and what they cost unset.

// hookCall is one call as the hooks saw it end.
type hookCall struct {
	Op, Partition string
	Code          driver.Code // of the error end got; "" for nil or an unclassified error
	Failed        bool
}

// hookLog records every call its hooks see, in the order the calls end,
// and fails t when end is called twice for one call.
type hookLog struct {
	t     *testing.T
	mu    gosync.Mutex
	calls []hookCall
	open  int
}

func (l *hookLog) hooks() sync.Hooks {
	return sync.Hooks{Start: func(ctx context.Context, c sync.Call) (context.Context, func(error)) {
		if ctx == nil {
			l.t.Errorf("%s: Start got a nil context", c.Op)
		}
		l.mu.Lock()
		l.open++
		l.mu.Unlock()
		var ended atomic.Bool
		return ctx, func(err error) {
			if ended.Swap(true) {
				l.t.Errorf("%s: end called twice", c.Op)
				return
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.open--
			l.calls = append(l.calls, hookCall{Op: c.Op, Partition: c.Partition, Code: driver.CodeOf(err), Failed: err != nil})
		}
	}}
}

// take returns the calls seen so far and forgets them; it fails t when a
// call started but has not ended.
func (l *hookLog) take() []hookCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open != 0 {
		l.t.Errorf("%d calls started without ending", l.open)
	}
	out := l.calls
	l.calls = nil
	return out
}

func (l *hookLog) expect(what string, want ...hookCall) {
	l.t.Helper()
	if diff := cmp.Diff(want, l.take()); diff != "" {
		l.t.Errorf("%s: calls seen by the hooks (-want +got):\n%s", what, diff)
	}
}

func ok(op, partition string) hookCall { return hookCall{Op: op, Partition: partition} }

func failed(op, partition string, code driver.Code) hookCall {
	return hookCall{Op: op, Partition: partition, Code: code, Failed: true}
}

// notesTx ensures notesSchema on s and begins a Tx on p1, rolled back
// when the test ends.
func notesTx(t *testing.T, s *sync.Store) *sync.Tx {
	t.Helper()
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin(t.Context(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func hookedSQLite(t *testing.T) (*sync.Store, *hookLog) {
	t.Helper()
	s := openSQLite(t)
	log := &hookLog{t: t}
	s.SetHooks(log.hooks())
	return s, log
}

// Each call reports one Call with its op, partition and error — a call
// validation rejects too, before the driver — and end runs exactly once.
// Push, Pull and RunInTx are one Call each, whatever they run inside;
// host code RunInTx runs reports its own calls.
func TestHooksSeeEachCall(t *testing.T) {
	ctx := t.Context()
	s, log := hookedSQLite(t)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	must("EnsureSchema", s.EnsureSchema(ctx, notesSchema()))
	tx, err := s.Begin(ctx, "p1")
	must("Begin", err)
	must("UpsertRow", tx.UpsertRow(ctx, "notes", note("n1")))
	if err := tx.UpsertRow(ctx, "nope", note("n1")); driver.CodeOf(err) != driver.CodeUnknownTable {
		t.Fatalf("UpsertRow on an unknown table: %v", err)
	}
	must("Commit", tx.Commit(ctx))
	if err := tx.Commit(ctx); driver.CodeOf(err) != driver.CodeTxFinished {
		t.Fatalf("a second Commit: %v", err)
	}
	log.expect("a Tx", ok("Store.EnsureSchema", ""), ok("Store.Begin", "p1"), ok("Tx.UpsertRow", "p1"),
		failed("Tx.UpsertRow", "p1", driver.CodeUnknownTable), ok("Tx.Commit", "p1"),
		failed("Tx.Commit", "p1", driver.CodeTxFinished))

	_, _, err = s.GetRow(ctx, "p1", "notes", "n1")
	must("GetRow", err)
	_, _, err = s.GetRow(ctx, "p1", "nope", "n1")
	unknown := driver.CodeOf(err)
	_, err = s.MaxCommitSeq(ctx, "")
	invalid := driver.CodeOf(err)
	var nilCtx context.Context
	_, err = s.MaxCommitSeq(nilCtx, "p1")
	nilCode := driver.CodeOf(err)
	if unknown != driver.CodeUnknownTable || invalid == "" || nilCode != driver.CodeInvalidArgument {
		t.Fatalf("codes of the rejected reads: %q, %q, %q", unknown, invalid, nilCode)
	}
	_, err = s.ListPartitions(ctx, "", 10)
	must("ListPartitions", err)
	log.expect("reads", ok("Store.GetRow", "p1"), failed("Store.GetRow", "p1", driver.CodeUnknownTable),
		failed("Store.MaxCommitSeq", "", invalid), failed("Store.MaxCommitSeq", "p1", driver.CodeInvalidArgument),
		ok("Store.ListPartitions", ""))

	_, err = s.Push(ctx, "p1", sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1",
		Ops: []sync.PushOp{noteOp("n2", "two", nil)}})
	must("Push", err)
	_, err = s.Pull(ctx, "p1", sync.PullRequest{ClientID: "c1", ActorID: "a1", Subscriptions: []sync.PullSubscription{
		{ID: "s1", Table: "notes", Scopes: driver.ScopeFilter{"project": {"p7"}}, Cursor: sync.PullBootstrap}}})
	must("Pull", err)
	must("RunInTx", s.RunInTx(ctx, "p2", func(ctx context.Context, tx *sync.Tx) error {
		return tx.UpsertRow(ctx, "notes", note("n3"))
	}))
	_, err = s.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w1", Types: []string{"mail"}, NowMs: 1, LeaseMs: 1000, Limit: 1})
	must("ClaimReactions", err)
	log.expect("composite calls", ok("Store.Push", "p1"), ok("Store.Pull", "p1"), ok("Tx.UpsertRow", "p2"),
		ok("Store.RunInTx", "p2"), ok("Store.ClaimReactions", "p1"))

	// A PullTo is one Call; the calls its sink makes are reported nested
	// in it, and a sink's error ends it.
	sink := &callingSink{s: s}
	req := sync.PullRequest{ClientID: "c1", ActorID: "a1", Subscriptions: []sync.PullSubscription{
		{ID: "s1", Table: "notes", Scopes: driver.ScopeFilter{"project": {"p7"}}, Cursor: sync.PullBootstrap}}}
	_, err = s.PullTo(ctx, "p1", req, sink)
	must("PullTo", err)
	sink.fail = driver.Errorf(driver.CodeUnavailable, "the sink's connection dropped")
	_, err = s.PullTo(ctx, "p1", req, sink)
	if driver.CodeOf(err) != driver.CodeUnavailable {
		t.Fatalf("PullTo with a failing sink: %v", err)
	}
	log.expect("PullTo", ok("Store.MaxCommitSeq", "p1"), ok("Store.PullTo", "p1"), ok("Store.MaxCommitSeq", "p1"),
		failed("Store.PullTo", "p1", driver.CodeUnavailable))

	must("Close", s.Close())
	log.expect("Close", ok("Store.Close", ""))
}

// callingSink is a PullSink that reads the head through the Store at
// every page, then fails with fail (nil: succeeds).
type callingSink struct {
	s    *sync.Store
	fail error
}

func (c *callingSink) Start(context.Context, sync.PullResult) error { return nil }

func (c *callingSink) Page(ctx context.Context, _ sync.PullPage) (bool, error) {
	if _, err := c.s.MaxCommitSeq(ctx, "p1"); err != nil {
		return false, err
	}
	return true, c.fail
}

func (c *callingSink) Commits(context.Context, []driver.Commit) error { return nil }
func (c *callingSink) End(context.Context, sync.PullResult) error     { return nil }

// ctxKey marks the context a hook's Start returns.
type ctxKey struct{}

// The context Start returns is the one the call runs with: a cancelled
// one fails the driver's read, and host code run inside a call (RunInTx's
// fn, Authorize) gets it.
func TestHooksContextFlowsIntoTheCall(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	if err := s.EnsureSchema(ctx, notesSchema()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MaxCommitSeq(ctx, "p1"); err != nil {
		t.Fatalf("MaxCommitSeq without hooks: %v", err)
	}
	s.SetHooks(sync.Hooks{Start: func(ctx context.Context, c sync.Call) (context.Context, func(error)) {
		if c.Op == "Store.MaxCommitSeq" {
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			return cancelled, nil
		}
		return context.WithValue(ctx, ctxKey{}, c.Op), nil
	}})
	if _, err := s.MaxCommitSeq(ctx, "p1"); !errors.Is(err, context.Canceled) {
		t.Errorf("MaxCommitSeq with a hook cancelling its context: err = %v, want one wrapping context.Canceled", err)
	}
	var inFn any
	if err := s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
		inFn = ctx.Value(ctxKey{})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inFn != "Store.RunInTx" {
		t.Errorf("RunInTx's fn got the context of %v, want Store.RunInTx's", inFn)
	}
	var inAuthorize any
	s.SetPushOptions(sync.PushOptions{Authorize: func(ctx context.Context, tx *sync.Tx, in sync.AuthorizeInput) error {
		inAuthorize = ctx.Value(ctxKey{})
		return nil
	}})
	if _, err := s.Push(ctx, "p1", sync.PushRequest{ClientID: "c1", ClientCommitID: "k1", ActorID: "a1",
		Ops: []sync.PushOp{noteOp("n1", "one", nil)}}); err != nil {
		t.Fatal(err)
	}
	if inAuthorize != "Store.Push" {
		t.Errorf("Authorize got the context of %v, want Store.Push's", inAuthorize)
	}
}

// A call that panics reports CodeInternal to end, and the panic goes on.
func TestHooksSeeAPanic(t *testing.T) {
	s, log := hookedSQLite(t)
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	log.take()
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the fn's panic", r)
			}
		}()
		_ = s.RunInTx(t.Context(), "p1", func(context.Context, *sync.Tx) error { panic("boom") })
	}()
	log.expect("a panicking RunInTx", failed("Store.RunInTx", "p1", driver.CodeInternal))
}

// Hooks change no result: capabilities, the escape hatch, and what a call
// returns are the same with hooks set.
func TestHooksChangeNothing(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	caps := s.Capabilities()
	s.SetHooks((&hookLog{t: t}).hooks())
	if diff := cmp.Diff(caps, s.Capabilities()); diff != "" {
		t.Errorf("Capabilities with hooks (-without +with):\n%s", diff)
	}
	for _, c := range driver.AllCapabilities {
		if s.Supports(c) != slices.Contains(caps, c) {
			t.Errorf("Supports(%s) with hooks = %v", c, s.Supports(c))
		}
	}
	tx := notesTx(t, s)
	var stx *sql.Tx
	if !tx.As(&stx) || stx == nil {
		t.Error("Tx.As(*sql.Tx) with hooks set returned false")
	}
	_, _, err := s.GetRow(ctx, "p1", "nope", "n1")
	s.SetHooks(sync.Hooks{})
	_, _, plain := s.GetRow(ctx, "p1", "nope", "n1")
	if err == nil || plain == nil || err.Error() != plain.Error() || driver.CodeOf(err) != driver.CodeOf(plain) {
		t.Errorf("GetRow's error with hooks %v, without %v", err, plain)
	}
}

// A Worker's calls go through the Store, so the hooks see them.
func TestHooksSeeTheWorker(t *testing.T) {
	s, log := hookedSQLite(t)
	wEnqueue(t, s, "p1", wIn("k1", "mail", 3))
	w := newWorker(t, s, wConfig(&events{}, "p1"), map[string]sync.Handler{
		"mail": func(context.Context, string, driver.Reaction) error { return nil }})
	stop := wRun(t, w)
	waitStatus(t, s, "p1", "k1", driver.ReactionCompleted)
	stop()
	seen := map[hookCall]bool{}
	for _, c := range log.take() {
		seen[c] = true
	}
	for _, want := range []hookCall{ok("Store.ClaimDueReactions", ""), ok("Store.CompleteReaction", "p1")} {
		if !seen[want] {
			t.Errorf("the hooks did not see the Worker's %s", want.Op)
		}
	}
}

// With no hooks, observing a call allocates nothing: a scan the Store
// answers itself (a filter matching nothing) allocates nothing at all.
func TestHooksUnsetCostNoAllocation(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	tx := notesTx(t, s)
	q := driver.ScanQuery{Table: "notes", Filter: driver.ScopeFilter{"project": {}}, Limit: 10}
	scan := func() {
		if _, err := s.ScanRows(ctx, "p1", q); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ScanRows(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, scan); n != 0 {
		t.Errorf("ScanRows without hooks: %v allocations, want 0", n)
	}
	s.SetHooks(sync.Hooks{Start: func(ctx context.Context, c sync.Call) (context.Context, func(error)) { return ctx, nil }})
	s.SetHooks(sync.Hooks{})
	if n := testing.AllocsPerRun(100, scan); n != 0 {
		t.Errorf("ScanRows after SetHooks(Hooks{}): %v allocations, want 0", n)
	}
}
