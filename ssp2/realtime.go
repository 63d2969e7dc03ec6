package ssp2

import (
	"strconv"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Realtime channel (§8): binary WebSocket messages carry a one-byte
// channel tag; control messages are JSON text. Server→client events carry
// "event", client→server messages "type" (the ack) or "event"
// ("presence"). Numbers are integers within ±(2^53−1).

// Channel tags of binary socket messages (§8.7).
const (
	// TagDelta: server→client, one complete standalone response message.
	TagDelta byte = 0x00
	// TagRound: both directions, one chunk of the in-flight round's stream.
	TagRound byte = 0x01
)

// WakeReason is the reason of a sync wake-up (§8.3), a closed set.
type WakeReason string

// The three wake-up reasons.
const (
	WakeDeltaTooLarge   WakeReason = "delta-too-large"
	WakeCatchupRequired WakeReason = "catchup-required"
	WakeResetRequired   WakeReason = "reset-required"
)

func (r WakeReason) valid() bool {
	return r == WakeDeltaTooLarge || r == WakeCatchupRequired || r == WakeResetRequired
}

// PresenceKind is the kind of a presence fanout (§8.6.2), a closed set.
type PresenceKind string

// The three presence kinds.
const (
	PresenceJoin   PresenceKind = "join"
	PresenceUpdate PresenceKind = "update"
	PresenceLeave  PresenceKind = "leave"
)

// The two presence error codes (§8.6.2), client-runtime codes carried in
// a presence event's "error".
const (
	PresenceTooLarge  = "presence.too_large"
	PresenceForbidden = "presence.forbidden"
)

// Hello is the server's first event on a connection (§8.1).
type Hello struct {
	ProtocolVersion int64
	SessionID       string
	ActorID         string
	ClientID        string
	// Cursor is the client's last acked cursor, LatestCursor the server's.
	Cursor       int64
	LatestCursor int64
	RequiresSync bool
	Timestamp    int64
}

// SyncWake is the "sync" wake-up (§8.3); requiresPull is always true on
// the wire.
type SyncWake struct {
	Cursor    int64
	Reason    WakeReason
	Timestamp int64
}

// Heartbeat is the heartbeat event (§8.5).
type Heartbeat struct {
	Timestamp int64
}

// PresenceEvent is a server→client presence fanout (§8.6.2).
type PresenceEvent struct {
	ScopeKey string
	Kind     PresenceKind
	ActorID  string
	ClientID string
	// Doc is the peer's document, a JSON object, for join and update; ""
	// (written null) for leave.
	Doc       driver.JSON
	Timestamp int64
}

// PresenceError is a server→client presence error, to the publisher only
// (§8.6.2).
type PresenceError struct {
	ScopeKey string
	// Error is PresenceTooLarge or PresenceForbidden.
	Error     string
	Timestamp int64
}

// Ack is the client's acknowledgement of applied deltas (§8.2).
type Ack struct {
	Cursor int64
}

// PresencePublish is a client→server presence publish or leave (§8.6.2).
type PresencePublish struct {
	ScopeKey string
	// Doc is a JSON object; "" means leave (written "doc":null).
	Doc driver.JSON
}

// rt builds one control message.
type rt struct {
	b   []byte
	err error
}

func (w *rt) raw(s string) { w.b = append(w.b, s...) }

func (w *rt) str(k, v string) {
	if !utf8.ValidString(v) {
		w.fail(k + " is not valid UTF-8")
	}
	w.raw(`"` + k + `":`)
	w.b = appendJSString(w.b, v)
}

func (w *rt) int(k string, v int64) {
	if v > MaxSafeInt || v < -MaxSafeInt {
		w.fail(k + " is outside ±(2^53-1)")
	}
	w.raw(`"` + k + `":`)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *rt) bool(k string, v bool) {
	w.raw(`"` + k + `":`)
	w.b = appendBool(w.b, v)
}

// doc writes a document that must be a JSON object, or null when empty.
func (w *rt) doc(v driver.JSON, allowNull bool) {
	w.raw(`"doc":`)
	if v == "" {
		if !allowNull {
			w.fail("doc is required")
		}
		w.raw("null")
		return
	}
	tree, ok := parseJSON([]byte(v))
	if !ok || tree.kind != jsonObject || !utf8.ValidString(string(v)) {
		w.fail("doc is not a JSON object")
		return
	}
	w.b = appendJSValue(w.b, &tree)
}

func (w *rt) fail(msg string) {
	if w.err == nil {
		w.err = encodeErrorf("%s", msg)
	}
}

func (w *rt) done(dst []byte) ([]byte, error) {
	if w.err != nil {
		return dst, w.err
	}
	return append(dst, w.b...), nil
}

// AppendJSON appends {"event":"hello","data":{…}} (§8.1) to dst.
func (h Hello) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	w.raw(`{"event":"hello","data":{`)
	w.int("protocolVersion", h.ProtocolVersion)
	w.raw(",")
	w.str("sessionId", h.SessionID)
	w.raw(",")
	w.str("actorId", h.ActorID)
	w.raw(",")
	w.str("clientId", h.ClientID)
	w.raw(",")
	w.int("cursor", h.Cursor)
	w.raw(",")
	w.int("latestCursor", h.LatestCursor)
	w.raw(",")
	w.bool("requiresSync", h.RequiresSync)
	w.raw(",")
	w.int("timestamp", h.Timestamp)
	w.raw("}}")
	return w.done(dst)
}

