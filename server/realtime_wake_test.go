package server

import (
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// TestRealtimeRoundEndWakesOnlyForMatches: a commit that lands while a
// socket round is open, past the head its pull served, owes a
// catchup-required wake-up at the round's end only when the registrations
// the round installs match it (§8.7); a commit of another scope owes
// nothing, and a stretch of the log the session observed without reading
// still owes one (the client might have missed something). The session is
// driven directly so that the commit lands between the pull and END
// deterministically. "The head" is what the client holds after the round:
// its SUB_ENDs' least nextCursor, below the head the pull read when a
// subscription was truncated or bootstrapped at an older pin.
func TestRealtimeRoundEndWakesOnlyForMatches(t *testing.T) {
	e := newEnv(t, sqliteLane())
	tasks := e.srv.tables["tasks"]
	change := func(project string) sync.Change {
		return sync.Change{Table: "tasks", RowID: "r" + project, Op: sync.OpUpsert, Scopes: sync.Scopes{"project_id": project}}
	}
	const head = 4
	cases := []struct {
		name string
		land func(ss *session)
		want ssp2.WakeReason
		held int64 // the round's SUB_END nextCursor; 0: the head
	}{
		{"another scope past the head", func(ss *session) {
			ss.deliver(sync.Commit{Seq: head + 1, Changes: []sync.Change{change("p2")}})
		}, "", 0},
		{"another scope, own commit", func(ss *session) {
			ss.ownCommit(sync.Commit{Seq: head + 1, Changes: []sync.Change{change("p2")}})
		}, "", 0},
		{"the new registration's scope past the head", func(ss *session) {
			ss.deliver(sync.Commit{Seq: head + 1, Changes: []sync.Change{change("p2"), change("p1")}})
		}, ssp2.WakeCatchupRequired, 0},
		{"the new registration's scope within the head", func(ss *session) {
			ss.deliver(sync.Commit{Seq: head, Changes: []sync.Change{change("p1")}})
		}, "", 0},
		{"observed blind past the head", func(ss *session) { ss.observeBlind(head + 1) }, ssp2.WakeCatchupRequired, 0},
		{"observed blind within the head", func(ss *session) { ss.observeBlind(head) }, "", 0},
		{"the new registration's scope within the head, past what the pull left the client", func(ss *session) {
			ss.deliver(sync.Commit{Seq: head, Changes: []sync.Change{change("p1")}})
		}, ssp2.WakeCatchupRequired, head - 1},
		{"observed blind within the head, past what the pull left the client", func(ss *session) { ss.observeBlind(head) }, ssp2.WakeCatchupRequired, head - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := &session{s: e.srv, cursor: -1, wv: ssp2.MaxWireVersion, notify: make(chan struct{}, 1), roundOpen: true}
			c.land(ss)
			held := c.held
			if held == 0 {
				held = head
			}
			ss.roundEnd(&round{pulled: true, pullHead: head, wv: ssp2.MaxWireVersion, subs: []*subPlan{
				{frame: &ssp2.Subscription{ID: "s1"}, t: tasks, active: true, eff: p1, held: held}}})
			ss.mu.Lock()
			defer ss.mu.Unlock()
			if ss.owed != c.want || ss.roundOpen || len(ss.regs) != 1 {
				t.Fatalf("owed %q (want %q), roundOpen %v, %d registrations", ss.owed, c.want, ss.roundOpen, len(ss.regs))
			}
		})
	}
}

// TestRealtimeRoundEndHeardBound: past maxHeardTouches what a round hears
// counts as unread, so the round's end still owes a wake-up for it.
func TestRealtimeRoundEndHeardBound(t *testing.T) {
	e := newEnv(t, sqliteLane())
	ss := &session{s: e.srv, cursor: -1, wv: ssp2.MaxWireVersion, notify: make(chan struct{}, 1), roundOpen: true}
	var chs []sync.Change
	for i := range maxHeardTouches + 1 {
		chs = append(chs, sync.Change{Table: "tasks", RowID: "r", Op: sync.OpUpsert, Scopes: sync.Scopes{"project_id": fmt.Sprintf("q%d", i)}})
	}
	ss.deliver(sync.Commit{Seq: 5, Changes: chs})
	ss.roundEnd(&round{pulled: true, pullHead: 4, wv: ssp2.MaxWireVersion, subs: []*subPlan{
		{frame: &ssp2.Subscription{ID: "s1"}, t: e.srv.tables["tasks"], active: true, eff: p1, held: 4}}})
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.owed != ssp2.WakeCatchupRequired || ss.heardN != 0 || ss.heard != nil {
		t.Fatalf("owed %q, %d touches kept", ss.owed, ss.heardN)
	}
}
