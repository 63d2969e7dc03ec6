package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	gosync "sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// registration is one subscription a session receives deltas for (SPEC
// §8.1): the client's subscription id and table, and its effective scopes
// under the grant resolved when it registered.
type registration struct {
	id  string
	t   *table
	eff scopeMap
}

// session is one realtime connection (SPEC §8).
//
// Goroutines: the handler's goroutine reads; a writer goroutine owns the
// socket's writes (control events and deltas from a bounded queue, round
// chunks handed over one at a time, heartbeats); a pinger pings; a round
// runs in a goroutine of its own. Fields marked (mu) are guarded by mu;
// regs and keys are written holding hub.mu then mu, so either lock reads
// them.
type session struct {
	s         *Server
	id        Identity
	clientID  string
	sessionID string
	epoch     string
	conn      *websocket.Conn
	ctx       context.Context
	cancel    context.CancelFunc
	part      *partHub // set by hub.add

	mu        gosync.Mutex
	wv        uint16              // (mu) wire version of deltas
	regs      []registration      // (mu, hub.mu)
	keys      map[string]struct{} // (mu, hub.mu) presence scope keys
	cursor    int64               // (mu) highest contiguous seq the client has
	pulledTo  int64               // (mu) the seq through which the last pulling round left the client holding every registration
	lastKnown int64               // (mu) highest seq observed
	wakeDue   bool                // (mu) deltas suppressed until an ack reaches lastKnown (§8.2)
	owed      ssp2.WakeReason     // (mu) a wake-up the writer must send ("" none)
	queue     [][]byte            // (mu) control events and deltas, tagged by kind
	kinds     []msgKind           // (mu) parallel to queue
	queued    int64               // (mu) bytes in queue
	roundOpen bool                // (mu) a round's request is in, its END not yet handed over
	heard     []heardCommit       // (mu) commits heard while a round is open that matched no registration
	heardN    int                 // (mu) touches in heard (bounded by maxHeardTouches)
	blindTo   int64               // (mu) highest seq observed without its commit's changes (or past heard's bound)
	ackCursor int64               // (mu) the ack to persist
	acking    bool                // (mu) an ack persister is running
	notify    chan struct{}       // writer wake-up
	rounds    chan roundChunk     // round chunks to the writer
	closeOnce gosync.Once
	closing   chan struct{} // closed when a close handshake this side started ends
	closeBusy bool          // (closeOnce) a close handshake was started
}

// heardCommit is what a session keeps of a commit that landed while a
// round was open and matched none of its registrations: the commit's
// distinct (table, scopes) pairs, enough to tell at the round's end
// whether the registrations the round installs match it (§8.7).
type heardCommit struct {
	seq     int64
	touches []touch
}

type touch struct {
	table  string
	scopes sync.Scopes
}

// maxHeardTouches bounds what a session keeps of the commits heard during
// one round; past it the rest counts as observed blind (the round's end
// then owes a wake-up whenever they lie past the pull's head).
const maxHeardTouches = 1024

type msgKind uint8

const (
	msgText msgKind = iota
	msgDelta
)

