package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncstore/syncstore/ssp2"
)

// waitFor bounds every wait for an expected message: a hang fails the
// test, the verdict never depends on speed.
const waitFor = 20 * time.Second

type wsMsg struct {
	text []byte
	bin  []byte
	err  error
}

// wsClient is a real WebSocket client of the realtime channel.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
	msgs chan wsMsg
	// deltas and round chunks are split from events as they arrive.
}

func (e *env) dial(actor, clientID string) (*wsClient, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/realtime?clientId=" + clientID
	h := http.Header{}
	h.Set("Authorization", "Bearer "+actor)
	conn, resp, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(64 << 20)
	c := &wsClient{t: e.t, conn: conn, msgs: make(chan wsMsg, 4096)}
	go func() {
		for {
			typ, b, err := conn.Read(context.Background())
			if err != nil {
				c.msgs <- wsMsg{err: err}
				close(c.msgs)
				return
			}
			if typ == websocket.MessageText {
				c.msgs <- wsMsg{text: b}
			} else {
				c.msgs <- wsMsg{bin: b}
			}
		}
	}()
	e.t.Cleanup(func() { _ = conn.CloseNow() })
	return c, resp, nil
}

func (e *env) mustDial(actor, clientID string) *wsClient {
	e.t.Helper()
	c, resp, err := e.dial(actor, clientID)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial: %v (status %d)", err, status)
	}
	return c
}

func (c *wsClient) next() wsMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			return wsMsg{err: context.Canceled}
		}
		return m
	case <-time.After(waitFor):
		c.t.Fatal("no message from the server")
		return wsMsg{}
	}
}

// event returns the next text event that is not a heartbeat; a binary
// message in between fails the test.
func (c *wsClient) event() ssp2.ServerEvent {
	c.t.Helper()
	for {
		m := c.next()
		if m.err != nil {
			c.t.Fatalf("socket ended: %v", m.err)
		}
		if m.bin != nil {
			c.t.Fatalf("a binary message (tag %#x) where an event was expected", m.bin[0])
		}
		ev, err := ssp2.ParseServerEvent(m.text)
		if err != nil {
			c.t.Fatalf("a malformed server event %s: %v", m.text, err)
		}
		if ev.Kind != ssp2.EventHeartbeat {
			return ev
		}
	}
}

// delta returns the next message, which must be a 0x00 delta.
func (c *wsClient) delta() *ssp2.Message {
	c.t.Helper()
	for {
		m := c.next()
		if m.err != nil {
			c.t.Fatalf("socket ended: %v", m.err)
		}
		if m.text != nil {
			ev, _ := ssp2.ParseServerEvent(m.text)
			if ev.Kind == ssp2.EventHeartbeat {
				continue
			}
			c.t.Fatalf("an event %s where a delta was expected", m.text)
		}
		if m.bin[0] != ssp2.TagDelta {
			c.t.Fatalf("tag %#x where a delta was expected", m.bin[0])
		}
		msg, err := ssp2.DecodeResponse(m.bin[1:])
		if err != nil {
			c.t.Fatal(err)
		}
		return msg
	}
}

// sendRound sends a request as 0x01 chunks of at most chunk bytes.
func (c *wsClient) sendRound(body []byte, chunk int) {
	c.t.Helper()
	for len(body) > 0 {
		n := min(chunk, len(body))
		msg := append([]byte{ssp2.TagRound}, body[:n]...)
		if err := c.conn.Write(context.Background(), websocket.MessageBinary, msg); err != nil {
			c.t.Fatal(err)
		}
		body = body[n:]
	}
}

// readRound collects the round's response chunks (each one frame) until
// END; events met on the way are returned too.
func (c *wsClient) readRound() (*ssp2.Message, []ssp2.ServerEvent) {
	c.t.Helper()
	var buf []byte
	var evs []ssp2.ServerEvent
	for {
		m := c.next()
		if m.err != nil {
			c.t.Fatalf("socket ended mid-round: %v", m.err)
		}
		if m.text != nil {
			ev, err := ssp2.ParseServerEvent(m.text)
			if err != nil {
				c.t.Fatal(err)
			}
			if ev.Kind != ssp2.EventHeartbeat {
				evs = append(evs, ev)
			}
			continue
		}
		if m.bin[0] != ssp2.TagRound {
			c.t.Fatalf("a %#x message inside a round (§8.7: no deltas while a response streams)", m.bin[0])
		}
		buf = append(buf, m.bin[1:]...)
		if bytes.HasSuffix(m.bin, endFrame) {
			msg, err := ssp2.DecodeResponse(buf)
			if err == nil {
				return msg, evs
			}
		}
	}
}

