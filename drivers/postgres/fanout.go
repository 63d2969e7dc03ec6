package postgres

import (
	"context"
	gosync "sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"

	"github.com/syncstore/syncstore/driver"
)

var _ driver.CommitFanoutConn = (*Conn)(nil)

// fanoutReconnectDelay is how long the listener waits before it
// reconnects after losing its connection.
var fanoutReconnectDelay = 250 * time.Millisecond

// fanoutAppName is the application_name of listener connections, so an
// operator can tell them apart in pg_stat_activity.
const fanoutAppName = "syncstore-fanout"

// fanoutBuffer is the capacity of each subscription's channel.
const fanoutBuffer = 64

// SubscribeCommits delivers a wake for every commit that lands in the
// store, from any Conn of any process (FAN-1), until ctx ends or the
// Conn closes; then it closes the channel. It returns once the
// subscription is listening, so every commit made after it returns is
// delivered.
//
// A Conn has at most one listener connection, shared by all its
// subscriptions: it is opened by the first subscription and closed when
// the last one ends or the Conn closes, so 10,000 subscriptions hold one
// connection, as one does. It is outside the pool, which it never uses
// (configured by Options.ListenerDSN when the Conn was opened with one,
// so LISTEN can bypass a transaction-mode pooler, else like the pool's
// connections; application_name syncstore-fanout), and runs LISTEN
// through github.com/jackc/pgxlisten. Commit queues its NOTIFY in the
// committing transaction, so a wake is sent iff the commit lands, with
// the frame of fanout_frame.go; a malformed frame is dropped, never
// guessed at.
//
// The listener never waits for a subscriber: each subscription keeps the
// wakes its receiver has not taken yet, coalesced to one per partition
// (the highest seq), and hands them over in the order their partitions
// first moved, so a slow subscriber delays only itself and holds at most
// one pending wake per partition.
//
// When the listener connection is lost (server restart,
// pg_terminate_backend, network), it reconnects every 250 ms, LISTENs
// again and then catches up: it compares every partition's max commit
// seq with the last one it saw and sends every subscription one wake per
// partition that moved meanwhile, so a missed notification leads to a
// catch-up wake, never silence. The catch-up reads _sync_partitions once
// per reconnect (O(partitions)). Wakes may repeat or coalesce; a
// subscriber treats one as "read from your cursor", never as a count.
//
// Errors: CodeUnavailable when the listener connection cannot be made
// within ctx (when this subscription opens it); CodeClosed after Close.
func (c *Conn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	s := &fanSub{out: make(chan driver.CommitWake, fanoutBuffer), signal: make(chan struct{}, 1), pending: map[string]int64{}}
	l, err := c.fanout.join(c, s)
	if err != nil {
		return nil, err
	}
	select {
	case <-l.ready:
	case <-l.done:
	case <-ctx.Done():
		c.fanout.leave(l, s)
		return nil, c.mapErr(ctx, ctx.Err(), "postgres: subscribe to commits")
	}
	select {
	case <-l.ready:
		err = l.err
	default:
		err = errClosed() // the listener stopped before it listened: Close
	}
	if err != nil {
		c.fanout.leave(l, s)
		return nil, c.mapErr(ctx, err, "postgres: subscribe to commits")
	}
	go s.forward(ctx, l, &c.fanout)
	return s.out, nil
}

// listenConfig is the connection config of the listener connection.
func (c *Conn) listenConfig() *pgx.ConnConfig {
	if c.listen != nil {
		return c.listen
	}
	return c.cfg.ConnConfig
}

// fanHub is a Conn's commit fanout: its one listener, while it has
// subscriptions.
type fanHub struct {
	mu     gosync.Mutex
	cur    *fanListener // nil when no subscription is open
	closed bool
}

// join adds s to the Conn's listener, opening one when there is none.
// The caller waits for the listener's ready.
func (h *fanHub) join(c *Conn, s *fanSub) (*fanListener, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed()
	}
	if h.cur == nil || h.cur.stopped {
		h.cur = startListener(c)
	}
	h.cur.subs[s] = struct{}{}
	return h.cur, nil
}

// leave removes s from l, stopping l when s was its last subscription.
func (h *fanHub) leave(l *fanListener, s *fanSub) {
	h.mu.Lock()
	delete(l.subs, s)
	stop := len(l.subs) == 0 && !l.stopped
	if stop {
		l.stopped = true
		if h.cur == l {
			h.cur = nil
		}
	}
	h.mu.Unlock()
	if stop {
		l.cancel()
	}
}

// close stops the listener, which closes every subscription's channel,
// and refuses new subscriptions (Conn.Close).
func (h *fanHub) close() {
	h.mu.Lock()
	h.closed = true
	l := h.cur
	h.cur = nil
	if l != nil {
		l.stopped = true
	}
	h.mu.Unlock()
	if l != nil {
		l.cancel()
		<-l.done
	}
}

