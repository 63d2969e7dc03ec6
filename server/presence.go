package server

import (
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// Presence (SPEC §8.6): each partition's registry maps a scope key to the
// sessions present on it and their documents. A session may publish only
// to, and receives only for, the keys its registrations' effective scopes
// cover (§8.6.3); the registry lives in memory and dies with the session.

// publish handles a client's publish or leave on scopeKey (doc "" leaves).
func (ss *session) publish(p ssp2.PresencePublish) {
	h := ss.s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := ss.part
	if ph == nil {
		return
	}
	if _, held := ss.keys[p.ScopeKey]; !held {
		ss.presenceError(p.ScopeKey, ssp2.PresenceForbidden)
		return
	}
	if p.Doc == "" {
		h.leaveLocked(ph, ss, p.ScopeKey)
		return
	}
	if len(p.Doc) > ss.s.lim.MaxPresenceBytes {
		ss.presenceError(p.ScopeKey, ssp2.PresenceTooLarge)
		return
	}
	docs := ph.presence[p.ScopeKey]
	if docs == nil {
		docs = map[*session]sync.JSON{}
		ph.presence[p.ScopeKey] = docs
	}
	kind := ssp2.PresenceUpdate
	if _, ok := docs[ss]; !ok {
		kind = ssp2.PresenceJoin
	}
	docs[ss] = p.Doc
	h.fanPresenceLocked(ph, ss, p.ScopeKey, kind, p.Doc)
}

// leaveLocked removes ss's document on key and tells the key's other
// holders (h.mu held).
func (h *hub) leaveLocked(ph *partHub, ss *session, key string) {
	docs := ph.presence[key]
	if _, ok := docs[ss]; !ok {
		return
	}
	delete(docs, ss)
	if len(docs) == 0 {
		delete(ph.presence, key)
	}
	h.fanPresenceLocked(ph, ss, key, ssp2.PresenceLeave, "")
}

// fanPresenceLocked sends a presence change of origin to every other
// session of the partition registered on key (h.mu held).
func (h *hub) fanPresenceLocked(ph *partHub, origin *session, key string, kind ssp2.PresenceKind, doc sync.JSON) {
	ev := ssp2.PresenceEvent{ScopeKey: key, Kind: kind, ActorID: origin.id.ActorID, ClientID: origin.clientID, Doc: doc,
		Timestamp: h.s.nowMs()}
	b, err := ev.AppendJSON(nil)
	if err != nil {
		return
	}
	for peer := range ph.sessions {
		if peer == origin {
			continue
		}
		if _, held := peer.keys[key]; held {
			peer.sendText(b)
		}
	}
}

// reconcilePresenceLocked follows a change of ss's scope keys (§8.6.3):
// its documents on keys it lost leave, and the peers present on keys it
// gained are sent to it as a burst of joins (h.mu held).
func (h *hub) reconcilePresenceLocked(ss *session, old map[string]struct{}) {
	ph := ss.part
	if ph == nil {
		return
	}
	for key := range old {
		if _, still := ss.keys[key]; !still {
			h.leaveLocked(ph, ss, key)
		}
	}
	for key := range ss.keys {
		if _, had := old[key]; !had {
			h.snapshotLocked(ph, ss, key)
		}
	}
}

// snapshotLocked sends ss a join for each peer present on key (§8.6.4).
func (h *hub) snapshotLocked(ph *partHub, ss *session, key string) {
	for peer, doc := range ph.presence[key] {
		if peer == ss {
			continue
		}
		ev := ssp2.PresenceEvent{ScopeKey: key, Kind: ssp2.PresenceJoin, ActorID: peer.id.ActorID, ClientID: peer.clientID,
			Doc: doc, Timestamp: h.s.nowMs()}
		if b, err := ev.AppendJSON(nil); err == nil {
			ss.sendText(b)
		}
	}
}

// presenceError tells the publisher its publish was refused (§8.6.2).
func (ss *session) presenceError(key, code string) {
	b, err := ssp2.PresenceError{ScopeKey: key, Error: code, Timestamp: ss.s.nowMs()}.AppendJSON(nil)
	if err == nil {
		ss.sendText(b)
	}
}
