package sync_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The Worker against the real SQLite driver, with real handlers. Waits
// poll the store for the state a test expects (bounded by wDeadline only
// so a broken Worker fails instead of hanging); no assertion depends on
// timing.

const wDeadline = 30 * time.Second

func wStore(t *testing.T) *syncstore.Store {
	t.Helper()
	s, err := syncstore.OpenContext(t.Context(), "sqlite", filepath.Join(t.TempDir(), "worker.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func wEnqueue(t *testing.T, s *syncstore.Store, p string, ins ...driver.ReactionInput) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.Begin(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := tx.EnqueueReactions(ctx, 0, ins); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func wIn(key, typ string, maxAttempts int) driver.ReactionInput {
	return driver.ReactionInput{Key: key, Type: typ, Payload: driver.JSON(`{"to":"` + key + `"}`), MaxAttempts: maxAttempts, CreatedAtMs: 1}
}

func wGet(t *testing.T, s *syncstore.Store, p, key string) driver.Reaction {
	t.Helper()
	rs, err := s.ListReactions(context.Background(), p, driver.ReactionListQuery{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("reaction %q missing", key)
	return driver.Reaction{}
}

// waitFor polls cond until it holds, failing the test after wDeadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func waitStatus(t *testing.T, s *syncstore.Store, p, key string, st driver.ReactionStatus) driver.Reaction {
	t.Helper()
	var r driver.Reaction
	waitFor(t, key+" to become "+string(st), func() bool { r = wGet(t, s, p, key); return r.Status == st })
	return r
}

// events records WorkerEvents.
type events struct {
	mu  gosync.Mutex
	all []syncstore.WorkerEvent
}

func (e *events) add(ev syncstore.WorkerEvent) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) of(kind syncstore.WorkerEventKind) []syncstore.WorkerEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []syncstore.WorkerEvent
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// wConfig is a fast configuration: short polls and backoff, no jitter.
func wConfig(ev *events, parts ...string) syncstore.WorkerConfig {
	return syncstore.WorkerConfig{
		Partitions: syncstore.StaticPartitions(parts...), Owner: "worker-1", Concurrency: 4,
		Lease: time.Minute, PollInterval: 2 * time.Millisecond, RetryInitial: time.Millisecond, RetryMax: 4 * time.Millisecond,
		RetryJitter: -1, ShutdownGrace: time.Minute, OnEvent: ev.add,
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// wRun starts w and returns a stop function that cancels Run and waits
// for it to return nil.
func wRun(t *testing.T, w *syncstore.Worker) (stop func()) {
	t.Helper()
	cancel, wait := wStart(t, w)
	return func() { cancel(); wait() }
}

// wStart starts w; cancel ends Run's ctx, wait waits for Run to return nil.
func wStart(t *testing.T, w *syncstore.Worker) (cancel func(), wait func()) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once gosync.Once
	wait = func() {
		once.Do(func() {
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(wDeadline):
				t.Errorf("Run did not return after its ctx ended")
			}
		})
	}
	t.Cleanup(func() { cancelCtx(); wait() })
	return cancelCtx, wait
}

func newWorker(t *testing.T, s *syncstore.Store, cfg syncstore.WorkerConfig, handlers map[string]syncstore.Handler) *syncstore.Worker {
	t.Helper()
	w, err := syncstore.NewWorker(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for typ, h := range handlers {
		if err := w.Handle(typ, h); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestWorkerCompletesEveryReactionOnce(t *testing.T) {
	s := wStore(t)
	const n = 40
	for _, p := range []string{"p1", "p2"} {
		var ins []driver.ReactionInput
		for i := range n / 2 {
			ins = append(ins, wIn(fmt.Sprintf("k%02d", i), "mail", 3))
		}
		wEnqueue(t, s, p, ins...)
	}
	wEnqueue(t, s, "p1", wIn("other-type", "sms", 3))
	var mu gosync.Mutex
	seen := map[string]int{}
	ev := &events{}
	cfg := wConfig(ev, "p1", "p2")
	cfg.BatchSize = 3
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		mu.Lock()
		seen[p+"/"+r.Key+"/"+string(r.Payload)]++
		mu.Unlock()
		return nil
	}})
	stop := wRun(t, w)
	waitFor(t, "every mail reaction completed", func() bool { return len(ev.of(syncstore.EventCompleted)) >= n })
	stop()
	if len(seen) != n {
		t.Errorf("%d distinct reactions handled, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("%s handled %d times, want once", k, c)
		}
	}
	for _, p := range []string{"p1", "p2"} {
		done, err := s.ListReactions(context.Background(), p, driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionCompleted}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != n/2 {
			t.Errorf("%s: %d completed, want %d", p, len(done), n/2)
		}
	}
	if r := wGet(t, s, "p1", "other-type"); r.Status != driver.ReactionPending || r.Attempts != 0 {
		t.Errorf("a reaction without a handler was claimed: %+v", r)
	}
}

func TestWorkerRetriesWithBackoffThenSucceeds(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 5))
	var mu gosync.Mutex
	var attempts []int
	ev := &events{}
	cfg := wConfig(ev, "p1")
	var clock atomic.Int64 // every reading is 1 s later: a retry is due at the next claim
	clock.Store(1_000_000_000_000)
	cfg.Now = func() time.Time { return time.UnixMilli(clock.Add(1000)) }
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		mu.Lock()
		attempts = append(attempts, r.Attempts)
		mu.Unlock()
		if r.Attempts < 3 {
			return syncstore.FailWith("smtp.timeout", driver.JSON(fmt.Sprintf(`{"try":%d}`, r.Attempts)), errors.New("secret server text"))
		}
		return nil
	}})
	stop := wRun(t, w)
	got := waitStatus(t, s, "p1", "r", driver.ReactionCompleted)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Errorf("handler saw attempts %v, want [1 2 3]", attempts)
	}
	if got.Attempts != 3 || got.LastFailure == nil || got.LastFailure.Code != "smtp.timeout" || got.LastFailure.Details != `{"try":2}` {
		t.Fatalf("completed reaction %+v (failure %+v), want attempts 3 and the last failure smtp.timeout {\"try\":2}", got, got.LastFailure)
	}
	retries := ev.of(syncstore.EventRetryScheduled)
	if len(retries) != 2 {
		t.Fatalf("%d retry events, want 2", len(retries))
	}
	for i, e := range retries {
		if e.Code != "smtp.timeout" || e.Attempt != i+1 || e.Err == nil || !strings.Contains(e.Err.Error(), "secret server text") {
			t.Errorf("retry event %d: %+v", i, e)
		}
	}
	// No jitter: after attempt 2 the wait is RetryInitial × 2 = 2 ms from
	// the failure, whose time the store kept.
	if d := retries[1].RetryAt.UnixMilli() - got.LastFailure.AtMs; d != 2 {
		t.Errorf("retry after attempt 2 scheduled %d ms after the failure, want 2", d)
	}
}