// roundChunk is one message of a round's response; done receives the
// write's outcome.
type roundChunk struct {
	data []byte
	last bool
	done chan error
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// serveRealtime is GET /realtime?clientId=… (SPEC §8.1).
func (s *Server) serveRealtime(w http.ResponseWriter, r *http.Request) {
	id, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	clientID := r.URL.Query().Get("clientId")
	if clientID == "" || len(clientID) > sync.MaxIDBytes || !utf8.ValidString(clientID) || strings.IndexByte(clientID, 0) >= 0 {
		writeError(w, http.StatusBadRequest, perr(ssp2.CodeInvalidRequest, "the clientId query parameter must be a non-empty id of at most %d bytes", sync.MaxIDBytes))
		return
	}
	if strings.HasPrefix(clientID, sync.RemoteCommandPrefix) {
		writeError(w, 0, perr(ssp2.CodeInvalidClientID, "the clientId uses the reserved server-command namespace (§1.5)"))
		return
	}
	entry, err := s.touch(ctx, id.Partition)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	rec, found, err := s.store.GetClientRecord(ctx, id.Partition, clientID)
	if err != nil {
		s.failRequest(w, r, err)
		return
	}
	if found && rec.ActorID != id.ActorID {
		writeError(w, 0, engineErr(sync.ErrClientActorMismatch))
		return
	}
	if pe := s.hub.admit(id.Partition, clientID); pe != nil {
		writeError(w, 0, pe)
		return
	}
	defer s.hub.release(id.Partition, clientID) // admit counted this handler in s.wg
	var regs []registration
	if found && len(rec.Subscriptions) > 0 {
		g, err := s.resolve(ctx, id, clientID)
		if err != nil {
			s.failRequest(w, r, err)
			return
		}
		regs = s.registrations(rec.Subscriptions, g)
	}
	if err := s.hub.subscribed(ctx); err != nil {
		return // the client went away
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.WebSocketOriginPatterns})
	if err != nil {
		return // Accept answered the request
	}
	conn.SetReadLimit(s.lim.MaxRequestBytes + 16)
	sctx, cancel := context.WithCancel(s.ctx)
	ss := &session{s: s, id: id, clientID: clientID, sessionID: newSessionID(), epoch: entry.Epoch, conn: conn,
		ctx: sctx, cancel: cancel, wv: ssp2.MaxWireVersion, cursor: -1, wakeDue: true,
		notify: make(chan struct{}, 1), rounds: make(chan roundChunk), closing: make(chan struct{})}
	// Registered first, the head read after: a commit landing in between
	// reaches the session (as a delta or a wake-up), never nothing.
	if !s.hub.add(ss) {
		cancel()
		_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	ss.setRegistrations(regs)
	head, err := s.store.MaxCommitSeq(ctx, id.Partition)
	if err != nil {
		s.log.LogAttrs(ctx, levelWarn, "ssp2 server: realtime connect failed", errAttr(err))
		cancel()
		s.hub.remove(ss)
		_ = conn.Close(websocket.StatusTryAgainLater, "try again")
		return
	}
	ss.mu.Lock()
	ss.lastKnown = max(ss.lastKnown, head)
	if found {
		ss.cursor = rec.Cursor
		if rec.WireVersion >= int64(ssp2.MinWireVersion) && rec.WireVersion <= int64(ssp2.MaxWireVersion) {
			ss.wv = uint16(rec.WireVersion)
		}
	}
	// Deltas flow once the client is known to hold the head (a commit
	// fanned out before this point owed a wake-up instead).
	ss.wakeDue = ss.cursor < head || ss.lastKnown > head
	hello, _ := ssp2.Hello{ProtocolVersion: 1, SessionID: ss.sessionID, ActorID: id.ActorID, ClientID: clientID,
		Cursor: ss.cursor, LatestCursor: head, RequiresSync: !found || ss.cursor < head, Timestamp: s.nowMs()}.AppendJSON(nil)
	// hello goes first in the queue: the presence snapshot and any delta
	// queued meanwhile follow it.
	ss.queue = append([][]byte{hello}, ss.queue...)
	ss.kinds = append([]msgKind{msgText}, ss.kinds...)
	ss.queued += int64(len(hello))
	ss.poke()
	ss.mu.Unlock()
	s.hub.start(ss, head)
	var wg gosync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ss.writeLoop() }()
	go func() { defer wg.Done(); ss.pingLoop() }()
	ss.readLoop()
	s.hub.remove(ss)
	ss.closeOnce.Do(func() {}) // no close starts after this
	if ss.closeBusy {
		<-ss.closing // the handshake we started ends (bounded by the library)
	}
	ss.cancel()
	wg.Wait()
	_ = conn.CloseNow()
}

// registrations resolves a client record's subscriptions against a grant
// (§8.1): each known, still valid and active subscription registers with
// its effective scopes.
func (s *Server) registrations(subs []sync.Subscription, g grant) []registration {
	var regs []registration
	for _, sub := range subs {
		t, ok := s.tables[sub.Table]
		if !ok || checkRequested(t, sub.Scopes) != nil {
			continue
		}
		if eff, active := effective(sub.Scopes, g); active {
			regs = append(regs, registration{id: sub.ID, t: t, eff: eff})
		}
	}
	return regs
}

