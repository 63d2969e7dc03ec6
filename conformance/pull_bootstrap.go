package conformance

import (
	"fmt"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-3 (pinned bootstrap pages), PULL-4 (the bootstrap
// token), PULL-5 (nothing changed during a bootstrap is lost) and the
// bootstrap half of PULL-2 (a pin below the horizon resets).

func init() {
	register(
		Case{Name: "PULL-2/bootstrap-pinned-below-horizon-resets", Run: pullPinBelowHorizon},
		Case{Name: "PULL-3/pages-pinned-ascending-every-row-once", Run: pullPages},
		Case{Name: "PULL-3/last-page-never-empty-empty-scope-one-page", Run: pullPageEdges},
		Case{Name: "PULL-4/token-altered-or-foreign-invalid-argument", Run: pullTokenChecked},
		Case{Name: "PULL-5/rows-changed-during-bootstrap-never-lost", Run: pullChangesDuringBootstrap},
	)
}

// pullRows returns todos "<prefix>01"… of project, in id order.
func pullRows(prefix, project string, n int) []driver.Row {
	rows := make([]driver.Row, n)
	for i := range rows {
		rows[i] = todo(fmt.Sprintf("%s%02d", prefix, i+1), project, "u1")
	}
	return rows
}

// pullWriteRows writes each row in a commit of its own.
func pullWriteRows(t T, conn driver.Conn, p string, rows ...driver.Row) {
	t.Helper()
	for _, r := range rows {
		winWrite(t, conn, p, winMeta(1000), winUp(tTodos, r))
	}
}

// pullPage is what a test compares of one bootstrap page.
type pullPage struct {
	Bootstrap     bool
	AsOfCommitSeq int64
	Rows          []driver.Row
	HasToken      bool
	NextCursor    int64
}

func pullPageOf(r syncstore.PullResult) pullPage {
	return pullPage{Bootstrap: r.Bootstrap, AsOfCommitSeq: r.AsOfCommitSeq, Rows: r.Rows, HasToken: r.BootstrapToken != "",
		NextCursor: r.NextCursor}
}

// Catches: a pin read after the first page (rows of commits after it would
// be in the page and their commits delivered again — harmless — but the
// pin moves between pages), a pin that follows the head, pages out of id
// order, overlapping or skipped rows, rows of another scope, a next cursor
// other than the pin.
func pullPages(t T, h Harness) {
	conn, s := pullStore(t, h)
	in := pullRows("r", "p7", 7)
	out := pullRows("r", "p8", 9)[7:] // r08, r09 of another project
	pullWriteRows(t, conn, "p1", in[3], out[0], in[0], in[6], in[1], out[1], in[5], in[2], in[4])
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 3
	r := pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: first page", pullPage{true, 9, in[:3], true, 9}, pullPageOf(r))
	// Commits after the pin do not move it.
	pullWriteRows(t, conn, "p1", pullRows("z", "p8", 2)...)
	sub.BootstrapToken = r.BootstrapToken
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: second page", pullPage{true, 9, in[3:6], true, 9}, pullPageOf(r))
	sub.BootstrapToken = r.BootstrapToken
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: last page", pullPage{true, 9, in[6:], false, 9}, pullPageOf(r))
	rec, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-3: client record's cursor after the bootstrap", int64(9), rec.Cursor)
}

// Catches: an empty last page when the rows fill the pages exactly (a
// page read of exactly the limit), a token for an empty scope, a pin other
// than the head for an empty scope or partition.
func pullPageEdges(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 6)
	pullWriteRows(t, conn, "p1", rows...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 3
	r := pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: first of two full pages", pullPage{true, 6, rows[:3], true, 6}, pullPageOf(r))
	sub.BootstrapToken = r.BootstrapToken
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: second full page is the last", pullPage{true, 6, rows[3:], false, 6}, pullPageOf(r))
	r = pullOne(t, s, "p1", pullSub("s", "p0", syncstore.PullBootstrap))
	expectEqual(t, "PULL-3: empty scope", pullPage{true, 6, nil, false, 6}, pullPageOf(r))
	r = pullOne(t, s, "empty", pullSub("s", "p7", syncstore.PullBootstrap))
	expectEqual(t, "PULL-3: partition without commits", pullPage{true, 0, nil, false, 0}, pullPageOf(r))
	sub = pullSub("s", "p7", syncstore.PullBootstrap)
	sub.Scopes = driver.ScopeFilter{"project": {"p7"}, "owner": {}}
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-3: a filter matching nothing", pullPage{true, 6, nil, false, 6}, pullPageOf(r))
}

// Catches: a pin below the horizon resumed (commits after it are gone:
// the rows changed meanwhile would never arrive) or restarted silently on
// rows the client already holds.
func pullPinBelowHorizon(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullWriteRows(t, conn, "p1", pullRows("r", "p7", 4)...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 2
	r := pullOne(t, s, "p1", sub)
	pullWriteRows(t, conn, "p1", pullRows("z", "p8", 2)...)
	sub.BootstrapToken = r.BootstrapToken
	must(t, "SetHorizonSeq(4)", conn.SetHorizonSeq(t.Context(), "p1", 4))
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-2: a pin at the horizon resumes", pullPage{true, 4, pullRows("r", "p7", 4)[2:], false, 4}, pullPageOf(r))
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(t.Context(), "p1", 5))
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-2: a pin below the horizon", syncstore.PullResult{ID: "s", Status: syncstore.PullReset,
		Reason: syncstore.CodeCursorExpired, NextCursor: syncstore.PullBootstrap}, r)
}

