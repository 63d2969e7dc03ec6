package conformance

import (
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-11 (RestartBootstraps: a subscription that cannot go on
// bootstraps afresh) and PULL-12 (the client record keeps RecordScopes).

func init() {
	register(
		Case{Name: "PULL-11/unusable-token-restarts-a-fresh-bootstrap", Run: pullRestartBadToken},
		Case{Name: "PULL-11/pin-or-cursor-outside-the-log-restarts-at-the-head", Run: pullRestartPins},
		Case{Name: "PULL-11/restarted-client-converges", Run: pullRestartConverges},
		Case{Name: "PULL-12/record-keeps-record-scopes-reads-scopes", Run: pullRecordScopes},
	)
}

// pullFresh is the result of a fresh bootstrap of sub pinned at head
// (its rows left out).
func pullFresh(id string, head int64) syncstore.PullResult {
	return syncstore.PullResult{ID: id, Status: syncstore.PullActive, Bootstrap: true, Fresh: true,
		AsOfCommitSeq: head, NextCursor: head}
}

// pullNoRows returns r without its rows and token, and whether it had a
// token.
func pullNoRows(r syncstore.PullResult) (syncstore.PullResult, bool) {
	had := hasToken(&r)
	r.Rows = nil
	return r, had
}

// Catches: with RestartBootstraps, a token that does not verify still
// failing the pull, resumed as if it did (rows skipped), or restarted
// without saying so (Fresh false: the client would keep rows deleted
// meanwhile) or at a pin other than the head; without it, any of those
// tokens accepted.
func pullRestartBadToken(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 5)
	pullWriteRows(t, conn, "p1", rows...)
	pullWriteRows(t, conn, "p2", rows[:3]...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 2
	tok := pullOne(t, s, "p1", sub).BootstrapToken
	tok2 := pullOne(t, s, "p2", sub).BootstrapToken
	pullWriteRows(t, conn, "p1", pullRows("z", "p8", 1)...) // head 6
	flip := []byte(tok)
	flip[len(flip)/2] ^= 1
	for _, c := range []struct {
		name  string
		token string
		scope []string
	}{
		{"one character altered", string(flip), nil},
		{"truncated", tok[:len(tok)-2], nil},
		{"made up", "AQIDBAUGBwgJ", nil},
		{"not base64url", tok + "=+/", nil},
		{"over 512 bytes", strings.Repeat("A", 600), nil},
		{"issued for another filter", tok, []string{"p7", "p8"}},
		{"issued for another partition", tok2, nil},
	} {
		bad := sub
		bad.BootstrapToken = c.token
		if c.scope != nil {
			bad.Scopes = driver.ScopeFilter{"project": c.scope}
		}
		req := pullReq(bad)
		_, err := s.Pull(t.Context(), "p1", req)
		expectCode(t, "PULL-4: token "+c.name+" without RestartBootstraps", err, driver.CodeInvalidArgument)
		req.RestartBootstraps = true
		resp := pullDo(t, s, "p1", req)
		got, token := pullNoRows(resp.Subscriptions[0])
		expectEqual(t, "PULL-11: token "+c.name+": the result", pullFresh("s", 6), got)
		expectEqual(t, "PULL-11: token "+c.name+": a token for the next page", true, token)
		expectEqual(t, "PULL-11: token "+c.name+": the first page", rows[:2], resp.Subscriptions[0].Rows)
	}
	// A token that verifies resumes as ever.
	sub.BootstrapToken = tok
	req := pullReq(sub)
	req.RestartBootstraps = true
	r := pullDo(t, s, "p1", req).Subscriptions[0]
	expectEqual(t, "PULL-11: a token that verifies resumes", rows[2:4], r.Rows)
	got, _ := pullNoRows(r)
	expectEqual(t, "PULL-11: the resumed result", syncstore.PullResult{ID: "s", Status: syncstore.PullActive,
		Bootstrap: true, AsOfCommitSeq: 5, NextCursor: 5}, got)
}

// Catches: with RestartBootstraps, a resumed pin below the horizon or
// beyond the head, or a cursor beyond the head, reset (or failed) instead
// of restarted; a restart that keeps the old pin (below the horizon: the
// commits after it are gone; beyond the head: commits up to it would be
// skipped) or resumes after the token's row; a cursor below the horizon
// restarted instead of reset; the record cursor not the restart's pin.
func pullRestartPins(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 4)
	pullWriteRows(t, conn, "p1", rows...) // 1…4
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 2
	tok := pullOne(t, s, "p1", sub).BootstrapToken          // pinned at 4, after r02
	pullWriteRows(t, conn, "p1", pullRows("z", "p8", 3)...) // 5…7
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(t.Context(), "p1", 5))

	restart := func(subs ...syncstore.PullSubscription) []syncstore.PullResult {
		req := pullReq(subs...)
		req.RestartBootstraps = true
		return pullDo(t, s, "p1", req).Subscriptions
	}
	below := sub
	below.BootstrapToken = tok
	ahead := pullSub("ahead", "p7", 8)
	ahead.LimitRows = 2
	expiredCursor := pullSub("expired", "p7", 4)
	atHorizon := pullSub("at", "p8", 5)
	res := restart(below, ahead, expiredCursor, atHorizon)
	got, _ := pullNoRows(res[0])
	expectEqual(t, "PULL-11: a resumed pin below the horizon restarts at the head", pullFresh("s", 7), got)
	expectEqual(t, "PULL-11: its first page", rows[:2], res[0].Rows)
	got, _ = pullNoRows(res[1])
	expectEqual(t, "PULL-11: a cursor beyond the head restarts at the head", pullFresh("ahead", 7), got)
	expectEqual(t, "PULL-11: its first page", rows[:2], res[1].Rows)
	expectEqual(t, "PULL-11: a cursor below the horizon is still reset", syncstore.PullResult{ID: "expired",
		Status: syncstore.PullReset, Reason: syncstore.CodeCursorExpired, NextCursor: syncstore.PullBootstrap}, res[2])
	expectEqual(t, "PULL-11: a cursor at the horizon is served", []int64{6, 7}, pullSeqs(res[3]))
	rec, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-11: the record's cursor", int64(7), rec.Cursor)

	// A pin beyond the head: a token of a store whose log is ahead of
	// this one (a restored backup), for the same partition, table and
	// filter.
	conn2, s2 := pullStore(t, h)
	pullWriteRows(t, conn2, "p1", rows[:2]...) // head 2
	beyond := sub
	beyond.BootstrapToken = tok // pinned at 4
	_, err := s2.Pull(t.Context(), "p1", pullReq(beyond))
	must(t, "Pull with a pin beyond the head, without RestartBootstraps", err)
	req := pullReq(beyond)
	req.RestartBootstraps = true
	r := pullDo(t, s2, "p1", req).Subscriptions[0]
	got, token := pullNoRows(r)
	expectEqual(t, "PULL-11: a resumed pin beyond the head restarts at the head", pullFresh("s", 2), got)
	expectEqual(t, "PULL-11: its page", rows[:2], r.Rows)
	expectEqual(t, "PULL-11: its token", false, token)
}

