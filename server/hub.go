package server

import (
	"context"
	"errors"
	"time"

	gosync "sync"

	"github.com/coder/websocket"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// hub holds a Server's realtime sessions by partition, their presence
// (SPEC §8.6: in memory only, never stored) and the commit fanout: one
// Store.SubscribeCommits subscription per Server, whose wakes make each
// partition with sessions read the commits that landed (from any
// instance) and hand them to its sessions.
type hub struct {
	s         *Server
	mu        gosync.Mutex
	parts     map[string]*partHub
	conns     int
	perClient map[clientKey]int
	closed    bool
	subOnce   gosync.Once
	// subReady is closed once the fanout subscription first answered (or
	// failed for good): a session registers after it, so no commit after
	// its hello is missed.
	subReady chan struct{}
}

type clientKey struct{ partition, clientID string }

// partHub is one partition's sessions, presence and fanout state. Its
// fields are guarded by hub.mu, except those of the fanout goroutine.
type partHub struct {
	name     string
	sessions map[*session]struct{}
	// presence: scope key → session → its document (a JSON object).
	presence map[string]map[*session]sync.JSON
	// target is the highest commit seq known to have landed; poke wakes
	// the fanout goroutine, running says one is running.
	target  int64
	poke    chan struct{}
	running bool
	// started: start set cursor (until then wakes only raise target).
	started bool
	// cursor is the highest seq handed to the sessions: set by start
	// before the fanout goroutine runs, then the goroutine's own.
	cursor int64
}

func newHub(s *Server) *hub {
	return &hub{s: s, parts: map[string]*partHub{}, perClient: map[clientKey]int{}, subReady: make(chan struct{})}
}

// admit reserves a connection slot for (partition, client id).
func (h *hub) admit(partition, clientID string) *ssp2.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return perr(ssp2.CodeRateLimited, "the server is shutting down")
	}
	k := clientKey{partition, clientID}
	if h.conns >= h.s.lim.MaxConnections || h.perClient[k] >= h.s.lim.MaxConnectionsPerClient {
		return perr(ssp2.CodeWebSocketLimit, "too many realtime connections")
	}
	h.conns++
	h.perClient[k]++
	h.s.wg.Add(1) // the handler, until release; counted here, under mu, so never after Close's Wait began
	return nil
}

func (h *hub) release(partition, clientID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := clientKey{partition, clientID}
	h.conns--
	if h.perClient[k]--; h.perClient[k] <= 0 {
		delete(h.perClient, k)
	}
	h.s.wg.Done()
}