// AppendJSON appends {"event":"sync","data":{"cursor","requiresPull":true,
// "reason","timestamp"}} (§8.3) to dst; Reason must be one of the three.
func (s SyncWake) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	if !s.Reason.valid() {
		w.fail("wake reason is not one of the three")
	}
	w.raw(`{"event":"sync","data":{`)
	w.int("cursor", s.Cursor)
	w.raw(`,"requiresPull":true,`)
	w.str("reason", string(s.Reason))
	w.raw(",")
	w.int("timestamp", s.Timestamp)
	w.raw("}}")
	return w.done(dst)
}

// AppendJSON appends {"event":"heartbeat","data":{"timestamp"}} (§8.5).
func (h Heartbeat) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	w.raw(`{"event":"heartbeat","data":{`)
	w.int("timestamp", h.Timestamp)
	w.raw("}}")
	return w.done(dst)
}

// AppendJSON appends the presence fanout (§8.6.2) to dst: {"event":
// "presence","data":{"scopeKey","kind","actorId","clientId","doc",
// "timestamp"}}, doc an object for join and update, null for leave. The
// document is written as JSON.stringify writes it.
func (p PresenceEvent) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	if p.ScopeKey == "" {
		w.fail("presence scopeKey is empty")
	}
	switch p.Kind {
	case PresenceJoin, PresenceUpdate:
		if p.Doc == "" {
			w.fail("a presence join or update needs a doc")
		}
	case PresenceLeave:
		if p.Doc != "" {
			w.fail("a presence leave carries no doc")
		}
	default:
		w.fail("presence kind is not join, update or leave")
	}
	w.raw(`{"event":"presence","data":{`)
	w.str("scopeKey", p.ScopeKey)
	w.raw(",")
	w.str("kind", string(p.Kind))
	w.raw(",")
	w.str("actorId", p.ActorID)
	w.raw(",")
	w.str("clientId", p.ClientID)
	w.raw(",")
	w.doc(p.Doc, p.Kind == PresenceLeave)
	w.raw(",")
	w.int("timestamp", p.Timestamp)
	w.raw("}}")
	return w.done(dst)
}

// AppendJSON appends {"event":"presence","data":{"scopeKey","error",
// "timestamp"}} (§8.6.2); Error must be PresenceTooLarge or
// PresenceForbidden.
func (p PresenceError) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	if p.Error != PresenceTooLarge && p.Error != PresenceForbidden {
		w.fail("presence error is not presence.too_large or presence.forbidden")
	}
	w.raw(`{"event":"presence","data":{`)
	w.str("scopeKey", p.ScopeKey)
	w.raw(",")
	w.str("error", p.Error)
	w.raw(",")
	w.int("timestamp", p.Timestamp)
	w.raw("}}")
	return w.done(dst)
}

// AppendJSON appends {"type":"ack","cursor":n} (§8.2).
func (a Ack) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	w.raw(`{"type":"ack",`)
	w.int("cursor", a.Cursor)
	w.raw("}")
	return w.done(dst)
}

// AppendJSON appends {"event":"presence","data":{"scopeKey","doc"}}
// (§8.6.2), doc null for a leave.
func (p PresencePublish) AppendJSON(dst []byte) ([]byte, error) {
	w := rt{}
	if p.ScopeKey == "" {
		w.fail("presence scopeKey is empty")
	}
	w.raw(`{"event":"presence","data":{`)
	w.str("scopeKey", p.ScopeKey)
	w.raw(",")
	w.doc(p.Doc, true)
	w.raw("}}")
	return w.done(dst)
}

// ClientMessageKind tells what a ClientMessage is.
type ClientMessageKind uint8

