package ssp2_test

import (
	"errors"
	"testing"

	"github.com/syncstore/syncstore/ssp2"
)

func TestRealtimeEncode(t *testing.T) {
	for _, c := range []struct {
		got  func() ([]byte, error)
		want string
	}{
		{func() ([]byte, error) { return ssp2.Heartbeat{Timestamp: 5}.AppendJSON(nil) }, `{"event":"heartbeat","data":{"timestamp":5}}`},
		{func() ([]byte, error) {
			return ssp2.SyncWake{Cursor: 64, Reason: ssp2.WakeResetRequired, Timestamp: 1}.AppendJSON(nil)
		}, `{"event":"sync","data":{"cursor":64,"requiresPull":true,"reason":"reset-required","timestamp":1}}`},
		{func() ([]byte, error) {
			return ssp2.PresenceEvent{ScopeKey: "project:p1", Kind: ssp2.PresenceLeave, ActorID: "a", ClientID: "c", Timestamp: 2}.AppendJSON(nil)
		}, `{"event":"presence","data":{"scopeKey":"project:p1","kind":"leave","actorId":"a","clientId":"c","doc":null,"timestamp":2}}`},
		{func() ([]byte, error) {
			return ssp2.PresenceEvent{ScopeKey: "k", Kind: ssp2.PresenceUpdate, Doc: ` {"x": 1.0, "y":[ ]} `}.AppendJSON(nil)
		}, `{"event":"presence","data":{"scopeKey":"k","kind":"update","actorId":"","clientId":"","doc":{"x":1,"y":[]},"timestamp":0}}`},
		{func() ([]byte, error) {
			return ssp2.PresenceError{ScopeKey: "k", Error: ssp2.PresenceForbidden, Timestamp: 3}.AppendJSON(nil)
		}, `{"event":"presence","data":{"scopeKey":"k","error":"presence.forbidden","timestamp":3}}`},
		{func() ([]byte, error) { return ssp2.Ack{Cursor: -1}.AppendJSON(nil) }, `{"type":"ack","cursor":-1}`},
		{func() ([]byte, error) { return ssp2.PresencePublish{ScopeKey: "k"}.AppendJSON(nil) }, `{"event":"presence","data":{"scopeKey":"k","doc":null}}`},
	} {
		got, err := c.got()
		if err != nil || string(got) != c.want {
			t.Errorf("got %s, %v\nwant %s", got, err, c.want)
		}
	}
	for name, f := range map[string]func() ([]byte, error){
		"unknown reason": func() ([]byte, error) { return ssp2.SyncWake{Reason: "later"}.AppendJSON(nil) },
		"unsafe cursor":  func() ([]byte, error) { return ssp2.Hello{Cursor: ssp2.MaxSafeInt + 1}.AppendJSON(nil) },
		"bad UTF-8":      func() ([]byte, error) { return ssp2.Hello{SessionID: "\xff"}.AppendJSON(nil) },
		"join without doc": func() ([]byte, error) {
			return ssp2.PresenceEvent{ScopeKey: "k", Kind: ssp2.PresenceJoin}.AppendJSON(nil)
		},
		"leave with doc": func() ([]byte, error) {
			return ssp2.PresenceEvent{ScopeKey: "k", Kind: ssp2.PresenceLeave, Doc: `{}`}.AppendJSON(nil)
		},
		"array doc": func() ([]byte, error) { return ssp2.PresencePublish{ScopeKey: "k", Doc: `[]`}.AppendJSON(nil) },
		"unknown kind": func() ([]byte, error) {
			return ssp2.PresenceEvent{ScopeKey: "k", Kind: "snapshot", Doc: `{}`}.AppendJSON(nil)
		},
		"empty scope key": func() ([]byte, error) { return ssp2.PresencePublish{Doc: `{}`}.AppendJSON(nil) },
		"unknown error":   func() ([]byte, error) { return ssp2.PresenceError{ScopeKey: "k", Error: "presence.x"}.AppendJSON(nil) },
	} {
		if b, err := f(); !errors.Is(err, ssp2.ErrEncode) || len(b) != 0 {
			t.Errorf("%s: %s, %v", name, b, err)
		}
	}
}

