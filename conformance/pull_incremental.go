package conformance

import (
	"context"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-2 (resets at the horizon and beyond the head), PULL-6
// (incremental windows of whole commits) and PULL-7 (the next cursor).

func init() {
	register(
		Case{Name: "PULL-2/cursor-below-horizon-resets-at-horizon-served", Run: pullBelowHorizon},
		Case{Name: "PULL-2/cursor-beyond-head-resets", Run: pullBeyondHead},
		Case{Name: "PULL-6/whole-commits-matching-changes-up-to-limit", Run: pullWholeCommits},
		Case{Name: "PULL-7/cursor-passes-commits-that-missed-the-scope", Run: pullQuietScope},
		Case{Name: "PULL-7/every-subscription-served-through-one-head", Run: pullOneHead},
	)
}

// pullSeqs returns the seqs of a result's commits.
func pullSeqs(r syncstore.PullResult) []int64 { return seqs(r.Commits) }

// Catches: a reset decided against a horizon read apart from the window
// (or not at all), a reset at cursor == horizon, a reset that still
// carries commits or a cursor the client would resume from, one expired
// subscription failing the whole pull or its neighbours.
func pullBelowHorizon(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 6)
	must(t, "SetHorizonSeq(3)", conn.SetHorizonSeq(t.Context(), "p1", 3))
	_, err := conn.PruneCommitsThrough(t.Context(), "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)

	resp := pullDo(t, s, "p1", pullReq(pullSub("below", "p7", 2), pullSub("at", "p7", 3), pullSub("zero", "p8", 0)))
	want := syncstore.PullResult{ID: "below", Status: syncstore.PullReset, Reason: syncstore.CodeCursorExpired,
		NextCursor: syncstore.PullBootstrap}
	expectEqual(t, "PULL-2: subscription whose cursor is below the horizon", want, resp.Subscriptions[0])
	at := resp.Subscriptions[1]
	expectEqual(t, "PULL-2: status at the horizon", syncstore.PullActive, at.Status)
	expectEqual(t, "PULL-2: commits served at the horizon", []int64{4, 5, 6}, pullSeqs(at))
	expectEqual(t, "PULL-2: next cursor at the horizon", int64(6), at.NextCursor)
	expectEqual(t, "PULL-2: a quiet subscription at cursor 0 below the horizon", want.Reason, resp.Subscriptions[2].Reason)

	// Horizon raised without pruning anything: still a reset (HZ-4).
	must(t, "SetHorizonSeq(5)", conn.SetHorizonSeq(t.Context(), "p1", 5))
	r := pullOne(t, s, "p1", pullSub("at", "p7", 4))
	expectEqual(t, "PULL-2: cursor 4 under horizon 5, nothing pruned yet", want.Reason, r.Reason)
	expectEqual(t, "PULL-2: its commits", []int64(nil), pullSeqs(r))
}

// Catches: a cursor the store never issued served as if valid (an empty
// window and the cursor kept, or moved back to the head silently).
func pullBeyondHead(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 3)
	resp := pullDo(t, s, "p1", pullReq(pullSub("ahead", "p7", 4), pullSub("head", "p7", 3)))
	expectEqual(t, "PULL-2: cursor beyond the head", syncstore.PullResult{ID: "ahead", Status: syncstore.PullReset,
		Reason: syncstore.CodeCursorAhead, NextCursor: syncstore.PullBootstrap}, resp.Subscriptions[0])
	expectEqual(t, "PULL-2: cursor at the head", syncstore.PullResult{ID: "head", Status: syncstore.PullActive,
		NextCursor: 3}, resp.Subscriptions[1])
	r := pullOne(t, s, "empty", pullSub("s", "p7", 1))
	expectEqual(t, "PULL-2: cursor 1 on a partition without commits", syncstore.CodeCursorAhead, r.Reason)
}

// Catches: a split commit, non-matching changes delivered or counted, a
// limit counted in commits, a next cursor past commits not delivered.
func pullWholeCommits(t T, h Harness) {
	conn, s := pullStore(t, h)
	// Matching (p7) changes per commit: 2, 3, 1, 4; each also changes a
	// p8 row first.
	var log []driver.Commit
	for i, n := range []int{2, 3, 1, 4} {
		ops := append([]winOp{winUp(tTodos, todo("x"+string(rune('a'+i)), "p8", "u1"))},
			winTodos("c"+string(rune('a'+i)), "p7", n)...)
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(1000*(i+1))), ops...))
	}
	sub := pullSub("s", "p7", 0)
	sub.LimitChanges = 4
	filter := sub.Scopes
	r := pullOne(t, s, "p1", sub)
	want := winModel(log, driver.WindowQuery{Table: tTodos, Filter: filter, AfterSeq: 0, ThroughSeq: 2, LimitChanges: winAll})
	expectEqual(t, "PULL-6: first window (limit 4: commits of 2 and 3 changes)", want, r.Commits)
	expectEqual(t, "PULL-7: next cursor after a window that reached its limit", int64(2), r.NextCursor)
	sub.Cursor = r.NextCursor
	r = pullOne(t, s, "p1", sub)
	want = winModel(log, driver.WindowQuery{Table: tTodos, Filter: filter, AfterSeq: 2, ThroughSeq: 4, LimitChanges: winAll})
	expectEqual(t, "PULL-6: second window (1 + 4 changes, the last commit whole)", want, r.Commits)
	expectEqual(t, "PULL-7: next cursor", int64(4), r.NextCursor)
	sub.Cursor = r.NextCursor
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-6: caught up", syncstore.PullResult{ID: "s", Status: syncstore.PullActive, NextCursor: 4}, r)
}