func TestWorkerPermanentErrorDeadLetters(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("coded", "mail", 5), wIn("plain", "mail", 5))
	var mu gosync.Mutex
	calls := map[string]int{}
	ev := &events{}
	w := newWorker(t, s, wConfig(ev, "p1"), map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		mu.Lock()
		calls[r.Key]++
		mu.Unlock()
		if r.Key == "coded" {
			return syncstore.Permanent(syncstore.FailWith("bad.address", `{"field":"to"}`, errors.New("secret: user@example.com")))
		}
		return syncstore.Permanent(errors.New("secret plain failure"))
	}})
	stop := wRun(t, w)
	coded := waitStatus(t, s, "p1", "coded", driver.ReactionDeadLetter)
	plain := waitStatus(t, s, "p1", "plain", driver.ReactionDeadLetter)
	stop()
	want := map[string]string{"coded": "bad.address", "plain": syncstore.CodeHandlerError}
	for _, r := range []driver.Reaction{coded, plain} {
		if r.Attempts != 1 || r.LastFailure == nil || r.LastFailure.Code != want[r.Key] {
			t.Errorf("%s: %+v (failure %+v), want dead letter after 1 attempt with code %s", r.Key, r, r.LastFailure, want[r.Key])
			continue
		}
		if strings.Contains(string(r.LastFailure.Details)+r.LastFailure.Code, "secret") {
			t.Errorf("%s: error text persisted: %+v", r.Key, r.LastFailure)
		}
	}
	if coded.LastFailure != nil && coded.LastFailure.Details != `{"field":"to"}` {
		t.Errorf("details %q, want the handler's", coded.LastFailure.Details)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["coded"] != 1 || calls["plain"] != 1 {
		t.Errorf("handler calls %v, want one each", calls)
	}
}