func (c *wsClient) round(body []byte) *ssp2.Message {
	c.t.Helper()
	c.sendRound(body, 7)
	m, _ := c.readRound()
	return m
}

// ack sends an ack and waits until the server's session took it (the
// next commit must find it).
func (e *env) ack(c *wsClient, client string, cursor int64) {
	e.t.Helper()
	c.text(fmt.Sprintf(`{"type":"ack","cursor":%d}`, cursor))
	deadline := time.Now().Add(waitFor)
	for {
		done := false
		e.srv.hub.mu.Lock()
		for _, ph := range e.srv.hub.parts {
			for ss := range ph.sessions {
				ss.mu.Lock()
				if ss.clientID == client && ss.cursor >= cursor {
					done = true
				}
				ss.mu.Unlock()
			}
		}
		e.srv.hub.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the ack never reached the session")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *wsClient) text(s string) {
	c.t.Helper()
	if err := c.conn.Write(context.Background(), websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// closed waits for the server to end the socket and returns the status.
func (c *wsClient) closed() websocket.StatusCode {
	c.t.Helper()
	for {
		m := c.next()
		if m.err != nil {
			return websocket.CloseStatus(m.err)
		}
	}
}

// TestRealtimeDelta: a client registered by its last pull receives other
// clients' commits as deltas through the store's commit fanout, resumes
// after a wake-up only once it acks, and the ack reaches its client record
// (SPEC §8.1–§8.3).
func TestRealtimeDelta(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		e.grant("bob", p1)
		ep := e.epoch("alice", "a1")
		e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))

		a := e.mustDial("alice", "a1")
		hello := a.event()
		if hello.Kind != ssp2.EventHello || hello.Hello.RequiresSync || hello.Hello.Cursor != 0 || hello.Hello.ClientID != "a1" || hello.Hello.ActorID != "alice" {
			t.Fatalf("hello %+v", hello)
		}
		e.sync("bob", 2, hdr("b1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))
		d := a.delta()
		if d.WireVersion != 2 || d.Frames[0].(*ssp2.RespHeader).LogEpoch != ep {
			t.Fatalf("delta header %+v", d.Frames[0])
		}
		secs := sections(d)
		if len(secs) != 1 || secs[0].start.ID != "s1" || len(secs[0].commits) != 1 || secs[0].end.NextCursor != 1 ||
			secs[0].commits[0].Changes[0].RowID != "t1" {
			t.Fatalf("delta %+v", secs)
		}
		// A commit outside the registration sends nothing; the next inside does.
		e.grant("bob", map[string][]string{"project_id": {"p1", "p2"}})
		e.sync("bob", 2, hdr("b1", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p2", "two"))))
		e.sync("bob", 2, hdr("b1", ep), commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "three"))))
		if secs = sections(a.delta()); secs[0].commits[0].CommitSeq != 3 {
			t.Fatalf("second delta %+v", secs[0].commits[0])
		}
		a.text(`{"type":"ack","cursor":3}`)
		// A client behind at connect gets wake-ups, not deltas, until it acks
		// what the session observed.
		b := e.mustDial("alice", "a2")
		if ev := b.event(); ev.Hello.RequiresSync != true {
			t.Fatalf("a2 hello %+v", ev)
		}
		e.sync("alice", 2, hdr("a2", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
		b2 := e.mustDial("alice", "a2")
		b2.event() // hello: registered, caught up
		e.sync("bob", 2, hdr("b1", ep), commit("k4", upsert("tasks", "t4", e.task("t4", "p1", "four"))))
		b2.delta()
		if d := a.delta(); sections(d)[0].commits[0].CommitSeq != 4 {
			t.Fatal("a missed commit 4")
		}
		// The ack persisted to the record (the retention floor).
		e.waitRecordCursor("a1", 3)
	})
}

// TestRealtimeWakeUntilAck: a client behind the log gets catchup-required
// wake-ups instead of deltas; after its pull and ack, deltas resume (§8.2).
func TestRealtimeWakeUntilAck(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	e.sync("alice", 2, hdr("w", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))
	a := e.mustDial("alice", "a1")
	if h := a.event().Hello; !h.RequiresSync || h.Cursor != 0 || h.LatestCursor != 1 {
		t.Fatalf("hello %+v", h)
	}
	e.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "two"))))
	ev := a.event()
	if ev.Kind != ssp2.EventSync || ev.Sync.Reason != ssp2.WakeCatchupRequired || ev.Sync.Cursor != 2 {
		t.Fatalf("wake %+v", ev)
	}
	e.ack(a, "a1", 2)
	e.sync("alice", 2, hdr("w", ep), commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "three"))))
	if d := a.delta(); sections(d)[0].commits[0].CommitSeq != 3 {
		t.Fatal("delta after the ack")
	}
}