// Catches: a next cursor left at the last matching commit (a quiet scope
// re-reads the log on every pull), moved to the head when the window hit
// its limit (matching commits after it would be skipped), or moved past
// the head the pull read.
func pullQuietScope(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "a", "p7", 2) // 1, 2: in scope
	pullTodos(t, conn, "p1", "b", "p8", 5) // 3…7: other scope
	pullTodos(t, conn, "p1", "c", "p7", 2) // 8, 9: in scope
	pullTodos(t, conn, "p1", "d", "p8", 3) // 10…12: other scope
	sub := pullSub("s", "p7", 0)
	sub.LimitChanges = 2
	r := pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-7: window at its limit", []int64{1, 2}, pullSeqs(r))
	expectEqual(t, "PULL-7: cursor of a window at its limit (the last commit returned)", int64(2), r.NextCursor)
	sub.Cursor, sub.LimitChanges = 2, 3
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-7: window under its limit", []int64{8, 9}, pullSeqs(r))
	expectEqual(t, "PULL-7: cursor of a window under its limit (the head)", int64(12), r.NextCursor)
	sub.Cursor = 9
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-7: quiet scope from 9", syncstore.PullResult{ID: "s", Status: syncstore.PullActive, NextCursor: 12}, r)
	sub.Cursor = 0
	sub.Scopes = driver.ScopeFilter{"project": {}}
	r = pullOne(t, s, "p1", sub)
	expectEqual(t, "PULL-7: a filter matching nothing moves to the head", syncstore.PullResult{ID: "s",
		Status: syncstore.PullActive, NextCursor: 12}, r)
}

// pullCommitDuring is a Conn whose first window read lands a commit of
// project p7 on p1 before it reads: a push racing the pull.
// Pull may read its subscriptions concurrently.
type pullCommitDuring struct {
	driver.Conn
	once gosync.Once
	err  error
}

func (c *pullCommitDuring) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	c.once.Do(func() { c.err = pullWriteOne(ctx, c.Conn, todo("late", "p7", "u1"), false, 9000) })
	if c.err != nil {
		return nil, c.err
	}
	return c.Conn.ReadCommitWindow(ctx, p, q)
}

// Catches: subscriptions read through their own, later heads (or through
// no bound): a commit landing during the pull then reaches one
// subscription and not another, and the client's cursors disagree with
// the response's head.
func pullOneHead(t T, h Harness) {
	conn, _ := pullStore(t, h)
	pullTodos(t, conn, "p1", "a", "p7", 3)
	pullTodos(t, conn, "p1", "b", "p8", 2)
	s := syncstore.OpenConn(&pullCommitDuring{Conn: conn})
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	boot := pullSub("boot", "p9", syncstore.PullBootstrap)
	resp := pullDo(t, s, "p1", pullReq(pullSub("a", "p7", 0), pullSub("b", "p7", 1), boot))
	expectEqual(t, "PULL-7: response head", int64(5), resp.MaxCommitSeq)
	var got []int64
	for _, r := range resp.Subscriptions {
		got = append(got, r.NextCursor)
	}
	expectEqual(t, "PULL-7: next cursors (a commit landed during the pull)", []int64{5, 5, 5}, got)
	expectEqual(t, "PULL-7: commits of the first subscription", []int64{1, 2, 3}, pullSeqs(resp.Subscriptions[0]))
	expectEqual(t, "PULL-7: commits of the second subscription", []int64{2, 3}, pullSeqs(resp.Subscriptions[1]))
	expectEqual(t, "PULL-7: the bootstrap's pin", int64(5), resp.Subscriptions[2].AsOfCommitSeq)
	// The commit that landed during the pull comes with the next one.
	r := pullOne(t, s, "p1", pullSub("a", "p7", 5))
	expectEqual(t, "PULL-7: the next pull", []int64{6}, pullSeqs(r))
}
