package postgres

import (
	"context"
	"sync/atomic"
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

// SubscribeCommits delivers a wake for every commit that lands in the
// store, from any Conn of any process (FAN-1), until ctx ends; then it
// closes the channel. It returns once the subscription is listening, so
// every commit made after it returns is delivered.
//
// Each subscription has a dedicated connection of its own (outside the
// pool, which it never uses; configured by Options.ListenerDSN when the
// Conn was opened with one, so LISTEN can bypass a transaction-mode
// pooler, else like the pool's connections) running LISTEN through
// github.com/jackc/pgxlisten. Commit queues its NOTIFY in the committing
// transaction, so a wake is sent iff the commit lands, with the frame of
// fanout_frame.go; a malformed frame is dropped, never guessed at.
//
// When the listener connection is lost (server restart,
// pg_terminate_backend, network), it reconnects every 250 ms, LISTENs
// again and then catches up: it compares every partition's max commit
// seq with the last one it delivered and sends one wake per partition
// that moved meanwhile, so a missed notification leads to a catch-up wake,
// never silence. The catch-up reads _sync_partitions once per reconnect
// (O(partitions)). Wakes may repeat; a subscriber treats one as "read
// from your cursor", never as a count. Delivery blocks while the
// subscriber does not receive (the server queues notifications meanwhile).
//
// Errors: CodeUnavailable when the first connection cannot be made
// within ctx.
func (c *Conn) SubscribeCommits(ctx context.Context) (<-chan driver.CommitWake, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	s := &subscription{out: make(chan driver.CommitWake, 64), ready: make(chan error, 1), known: map[string]int64{}}
	lctx, cancel := context.WithCancel(ctx)
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cc := c.listenConfig().Copy()
			cc.RuntimeParams["application_name"] = fanoutAppName
			conn, err := pgx.ConnectConfig(ctx, cc)
			if err != nil && !s.started.Load() {
				select {
				case s.ready <- err:
				default:
				}
			}
			return conn, err
		},
		ReconnectDelay: fanoutReconnectDelay,
	}
	l.Handle(notifyChannel, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Listen(lctx)
	}()
	select {
	case err := <-s.ready:
		if err != nil {
			cancel()
			<-done
			return nil, c.mapErr(ctx, err, "postgres: subscribe to commits")
		}
	case <-ctx.Done():
		cancel()
		<-done
		return nil, c.mapErr(ctx, ctx.Err(), "postgres: subscribe to commits")
	}
	go func() {
		<-done
		cancel()
		close(s.out)
	}()
	return s.out, nil
}

// listenConfig is the connection config of the listener connections.
func (c *Conn) listenConfig() *pgx.ConnConfig {
	if c.listen != nil {
		return c.listen
	}
	return c.cfg.ConnConfig
}

// subscription is one SubscribeCommits: a pgxlisten handler with its
// catch-up state. known is touched only by the listener's goroutine.
type subscription struct {
	out     chan driver.CommitWake
	ready   chan error
	started atomic.Bool
	known   map[string]int64 // partition → highest seq delivered or seen
}

// HandleNotification delivers the wake of one NOTIFY.
func (s *subscription) HandleNotification(ctx context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	w, err := DecodeFrame(n.Payload)
	if err != nil {
		return err // logged by nobody, dropped: never a guess (FAN-1)
	}
	if w.CommitSeq > s.known[w.Partition] {
		s.known[w.Partition] = w.CommitSeq
	}
	return s.send(ctx, w)
}

// HandleBacklog runs after every (re)connect, once LISTEN is active. The
// first time it records every partition's max seq; later it sends a
// catch-up wake for each partition whose max seq moved while the listener
// was away.
func (s *subscription) HandleBacklog(ctx context.Context, _ string, conn *pgx.Conn) error {
	first := !s.started.Load()
	if first {
		// Ready even if the read below fails: LISTEN is active, so no
		// later commit is missed (known then starts empty).
		defer func() {
			s.started.Store(true)
			s.ready <- nil
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
	var wakes []driver.CommitWake
	for _, x := range all {
		if x.seq > s.known[x.p] {
			if !first {
				wakes = append(wakes, driver.CommitWake{Partition: x.p, CommitSeq: x.seq})
			}
			s.known[x.p] = x.seq
		}
	}
	for _, w := range wakes {
		if err := s.send(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

func (s *subscription) send(ctx context.Context, w driver.CommitWake) error {
	select {
	case s.out <- w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