func TestWorkerDeadLettersWhenAttemptsRunOut(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 3))
	var mu gosync.Mutex
	calls := 0
	ev := &events{}
	w := newWorker(t, s, wConfig(ev, "p1"), map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return errors.New("boom")
	}})
	stop := wRun(t, w)
	got := waitStatus(t, s, "p1", "r", driver.ReactionDeadLetter)
	stop()
	if got.Attempts != 3 || got.LastFailure == nil || got.LastFailure.Code != syncstore.CodeHandlerError {
		t.Errorf("%+v (failure %+v), want dead letter after 3 attempts with %s", got, got.LastFailure, syncstore.CodeHandlerError)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("handler called %d times, want 3 (maxAttempts)", calls)
	}
	if n := len(ev.of(syncstore.EventRetryScheduled)); n != 2 {
		t.Errorf("%d retries scheduled, want 2", n)
	}
	if d := ev.of(syncstore.EventDeadLettered); len(d) != 1 || d[0].Attempt != 3 {
		t.Errorf("dead-letter events %+v, want one at attempt 3", d)
	}
}

func TestWorkerHandlerOutlivesItsLease(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 5))
	const t0 = int64(1_000_000)
	started := make(chan struct{})
	causes := make(chan error, 1)
	ev := &events{}
	cfg := wConfig(ev, "p1")
	cfg.Now = func() time.Time { return time.UnixMilli(t0) } // the worker's clock stands still
	cfg.Lease, cfg.HeartbeatInterval = time.Second, 2*time.Millisecond
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil // claims success after losing the lease: must change nothing
	}})
	stop := wRun(t, w)
	<-started
	// Another worker, whose clock is an hour ahead, finds the lease expired.
	rival, err := s.ClaimReactions(t.Context(), "p1", driver.ClaimRequest{Owner: "rival", Types: []string{"mail"}, NowMs: t0 + 3_600_000, LeaseMs: 60_000, Limit: 10})
	if err != nil || len(rival) != 1 {
		t.Fatalf("rival claim = %v, %v; want the reaction", rival, err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, syncstore.ErrLeaseLost) {
			t.Errorf("handler ctx cause %v, want ErrLeaseLost", cause)
		}
	case <-time.After(wDeadline):
		t.Fatal("the handler was never cancelled after losing its lease")
	}
	waitFor(t, "a lease_lost event", func() bool { return len(ev.of(syncstore.EventLeaseLost)) > 0 })
	stop()
	got := wGet(t, s, "p1", "r")
	if got.Status != driver.ReactionLeased || got.LeaseOwner != "rival" || got.Attempts != 2 {
		t.Errorf("after the stale handler returned: %+v, want still leased to rival at attempt 2", got)
	}
	if n := len(ev.of(syncstore.EventCompleted)); n != 0 {
		t.Errorf("%d completed events, want none", n)
	}
}

func TestWorkerRecoversHandlerPanic(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 3))
	ev := &events{}
	w := newWorker(t, s, wConfig(ev, "p1"), map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		if r.Attempts == 1 {
			panic("handler bug")
		}
		return nil
	}})
	stop := wRun(t, w)
	got := waitStatus(t, s, "p1", "r", driver.ReactionCompleted)
	stop()
	if got.Attempts != 2 || got.LastFailure == nil || got.LastFailure.Code != syncstore.CodeHandlerPanic {
		t.Errorf("%+v (failure %+v), want completed at attempt 2 after a %s failure", got, got.LastFailure, syncstore.CodeHandlerPanic)
	}
	r := ev.of(syncstore.EventRetryScheduled)
	if len(r) != 1 || !r[0].Panicked || r[0].Code != syncstore.CodeHandlerPanic {
		t.Errorf("retry events %+v, want one marked Panicked", r)
	}
}

func TestWorkerShutdownWaitsForRunningHandlers(t *testing.T) {
	s := wStore(t)
	a, b := wIn("a", "mail", 3), wIn("b", "mail", 3)
	b.CreatedAtMs = 2
	wEnqueue(t, s, "p1", a, b)
	started, finish := make(chan struct{}), make(chan struct{})
	ev := &events{}
	cfg := wConfig(ev, "p1")
	cfg.Concurrency = 1
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		close(started)
		<-finish
		return ctx.Err() // nil: the grace has not run out
	}})
	cancel, wait := wStart(t, w)
	<-started
	cancel() // shutdown begins while the handler runs
	close(finish)
	wait()
	if got := wGet(t, s, "p1", "a"); got.Status != driver.ReactionCompleted {
		t.Errorf("a: %+v, want completed within the grace", got)
	}
	if got := wGet(t, s, "p1", "b"); got.Status != driver.ReactionPending || got.Attempts != 0 {
		t.Errorf("b: %+v, want never claimed after shutdown began", got)
	}
}