// setRegistrations replaces the session's registrations and follows with
// its presence (§8.6.3).
func (ss *session) setRegistrations(regs []registration) {
	h := ss.s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := map[string]struct{}{}
	for _, r := range regs {
		scopeKeys(keys, r.t, r.eff)
	}
	ss.mu.Lock()
	old := ss.keys
	ss.regs, ss.keys = regs, keys
	ss.mu.Unlock()
	h.reconcilePresenceLocked(ss, old)
}

// registered reports whether the session has a registration.
func (ss *session) registered() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.regs) > 0
}

// close closes the socket with code and reason (once): the close
// handshake runs in the background (the library bounds it), then the read
// loop ends and the handler releases everything.
func (ss *session) close(code websocket.StatusCode, reason string) {
	ss.closeOnce.Do(func() {
		ss.closeBusy = true
		go func() {
			_ = ss.conn.Close(code, reason)
			close(ss.closing)
			ss.cancel()
		}()
	})
}

// violation closes the socket after a protocol violation (§8.7: a broken
// client is disconnected, loudly).
func (ss *session) violation(reason string) {
	ss.s.log.LogAttrs(ss.ctx, levelInfo, "ssp2 server: realtime protocol violation; closing the socket", errAttr(errors.New(reason)))
	ss.close(websocket.StatusPolicyViolation, reason)
}

// readLoop reads the client's messages until the socket ends.
func (ss *session) readLoop() {
	var scan *ssp2.MessageScanner
	for {
		typ, data, err := ss.conn.Read(ss.ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			ss.handleText(data)
			continue
		}
		if len(data) == 0 {
			continue
		}
		if data[0] != ssp2.TagRound {
			ss.violation("a binary message with a channel tag other than 0x01")
			return
		}
		ss.mu.Lock()
		open := ss.roundOpen
		ss.mu.Unlock()
		if open {
			ss.violation("round bytes while a response is in flight (§8.7: one round at a time)")
			return
		}
		if scan == nil {
			scan = ssp2.NewMessageScanner(ssp2.KindRequest, int(ss.s.lim.MaxRequestBytes))
		}
		done, err := scan.Feed(data[1:])
		if err != nil {
			ss.violation("the round's request stream is not a framed SSP2 request")
			return
		}
		if !done {
			continue
		}
		if len(scan.Excess()) > 0 {
			ss.violation("bytes after the request's END (§8.7: no pipelining)")
			return
		}
		body := bytes.Clone(scan.Message())
		scan.Reset()
		ss.mu.Lock()
		ss.roundOpen = true
		ss.mu.Unlock()
		ss.s.wg.Add(1)
		go ss.runRound(body)
	}
}

// handleText handles a client control message: an ack (§8.2), a presence
// publish (§8.6). Text that is not a JSON object and unknown messages are
// ignored; a known message of the wrong shape closes the socket.
func (ss *session) handleText(data []byte) {
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return
	}
	m, err := ssp2.ParseClientMessage(data)
	if err != nil {
		ss.violation("a malformed control message")
		return
	}
	switch m.Kind {
	case ssp2.ClientAck:
		ss.ack(m.Ack.Cursor)
	case ssp2.ClientPresence:
		ss.publish(m.Presence)
	}
}

// ack takes a client's acknowledgement: deltas resume once it reaches the
// highest seq observed (§8.2), and the client record's cursor follows.
func (ss *session) ack(cursor int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if cursor < 0 {
		return
	}
	// A client cannot have applied what the session never saw land: an
	// ack past it is taken as far as it can be true.
	cursor = min(cursor, ss.lastKnown)
	ss.cursor = max(ss.cursor, cursor)
	if ss.cursor >= ss.lastKnown {
		ss.wakeDue = false
	}
	ss.ackCursor = max(ss.ackCursor, cursor)
	if !ss.acking {
		ss.acking = true
		ss.s.wg.Add(1)
		go ss.persistAcks()
	}
}

