package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/syncstore/syncstore/driver"
)

// workerRun is one Run of a Worker: the claim loop and its jobs.
type workerRun struct {
	w        *Worker
	handlers map[string]Handler
	types    []string
	// base is the parent of every handler context: it outlives Run's ctx
	// (handlers finish during the grace) and is cancelled after it.
	base      context.Context
	cancelAll context.CancelCauseFunc

	mu     gosync.Mutex
	active map[*workerJob]struct{}
	freed  chan struct{} // signalled when a job ends
	jobs   gosync.WaitGroup
	offset int // rotates the partition order between rounds

	// stopLoop ends the claim loop early, when the store is closed; closed
	// holds the first CodeClosed error a store call returned.
	stopLoop context.CancelCauseFunc
	closed   atomic.Pointer[error]
}

// Job states: a job ends exactly once, either by its own goroutine
// (finishing) or by the shutdown (released).
const (
	jobRunning int32 = iota
	jobFinishing
	jobReleased
)

type workerJob struct {
	partition string
	r         Reaction
	handler   Handler
	ctx       context.Context
	cancel    context.CancelCauseFunc
	state     atomic.Int32
	lost      atomic.Bool
	done      chan struct{}
}

func (r *workerRun) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

// loop claims until ctx ends.
func (r *workerRun) loop(ctx context.Context) {
	cfg := &r.w.cfg
	poll := time.NewTimer(cfg.PollInterval)
	defer poll.Stop()
	for ctx.Err() == nil {
		more := r.round(ctx)
		full := r.inFlight() >= cfg.Concurrency
		if more && !full {
			continue
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(cfg.PollInterval)
		if full {
			select {
			case <-ctx.Done():
			case <-r.freed:
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-r.w.wake:
		case <-poll.C:
		}
	}
}

// round claims once while slots are free: with the reactions-across
// capability one ClaimDueReactions (per driver.MaxDuePartitions
// partitions listed), else one ClaimReactions per partition. It reports
// whether a claim came back full (more may be due).
func (r *workerRun) round(ctx context.Context) (more bool) {
	w := r.w
	if w.cfg.Partitions == nil {
		return r.claimAcross(ctx, nil)
	}
	parts, err := w.cfg.Partitions(ctx)
	if err != nil {
		if r.storeClosed(err) {
			return false
		}
		if ctx.Err() == nil {
			w.emit(ctx, slog.LevelError, "reaction worker: listing partitions failed", WorkerEvent{Kind: EventStoreError, Err: err})
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	if w.across {
		for start := 0; start < len(parts); start += driver.MaxDuePartitions {
			if r.claimAcross(ctx, parts[start:min(start+driver.MaxDuePartitions, len(parts))]) {
				more = true
			}
		}
		return more
	}
	r.offset = (r.offset + 1) % len(parts)
	for i := range parts {
		free := w.cfg.Concurrency - r.inFlight()
		if free <= 0 || ctx.Err() != nil {
			return more
		}
		p := parts[(r.offset+i)%len(parts)]
		n := min(free, w.cfg.BatchSize)
		// Not cancelled by ctx: rows a claim leased are always handed to
		// jobs (the shutdown grace covers them), never left to expire.
		cctx, cancel := r.opCtx()
		rs, err := w.store.ClaimReactions(cctx, p, ClaimRequest{Owner: w.cfg.Owner, Types: r.types,
			NowMs: w.nowMs(), LeaseMs: w.cfg.Lease.Milliseconds(), Limit: n})
		cancel()
		if err != nil {
			if r.storeClosed(err) {
				return false
			}
			if ctx.Err() == nil {
				w.emit(ctx, slog.LevelError, "reaction worker: claim failed", WorkerEvent{Kind: EventStoreError, Partition: p, Err: err})
			}
			continue
		}
		if len(rs) == n {
			more = true
		}
		for _, re := range rs {
			r.startJob(p, re)
		}
	}
	return more
}

// claimAcross makes one ClaimDueReactions of parts (nil: every
// partition) while slots are free; it reports whether the claim came back
// full.
func (r *workerRun) claimAcross(ctx context.Context, parts []string) bool {
	w := r.w
	free := w.cfg.Concurrency - r.inFlight()
	if free <= 0 || ctx.Err() != nil {
		return false
	}
	n := min(free, w.cfg.BatchSize)
	cctx, cancel := r.opCtx() // not cancelled by ctx: see round
	rs, err := w.store.ClaimDueReactions(cctx, DueClaimRequest{Partitions: parts, ClaimRequest: ClaimRequest{
		Owner: w.cfg.Owner, Types: r.types, NowMs: w.nowMs(), LeaseMs: w.cfg.Lease.Milliseconds(), Limit: n}})
	cancel()
	if err != nil {
		if !r.storeClosed(err) && ctx.Err() == nil {
			w.emit(ctx, slog.LevelError, "reaction worker: claim failed", WorkerEvent{Kind: EventStoreError, Err: err})
		}
		return false
	}
	for _, re := range rs {
		r.startJob(re.Partition, re.Reaction)
	}
	return len(rs) == n
}

func (r *workerRun) startJob(p string, re Reaction) {
	j := &workerJob{partition: p, r: re, handler: r.handlers[re.Type], done: make(chan struct{})}
	j.ctx, j.cancel = context.WithCancelCause(r.base)
	r.mu.Lock()
	r.active[j] = struct{}{}
	r.mu.Unlock()
	r.jobs.Add(1)
	r.w.emit(j.ctx, slog.LevelDebug, "reaction claimed", r.event(j, EventClaimed))
	go r.runJob(j)
}

func (r *workerRun) event(j *workerJob, kind WorkerEventKind) WorkerEvent {
	return WorkerEvent{Kind: kind, Partition: j.partition, Key: j.r.Key, Type: j.r.Type, Attempt: j.r.Attempts}
}

// opCtx bounds one store call made on a job's behalf; it is not cancelled
// by Run's ctx, so outcomes are recorded during the shutdown grace.
func (r *workerRun) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.base), max(r.w.cfg.Lease, 5*time.Second))
}

func (r *workerRun) runJob(j *workerJob) {
	defer func() {
		j.cancel(nil)
		r.mu.Lock()
		delete(r.active, j)
		r.mu.Unlock()
		close(j.done)
		r.jobs.Done()
		select {
		case r.freed <- struct{}{}:
		default:
		}
	}()
	stopBeat, beatDone := make(chan struct{}), make(chan struct{})
	go r.heartbeat(j, stopBeat, beatDone)
	start := time.Now()
	err, panicked := r.call(j)
	took := time.Since(start)
	close(stopBeat)
	<-beatDone
	if !j.state.CompareAndSwap(jobRunning, jobFinishing) || j.lost.Load() {
		return // released by the shutdown, or the lease was lost: the outcome is discarded
	}
	r.finish(j, err, panicked, took)
}

// call runs the handler, recovering a panic.
func (r *workerRun) call(j *workerJob) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			err = fmt.Errorf("handler panic: %v", v)
			r.w.log.LogAttrs(j.ctx, slog.LevelError, "reaction handler panicked", slog.String("key", j.r.Key),
				slog.String("type", j.r.Type), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		}
	}()
	return j.handler(j.ctx, j.partition, j.r), false
}