// TestRealtimeSocketRounds: rounds over the socket (tag 0x01, one frame per
// message), registration replaced at round end so a client that connected
// before its first pull receives deltas, round-level errors as a minimal
// response, and a client id other than the socket's refused (§8.7).
func TestRealtimeSocketRounds(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	a := e.mustDial("alice", "a1")
	if h := a.event().Hello; !h.RequiresSync || h.Cursor != -1 {
		t.Fatalf("hello %+v", h)
	}
	m := a.round(req(2, hdr("a1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))),
		&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)))
	if framesOf[*ssp2.PushResult](m)[0].Status != ssp2.PushApplied || !sections(m)[0].start.Bootstrap {
		t.Fatalf("round %+v", m.Frames)
	}
	e.ack(a, "a1", 1)
	e.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "two"))))
	if d := a.delta(); sections(d)[0].commits[0].CommitSeq != 2 {
		t.Fatal("no delta after registering on the socket")
	}
	// A request-level failure: RESP_HEADER, ERROR, END.
	m = a.round(req(2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s", "nope", p1, -1)))
	ef := framesOf[*ssp2.ErrorFrame](m)
	if len(m.Frames) != 2 || len(ef) != 1 || ef[0].Code != "sync.unknown_table" {
		t.Fatalf("error round %+v", m.Frames)
	}
	// Another client id on this socket.
	m = a.round(req(2, hdr("zz", ep), &ssp2.PullHeader{Accept: 3}))
	if ef = framesOf[*ssp2.ErrorFrame](m); len(ef) != 1 || ef[0].Code != "sync.invalid_client_id" {
		t.Fatalf("client id round %+v", m.Frames)
	}
	// A round with an empty subscription list unregisters: no more deltas.
	a.round(req(2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}))
	e.sync("alice", 2, hdr("w", ep), commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "three"))))
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{}}}`)
	if ev := a.event(); ev.Kind != ssp2.EventPresenceError || ev.PresenceError.Error != ssp2.PresenceForbidden {
		t.Fatalf("after unregistering: %+v", ev)
	}
}

// TestRealtimeViolations: bytes past END, a second round while one is in
// flight, an unknown tag, an unframed stream and a malformed known event
// each close the socket (§8.1, §8.7).
func TestRealtimeViolations(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	good := req(2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3})
	cases := map[string]func(c *wsClient){
		"bytes past END": func(c *wsClient) { c.sendRound(append(append([]byte{}, good...), 0), 1<<20) },
		"unknown tag":    func(c *wsClient) { _ = c.conn.Write(context.Background(), websocket.MessageBinary, []byte{0x07, 1}) },
		"unframed":       func(c *wsClient) { c.sendRound([]byte("GET / HTTP/1.1\r\n"), 100) },
		"malformed ack":  func(c *wsClient) { c.text(`{"type":"ack","cursor":1.5}`) },
		"malformed presence": func(c *wsClient) {
			c.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":[1]}}`)
		},
		"pipelined round": func(c *wsClient) {
			blocked, release := e.blockClient("a1")
			defer release()
			c.sendRound(req(2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)), 1<<20)
			recv(t, blocked)
			c.sendRound(good, 1<<20)
			if st := c.closed(); st != websocket.StatusPolicyViolation {
				t.Errorf("closed with %v", st)
			}
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			c := e.mustDial("alice", "a1")
			c.event()
			f(c)
			if st := c.closed(); st != websocket.StatusPolicyViolation && name != "pipelined round" {
				t.Fatalf("closed with %v", st)
			}
		})
	}
	waitNoSessions(t, e)
	// Ignored, not violations: text that is not JSON, unknown events.
	c := e.mustDial("alice", "a1")
	c.event()
	c.text("hello?")
	c.text(`{"type":"mystery"}`)
	c.text(`{"event":"presence","data":{"scopeKey":"project:p9","doc":{}}}`)
	if ev := c.event(); ev.Kind != ssp2.EventPresenceError {
		t.Fatalf("after ignored messages: %+v", ev)
	}
}