// The client→server messages.
const (
	// ClientUnknown: a JSON object that is neither an ack nor a presence
	// message; Name holds its "type" (or "event") when a string.
	ClientUnknown ClientMessageKind = iota
	ClientAck
	ClientPresence
)

// ClientMessage is a parsed client→server control message; the field of
// its Kind is set.
type ClientMessage struct {
	Kind     ClientMessageKind
	Name     string
	Ack      Ack
	Presence PresencePublish
}

// ParseClientMessage parses a client→server text message: an ack
// ({"type":"ack","cursor":n}, cursor an integer within ±(2^53−1)) or a
// presence publish/leave ({"event":"presence","data":{"scopeKey":
// non-empty string,"doc": object | null}}); other members are ignored.
// Any other JSON object is ClientUnknown (what to do with it is the
// server's call). Text that is not a JSON object, and a known message of
// the wrong shape, is an *Error with CodeInvalidRequest (§8.1's
// known-event rule). A presence Doc is returned as JSON.stringify writes
// it.
func ParseClientMessage(text []byte) (ClientMessage, error) {
	root, err := parseControl(text)
	if err != nil {
		return ClientMessage{}, err
	}
	if ev, ok := root.member("event"); ok && ev.kind == jsonString && ev.s == "presence" {
		p, err := parsePresencePublish(root)
		if err != nil {
			return ClientMessage{}, err
		}
		return ClientMessage{Kind: ClientPresence, Name: "presence", Presence: p}, nil
	}
	if ty, ok := root.member("type"); ok && ty.kind == jsonString {
		if ty.s == "ack" {
			c, ok := intMember(root, "cursor")
			if !ok {
				return ClientMessage{}, malformed("ack.cursor is not an integer within ±(2^53-1)")
			}
			return ClientMessage{Kind: ClientAck, Name: "ack", Ack: Ack{Cursor: c}}, nil
		}
		return ClientMessage{Name: ty.s}, nil
	}
	if ev, ok := root.member("event"); ok && ev.kind == jsonString {
		return ClientMessage{Name: ev.s}, nil
	}
	return ClientMessage{}, nil
}

func parsePresencePublish(root *jsonValue) (PresencePublish, *Error) {
	data, ok := root.member("data")
	if !ok || data.kind != jsonObject {
		return PresencePublish{}, malformed("presence.data is not an object")
	}
	key, err := scopeKey(data)
	if err != nil {
		return PresencePublish{}, err
	}
	doc, ok := data.member("doc")
	if !ok || doc.kind != jsonObject && doc.kind != jsonNull {
		return PresencePublish{}, malformed("presence.data.doc is neither an object nor null")
	}
	p := PresencePublish{ScopeKey: key}
	if doc.kind == jsonObject {
		p.Doc = driver.JSON(appendJSValue(nil, doc))
	}
	return p, nil
}

// ServerEventKind tells what a ServerEvent is.
type ServerEventKind uint8

// The server→client events.
const (
	// EventUnknown: an event name this SPEC does not define (tolerated,
	// §8.1); Name holds it.
	EventUnknown ServerEventKind = iota
	EventHello
	EventSync
	EventHeartbeat
	EventPresence
	EventPresenceError
)

// ServerEvent is a parsed server→client control event; the field of its
// Kind is set.
type ServerEvent struct {
	Kind          ServerEventKind
	Name          string
	Hello         Hello
	Sync          SyncWake
	Heartbeat     Heartbeat
	Presence      PresenceEvent
	PresenceError PresenceError
}