// heartbeat extends the job's lease every HeartbeatInterval until stop;
// when the store says the lease is no longer ours (RX-5) it cancels the
// handler with ErrLeaseLost.
func (r *workerRun) heartbeat(j *workerJob, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	w := r.w
	t := time.NewTicker(w.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if j.state.Load() != jobRunning {
			return // released by the shutdown
		}
		ctx, cancel := r.opCtx()
		ok, err := w.store.ExtendReactionLease(ctx, j.partition, j.r.Key, w.cfg.Owner, w.nowMs(), w.cfg.Lease.Milliseconds())
		cancel()
		if r.storeClosed(err) {
			return // Run cancels the handler
		}
		if err != nil {
			ev := r.event(j, EventStoreError)
			ev.Err = err
			w.emit(j.ctx, slog.LevelWarn, "reaction worker: lease extension failed", ev)
			continue
		}
		if !ok {
			j.lost.Store(true)
			j.cancel(ErrLeaseLost)
			w.emit(j.ctx, slog.LevelWarn, "reaction lease lost; handler cancelled", r.event(j, EventLeaseLost))
			return
		}
	}
}

// finish records the handler's outcome: complete on success, else retry
// with backoff or dead-letter (permanent, or attempts exhausted).
func (r *workerRun) finish(j *workerJob, herr error, panicked bool, took time.Duration) {
	w := r.w
	ctx, cancel := r.opCtx()
	defer cancel()
	now := w.cfg.Now()
	if herr == nil {
		ok, err := w.store.CompleteReaction(ctx, j.partition, j.r.Key, w.cfg.Owner, now.UnixMilli())
		r.report(j, EventCompleted, ok, err, WorkerEvent{Duration: took})
		return
	}
	code, details, permanent := r.classify(j, herr, panicked)
	req := FailRequest{NowMs: now.UnixMilli(), Code: code, Details: details}
	ev := WorkerEvent{Code: code, Duration: took, Panicked: panicked, Err: herr}
	kind := EventDeadLettered
	if !permanent && j.r.Attempts < j.r.MaxAttempts {
		at := now.Add(r.retryDelay(j.r.Attempts))
		req.Retry, req.RetryAtMs = true, at.UnixMilli()
		kind, ev.RetryAt = EventRetryScheduled, at
	}
	ok, err := w.store.failReaction(ctx, "Worker", j.partition, j.r.Key, w.cfg.Owner, req, true)
	r.report(j, kind, ok, err, ev)
}

