package sync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sort"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Handler processes one claimed reaction of partition. It returns nil when
// the work is done (the reaction is completed), or an error: FailWith for a
// code and details of its choosing, Permanent to dead-letter at once; any
// other error is retried with CodeHandlerError. ctx is cancelled when the lease
// is lost (cause ErrLeaseLost) or the Worker's shutdown grace runs out
// (cause ErrWorkerShutdown); the handler should then stop, as its outcome
// is discarded. Reactions are delivered at least once: a handler must be
// idempotent.
type Handler func(ctx context.Context, partition string, r Reaction) error

// WorkerConfig configures a Worker. Zero fields take the defaults given.
type WorkerConfig struct {
	// Partitions returns the partitions to claim from; called once per
	// polling round. StaticPartitions wraps a fixed list. Nil claims from
	// every partition of the store, which needs a driver with the
	// reactions-across capability (RX-12); without it Partitions is
	// required. With that capability a round costs one claim whatever
	// the number of partitions (one per driver.MaxDuePartitions listed);
	// without it, one ClaimReactions per partition listed.
	Partitions func(ctx context.Context) ([]string, error)
	// Owner identifies this worker's leases (V-2: 1…255 bytes). Default:
	// host name, process id and a random suffix.
	Owner string
	// Concurrency bounds the handlers running at once. Default 4.
	Concurrency int
	// BatchSize bounds one claim (1…10,000). Default Concurrency.
	BatchSize int
	// Lease is each claim's lease (≥ 1 ms). Default 30 s.
	Lease time.Duration
	// HeartbeatInterval is how often a running handler's lease is
	// extended by Lease. Default Lease/3.
	HeartbeatInterval time.Duration
	// PollInterval is the wait after a round that found nothing due.
	// Default 1 s. Wake shortens it.
	PollInterval time.Duration
	// RetryInitial, RetryMax and RetryMultiplier shape the backoff before
	// attempt n+1 after failed attempt n: RetryInitial × RetryMultiplier^(n-1),
	// capped at RetryMax, jittered by ±RetryJitter. Defaults 1 s, 5 min,
	// 2, 0.2; a negative RetryJitter means no jitter.
	RetryInitial    time.Duration
	RetryMax        time.Duration
	RetryMultiplier float64
	RetryJitter     float64
	// ShutdownGrace is how long Run waits, once its ctx ends, for running
	// handlers to finish before it cancels them and releases their
	// reactions (pending again at once, code CodeShutdown). Default 10 s.
	ShutdownGrace time.Duration
	// Logger receives the Worker's logs. Default slog.Default().
	Logger *slog.Logger
	// OnEvent, if set, is called for every WorkerEvent (metrics). It is
	// called from the Worker's goroutines, concurrently, and must be quick.
	OnEvent func(WorkerEvent)
	// Now is the clock whose epoch milliseconds the Worker passes to the
	// store. Default time.Now.
	Now func() time.Time
}

// StaticPartitions returns a WorkerConfig.Partitions that always returns ps.
func StaticPartitions(ps ...string) func(context.Context) ([]string, error) {
	ps = append([]string(nil), ps...)
	return func(context.Context) ([]string, error) { return ps, nil }
}

// WorkerEventKind names what happened to a reaction in a Worker.
type WorkerEventKind string

// The Worker's events.
const (
	EventClaimed        WorkerEventKind = "claimed"
	EventCompleted      WorkerEventKind = "completed"
	EventRetryScheduled WorkerEventKind = "retry_scheduled"
	EventDeadLettered   WorkerEventKind = "dead_lettered"
	EventLeaseLost      WorkerEventKind = "lease_lost"
	EventReleased       WorkerEventKind = "released"
	EventStoreError     WorkerEventKind = "store_error"
)

// WorkerEvent describes one step of the Worker, for metrics and logs.
type WorkerEvent struct {
	Kind      WorkerEventKind
	Partition string
	// Key, Type and Attempt (1 = first) name the reaction; empty for a
	// store error outside one reaction.
	Key     string
	Type    string
	Attempt int
	// Code is the failure code recorded (retry, dead letter, release).
	Code string
	// RetryAt is when a scheduled retry becomes due.
	RetryAt time.Time
	// Duration is how long the handler ran (zero before it ran).
	Duration time.Duration
	// Panicked reports a recovered handler panic.
	Panicked bool
	// Err is the handler's or the store's error; never persisted.
	Err error
}