// TestRealtimeInterleaving: a commit landing while a round's response is in
// flight produces a wake-up, never a delta inside the round; deltas resume
// after the post-round ack (§8.7).
func TestRealtimeInterleaving(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	a := e.mustDial("alice", "a1")
	a.event()
	blocked, release := e.blockClient("a1")
	a.sendRound(req(2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 0)), 1<<20)
	recv(t, blocked)
	e.sync("alice", 2, hdr("w", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))
	// The fanout reaches the session while its round waits: a wake-up.
	ev := a.event()
	if ev.Kind != ssp2.EventSync || ev.Sync.Reason != ssp2.WakeCatchupRequired {
		t.Fatalf("during the round: %+v", ev)
	}
	release()
	m, _ := a.readRound()
	if secs := sections(m); len(secs[0].commits) != 1 || secs[0].end.NextCursor != 1 {
		t.Fatalf("round %+v", secs)
	}
	e.ack(a, "a1", 1)
	e.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "two"))))
	if d := a.delta(); sections(d)[0].commits[0].CommitSeq != 2 {
		t.Fatal("deltas did not resume")
	}
}

// TestRealtimePresence: join, update, leave, disconnect-implies-leave, the
// snapshot burst, cross-scope isolation, forbidden and too-large publishes
// (§8.6).
func TestRealtimePresence(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Limits.MaxPresenceBytes = 64 })
	e.grant("alice", p1)
	e.grant("bob", p1)
	e.grant("dave", map[string][]string{"project_id": {"p2"}})
	ep := e.epoch("alice", "a1")
	register := func(actor, client, p string) *wsClient {
		e.sync(actor, 2, hdr(client, ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", map[string][]string{"project_id": {p}}, -1))
		c := e.mustDial(actor, client)
		c.event()
		return c
	}
	a := register("alice", "a1", "p1")
	b := register("bob", "b1", "p1")
	d := register("dave", "d1", "p2")
	expect := func(c *wsClient, kind ssp2.PresenceKind, actor, doc string) {
		t.Helper()
		ev := c.event()
		if ev.Kind != ssp2.EventPresence || ev.Presence.Kind != kind || ev.Presence.ActorID != actor || string(ev.Presence.Doc) != doc {
			t.Fatalf("want %s from %s with %s, got %+v", kind, actor, doc, ev)
		}
	}
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{"x":1}}}`)
	expect(b, ssp2.PresenceJoin, "alice", `{"x":1}`)
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{"x":2}}}`)
	expect(b, ssp2.PresenceUpdate, "alice", `{"x":2}`)
	// Dave holds p2 only: he saw none of it (his next event is his own
	// scope-mate's), and cannot publish on p1.
	d.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{}}}`)
	if ev := d.event(); ev.Kind != ssp2.EventPresenceError || ev.PresenceError.Error != ssp2.PresenceForbidden {
		t.Fatalf("dave: %+v", ev)
	}
	// Too large: refused to the publisher, nothing fanned out.
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{"big":"` + strings.Repeat("x", 100) + `"}}}`)
	if ev := a.event(); ev.Kind != ssp2.EventPresenceError || ev.PresenceError.Error != ssp2.PresenceTooLarge {
		t.Fatalf("too large: %+v", ev)
	}
	// A late joiner gets the snapshot burst.
	c := register("bob", "b2", "p1")
	expect(c, ssp2.PresenceJoin, "alice", `{"x":2}`)
	// Leave, then publish and disconnect: peers see leave both times.
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":null}}`)
	expect(b, ssp2.PresenceLeave, "alice", "")
	expect(c, ssp2.PresenceLeave, "alice", "")
	a.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{"x":3}}}`)
	expect(b, ssp2.PresenceJoin, "alice", `{"x":3}`)
	expect(c, ssp2.PresenceJoin, "alice", `{"x":3}`)
	_ = a.conn.Close(websocket.StatusNormalClosure, "")
	expect(b, ssp2.PresenceLeave, "alice", "")
	expect(c, ssp2.PresenceLeave, "alice", "")
	// Dave's next event is a presence on p2 (none of p1's reached him).
	e2 := register("dave", "d2", "p2")
	e2.text(`{"event":"presence","data":{"scopeKey":"project:p2","doc":{"d":2}}}`)
	expect(d, ssp2.PresenceJoin, "dave", `{"d":2}`)
}

// TestRealtimeSlowReader: a client that never reads cannot make the server
// hold more than its send queue: deltas it cannot take turn into one owed
// wake-up (§8.2 flow control), and the socket is closed once writes stall.
func TestRealtimeSlowReader(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) {
		c.Limits.SendQueueMessages = 4
		c.Limits.SendQueueBytes = 1 << 20
		c.Limits.MaxDeltaBytes = 1 << 20
		c.Limits.WriteTimeout = 500 * time.Millisecond
		c.Limits.PingInterval = 200 * time.Millisecond
	})
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	// A raw client that reads nothing after the upgrade.
	u := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/realtime?clientId=a1"
	h := http.Header{}
	h.Set("Authorization", "Bearer alice")
	conn, _, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	big := strings.Repeat("x", 60_000)
	maxQueued := 0
	for i := range 60 {
		id := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		e.sync("alice", 2, hdr("w", ep), commit(id, upsert("tasks", id, e.task(id, "p1", big))))
		e.srv.hub.mu.Lock()
		for _, ph := range e.srv.hub.parts {
			for ss := range ph.sessions {
				ss.mu.Lock()
				if len(ss.queue) > e.srv.lim.SendQueueMessages || ss.queued > e.srv.lim.SendQueueBytes {
					t.Errorf("queue %d messages, %d bytes", len(ss.queue), ss.queued)
				}
				maxQueued = max(maxQueued, len(ss.queue))
				ss.mu.Unlock()
			}
		}
		e.srv.hub.mu.Unlock()
	}
	t.Logf("peak queued messages: %d", maxQueued)
	waitNoSessions(t, e)
}

// waitNoSessions waits until the hub holds nothing: no partition, no
// connection slot.
func waitNoSessions(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		e.srv.hub.mu.Lock()
		n, conns, per := len(e.srv.hub.parts), e.srv.hub.conns, len(e.srv.hub.perClient)
		e.srv.hub.mu.Unlock()
		if n == 0 && conns == 0 && per == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub still holds %d partitions, %d connections", n, conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRealtimeNothingLeftBehind: closed sockets leave no session, no slot,
// no presence and no goroutine behind; the connection caps answer 429.
func TestRealtimeNothingLeftBehind(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Limits.MaxConnectionsPerClient = 2 })
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	// Warm up the fanout subscription, then count goroutines.
	w := e.mustDial("alice", "w1")
	w.event()
	base := serverGoroutines()
	var cs []*wsClient
	for range 2 {
		c := e.mustDial("alice", "a1")
		c.event()
		c.text(`{"event":"presence","data":{"scopeKey":"project:p1","doc":{}}}`)
		cs = append(cs, c)
	}
	if _, resp, err := e.dial("alice", "a1"); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third connection of one client: %v", err)
	}
	for _, c := range cs {
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
	}
	_ = w.conn.Close(websocket.StatusNormalClosure, "")
	waitNoSessions(t, e)
	deadline := time.Now().Add(waitFor)
	for serverGoroutines() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d server goroutines, %d before:\n%s", serverGoroutines(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serverGoroutines counts the goroutines running the server's realtime
// code (sessions, rounds, ack writers, partition fanouts).
func serverGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range []string{"server.(*session)", "server.(*Server).serveRealtime", "server.(*hub).fanout"} {
			if strings.Contains(g, f) {
				n++
				break
			}
		}
	}
	return n
}

// TestRealtimeUpgradeErrors: authentication, the client id and its binding
// are checked before the upgrade (§8.1).
func TestRealtimeUpgradeErrors(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 2, hdr("a1", ep), &ssp2.PullHeader{Accept: 3})
	for _, tc := range []struct {
		actor, client string
		status        int
	}{{"", "a1", 401}, {"alice", "", 400}, {"bob", "a1", 400}, {"alice", `["remote-command",1]`, 400}} {
		_, resp, err := e.dial(tc.actor, tc.client)
		if err == nil || resp == nil || resp.StatusCode != tc.status {
			t.Fatalf("%+v: %v %v", tc, err, resp)
		}
	}
}

// recv waits for a signal on ch.
func recv(t testing.TB, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatal("waited in vain")
	}
}

// TestRealtimeDeltaTooLargeHeartbeatFence: a delta over MaxDeltaBytes is a
// delta-too-large wake-up (§8.2), heartbeats carry the server clock
// (§8.5), a v1 client's deltas are v1 (§9), and a rotated log epoch closes
// the partition's sockets (§2.1).
func TestRealtimeDeltaTooLargeHeartbeatFence(t *testing.T) {
	e := newEnv(t, sqliteLane(), func(c *Config) {
		c.Limits.MaxDeltaBytes = 1
		c.Limits.HeartbeatInterval = 20 * time.Millisecond
	})
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	e.sync("alice", 1, &ssp2.ReqHeader{ClientID: "a1", SchemaVersion: 3}, &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
	a := e.mustDial("alice", "a1")
	a.event()
	e.sync("alice", 2, hdr("w", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))))
	ev := a.event()
	if ev.Kind != ssp2.EventSync || ev.Sync.Reason != ssp2.WakeDeltaTooLarge || ev.Sync.Cursor != 1 {
		t.Fatalf("oversize: %+v", ev)
	}
	for {
		m := a.next()
		if m.text == nil {
			t.Fatalf("%+v", m)
		}
		if ev, _ := ssp2.ParseServerEvent(m.text); ev.Kind == ssp2.EventHeartbeat {
			if ev.Heartbeat.Timestamp != e.clock.Now().UnixMilli() {
				t.Fatalf("heartbeat time %d", ev.Heartbeat.Timestamp)
			}
			break
		}
	}
	// A v1 client's deltas: a second server with room for them.
	e2 := newEnvOn(t, e.store, e.schema, func(c *Config) { c.Limits.PartitionTouchInterval = -1 })
	e2.grant("alice", p1)
	e.ack(a, "a1", 1)
	e.waitRecordCursor("a1", 1)
	b := e2.mustDial("alice", "a1")
	b.event()
	e2.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "two"))))
	if d := b.delta(); d.WireVersion != 1 {
		t.Fatalf("delta in wire version %d", d.WireVersion)
	}
	if _, err := e2.srv.RotateLogEpoch(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if st := b.closed(); st != websocket.StatusGoingAway {
		t.Fatalf("fenced with %v", st)
	}
}

// waitRecordCursor waits until client's record holds at least cursor (an
// ack is persisted in the background).
func (e *env) waitRecordCursor(client string, cursor int64) {
	e.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		rec, _, _ := e.store.GetClientRecord(context.Background(), "p1", client)
		if rec.Cursor >= cursor {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the ack never reached the record: cursor %d", rec.Cursor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRealtimeOwnCommitInRound: a socket round's own push fans out to its
// own session mid-round: a catchup-required wake-up, never a delta — on
// every driver, however late its commit fanout — and after the post-round
// ack, deltas resume (§8.7; the catalog's
// ws-round/commit-during-round-wakes-then-deltas-resume).
func TestRealtimeOwnCommitInRound(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		e := newEnv(t, l)
		e.grant("alice", p1)
		ep := e.epoch("alice", "b1")
		b := e.mustDial("alice", "b1")
		b.event()
		b.round(req(2, hdr("b1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)))
		b.sendRound(req(2, hdr("b1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "own"))),
			&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, 0)), 1<<20)
		m, evs := b.readRound()
		if secs := sections(m); secs[0].end.NextCursor != 1 {
			t.Fatalf("round %+v", secs[0].end)
		}
		// At least one wake-up (the fanout may add coalescible ones), each
		// catchup-required at the round's commit.
		if len(evs) == 0 {
			evs = append(evs, b.event())
		}
		for _, ev := range evs {
			if ev.Kind != ssp2.EventSync || ev.Sync.Reason != ssp2.WakeCatchupRequired || ev.Sync.Cursor != 1 {
				t.Fatalf("events %+v", evs)
			}
		}
		e.ack(b, "b1", 1)
		e.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "resumed"))))
		for {
			m := b.next()
			if m.err != nil {
				t.Fatal(m.err)
			}
			if m.text != nil {
				// Late wake-ups of commit 1 may still arrive; nothing newer.
				if ev, _ := ssp2.ParseServerEvent(m.text); ev.Kind == ssp2.EventSync && ev.Sync.Cursor <= 1 || ev.Kind == ssp2.EventHeartbeat {
					continue
				}
				t.Fatalf("%s where a delta was expected", m.text)
			}
			d, err := ssp2.DecodeResponse(m.bin[1:])
			if err != nil || m.bin[0] != ssp2.TagDelta || sections(d)[0].commits[0].CommitSeq != 2 {
				t.Fatalf("deltas did not resume: %v", err)
			}
			break
		}
	})
}

// TestRealtimeLateFanoutAfterRound: the store's fanout may bring a commit
// after the socket round whose pull already served it (the fanout lags the
// round; on PostgreSQL it is LISTEN/NOTIFY). The pull covered it, so it
// owes neither a wake-up nor a delta: the client's post-round ack lets the
// next commit through as a delta (§8.7 "Interleaving").
func TestRealtimeLateFanoutAfterRound(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "a1")
	a := e.mustDial("alice", "a1")
	a.event() // hello
	m := a.round(req(2, hdr("a1", ep), commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "one"))),
		&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)))
	if len(sections(m)) != 1 {
		t.Fatalf("round %+v", m.Frames)
	}
	// The fanout brings commit 1 again, after the round's end.
	c1, err := e.srv.eng.readCommits(context.Background(), "p1", 0, 1, 100)
	if err != nil || len(c1) != 1 {
		t.Fatalf("commit 1: %v %v", c1, err)
	}
	ss := e.session("a1")
	ss.deliver(c1[0])
	e.ack(a, "a1", 1)
	e.sync("alice", 2, hdr("w", ep), commit("k2", upsert("tasks", "t2", e.task("t2", "p1", "two"))))
	if d := a.delta(); sections(d)[0].commits[0].CommitSeq != 2 {
		t.Fatal("commit 2 did not come as a delta")
	}

	// A round whose pull stops below the head it read (limitCommits 1,
	// commits 3 and 4 to serve) leaves the client holding only through 3:
	// a late commit 4 is past it and wakes the client.
	b := e.mustDial("alice", "b1")
	b.event() // hello
	b.round(req(2, hdr("b1", ep), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1)))
	e.sync("alice", 2, hdr("w", ep), commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "three"))))
	e.sync("alice", 2, hdr("w", ep), commit("k4", upsert("tasks", "t4", e.task("t4", "p1", "four"))))
	for cursor := int64(0); cursor != 4; { // b never acked: wake-ups, not deltas
		ev := b.event()
		if ev.Kind != ssp2.EventSync {
			t.Fatalf("b behind: %+v", ev)
		}
		cursor = ev.Sync.Cursor
	}
	m = b.round(req(2, hdr("b1", ep), &ssp2.PullHeader{Accept: 3, LimitCommits: 1}, sub("s1", "tasks", p1, 2)))
	if secs := sections(m); len(secs) != 1 || secs[0].end.NextCursor != 3 {
		t.Fatalf("truncated round %+v", secs)
	}
	c4, err := e.srv.eng.readCommits(context.Background(), "p1", 3, 4, 100)
	if err != nil || len(c4) != 1 {
		t.Fatalf("commit 4: %v %v", c4, err)
	}
	ss = e.session("b1")
	ss.deliver(c4[0])
	if ev := b.event(); ev.Kind != ssp2.EventSync || ev.Sync.Reason != ssp2.WakeCatchupRequired || ev.Sync.Cursor != 4 {
		t.Fatalf("a late commit past what the round left the client holding: %+v", ev)
	}
}

// session returns the hub's session of client (nil: none).
func (e *env) session(client string) *session {
	e.srv.hub.mu.Lock()
	defer e.srv.hub.mu.Unlock()
	for _, ph := range e.srv.hub.parts {
		for s := range ph.sessions {
			if s.clientID == client {
				return s
			}
		}
	}
	return nil
}