// report emits the event of a finished job: kind when the store accepted
// it, EventLeaseLost when the reaction was no longer ours, EventStoreError
// on error.
func (r *workerRun) report(j *workerJob, kind WorkerEventKind, ok bool, err error, ev WorkerEvent) {
	if r.storeClosed(err) {
		return
	}
	base := r.event(j, kind)
	base.Code, base.RetryAt, base.Duration, base.Panicked, base.Err = ev.Code, ev.RetryAt, ev.Duration, ev.Panicked, ev.Err
	level, msg := slog.LevelInfo, "reaction "+string(kind)
	switch {
	case err != nil:
		base.Kind, base.Err, level, msg = EventStoreError, err, slog.LevelError, "reaction worker: recording the outcome failed"
	case !ok:
		base.Kind, level, msg = EventLeaseLost, slog.LevelWarn, "reaction no longer leased to this worker; outcome discarded"
	case kind == EventCompleted:
		level = slog.LevelDebug
	case kind == EventDeadLettered:
		level = slog.LevelWarn
	}
	r.w.emit(j.ctx, level, msg, base)
}

// classify turns a handler failure into what is stored: a V-8 code,
// bounded JSON details (RX-6) and whether it is permanent. Error text is
// never part of it.
func (r *workerRun) classify(j *workerJob, herr error, panicked bool) (code string, details JSON, permanent bool) {
	if panicked {
		return CodeHandlerPanic, "", false
	}
	var he *HandlerError
	if !errors.As(herr, &he) {
		return CodeHandlerError, "", false
	}
	code, details, permanent = he.Code, he.Details, he.Permanent
	if code == "" {
		code = CodeHandlerError
	} else if err := ValidateApplicationCode(code); err != nil {
		r.w.log.LogAttrs(j.ctx, slog.LevelWarn, "reaction handler returned an invalid failure code; recorded as "+CodeInvalidFailureCode,
			slog.String("key", j.r.Key), slog.String("reason", err.Error()))
		code = CodeInvalidFailureCode
	}
	if details != "" && checkFailure("Worker", CodeHandlerError, details, true) != nil {
		r.w.log.LogAttrs(j.ctx, slog.LevelWarn, "reaction handler returned failure details that are not JSON of ≤ 8 KiB; dropped",
			slog.String("key", j.r.Key))
		details = ""
	}
	return code, details, permanent
}

// retryDelay is the backoff before the attempt after failed attempt n
// (n ≥ 1), from backoff's exponential schedule.
func (r *workerRun) retryDelay(n int) time.Duration {
	cfg := &r.w.cfg
	b := &backoff.ExponentialBackOff{InitialInterval: cfg.RetryInitial, RandomizationFactor: cfg.RetryJitter,
		Multiplier: cfg.RetryMultiplier, MaxInterval: cfg.RetryMax}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < n && i < 64; i++ {
		d = b.NextBackOff()
	}
	return d
}

// shutdown waits up to ShutdownGrace for the running jobs, then releases
// the ones still running.
func (r *workerRun) shutdown() {
	all := make(chan struct{})
	go func() {
		r.jobs.Wait()
		close(all)
	}()
	grace := time.NewTimer(r.w.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-all:
		return
	case <-grace.C:
	}
	r.mu.Lock()
	left := make([]*workerJob, 0, len(r.active))
	for j := range r.active {
		left = append(left, j)
	}
	r.mu.Unlock()
	for _, j := range left {
		if !j.state.CompareAndSwap(jobRunning, jobReleased) {
			<-j.done // recording its own outcome right now: let it finish
			continue
		}
		j.cancel(ErrWorkerShutdown)
		r.release(j)
	}
}

// release makes a job's reaction pending again at once (CodeShutdown).
func (r *workerRun) release(j *workerJob) {
	w := r.w
	ctx, cancel := r.opCtx()
	defer cancel()
	now := w.nowMs()
	req := FailRequest{NowMs: now, Retry: true, RetryAtMs: now, Code: CodeShutdown}
	ok, err := w.store.failReaction(ctx, "Worker", j.partition, j.r.Key, w.cfg.Owner, req, true)
	r.report(j, EventReleased, ok, err, WorkerEvent{Code: CodeShutdown})
}

// storeClosed reports whether err says the store was closed (ERR-4). The
// first such error is kept, logged once and ends the claim loop; Run then
// returns it (see Run).
func (r *workerRun) storeClosed(err error) bool {
	if err == nil || !errors.Is(err, ErrClosed) {
		return false
	}
	if r.closed.CompareAndSwap(nil, &err) {
		r.w.emit(context.Background(), slog.LevelError, "reaction worker: the store was closed; stopping",
			WorkerEvent{Kind: EventStoreError, Err: err})
		r.stopLoop(err)
	}
	return true
}

// closedErr returns the error that said the store was closed, or nil.
func (r *workerRun) closedErr() error {
	if p := r.closed.Load(); p != nil {
		return *p
	}
	return nil
}

// abandon ends every running job once the store is closed: its handler is
// cancelled with cause err and its outcome discarded (nothing can be
// recorded; the lease expires, RX-4). It returns how many it ended.
func (r *workerRun) abandon(err error) int {
	r.mu.Lock()
	left := make([]*workerJob, 0, len(r.active))
	for j := range r.active {
		left = append(left, j)
	}
	r.mu.Unlock()
	n := 0
	for _, j := range left {
		if j.state.CompareAndSwap(jobRunning, jobReleased) {
			j.cancel(err)
			n++
		}
	}
	return n
}