// Worker runs reaction handlers: it claims due reactions of the types it
// has handlers for in batches, runs each handler while a heartbeat extends
// the lease, completes the reaction on success, and on failure schedules a
// retry with capped exponential backoff or dead-letters it (permanent
// error, or attempts exhausted). See Run for shutdown. A Worker is safe for
// concurrent use; Run runs once at a time.
type Worker struct {
	store *Store
	cfg   WorkerConfig
	// across: the driver claims across partitions (RX-12), so a round is
	// one claim, not one per partition.
	across bool
	log    *slog.Logger
	wake   chan struct{}

	mu       gosync.Mutex
	handlers map[string]Handler
	running  bool
}

// NewWorker returns a Worker over s. Errors: CodeUnsupported when the
// driver lacks the reactions capability (ERR-2); CodeInvalidArgument for a
// config outside the bounds documented on WorkerConfig.
func NewWorker(s *Store, cfg WorkerConfig) (*Worker, error) {
	const op = "NewWorker"
	if s == nil {
		return nil, argErr(op, "RX-2", "the store is nil")
	}
	if _, err := s.reactions(op); err != nil {
		return nil, err
	}
	_, across := s.conn.(driver.ReactionsAcrossConn)
	if err := normalizeWorkerConfig(op, &cfg, across); err != nil {
		return nil, err
	}
	return &Worker{store: s, cfg: cfg, across: across, log: cfg.Logger, wake: make(chan struct{}, 1), handlers: map[string]Handler{}}, nil
}