func TestWorkerShutdownReleasesUnfinishedWork(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 3))
	started := make(chan struct{})
	causes := make(chan error, 1)
	ev := &events{}
	cfg := wConfig(ev, "p1")
	cfg.ShutdownGrace = 10 * time.Millisecond
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}})
	stop := wRun(t, w)
	<-started
	stop()
	if cause := <-causes; !errors.Is(cause, syncstore.ErrWorkerShutdown) {
		t.Errorf("handler ctx cause %v, want ErrWorkerShutdown", cause)
	}
	got := wGet(t, s, "p1", "r")
	if got.Status != driver.ReactionPending || got.Attempts != 1 || got.LastFailure == nil || got.LastFailure.Code != syncstore.CodeShutdown {
		t.Errorf("%+v (failure %+v), want pending again after 1 attempt with %s", got, got.LastFailure, syncstore.CodeShutdown)
	}
	if n := len(ev.of(syncstore.EventReleased)); n != 1 {
		t.Errorf("%d released events, want 1", n)
	}
}

func TestWorkerReplacesInvalidFailureCodesAndDetails(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("reserved", "mail", 3), wIn("bigdetails", "mail", 3))
	ev := &events{}
	w := newWorker(t, s, wConfig(ev, "p1"), map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		if r.Key == "reserved" {
			return syncstore.Permanent(syncstore.FailWith("reaction.attempts_exhausted", "{not json", nil))
		}
		return syncstore.Permanent(syncstore.FailWith("app.too_big", driver.JSON(`"`+strings.Repeat("x", 9000)+`"`), nil))
	}})
	stop := wRun(t, w)
	res := waitStatus(t, s, "p1", "reserved", driver.ReactionDeadLetter)
	big := waitStatus(t, s, "p1", "bigdetails", driver.ReactionDeadLetter)
	stop()
	if res.LastFailure == nil || res.LastFailure.Code != syncstore.CodeInvalidFailureCode || res.LastFailure.Details != "" {
		t.Errorf("reserved code: failure %+v, want %s without details", res.LastFailure, syncstore.CodeInvalidFailureCode)
	}
	if big.LastFailure == nil || big.LastFailure.Code != "app.too_big" || big.LastFailure.Details != "" {
		t.Errorf("oversize details: failure %+v, want app.too_big without details", big.LastFailure)
	}
}

// hiddenCaps hides every optional capability of the Conn it wraps.
type hiddenCaps struct{ driver.Conn }

func TestWorkerConfigErrors(t *testing.T) {
	s := wStore(t)
	ok := syncstore.WorkerConfig{Partitions: syncstore.StaticPartitions("p1")}
	for _, tc := range []struct {
		name string
		s    *syncstore.Store
		cfg  func(c *syncstore.WorkerConfig)
		code driver.Code
	}{
		{"no partitions func, driver without reactions-across", syncstore.OpenConn(noAcross{s.Conn(), s.Conn().(driver.ReactionsConn)}),
			func(c *syncstore.WorkerConfig) { c.Partitions = nil }, driver.CodeInvalidArgument},
		{"no partitions func, driver with reactions-across", s, func(c *syncstore.WorkerConfig) { c.Partitions = nil }, ""},
		{"owner with NUL", s, func(c *syncstore.WorkerConfig) { c.Owner = "a\x00" }, driver.CodeInvalidArgument},
		{"batch over 10,000", s, func(c *syncstore.WorkerConfig) { c.BatchSize = 10001 }, driver.CodeInvalidLimit},
		{"sub-millisecond lease", s, func(c *syncstore.WorkerConfig) { c.Lease = time.Microsecond }, driver.CodeInvalidArgument},
		{"driver without reactions", syncstore.OpenConn(hiddenCaps{s.Conn()}), func(*syncstore.WorkerConfig) {}, driver.CodeUnsupported},
	} {
		cfg := ok
		tc.cfg(&cfg)
		if _, err := syncstore.NewWorker(tc.s, cfg); driver.CodeOf(err) != tc.code {
			t.Errorf("%s: NewWorker error %v, want code %s", tc.name, err, tc.code)
		}
	}
	w, err := syncstore.NewWorker(s, ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(t.Context()); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Errorf("Run without handlers: %v, want invalid_argument", err)
	}
	h := func(context.Context, string, driver.Reaction) error { return nil }
	if err := w.Handle("mail", h); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("mail", h); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Errorf("second handler for a type: %v, want invalid_argument", err)
	}
	if err := w.Handle("", h); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Errorf("handler for an empty type: %v, want invalid_argument", err)
	}
}