// Catches: a restart the client cannot tell from a resume (rows deleted
// since its first bootstrap survive in its replica), or a restarted
// bootstrap that does not converge with the commits after its pin.
func pullRestartConverges(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 6)
	pullWriteRows(t, conn, "p1", rows...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows, sub.LimitChanges = 2, 2
	rep := newPullReplica(sub)
	rep.apply(t, pullOne(t, s, "p1", rep.sub)) // r01, r02 at pin 6
	winWrite(t, conn, "p1", winMeta(2000), winDel(tTodos, rows[0]), winUp(tTodos, todo("r025", "p7", "u1")))
	pullWriteRows(t, conn, "p1", pullRows("z", "p8", 2)...)
	must(t, "SetHorizonSeq(8)", conn.SetHorizonSeq(t.Context(), "p1", 8))
	for range 10 {
		req := pullReq(rep.sub)
		req.RestartBootstraps = true
		resp := pullDo(t, s, "p1", req)
		rep.apply(t, resp.Subscriptions[0])
		if rep.sub.BootstrapToken == "" && rep.sub.Cursor == resp.MaxCommitSeq {
			break
		}
	}
	expectEqual(t, "PULL-11: resets of a replica restarted from a pin below the horizon", 0, rep.resets)
	expectEqual(t, "PULL-11: the replica after the restart", pullServerRows(t, conn, "p1", rep.sub), rep.sorted())
}

// Catches: RecordScopes read instead of Scopes (rows or commits of the
// recorded scopes the actor was not given), not recorded (the record
// holds Scopes), an empty RecordScopes taken for nil, RecordScopes
// counted in the token's binding, bad RecordScopes accepted or written.
func pullRecordScopes(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullWriteRows(t, conn, "p1", pullRows("r", "p7", 3)...)
	pullWriteRows(t, conn, "p1", pullRows("q", "p8", 2)...)
	boot := pullSub("boot", "p7", syncstore.PullBootstrap)
	boot.LimitRows = 2
	boot.RecordScopes = driver.ScopeFilter{"project": {"p8", "p7"}, "owner": {"u1"}}
	win := pullSub("win", "p7", 0)
	win.RecordScopes = driver.ScopeFilter{"project": {"p7", "p8"}}
	plain := pullSub("plain", "p8", 5)
	none := pullSub("none", "p8", 5)
	none.RecordScopes = driver.ScopeFilter{}
	resp := pullDo(t, s, "p1", pullReq(boot, win, plain, none))
	expectEqual(t, "PULL-12: the bootstrap page reads Scopes", pullRows("r", "p7", 2), resp.Subscriptions[0].Rows)
	expectEqual(t, "PULL-12: the window reads Scopes", []int64{1, 2, 3}, pullSeqs(resp.Subscriptions[1]))
	rec, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-12: the record's subscriptions", []driver.Subscription{
		{ID: "boot", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p8", "p7"}, "owner": {"u1"}}},
		{ID: "win", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7", "p8"}}},
		{ID: "plain", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p8"}}},
		{ID: "none", Table: tTodos},
	}, rec.Subscriptions)

	// The token is bound to Scopes, not to RecordScopes.
	boot.BootstrapToken = resp.Subscriptions[0].BootstrapToken
	boot.RecordScopes = driver.ScopeFilter{"project": {"p9"}}
	r := pullOne(t, s, "p1", boot)
	expectEqual(t, "PULL-12: the next page with other RecordScopes", pullRows("r", "p7", 3)[2:], r.Rows)

	// Bad RecordScopes: refused, nothing written.
	before, _ := crGet(t, conn, "p1", "c1")
	for name, f := range map[string]driver.ScopeFilter{
		"an empty key":              {"": {"x"}},
		"a value that is not UTF-8": {"project": {"\xff"}},
		"a value with NUL":          {"project": {"a\x00"}},
	} {
		bad := plain
		bad.RecordScopes = f
		req := pullReq(bad)
		req.AtMs = pullAt + 1
		_, err := s.Pull(t.Context(), "p1", req)
		expectCode(t, "PULL-12: RecordScopes with "+name, err, driver.CodeInvalidArgument)
	}
	after, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-12: the record after bad RecordScopes", before, after)
}