func normalizeWorkerConfig(op string, c *WorkerConfig, across bool) error {
	if c.Partitions == nil && !across {
		return argErr(op, "RX-12", "WorkerConfig.Partitions is required: the driver cannot claim across partitions (capability reactions-across)")
	}
	if c.Owner == "" {
		c.Owner = defaultOwner()
	}
	if err := idLeaseOwner.check(op, c.Owner); err != nil {
		return err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.BatchSize == 0 {
		c.BatchSize = min(c.Concurrency, MaxLimit)
	}
	def(&c.Lease, 30*time.Second)
	def(&c.HeartbeatInterval, c.Lease/3)
	def(&c.PollInterval, time.Second)
	def(&c.RetryInitial, time.Second)
	def(&c.RetryMax, 5*time.Minute)
	def(&c.ShutdownGrace, 10*time.Second)
	if c.RetryMultiplier == 0 {
		c.RetryMultiplier = 2
	}
	switch {
	case c.RetryJitter == 0:
		c.RetryJitter = 0.2
	case c.RetryJitter < 0:
		c.RetryJitter = 0
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.Concurrency < 1:
		return argErr(op, "RX-2", "Concurrency must be ≥ 1")
	case c.BatchSize < 1 || c.BatchSize > MaxLimit:
		return driver.Errorf(CodeInvalidLimit, "%s: BatchSize %d is outside 1…%d (V-5)", op, c.BatchSize, MaxLimit)
	case c.Lease < time.Millisecond:
		return argErr(op, "RX-2", "Lease must be ≥ 1 ms")
	case c.HeartbeatInterval <= 0, c.PollInterval <= 0, c.RetryInitial <= 0, c.RetryMax < c.RetryInitial, c.ShutdownGrace < 0:
		return argErr(op, "RX-6", "HeartbeatInterval, PollInterval and RetryInitial must be positive, RetryMax ≥ RetryInitial, ShutdownGrace ≥ 0")
	case c.RetryMultiplier < 1 || c.RetryJitter > 1:
		return argErr(op, "RX-6", "RetryMultiplier must be ≥ 1 and RetryJitter ≤ 1")
	}
	return nil
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	owner := fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	if len(owner) > MaxIDBytes || badText(owner) != "" {
		owner = fmt.Sprintf("worker-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	}
	return owner
}

// Owner returns the lease owner this Worker claims as.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Handle registers h for reactions of type typ (V-2). Only registered
// types are claimed. Errors (CodeInvalidArgument): an invalid type, a nil
// handler, a type already registered, or a Worker already running.
func (w *Worker) Handle(typ string, h Handler) error {
	const op = "Worker.Handle"
	if err := idReactionType.check(op, typ); err != nil {
		return err
	}
	if h == nil {
		return argErr(op, "RX-2", "the handler is nil")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		return argErr(op, "RX-2", "handlers cannot change while the worker runs")
	}
	if _, dup := w.handlers[typ]; dup {
		return argErr(op, "RX-2", "a handler for this reaction type is already registered")
	}
	w.handlers[typ] = h
	return nil
}

// Wake makes a running Worker poll now instead of at the end of its
// PollInterval (e.g. right after a push enqueued reactions). Never blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run claims and handles reactions until ctx ends, then shuts down
// gracefully: it stops claiming, waits up to ShutdownGrace for running
// handlers to finish (their outcomes are recorded as usual), then cancels
// the rest (cause ErrWorkerShutdown) and releases their reactions — pending
// again at once, failure code CodeShutdown; the attempt is spent. Run then
// returns nil without waiting for handlers that ignore their context;
// their outcomes are discarded.
//
// When the store is closed under a running Worker (a claim, a heartbeat,
// recording an outcome or WorkerConfig.Partitions fails with CodeClosed,
// ERR-4), nothing more can be recorded, so Run stops at once: it claims no
// more, cancels every running handler (its context's cause is the closed
// error) and discards their outcomes — their reactions are claimed again
// when their leases expire (RX-4) — logs that once (one EventStoreError)
// and returns an error wrapping the closed error: errors.Is(err,
// ErrClosed) holds, and CodeOf(err) is CodeClosed. Run on a store
// that is already closed returns that error after its first claim.
//
// Errors (CodeInvalidArgument): no handler registered, or Run already
// running; CodeClosed as above.
func (w *Worker) Run(ctx context.Context) error {
	handlers, types, err := w.start()
	if err != nil {
		return err
	}
	defer w.stop()
	r := &workerRun{w: w, handlers: handlers, types: types, active: map[*workerJob]struct{}{},
		freed: make(chan struct{}, 1)}
	r.base, r.cancelAll = context.WithCancelCause(context.WithoutCancel(ctx))
	defer r.cancelAll(ErrWorkerShutdown)
	var loopCtx context.Context
	loopCtx, r.stopLoop = context.WithCancelCause(ctx)
	defer r.stopLoop(nil)
	r.loop(loopCtx)
	if err := r.closedErr(); err != nil {
		n := r.abandon(err)
		return fmt.Errorf("sync: Worker.Run: the store was closed; %d running reactions left to their leases: %w", n, err)
	}
	r.shutdown()
	return nil
}

func (w *Worker) start() (map[string]Handler, []string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		return nil, nil, argErr("Worker.Run", "RX-2", "the worker is already running")
	}
	if len(w.handlers) == 0 {
		return nil, nil, argErr("Worker.Run", "RX-2", "no handler is registered")
	}
	w.running = true
	hs := make(map[string]Handler, len(w.handlers))
	types := make([]string, 0, len(w.handlers))
	for t, h := range w.handlers {
		hs[t] = h
		types = append(types, t)
	}
	sort.Strings(types)
	return hs, types, nil
}

func (w *Worker) stop() {
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
}

func (w *Worker) nowMs() int64 { return w.cfg.Now().UnixMilli() }

// emit sends ev to OnEvent and the log.
func (w *Worker) emit(ctx context.Context, level slog.Level, msg string, ev WorkerEvent) {
	if w.cfg.OnEvent != nil {
		w.cfg.OnEvent(ev)
	}
	if !w.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("event", string(ev.Kind)), slog.String("owner", w.cfg.Owner)}
	if ev.Partition != "" {
		attrs = append(attrs, slog.String("partition", ev.Partition))
	}
	if ev.Key != "" {
		attrs = append(attrs, slog.String("key", ev.Key), slog.String("type", ev.Type), slog.Int("attempt", ev.Attempt))
	}
	if ev.Code != "" {
		attrs = append(attrs, slog.String("code", ev.Code))
	}
	if !ev.RetryAt.IsZero() {
		attrs = append(attrs, slog.Time("retry_at", ev.RetryAt))
	}
	if ev.Duration > 0 {
		attrs = append(attrs, slog.Duration("duration", ev.Duration))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	w.log.LogAttrs(ctx, level, msg, attrs...)
}