// wRunErr starts w and returns a channel with Run's result.
func wRunErr(t *testing.T, w *syncstore.Worker) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	return errc
}

// wClosedRunResult waits for Run to return after its store was closed and
// checks what it returned: an error wrapping ErrClosed (ERR-4).
func wClosedRunResult(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, syncstore.ErrClosed) || driver.CodeOf(err) != driver.CodeClosed {
			t.Errorf("Run returned %v; want an error wrapping ErrClosed", err)
		}
	case <-time.After(wDeadline):
		t.Fatalf("Run did not return after its store was closed")
	}
}

// A Worker whose store is closed under a running handler stops: the
// heartbeat finds the store closed, the handler is cancelled with that
// cause, Run returns ErrClosed, and the closed store is reported once,
// not every poll (ERR-4).
func TestWorkerStopsWhenStoreClosedUnderAHandler(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 3))
	started, causes := make(chan struct{}), make(chan error, 1)
	ev := &events{}
	cfg := wConfig(ev, "p1")
	cfg.HeartbeatInterval = 2 * time.Millisecond
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}})
	errc := wRunErr(t, w)
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wClosedRunResult(t, errc)
	select {
	case cause := <-causes:
		if !errors.Is(cause, syncstore.ErrClosed) {
			t.Errorf("handler ctx cause %v, want the closed error", cause)
		}
	case <-time.After(wDeadline):
		t.Fatal("the handler was not cancelled after the store was closed")
	}
	if n := len(ev.of(syncstore.EventStoreError)); n != 1 {
		t.Errorf("%d store_error events, want 1 (the closed store, reported once)", n)
	}
	if n := len(ev.of(syncstore.EventReleased)) + len(ev.of(syncstore.EventCompleted)); n != 0 {
		t.Errorf("%d outcomes recorded on a closed store", n)
	}
}

// A handler that finishes after its store was closed: recording the
// outcome fails with ErrClosed, and that stops the Worker (no heartbeat or
// claim runs in between: both wait a minute).
func TestWorkerStopsWhenCompletingOnAClosedStore(t *testing.T) {
	s := wStore(t)
	wEnqueue(t, s, "p1", wIn("r", "mail", 3))
	started, finish := make(chan struct{}), make(chan struct{})
	ev := &events{}
	cfg := wConfig(ev, "p1")
	cfg.PollInterval, cfg.HeartbeatInterval = time.Minute, time.Minute
	w := newWorker(t, s, cfg, map[string]syncstore.Handler{"mail": func(ctx context.Context, p string, r driver.Reaction) error {
		close(started)
		<-finish
		return nil
	}})
	errc := wRunErr(t, w)
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	close(finish)
	wClosedRunResult(t, errc)
	if n := len(ev.of(syncstore.EventStoreError)); n != 1 {
		t.Errorf("%d store_error events, want 1", n)
	}
	if n := len(ev.of(syncstore.EventCompleted)); n != 0 {
		t.Errorf("%d completed events on a closed store", n)
	}
}

// Run on a store that is already closed returns ErrClosed after its first
// claim instead of logging "claim failed" every poll interval.
func TestWorkerRunOnAClosedStore(t *testing.T) {
	s := wStore(t)
	ev := &events{}
	w := newWorker(t, s, wConfig(ev, "p1", "p2"), map[string]syncstore.Handler{
		"mail": func(context.Context, string, driver.Reaction) error { return nil }})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wClosedRunResult(t, wRunErr(t, w))
	if n := len(ev.of(syncstore.EventStoreError)); n != 1 {
		t.Errorf("%d store_error events, want 1", n)
	}
}

// noAcross is a driver with the reactions capability but not
// reactions-across (RX-12).
type noAcross struct {
	driver.Conn
	driver.ReactionsConn
}