// persistAcks writes the latest ack to the client record, one write at a
// time (acks arriving meanwhile coalesce).
func (ss *session) persistAcks() {
	defer ss.s.wg.Done()
	var done int64 = -1
	for {
		ss.mu.Lock()
		c := ss.ackCursor
		if c <= done || ss.ctx.Err() != nil {
			ss.acking = false
			ss.mu.Unlock()
			return
		}
		ss.mu.Unlock()
		err := ss.s.eng.ack(ss.ctx, ss.id.Partition, ss.clientID, ss.id.ActorID, c, ss.s.nowMs())
		if err != nil && ss.ctx.Err() == nil {
			ss.s.log.LogAttrs(ss.ctx, levelDebug, "ssp2 server: persisting an ack failed", errAttr(err))
		}
		done = c
	}
}

// observe records that the partition's log reached seq, every commit up
// to it having been delivered to the session.
func (ss *session) observe(seq int64) {
	ss.mu.Lock()
	ss.lastKnown = max(ss.lastKnown, seq)
	ss.mu.Unlock()
}

// observeBlind records that the partition's log reached seq without the
// session having seen the commits in between: a round ending with a head
// below seq owes a wake-up.
func (ss *session) observeBlind(seq int64) {
	ss.mu.Lock()
	ss.lastKnown = max(ss.lastKnown, seq)
	ss.blindTo = max(ss.blindTo, seq)
	ss.mu.Unlock()
}

// hearLocked keeps what a round's end needs of a commit that matched no
// registration while the round was open (ss.mu held).
func (ss *session) hearLocked(c sync.Commit) {
	h := heardCommit{seq: c.Seq}
	for _, ch := range c.Changes {
		if !slices.ContainsFunc(h.touches, func(t touch) bool { return t.table == ch.Table && maps.Equal(t.scopes, ch.Scopes) }) {
			if ss.heardN+len(h.touches) >= maxHeardTouches {
				ss.blindTo = max(ss.blindTo, c.Seq) // past the bound: kept as unread
				return
			}
			h.touches = append(h.touches, touch{ch.Table, ch.Scopes})
		}
	}
	ss.heardN += len(h.touches)
	ss.heard = append(ss.heard, h)
}

// inRound reports whether a round is open on the session (the fanout then
// reads commits for it even when it has no registration yet: the round
// may install some).
func (ss *session) inRound() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.roundOpen
}

// owe makes the writer send a wake-up (coalesced with any not yet sent)
// and suppresses deltas until the client acks what it observed.
func (ss *session) owe(reason ssp2.WakeReason) {
	ss.mu.Lock()
	ss.oweLocked(reason)
	ss.mu.Unlock()
}

func (ss *session) oweLocked(reason ssp2.WakeReason) {
	ss.wakeDue = true
	if ss.owed == "" || reason == ssp2.WakeResetRequired {
		ss.owed = reason
	}
	ss.poke()
}

func (ss *session) poke() {
	select {
	case ss.notify <- struct{}{}:
	default:
	}
}