// ParseServerEvent parses a server→client text event strictly: an object
// whose "event" is a string; for a known name (hello, sync, heartbeat,
// presence) "data" must have the SPEC's shape — integers within
// ±(2^53−1), requiresPull the literal true, a reason of the closed set,
// a presence fanout with a kind of the closed set, a doc object for join
// and update and null for leave, or a presence error of the closed set.
// Other members are ignored; an unknown event name is EventUnknown, not
// an error (§8.1). A violation is an *Error with CodeInvalidRequest.
func ParseServerEvent(text []byte) (ServerEvent, error) {
	root, perr := parseControl(text)
	if perr != nil {
		return ServerEvent{}, perr
	}
	ev, ok := root.member("event")
	if !ok || ev.kind != jsonString {
		return ServerEvent{}, malformed("event is not a string")
	}
	out := ServerEvent{Name: ev.s}
	if ev.s != "hello" && ev.s != "sync" && ev.s != "heartbeat" && ev.s != "presence" {
		return out, nil
	}
	data, ok := root.member("data")
	if !ok || data.kind != jsonObject {
		return ServerEvent{}, malformed(ev.s + ".data is not an object")
	}
	var err *Error
	ints := func(dst *int64, name string) {
		if err != nil {
			return
		}
		v, ok := intMember(data, name)
		if !ok {
			err = malformed(ev.s + ".data." + name + " is not an integer within ±(2^53-1)")
		}
		*dst = v
	}
	strs := func(dst *string, name string) {
		if err != nil {
			return
		}
		v, ok := data.member(name)
		if !ok || v.kind != jsonString {
			err = malformed(ev.s + ".data." + name + " is not a string")
			return
		}
		*dst = v.s
	}
	switch ev.s {
	case "hello":
		h := &out.Hello
		out.Kind = EventHello
		ints(&h.ProtocolVersion, "protocolVersion")
		strs(&h.SessionID, "sessionId")
		strs(&h.ActorID, "actorId")
		strs(&h.ClientID, "clientId")
		ints(&h.Cursor, "cursor")
		ints(&h.LatestCursor, "latestCursor")
		if v, ok := data.member("requiresSync"); err == nil && (!ok || v.kind != jsonBool) {
			err = malformed("hello.data.requiresSync is not a boolean")
		} else if ok {
			h.RequiresSync = v.b
		}
		ints(&h.Timestamp, "timestamp")
	case "sync":
		s := &out.Sync
		out.Kind = EventSync
		ints(&s.Cursor, "cursor")
		if v, ok := data.member("requiresPull"); err == nil && (!ok || v.kind != jsonBool || !v.b) {
			err = malformed("sync.data.requiresPull is not the literal true")
		}
		var reason string
		strs(&reason, "reason")
		if s.Reason = WakeReason(reason); err == nil && !s.Reason.valid() {
			err = malformed("sync.data.reason is not one of the three reasons")
		}
		ints(&s.Timestamp, "timestamp")
	case "heartbeat":
		out.Kind = EventHeartbeat
		ints(&out.Heartbeat.Timestamp, "timestamp")
	case "presence":
		key, kerr := scopeKey(data)
		if kerr != nil {
			return ServerEvent{}, kerr
		}
		if _, isErr := data.member("error"); isErr {
			pe := &out.PresenceError
			out.Kind = EventPresenceError
			pe.ScopeKey = key
			strs(&pe.Error, "error")
			if err == nil && pe.Error != PresenceTooLarge && pe.Error != PresenceForbidden {
				err = malformed("presence.data.error is not presence.too_large or presence.forbidden")
			}
			ints(&pe.Timestamp, "timestamp")
			break
		}
		p := &out.Presence
		out.Kind = EventPresence
		p.ScopeKey = key
		var kind string
		strs(&kind, "kind")
		p.Kind = PresenceKind(kind)
		if err == nil && p.Kind != PresenceJoin && p.Kind != PresenceUpdate && p.Kind != PresenceLeave {
			err = malformed("presence.data.kind is not join, update or leave")
		}
		strs(&p.ActorID, "actorId")
		strs(&p.ClientID, "clientId")
		if err == nil {
			doc, ok := data.member("doc")
			switch {
			case p.Kind == PresenceLeave && (!ok || doc.kind != jsonNull):
				err = malformed("a presence leave must carry doc: null")
			case p.Kind != PresenceLeave && (!ok || doc.kind != jsonObject):
				err = malformed("a presence join or update must carry a doc object")
			case doc.kind == jsonObject:
				p.Doc = driver.JSON(appendJSValue(nil, doc))
			}
		}
		ints(&p.Timestamp, "timestamp")
	}
	if err != nil {
		return ServerEvent{}, err
	}
	return out, nil
}

// parseControl parses a control message: UTF-8 JSON text holding an
// object.
func parseControl(text []byte) (*jsonValue, *Error) {
	if !utf8.Valid(text) {
		return nil, malformed("not UTF-8")
	}
	v, ok := parseJSON(text)
	if !ok {
		return nil, malformed("not JSON")
	}
	if v.kind != jsonObject {
		return nil, malformed("not a JSON object")
	}
	return &v, nil
}

func scopeKey(data *jsonValue) (string, *Error) {
	k, ok := data.member("scopeKey")
	if !ok || k.kind != jsonString || k.s == "" {
		return "", malformed("presence.data.scopeKey is not a non-empty string")
	}
	return k.s, nil
}

func intMember(v *jsonValue, name string) (int64, bool) {
	m, ok := v.member(name)
	if !ok {
		return 0, false
	}
	return m.safeInt()
}

func malformed(msg string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "malformed realtime control message: " + msg}
}