func TestRealtimeParse(t *testing.T) {
	for text, want := range map[string]ssp2.ClientMessage{
		`{"type":"ack","cursor":12}`:   {Kind: ssp2.ClientAck, Name: "ack", Ack: ssp2.Ack{Cursor: 12}},
		`{"type":"ack","cursor":12.0}`: {Kind: ssp2.ClientAck, Name: "ack", Ack: ssp2.Ack{Cursor: 12}},
		`{"type":"subscribe"}`:         {Name: "subscribe"},
		`{"event":"future","data":1}`:  {Name: "future"},
		`{}`:                           {},
		`{"event":"presence","data":{"scopeKey":"k","doc":null,"extra":1}}`:      {Kind: ssp2.ClientPresence, Name: "presence", Presence: ssp2.PresencePublish{ScopeKey: "k"}},
		`{"event":"presence","data":{"scopeKey":"k","doc":{"b":1,"a":[true]}}}`:  {Kind: ssp2.ClientPresence, Name: "presence", Presence: ssp2.PresencePublish{ScopeKey: "k", Doc: `{"b":1,"a":[true]}`}},
		`{"event":"presence","data":{"scopeKey":"k","doc":{"2":0,"1":0,"z":0}}}`: {Kind: ssp2.ClientPresence, Name: "presence", Presence: ssp2.PresencePublish{ScopeKey: "k", Doc: `{"1":0,"2":0,"z":0}`}},
	} {
		got, err := ssp2.ParseClientMessage([]byte(text))
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", text, got, err, want)
		}
	}
	for _, bad := range []string{
		``, `[]`, `"x"`, "{\"type\":\"ack\",\"cursor\":1}\xff", `{"type":"ack"}`, `{"type":"ack","cursor":1.5}`, `{"type":"ack","cursor":"1"}`,
		`{"type":"ack","cursor":9007199254740992}`, `{"event":"presence"}`, `{"event":"presence","data":{"doc":null}}`,
		`{"event":"presence","data":{"scopeKey":"","doc":null}}`, `{"event":"presence","data":{"scopeKey":"k"}}`,
		`{"event":"presence","data":{"scopeKey":"k","doc":[1]}}`, `{"event":"presence","data":{"scopeKey":"k","doc":"x"}}`,
	} {
		if _, err := ssp2.ParseClientMessage([]byte(bad)); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%q: %v", bad, err)
		}
	}
	ev, err := ssp2.ParseServerEvent([]byte(`{"event":"welcome","data":"anything"}`))
	if err != nil || ev.Kind != ssp2.EventUnknown || ev.Name != "welcome" {
		t.Errorf("unknown event: %+v, %v", ev, err)
	}
	ev, err = ssp2.ParseServerEvent([]byte(`{"event":"presence","data":{"scopeKey":"k","error":"presence.too_large","timestamp":4}}`))
	if err != nil || ev.Kind != ssp2.EventPresenceError || ev.PresenceError != (ssp2.PresenceError{ScopeKey: "k", Error: ssp2.PresenceTooLarge, Timestamp: 4}) {
		t.Errorf("presence error: %+v, %v", ev, err)
	}
	for _, bad := range []string{
		`{"data":{}}`, `{"event":1}`, `{"event":"heartbeat"}`, `{"event":"heartbeat","data":{"timestamp":1e400}}`,
		`{"event":"sync","data":{"cursor":1,"requiresPull":true,"reason":"later","timestamp":1}}`,
		`{"event":"sync","data":{"cursor":1,"reason":"catchup-required","timestamp":1}}`,
		`{"event":"sync","data":{"cursor":1,"requiresPull":"true","reason":"catchup-required","timestamp":1}}`,
		`{"event":"hello","data":{"protocolVersion":1,"sessionId":"s","actorId":"a","clientId":"c","cursor":1,"latestCursor":2,"requiresSync":1,"timestamp":3}}`,
		`{"event":"presence","data":{"scopeKey":"k","kind":"leave","actorId":"a","clientId":"c","doc":{},"timestamp":1}}`,
		`{"event":"presence","data":{"scopeKey":"k","kind":"leave","actorId":"a","clientId":"c","timestamp":1}}`,
		`{"event":"presence","data":{"scopeKey":"k","kind":"join","actorId":"a","clientId":"c","doc":null,"timestamp":1}}`,
		`{"event":"presence","data":{"scopeKey":"k","kind":"join","actorId":"a","doc":{},"timestamp":1}}`,
		`{"event":"presence","data":{"scopeKey":"k","error":"presence.other","timestamp":1}}`,
		`{"event":"presence","data":{"scopeKey":"k","doc":{}}}`,
	} {
		if _, err := ssp2.ParseServerEvent([]byte(bad)); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