// deliver hands one landed commit to the session (SPEC §8.2): a delta of
// the changes its registrations match — unless the client is behind or a
// round is in flight, when a catchup-required wake-up goes instead, and
// deltas wait until an ack reaches what the session observed.
func (ss *session) deliver(c sync.Commit) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.lastKnown = max(ss.lastKnown, c.Seq)
	if c.Seq <= ss.cursor || c.Seq <= ss.pulledTo {
		// The client has it, or the round that installed the
		// registrations pulled past it: a fanout lagging that round
		// owes nothing (§8.7).
		return
	}
	type section struct {
		reg     registration
		changes []sync.Change
	}
	var sections []section
	for _, r := range ss.regs {
		var chs []sync.Change
		for _, ch := range c.Changes {
			if ch.Table == r.t.Name && matchesEffective(ch.Scopes, r.eff) {
				chs = append(chs, ch)
			}
		}
		if len(chs) > 0 {
			sections = append(sections, section{r, chs})
		}
	}
	if len(sections) == 0 {
		if ss.roundOpen {
			ss.hearLocked(c)
		}
		return
	}
	if ss.roundOpen || ss.wakeDue {
		ss.oweLocked(ssp2.WakeCatchupRequired)
		return
	}
	var buf bytes.Buffer
	rw := ssp2.NewResponseWriter(&buf, ss.wv)
	hdr := &ssp2.RespHeader{}
	if ss.wv >= 2 {
		hdr.LogEpoch = ss.epoch
	}
	err := rw.Header(hdr)
	var ps pullStream
	for _, sec := range sections {
		if err != nil {
			break
		}
		if err = rw.SubStart(&ssp2.SubStart{ID: sec.reg.id, Status: ssp2.SubActive, EffectiveScopes: sec.reg.eff}); err != nil {
			break
		}
		cc := c
		cc.Changes = sec.changes
		var f *ssp2.Commit
		if f, err = ps.commitFrame(sec.reg.t, cc); err != nil {
			break
		}
		if err = rw.Commit(f); err != nil {
			break
		}
		err = rw.SubEnd(&ssp2.SubEnd{NextCursor: c.Seq})
	}
	if err == nil {
		err = rw.End()
	}
	if err != nil {
		ss.s.log.LogAttrs(ss.ctx, levelError, "ssp2 server: encoding a delta failed", errAttr(err))
		ss.oweLocked(ssp2.WakeCatchupRequired)
		return
	}
	if buf.Len() > ss.s.lim.MaxDeltaBytes {
		ss.oweLocked(ssp2.WakeDeltaTooLarge)
		return
	}
	msg := make([]byte, 1+buf.Len())
	msg[0] = ssp2.TagDelta
	copy(msg[1:], buf.Bytes())
	if !ss.enqueueLocked(msg, msgDelta) {
		// Flow control: the client does not drain; it pulls instead.
		ss.oweLocked(ssp2.WakeCatchupRequired)
		return
	}
	ss.cursor = c.Seq
}

// ownCommit hears of a commit this socket's round applied, as it lands —
// before the store's fanout brings it — so the commit the round itself
// made is a wake-up during the round (§8.7), never a delta after it, and
// the session knows the log reached it.
func (ss *session) ownCommit(c sync.Commit) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.lastKnown = max(ss.lastKnown, c.Seq)
	for _, r := range ss.regs {
		for _, ch := range c.Changes {
			if ch.Table == r.t.Name && matchesEffective(ch.Scopes, r.eff) {
				ss.oweLocked(ssp2.WakeCatchupRequired)
				return
			}
		}
	}
	ss.hearLocked(c)
}

// sendText queues a control event; a client too slow to take it is
// disconnected (presence and heartbeats cannot be turned into a pull).
func (ss *session) sendText(b []byte) {
	ss.mu.Lock()
	ok := ss.enqueueLocked(b, msgText)
	ss.mu.Unlock()
	if !ok {
		ss.s.log.LogAttrs(ss.ctx, levelInfo, "ssp2 server: realtime client too slow; closing the socket")
		ss.close(websocket.StatusPolicyViolation, "send queue full")
	}
}

func (ss *session) enqueueLocked(b []byte, k msgKind) bool {
	if ss.ctx.Err() != nil {
		return true
	}
	if len(ss.queue) >= ss.s.lim.SendQueueMessages || ss.queued+int64(len(b)) > ss.s.lim.SendQueueBytes {
		return false
	}
	ss.queue = append(ss.queue, b)
	ss.kinds = append(ss.kinds, k)
	ss.queued += int64(len(b))
	ss.poke()
	return true
}