// Catches: tokens taken on trust (altered, truncated, made up, or sent
// with another table, filter or partition), a filter's value order or
// repeats counted as another filter, anything written on a bad token.
func pullTokenChecked(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullWriteRows(t, conn, "p1", pullRows("r", "p7", 3)...)
	pullWriteRows(t, conn, "p2", pullRows("r", "p7", 3)...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.Scopes = driver.ScopeFilter{"project": {"p7", "p8"}}
	sub.LimitRows = 1
	tok := pullOne(t, s, "p1", sub).BootstrapToken
	if tok == "" {
		t.Fatalf("PULL-3: the first page of 3 rows at limit 1 has no token")
	}
	before, _ := crGet(t, conn, "p1", "c1")
	flip := []byte(tok)
	flip[len(flip)/2] ^= 1
	alter := func(s syncstore.PullSubscription, f func(*syncstore.PullSubscription)) syncstore.PullSubscription {
		f(&s)
		return s
	}
	for _, c := range []struct {
		name string
		p    string
		sub  syncstore.PullSubscription
	}{
		{"one character altered", "p1", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = string(flip) })},
		{"truncated", "p1", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = tok[:len(tok)-2] })},
		{"extended", "p1", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = tok + "A" })},
		{"made up", "p1", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = "AQIDBAUGBwgJ" })},
		{"not base64url", "p1", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = tok + "=+/" })},
		{"another filter", "p1", alter(sub, func(s *syncstore.PullSubscription) {
			s.BootstrapToken, s.Scopes = tok, driver.ScopeFilter{"project": {"p7"}}
		})},
		{"another table", "p1", alter(sub, func(s *syncstore.PullSubscription) {
			s.BootstrapToken, s.Table, s.Scopes = tok, tUsers, driver.ScopeFilter{"org": {"p7", "p8"}}
		})},
		{"another partition", "p2", alter(sub, func(s *syncstore.PullSubscription) { s.BootstrapToken = tok })},
	} {
		_, err := s.Pull(t.Context(), c.p, pullReq(c.sub))
		expectCode(t, "PULL-4: token "+c.name, err, driver.CodeInvalidArgument)
	}
	after, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-4: client record after the bad tokens", before, after)
	_, found := crGet(t, conn, "p2", "c1")
	expectEqual(t, "PULL-4: a client record in the other partition", false, found)

	// The same filter, values reordered and repeated, resumes.
	sub.BootstrapToken, sub.Scopes = tok, driver.ScopeFilter{"project": {"p8", "p7", "p8"}}
	r := pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-4: the second page with the filter's values reordered", pullPage{true, 3, pullRows("r", "p7", 3)[1:2], true, 3},
		pullPageOf(r))
}

// Catches: a pin taken after the first page's rows (or from a later head),
// a bootstrap that ends at the head instead of its pin, or next cursors
// that skip commits: a row created, changed or deleted while the bootstrap
// runs, before or after the page it falls in, must reach the client.
func pullChangesDuringBootstrap(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 9)
	pullWriteRows(t, conn, "p1", rows...)
	pullWriteRows(t, conn, "p1", pullRows("q", "p8", 2)...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows, sub.LimitChanges = 3, 2
	rep := newPullReplica(sub)
	edit := func(r driver.Row, title string) driver.Row {
		r.ServerVersion++
		r.Values = driver.Values{"id": r.ID, "title": title, "done": true, "project_id": "p7", "owner_id": "u1",
			"updated_at": int64(1700000000001)}
		return r
	}
	rep.apply(t, pullOne(t, s, "p1", rep.sub)) // r01…r03
	winWrite(t, conn, "p1", winMeta(2000), winUp(tTodos, edit(rows[1], "changed after it was sent")),
		winDel(tTodos, rows[2]), winDel(tTodos, rows[4]))
	winWrite(t, conn, "p1", winMeta(2000), winUp(tTodos, todo("r00", "p7", "u1")), winUp(tTodos, todo("r10", "p7", "u1")))
	winWrite(t, conn, "p1", winMeta(2000), winUp(tTodos, edit(rows[6], "changed before it was sent")))
	rep.apply(t, pullOne(t, s, "p1", rep.sub)) // r04, r06, r07
	winWrite(t, conn, "p1", winMeta(2000), winUp(tTodos, edit(rows[0], "changed between pages")), winDel(tTodos, rows[8]))
	winWrite(t, conn, "p1", winMeta(2000), winUp(tTodos, todo("q9", "p8", "u1")))
	rep.sync(t, s, "p1", 20)
	expectEqual(t, "PULL-5: the replica after the bootstrap and the pulls after it", pullServerRows(t, conn, "p1", rep.sub), rep.sorted())
	if rep.pulls > 8 {
		t.Errorf("PULL-5: %d pulls to catch up; 3 pages and 4 windows of 2 changes need at most 8", rep.pulls)
	}
}