// fanListener is one listener connection (reconnected as needed) and the
// subscriptions it serves. subs and stopped are guarded by the hub's mu;
// known is touched only by the listener's goroutine.
type fanListener struct {
	hub     *fanHub
	subs    map[*fanSub]struct{}
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the listener's goroutine ends
	ready   chan struct{} // closed once LISTEN is active, or the first connect failed (err)
	once    gosync.Once
	err     error            // set before ready closes
	started bool             // the first backlog ran (listener goroutine only)
	known   map[string]int64 // partition → highest seq seen
}

// startListener starts a listener goroutine for c; h.mu is held.
func startListener(c *Conn) *fanListener {
	lctx, cancel := context.WithCancel(context.Background())
	l := &fanListener{hub: &c.fanout, subs: map[*fanSub]struct{}{}, cancel: cancel, done: make(chan struct{}),
		ready: make(chan struct{}), known: map[string]int64{}}
	pl := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cc := c.listenConfig().Copy()
			cc.RuntimeParams["application_name"] = fanoutAppName
			conn, err := pgx.ConnectConfig(ctx, cc)
			if err != nil && !l.started {
				l.markReady(err) // the first connection failed: the waiting subscriptions fail
				cancel()
			}
			return conn, err
		},
		ReconnectDelay: fanoutReconnectDelay,
	}
	pl.Handle(notifyChannel, l)
	go func() {
		defer close(l.done)
		_ = pl.Listen(lctx)
	}()
	return l
}

// markReady closes ready once, with err.
func (l *fanListener) markReady(err error) {
	l.once.Do(func() {
		l.err = err
		if err != nil {
			l.hub.mu.Lock()
			l.stopped = true
			if l.hub.cur == l {
				l.hub.cur = nil
			}
			l.hub.mu.Unlock()
		}
		close(l.ready)
	})
}

// wake hands w to every subscription of l, never waiting for one.
func (l *fanListener) wake(w driver.CommitWake) {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	for s := range l.subs {
		s.add(w)
	}
}

// HandleNotification delivers the wake of one NOTIFY.
func (l *fanListener) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	w, err := DecodeFrame(n.Payload)
	if err != nil {
		return err // logged by nobody, dropped: never a guess (FAN-1)
	}
	if w.CommitSeq > l.known[w.Partition] {
		l.known[w.Partition] = w.CommitSeq
	}
	l.wake(w)
	return nil
}

// HandleBacklog runs after every (re)connect, once LISTEN is active. The
// first time it records every partition's max seq; later it sends a
// catch-up wake for each partition whose max seq moved while the listener
// was away.
func (l *fanListener) HandleBacklog(ctx context.Context, _ string, conn *pgx.Conn) error {
	first := !l.started
	if first {
		// Ready even if the read below fails: LISTEN is active, so no
		// later commit is missed (known then starts empty).
		defer func() {
			l.started = true
			l.markReady(nil)
		}()
	}
	rows, err := conn.Query(ctx, sqlAllPartitionSeqs)
	if err != nil {
		return err
	}
	type ps struct {
		p   string
		seq int64
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ps, error) {
		var x ps
		err := r.Scan(&x.p, &x.seq)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, x := range all {
		if x.seq > l.known[x.p] {
			if !first {
				l.wake(driver.CommitWake{Partition: x.p, CommitSeq: x.seq})
			}
			l.known[x.p] = x.seq
		}
	}
	return nil
}

// fanSub is one SubscribeCommits: the wakes its receiver has not taken,
// at most one per partition (the highest seq), in the order their
// partitions first came.
type fanSub struct {
	out     chan driver.CommitWake
	signal  chan struct{} // one token: pending has wakes
	mu      gosync.Mutex
	pending map[string]int64
	order   []string
}

// add coalesces w into the pending wakes; it never blocks.
func (s *fanSub) add(w driver.CommitWake) {
	s.mu.Lock()
	if seq, ok := s.pending[w.Partition]; !ok {
		s.pending[w.Partition] = w.CommitSeq
		s.order = append(s.order, w.Partition)
	} else if w.CommitSeq > seq {
		s.pending[w.Partition] = w.CommitSeq
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// next takes the oldest pending wake.
func (s *fanSub) next() (driver.CommitWake, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		return driver.CommitWake{}, false
	}
	p := s.order[0]
	s.order[0] = ""
	s.order = s.order[1:]
	if len(s.order) == 0 {
		s.order = nil // let the backing array go
	}
	w := driver.CommitWake{Partition: p, CommitSeq: s.pending[p]}
	delete(s.pending, p)
	return w, true
}

// forward hands s's pending wakes to its channel until ctx ends or the
// listener stops (Close), then leaves the listener and closes the
// channel. It alone sends on and closes s.out.
func (s *fanSub) forward(ctx context.Context, l *fanListener, h *fanHub) {
	defer close(s.out)
	defer h.leave(l, s)
	for {
		select {
		case <-s.signal:
		case <-ctx.Done():
			return
		case <-l.done:
			return
		}
		for {
			w, ok := s.next()
			if !ok {
				break
			}
			select {
			case s.out <- w:
			case <-ctx.Done():
				return
			case <-l.done:
				return
			}
		}
	}
}