// writeLoop owns the socket's writes until the session ends: round chunks
// (never interleaved with deltas: a delta dequeued while a round streams
// becomes a wake-up, §8.7), queued events, owed wake-ups, heartbeats.
func (ss *session) writeLoop() {
	var hb <-chan time.Time
	if ss.s.lim.HeartbeatInterval > 0 {
		t := time.NewTicker(ss.s.lim.HeartbeatInterval)
		defer t.Stop()
		hb = t.C
	}
	inRound := false
	for {
		select {
		case <-ss.ctx.Done():
			return
		case ch := <-ss.rounds:
			err := ss.write(websocket.MessageBinary, ch.data)
			inRound = !ch.last
			ch.done <- err
			if err != nil {
				ss.close(websocket.StatusGoingAway, "write failed")
				return
			}
		case <-hb:
			b, _ := ssp2.Heartbeat{Timestamp: ss.s.nowMs()}.AppendJSON(nil)
			if ss.write(websocket.MessageText, b) != nil {
				ss.close(websocket.StatusGoingAway, "write failed")
				return
			}
		case <-ss.notify:
		}
		if err := ss.drain(&inRound); err != nil {
			ss.close(websocket.StatusGoingAway, "write failed")
			return
		}
	}
}

// drain writes the queued events and an owed wake-up.
func (ss *session) drain(inRound *bool) error {
	for {
		ss.mu.Lock()
		if len(ss.queue) == 0 {
			reason := ss.owed
			ss.owed = ""
			latest := ss.lastKnown
			ss.mu.Unlock()
			if reason == "" {
				return nil
			}
			b, _ := ssp2.SyncWake{Cursor: latest, Reason: reason, Timestamp: ss.s.nowMs()}.AppendJSON(nil)
			return ss.write(websocket.MessageText, b)
		}
		b, k := ss.queue[0], ss.kinds[0]
		ss.queue[0] = nil
		ss.queue, ss.kinds = ss.queue[1:], ss.kinds[1:]
		ss.queued -= int64(len(b))
		if k == msgDelta && (*inRound || ss.roundOpen) {
			ss.oweLocked(ssp2.WakeCatchupRequired)
			ss.mu.Unlock()
			continue
		}
		ss.mu.Unlock()
		typ := websocket.MessageText
		if k == msgDelta {
			typ = websocket.MessageBinary
		}
		if err := ss.write(typ, b); err != nil {
			return err
		}
		// A round chunk waiting goes first: the round's pace is the
		// socket's (§8.7 backpressure), events fill the gaps.
		select {
		case ch := <-ss.rounds:
			err := ss.write(websocket.MessageBinary, ch.data)
			*inRound = !ch.last
			ch.done <- err
			if err != nil {
				return err
			}
		default:
		}
	}
}

// write writes one message within Limits.WriteTimeout.
func (ss *session) write(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(ss.ctx, ss.s.lim.WriteTimeout)
	defer cancel()
	return ss.conn.Write(ctx, typ, b)
}

// pingLoop pings the client; no answer within WriteTimeout closes the
// socket (a dead client holds nothing for long).
func (ss *session) pingLoop() {
	if ss.s.lim.PingInterval <= 0 {
		return
	}
	t := time.NewTicker(ss.s.lim.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(ss.ctx, ss.s.lim.WriteTimeout)
			err := ss.conn.Ping(ctx)
			cancel()
			if err != nil {
				ss.close(websocket.StatusGoingAway, "ping timeout")
				return
			}
		}
	}
}

// sendRound hands one chunk of a round's response to the writer and waits
// until it is written (the round goes at the socket's pace).
func (ss *session) sendRound(b []byte, last bool) error {
	ch := roundChunk{data: b, last: last, done: make(chan error, 1)}
	select {
	case ss.rounds <- ch:
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	}
	select {
	case err := <-ch.done:
		return err
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	}
}

// endFrame is the END frame's bytes: a round's last chunk.
var endFrame = []byte{0, 0, 0, 0, 0}

// roundWriter sends each frame of a socket round's response as one 0x01
// message (§8.7). Just before END it replaces the session's registrations
// when the round pulled (§8.7: at round end), and ends the round's
// in-flight state.
type roundWriter struct {
	ss *session
	rd *round
}