// subscribed starts the fanout subscription on the first call and waits
// until it is listening, so that every commit landing after it returns
// wakes the hub.
func (h *hub) subscribed(ctx context.Context) error {
	h.subOnce.Do(func() {
		h.s.wg.Add(1)
		go h.subscribe()
	})
	select {
	case <-h.subReady:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// add registers a session with its partition, before the session reads
// the partition's head (start then sets where a new partition's fanout
// begins), so a commit's wake in between is never lost.
func (h *hub) add(ss *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	ph, ok := h.parts[ss.id.Partition]
	if !ok {
		ph = &partHub{name: ss.id.Partition, sessions: map[*session]struct{}{}, presence: map[string]map[*session]sync.JSON{},
			poke: make(chan struct{}, 1)}
		h.parts[ss.id.Partition] = ph
	}
	ph.sessions[ss] = struct{}{}
	ss.part = ph
	return true
}

// start sets a new partition's fanout to begin after head (the head its
// first session read after registering) and runs it if commits landed
// meanwhile.
func (h *hub) start(ss *session, head int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := ss.part
	if ph == nil || ph.started {
		return
	}
	ph.started = true
	ph.cursor = head
	ph.target = max(ph.target, head)
	if ph.target > ph.cursor {
		h.runLocked(ph)
	}
}

// remove unregisters a session: its presence leaves every key (SPEC
// §8.6.1: a dropped socket is a leave), and an empty partition is
// forgotten.
func (h *hub) remove(ss *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := ss.part
	if ph == nil {
		return
	}
	if _, ok := ph.sessions[ss]; !ok {
		return
	}
	delete(ph.sessions, ss)
	for key, docs := range ph.presence {
		if _, ok := docs[ss]; ok {
			h.leaveLocked(ph, ss, key)
		}
	}
	if len(ph.sessions) == 0 {
		delete(h.parts, ph.name)
		if !ph.running {
			return
		}
		// The running fanout goroutine sees the partition gone and ends.
		select {
		case ph.poke <- struct{}{}:
		default:
		}
	}
}

// closeAll closes every session (Server.Close).
func (h *hub) closeAll() {
	h.mu.Lock()
	h.closed = true
	var all []*session
	for _, ph := range h.parts {
		for ss := range ph.sessions {
			all = append(all, ss)
		}
	}
	h.mu.Unlock()
	for _, ss := range all {
		ss.close(websocket.StatusGoingAway, "server shutting down")
	}
}

// fencePartition closes the sessions of partition (a rotated log epoch:
// their clients reconnect and reset, SPEC §2.1).
func (h *hub) fencePartition(partition string) {
	h.mu.Lock()
	var all []*session
	if ph, ok := h.parts[partition]; ok {
		for ss := range ph.sessions {
			all = append(all, ss)
		}
	}
	h.mu.Unlock()
	for _, ss := range all {
		ss.close(websocket.StatusGoingAway, "log epoch rotated")
	}
}

// subscribe runs the Server's commit-fanout subscription until the Server
// closes, resubscribing after a failure; every wake pokes its partition.
func (h *hub) subscribe() {
	defer h.s.wg.Done()
	ctx := h.s.ctx
	backoff := 100 * time.Millisecond
	var ready gosync.Once
	defer ready.Do(func() { close(h.subReady) })
	for ctx.Err() == nil {
		ch, err := h.s.store.SubscribeCommits(ctx)
		if err == nil {
			ready.Do(func() { close(h.subReady) })
		}
		if err != nil {
			if sync.CodeOf(err) == sync.CodeUnsupported || errors.Is(err, sync.ErrClosed) {
				h.s.log.LogAttrs(ctx, levelError, "ssp2 server: no commit fanout; realtime sends no deltas", errAttr(err))
				return
			}
			h.s.log.LogAttrs(ctx, levelWarn, "ssp2 server: commit fanout subscription failed; retrying", errAttr(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		for w := range ch {
			h.poke(w.Partition, w.CommitSeq)
		}
	}
}

// poke records that partition's log reached seq and wakes its fanout.
func (h *hub) poke(partition string, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph, ok := h.parts[partition]
	if !ok {
		return
	}
	ph.target = max(ph.target, seq)
	if ph.started { // else start runs it
		h.runLocked(ph)
	}
}

// runLocked pokes ph's fanout, starting its goroutine if needed (h.mu
// held).
func (h *hub) runLocked(ph *partHub) {
	if !ph.running {
		ph.running = true
		h.s.wg.Add(1)
		go h.fanout(ph)
	}
	select {
	case ph.poke <- struct{}{}:
	default:
	}
}

// fanoutBatch bounds the changes one fanout read returns.
const fanoutBatch = 1000

// fanout reads what landed in a partition and hands each commit, in seq
// order, to the partition's sessions; it ends when the partition has no
// session left.
func (h *hub) fanout(ph *partHub) {
	defer h.s.wg.Done()
	ctx := h.s.ctx
	for {
		select {
		case <-ctx.Done():
			return
		case <-ph.poke:
		}
		for {
			h.mu.Lock()
			target := ph.target
			gone := h.parts[ph.name] != ph
			var sessions []*session
			registered := false
			for ss := range ph.sessions {
				sessions = append(sessions, ss)
				// A session in a round may register at its end: its
				// commits are read so that the end can tell (§8.7).
				registered = registered || ss.registered() || ss.inRound()
			}
			if gone {
				ph.running = false
				h.mu.Unlock()
				return
			}
			h.mu.Unlock()
			if ph.cursor >= target {
				break
			}
			if !registered { // nobody registered: nothing to read
				for _, ss := range sessions {
					ss.observeBlind(target)
				}
				ph.cursor = target
				break
			}
			commits, err := h.s.eng.readCommits(ctx, ph.name, ph.cursor, target, fanoutBatch)
			switch {
			case sync.CodeOf(err) == sync.CodeCursorExpired:
				// Pruned past what this instance fanned out: every session
				// catches up by pulling.
				for _, ss := range sessions {
					ss.observeBlind(target)
					ss.owe(ssp2.WakeCatchupRequired)
				}
				ph.cursor = target
				continue
			case err != nil:
				if ctx.Err() != nil {
					return
				}
				h.s.log.LogAttrs(ctx, levelWarn, "ssp2 server: fanout read failed; sessions will catch up", errAttr(err))
				for _, ss := range sessions {
					ss.observeBlind(target)
					ss.owe(ssp2.WakeCatchupRequired)
				}
				ph.cursor = target
				continue
			}
			n := 0
			for _, c := range commits {
				n += len(c.Changes)
				for _, ss := range sessions {
					ss.deliver(c)
				}
				ph.cursor = c.Seq
			}
			if n < fanoutBatch {
				for _, ss := range sessions {
					ss.observe(target)
				}
				ph.cursor = target
			}
		}
	}
}
