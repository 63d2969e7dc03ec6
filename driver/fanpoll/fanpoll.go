// Package fanpoll builds the commit-fanout capability (FAN-1,
// driver.CommitFanoutConn) for a driver whose engine has no notification
// channel: a Hub polls the partitions' heads — every partition's max
// commit seq, in pages, with one query per page — at an interval and wakes
// its subscribers for each partition whose head moved. The bundled mysql,
// sqlite and d1http drivers use it; a third-party driver can too.
//
// Guarantees: a commit that lands after Subscribe returned is delivered
// (by the driver's Publish at once, or by the next poll that sees it); a
// poll that fails changes nothing, and the first one to succeed afterwards
// wakes every partition that moved meanwhile, so a lost poll leads to a
// catch-up wake, never silence. Wakes may repeat or coalesce (a subscriber
// reads from its cursor on any wake, never counts them). A wake names a
// committed seq only: the heads are read outside any transaction.
//
// Cost: one Hub polls for all its subscribers; a poll reads one small row
// per partition (ceil(partitions/PageSize) queries). Latency: Publish is
// immediate within the process; other processes see a commit within one
// Interval plus one poll.
package fanpoll

import (
	"context"
	"errors"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// HeadsFunc returns, ascending by partition, at most limit partitions
// greater than afterPartition that have at least one commit, each with its
// max commit seq (CommitSeq). It reads committed state only.
type HeadsFunc func(ctx context.Context, afterPartition string, limit int) ([]driver.CommitWake, error)

// DefaultInterval is a Hub's poll interval when Interval is 0.
const DefaultInterval = 100 * time.Millisecond

// PageSize is the limit a poll passes to HeadsFunc.
const PageSize = 1000

// subBuffer is the capacity of a subscriber's channel.
const subBuffer = 64

// Hub fans commit wakes out to subscribers. Set Heads (required) and
// optionally Interval before the first Subscribe; then it is safe for
// concurrent use. The zero value of Interval is DefaultInterval. A Hub
// polls only while it has subscribers.
type Hub struct {
	Heads    HeadsFunc
	Interval time.Duration

	mu      gosync.Mutex
	closed  bool
	subs    map[*subscriber]struct{}
	known   map[string]int64 // the heads last seen (polled or published)
	running bool
	stop    context.CancelFunc
	done    chan struct{} // closed when the poll loop ends
}

type subscriber struct {
	cancel  context.CancelFunc
	out     chan driver.CommitWake
	notify  chan struct{}    // cap 1: pending has wakes
	pending map[string]int64 // partition → latest seq not yet delivered; guarded by Hub.mu
}

// Subscribe returns a channel of wakes for commits that land after it
// returns, from any process writing the store, until ctx ends; then the
// channel is closed. The first subscriber starts the poll loop, which
// first reads every head as the baseline: when that read fails, Subscribe
// returns its error (e.g. driver.CodeUnavailable) and subscribes nothing.
func (h *Hub) Subscribe(ctx context.Context) (<-chan driver.CommitWake, error) {
	if h.Heads == nil {
		return nil, driver.Errorf(driver.CodeInternal, "fanpoll: Hub.Heads is not set")
	}
	if err := ctx.Err(); err != nil {
		return nil, driver.Wrap(driver.CodeUnavailable, err, "subscribe to commits: context ended")
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &subscriber{cancel: cancel, out: make(chan driver.CommitWake, subBuffer), notify: make(chan struct{}, 1), pending: map[string]int64{}}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel()
		return nil, errClosed()
	}
	if !h.running {
		// Start the loop with a baseline read; wait for an earlier loop
		// (the last subscriber just left) to end first.
		prev := h.done
		h.mu.Unlock()
		if prev != nil {
			<-prev
		}
		known, err := h.readAll(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			cancel()
			return nil, errClosed()
		}
		if !h.running {
			lctx, cancel := context.WithCancel(context.Background())
			h.known, h.running, h.stop, h.done = known, true, cancel, make(chan struct{})
			if h.subs == nil {
				h.subs = map[*subscriber]struct{}{}
			}
			go h.loop(lctx, h.done)
		}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go h.deliver(ctx, s)
	return s.out, nil
}

// Close ends every subscription (their channels close) and refuses new
// ones with driver.CodeClosed (ERR-4); the driver calls it from its Conn's
// Close. Idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		s.cancel()
	}
}

func errClosed() error {
	return driver.Errorf(driver.CodeClosed, "subscribe to commits: the store is closed")
}

// Publish wakes the subscribers for a commit this process made, at once
// (no poll needed); the driver calls it after a successful Commit.
func (h *Hub) Publish(w driver.CommitWake) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return
	}
	if w.CommitSeq > h.known[w.Partition] {
		h.known[w.Partition] = w.CommitSeq
	}
	h.fanLocked(w)
}

// fanLocked queues w for every subscriber. The caller holds h.mu.
func (h *Hub) fanLocked(w driver.CommitWake) {
	for s := range h.subs {
		if w.CommitSeq > s.pending[w.Partition] {
			s.pending[w.Partition] = w.CommitSeq
		}
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// deliver forwards s's pending wakes to its channel until ctx ends.
func (h *Hub) deliver(ctx context.Context, s *subscriber) {
	defer func() {
		s.cancel()
		h.mu.Lock()
		delete(h.subs, s)
		if len(h.subs) == 0 && h.running {
			h.running = false
			h.stop()
		}
		h.mu.Unlock()
		close(s.out)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
		}
		h.mu.Lock()
		batch := make([]driver.CommitWake, 0, len(s.pending))
		for p, seq := range s.pending {
			batch = append(batch, driver.CommitWake{Partition: p, CommitSeq: seq})
		}
		clear(s.pending)
		h.mu.Unlock()
		for _, w := range batch {
			select {
			case s.out <- w:
			case <-ctx.Done():
				return
			}
		}
	}
}

// loop polls every Interval until ctx ends, waking subscribers for every
// head that moved. A failed poll is retried at the next tick.
func (h *Hub) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	interval := h.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		heads, err := h.readAll(ctx)
		if err != nil {
			continue // the next successful poll catches up
		}
		h.mu.Lock()
		for p, seq := range heads {
			if seq > h.known[p] {
				h.known[p] = seq
				h.fanLocked(driver.CommitWake{Partition: p, CommitSeq: seq})
			}
		}
		h.mu.Unlock()
	}
}

// readAll reads every partition's head, page by page.
func (h *Hub) readAll(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	after := ""
	for {
		page, err := h.Heads(ctx, after, PageSize)
		if err != nil {
			if driver.CodeOf(err) == "" {
				err = driver.Wrap(driver.CodeUnavailable, err, "fanpoll: read the partitions' heads")
			}
			return nil, err
		}
		for _, w := range page {
			if w.Partition <= after {
				return nil, driver.Wrap(driver.CodeInternal, errors.New("heads out of order"), "fanpoll: read the partitions' heads")
			}
			out[w.Partition], after = w.CommitSeq, w.Partition
		}
		if len(page) < PageSize {
			return out, nil
		}
	}
}