func (w *roundWriter) Write(p []byte) (int, error) {
	msg := make([]byte, 1+len(p))
	msg[0] = ssp2.TagRound
	copy(msg[1:], p)
	last := bytes.HasSuffix(p, endFrame) && (len(p) == len(endFrame))
	if last {
		w.ss.roundEnd(w.rd)
	}
	if err := w.ss.sendRound(msg, last); err != nil {
		return 0, err
	}
	return len(p), nil
}

// roundEnd applies a completed round to the session: a round that pulled
// replaces its registrations with the round's active subscriptions
// (effective scopes as the round resolved them) and sets the wire version
// of later deltas. The client then holds every registration through the
// least nextCursor of the round's SUB_ENDs (a bootstrap still paging holds
// none; a truncated or bootstrapped subscription may stop below the head
// the pull read). A commit past that seq that the new registrations match
// was heard against the old ones only, so it is caught up with a wake-up
// (§8.7); so is any stretch of the log past it the session observed
// without reading. A commit they do not match owes nothing (the client
// has nothing to pull for it), nor does a commit at or below that seq
// that a lagging fanout brings after the round.
func (ss *session) roundEnd(rd *round) {
	if rd != nil && rd.pulled {
		var regs []registration
		held := rd.pullHead
		for _, sp := range rd.subs {
			if sp.active {
				regs = append(regs, registration{id: sp.frame.ID, t: sp.t, eff: sp.eff})
				held = min(held, sp.held)
			}
		}
		ss.setRegistrations(regs)
		ss.mu.Lock()
		ss.wv = rd.wv
		ss.pulledTo = held
		if ss.blindTo > held || heardMatch(ss.heard, held, regs) {
			ss.oweLocked(ssp2.WakeCatchupRequired)
		}
		ss.mu.Unlock()
	}
	ss.mu.Lock()
	ss.roundOpen = false
	ss.heard, ss.heardN = nil, 0
	ss.mu.Unlock()
}

// heardMatch reports whether a commit heard past head touches any of regs.
func heardMatch(heard []heardCommit, head int64, regs []registration) bool {
	for _, h := range heard {
		if h.seq <= head {
			continue
		}
		for _, t := range h.touches {
			for _, r := range regs {
				if t.table == r.t.Name && matchesEffective(t.scopes, r.eff) {
					return true
				}
			}
		}
	}
	return false
}

// runRound runs one socket round (§8.7) through the same round code as
// POST /sync.
func (ss *session) runRound(body []byte) {
	defer ss.s.wg.Done()
	ctx := ss.ctx
	rd, err := ss.s.prepare(ctx, ss.id, body, ss.clientID)
	if err == nil {
		rd.applied = ss.ownCommit
		w := &roundWriter{ss: ss, rd: rd}
		err = rd.stream(ctx, w)
		if err == nil {
			return
		}
		if rd.started {
			// A storage failure mid-stream leaves the response unfinishable.
			ss.s.log.LogAttrs(ctx, levelError, "ssp2 server: socket round cut by a failure", errAttr(err))
			ss.close(websocket.StatusInternalError, "round failed")
			return
		}
	}
	// A request-level failure: the minimal response RESP_HEADER, ERROR,
	// END, in the request's wire version when it has one.
	pe := engineErr(err)
	if pe == nil {
		var de *ssp2.Error
		if !errors.As(err, &de) {
			ss.s.log.LogAttrs(ctx, levelError, "ssp2 server: socket round failed", errAttr(err))
		}
		pe = errUnavailable()
	}
	wv := ss.currentWV()
	if v, _, herr := ssp2.CheckEnvelopeHeader(body); herr == nil {
		wv = v
	}
	var buf bytes.Buffer
	rw := ssp2.NewResponseWriter(&buf, wv)
	hdr := &ssp2.RespHeader{}
	if wv >= 2 {
		hdr.LogEpoch = ss.epoch
	}
	if err := rw.Header(hdr); err == nil {
		if err = rw.Error(pe.Body().Frame()); err == nil {
			_ = rw.End()
		}
	}
	ss.roundEnd(nil)
	msg := append([]byte{ssp2.TagRound}, buf.Bytes()...)
	_ = ss.sendRound(msg, true)
}

func (ss *session) currentWV() uint16 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.wv
}
