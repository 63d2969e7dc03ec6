package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-10 (a pull streamed to a sink, several bootstrap pages
// per subscription in one call) and the refinements of PULL-3 and PULL-5
// it brings: pages streamed in one pull share the pin and reach every
// row exactly once, and nothing changed between them is lost.

func init() {
	register(
		Case{Name: "PULL-10/subscriptions-streamed-in-request-order", Run: pullStreamOrder},
		Case{Name: "PULL-10/sink-error-stops-the-pull-writes-nothing", Run: pullStreamSinkError},
		Case{Name: "PULL-3/streamed-pages-share-the-pin-every-row-once", Run: pullStreamPages},
		Case{Name: "PULL-5/rows-changed-between-streamed-pages-never-lost", Run: pullStreamChanges},
	)
}

// pullEvent is one call a PullSink received: "start" and "end" with the
// result, "page" with the page, "commits" with the window.
type pullEvent struct {
	Kind    string
	Result  syncstore.PullResult
	Page    syncstore.PullPage
	Commits []driver.Commit
}

// pullRecorder is a PullSink that records every call. It takes at most
// budget pages of a subscription per pull (0: every page), calls onPage
// (if set) after recording each page, and fails with failErr at the
// failAt-th call (1-based; 0: never).
type pullRecorder struct {
	budget  int
	onPage  func(ctx context.Context, p syncstore.PullPage) error
	failAt  int
	failErr error

	events []pullEvent
	pages  int // pages of the current subscription
}

func (r *pullRecorder) record(e pullEvent) error {
	r.events = append(r.events, e)
	if r.failAt == len(r.events) {
		return r.failErr
	}
	return nil
}

func (r *pullRecorder) Start(_ context.Context, res syncstore.PullResult) error {
	r.pages = 0
	return r.record(pullEvent{Kind: "start", Result: res})
}

func (r *pullRecorder) Page(ctx context.Context, p syncstore.PullPage) (bool, error) {
	r.pages++
	if err := r.record(pullEvent{Kind: "page", Page: p}); err != nil {
		return false, err
	}
	if r.onPage != nil {
		if err := r.onPage(ctx, p); err != nil {
			return false, err
		}
	}
	return r.budget == 0 || r.pages < r.budget, nil
}

func (r *pullRecorder) Commits(_ context.Context, commits []driver.Commit) error {
	return r.record(pullEvent{Kind: "commits", Commits: commits})
}

func (r *pullRecorder) End(_ context.Context, res syncstore.PullResult) error {
	return r.record(pullEvent{Kind: "end", Result: res})
}

// ends returns the results the sink's End calls received, in order.
func (r *pullRecorder) ends() []syncstore.PullResult {
	var out []syncstore.PullResult
	for _, e := range r.events {
		if e.Kind == "end" {
			out = append(out, e.Result)
		}
	}
	return out
}

// pages returns the pages the sink received, in order.
func (r *pullRecorder) pageList() []syncstore.PullPage {
	var out []syncstore.PullPage
	for _, e := range r.events {
		if e.Kind == "page" {
			out = append(out, e.Page)
		}
	}
	return out
}

// pullStream runs PullTo into rec or fails the case, and checks that the
// response holds the results the sink's End calls got.
func pullStream(t T, s *syncstore.Store, p string, req syncstore.PullRequest, rec *pullRecorder) syncstore.PullResponse {
	t.Helper()
	rec.events = nil
	resp, err := s.PullTo(t.Context(), p, req, rec)
	must(t, "PullTo", err)
	expectEqual(t, "PULL-10: the response's results are those the sink's End got", rec.ends(), resp.Subscriptions)
	return resp
}

// startOf and endOf build the events a test expects.
func startOf(r syncstore.PullResult) pullEvent { return pullEvent{Kind: "start", Result: r} }
func endOf(r syncstore.PullResult) pullEvent   { return pullEvent{Kind: "end", Result: r} }
func pageOf(after string, more bool, rows ...driver.Row) pullEvent {
	return pullEvent{Kind: "page", Page: syncstore.PullPage{Rows: rows, AfterRowID: after, More: more}}
}

// hasToken blanks a result's token, reporting whether it had one (a token
// is opaque: tests compare its presence and what it resumes).
func hasToken(r *syncstore.PullResult) bool {
	had := r.BootstrapToken != ""
	r.BootstrapToken = ""
	return had
}

// Catches: subscriptions delivered out of request order (in the order
// their reads finish), calls interleaved between subscriptions, a
// bootstrap page budget not honoured (one page only, or every page), a
// page after the first that is empty, a sink call missing (no Commits for
// a window, no Page for an empty scope, no End for a reset), a response
// whose results differ from what the sink ended with, a client record
// cursor other than the smallest active next cursor.
func pullStreamOrder(t T, h Harness) {
	conn, s := pullStore(t, h)
	in := pullRows("r", "p7", 7)
	pullWriteRows(t, conn, "p1", in...)                     // 1…7
	pullWriteRows(t, conn, "p1", pullRows("q", "p8", 3)...) // 8…10
	must(t, "SetHorizonSeq(2)", conn.SetHorizonSeq(t.Context(), "p1", 2))
	boot := pullSub("boot", "p7", syncstore.PullBootstrap)
	boot.LimitRows = 2
	win := pullSub("win", "p8", 7)
	empty := pullSub("empty", "p0", syncstore.PullBootstrap)
	rec := &pullRecorder{budget: 3}
	resp := pullStream(t, s, "p1", pullReq(win, boot, pullSub("expired", "p7", 1), empty, pullSub("quiet", "p7", 10)), rec)
	expectEqual(t, "PULL-7: response head", int64(10), resp.MaxCommitSeq)

	winCommits, err := conn.ReadCommitWindow(t.Context(), "p1", driver.WindowQuery{Table: tTodos, Filter: win.Scopes,
		AfterSeq: 7, ThroughSeq: 10, LimitChanges: 100})
	must(t, "ReadCommitWindow", err)
	events := rec.events
	for i := range events {
		if events[i].Kind == "end" {
			hasToken(&events[i].Result)
		}
	}
	win8 := syncstore.PullResult{ID: "win", Status: syncstore.PullActive, NextCursor: 10}
	bootRes := syncstore.PullResult{ID: "boot", Status: syncstore.PullActive, Bootstrap: true, Fresh: true,
		AsOfCommitSeq: 10, NextCursor: 10}
	expired := syncstore.PullResult{ID: "expired", Status: syncstore.PullReset, Reason: syncstore.CodeCursorExpired,
		NextCursor: syncstore.PullBootstrap}
	emptyRes := syncstore.PullResult{ID: "empty", Status: syncstore.PullActive, Bootstrap: true, Fresh: true,
		AsOfCommitSeq: 10, NextCursor: 10}
	quiet := syncstore.PullResult{ID: "quiet", Status: syncstore.PullActive, NextCursor: 10}
	want := []pullEvent{
		startOf(win8), {Kind: "commits", Commits: winCommits}, endOf(win8),
		startOf(bootRes),
		pageOf("", true, in[0:2]...),
		pageOf("r02", true, in[2:4]...),
		pageOf("r04", true, in[4:6]...),
		endOf(bootRes),
		startOf(expired), endOf(expired),
		startOf(emptyRes), pageOf("", false), endOf(emptyRes),
		startOf(quiet), {Kind: "commits"}, endOf(quiet),
	}
	expectEqual(t, "PULL-10: the calls the sink received (tokens blanked)", want, events)
	tokens := []bool{}
	for _, r := range resp.Subscriptions {
		tokens = append(tokens, r.BootstrapToken != "")
	}
	expectEqual(t, "PULL-10: which subscriptions end with a token", []bool{false, true, false, false, false}, tokens)
	got, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-8: the record's cursor after a streamed pull", int64(10), got.Cursor)

	// The token resumes after the last page the sink took; a budget of
	// every page ends the bootstrap in this pull, the last page not empty.
	boot.BootstrapToken = resp.Subscriptions[1].BootstrapToken
	rec = &pullRecorder{}
	resp = pullStream(t, s, "p1", pullReq(boot), rec)
	expectEqual(t, "PULL-10: pages after the token", []syncstore.PullPage{{Rows: in[6:], AfterRowID: "r06"}}, rec.pageList())
	expectEqual(t, "PULL-10: a resumed bootstrap", syncstore.PullResult{ID: "boot", Status: syncstore.PullActive,
		Bootstrap: true, AsOfCommitSeq: 10, NextCursor: 10}, resp.Subscriptions[0])
}

// errSinkFailed is what the failing sinks of pullStreamSinkError return.
var errSinkFailed = errors.New("the sink failed (a test's)")

// Catches: a sink error swallowed, wrapped out of recognition, or
// followed by more calls; a client record written or the registry touched
// after a sink failed, at any of its methods.
func pullStreamSinkError(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullWriteRows(t, conn, "p1", pullRows("r", "p7", 5)...)
	boot := pullSub("boot", "p7", syncstore.PullBootstrap)
	boot.LimitRows = 2
	req := pullReq(pullSub("win", "p7", 2), boot)
	// The calls of this pull: start win, commits, end win, start boot,
	// page, page, page, end boot.
	for at, method := range []string{"", "Start", "Commits", "End", "Start", "Page", "Page (second)", "Page (last)", "End"} {
		if at == 0 {
			continue
		}
		rec := &pullRecorder{failAt: at, failErr: errSinkFailed}
		_, err := s.PullTo(t.Context(), "p1", req, rec)
		what := fmt.Sprintf("PULL-10: the sink failing at call %d (%s)", at, method)
		if !errors.Is(err, errSinkFailed) {
			t.Errorf("%s: PullTo returned %v, want the sink's error", what, err)
		}
		expectEqual(t, what+": calls made", at, len(rec.events))
		_, found := crGet(t, conn, "p1", "c1")
		expectEqual(t, what+": a client record", false, found)
		expectEqual(t, what+": the registry", []driver.PartitionEntry(nil), pullRegistered(t, conn))
	}
	rec := &pullRecorder{}
	pullStream(t, s, "p1", req, rec)
	expectEqual(t, "PULL-10: the calls of the pull that no sink failed", 8, len(rec.events))
	_, found := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-10: a client record after the pull that no sink failed", true, found)
}

// Catches: a page re-pinned at a head read after the first page (its
// NextCursor or token then skips the commits between the pins), a token
// from the first page of a pull rather than its last, pages overlapping
// or skipping rows across pages and pulls, an empty page after the first,
// an extra page after rows that fill the pages exactly.
func pullStreamPages(t T, h Harness) {
	conn, s := pullStore(t, h)
	in := pullRows("r", "p7", 8)
	pullWriteRows(t, conn, "p1", in...) // 1…8
	n := 0
	rec := &pullRecorder{budget: 2, onPage: func(ctx context.Context, p syncstore.PullPage) error {
		// Commits land after every page: one out of the scope, and a
		// row of the scope just after the page's last, which the next
		// page brings (its commit comes after the pin as well).
		n++
		return errors.Join(pullWriteOne(ctx, conn, todo(fmt.Sprintf("z%d", n), "p8", "u1"), false, 5000),
			pullWriteOne(ctx, conn, todo(p.Rows[len(p.Rows)-1].ID+"5", "p7", "u1"), false, 5000))
	}}
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 3
	resp := pullStream(t, s, "p1", pullReq(sub), rec)
	r := resp.Subscriptions[0]
	expectEqual(t, "PULL-3: the first pull's pin and next cursor", [2]int64{8, 8}, [2]int64{r.AsOfCommitSeq, r.NextCursor})
	if r.BootstrapToken == "" {
		t.Fatalf("PULL-3: the first pull of 2 pages of 3 out of 8 rows ends without a token")
	}
	var seen []string
	for _, p := range rec.pageList() {
		for _, row := range p.Rows {
			seen = append(seen, row.ID)
		}
	}
	expectEqual(t, "PULL-3: rows of the first pull's pages", []string{"r01", "r02", "r03", "r035", "r04", "r05"}, seen)
	sub.BootstrapToken = r.BootstrapToken
	for pull := 2; sub.BootstrapToken != ""; pull++ {
		if pull > 6 {
			t.Fatalf("PULL-3: the bootstrap has not ended after %d pulls", pull-1)
		}
		resp = pullStream(t, s, "p1", pullReq(sub), rec)
		r = resp.Subscriptions[0]
		expectEqual(t, fmt.Sprintf("PULL-3: pull %d's pin and next cursor", pull), [2]int64{8, 8}, [2]int64{r.AsOfCommitSeq, r.NextCursor})
		expectEqual(t, fmt.Sprintf("PULL-3: pull %d's start", pull), startOf(syncstore.PullResult{ID: "s",
			Status: syncstore.PullActive, Bootstrap: true, AsOfCommitSeq: 8, NextCursor: 8}), rec.events[0])
		for i, p := range rec.pageList() {
			if len(p.Rows) == 0 {
				t.Errorf("PULL-3: page %d of pull %d is empty", i+1, pull)
			}
			if p.AfterRowID != seen[len(seen)-1] {
				t.Errorf("PULL-3: page %d of pull %d starts after %q, want after %q", i+1, pull, p.AfterRowID, seen[len(seen)-1])
			}
			for _, row := range p.Rows {
				seen = append(seen, row.ID)
			}
		}
		sub.BootstrapToken = r.BootstrapToken
	}
	ids := map[string]int{}
	for _, id := range seen {
		ids[id]++
		if ids[id] > 1 {
			t.Errorf("PULL-3: row %s came in two pages", id)
		}
	}
	for _, row := range in {
		if ids[row.ID] != 1 {
			t.Errorf("PULL-3: row %s, present for the whole bootstrap, came %d times", row.ID, ids[row.ID])
		}
	}

	// Rows that fill the pages exactly: the last full page says no more,
	// and no page follows it.
	expectEqual(t, "PULL-3: rows of every page", []string{"r01", "r02", "r03", "r035", "r04", "r05", "r055", "r06", "r07",
		"r075", "r08"}, seen)
	rec = &pullRecorder{}
	sub = pullSub("s", "p9", syncstore.PullBootstrap)
	sub.LimitRows = 2
	nine := pullRows("n", "p9", 4)
	pullWriteRows(t, conn, "p1", nine...)
	pullStream(t, s, "p1", pullReq(sub), rec)
	expectEqual(t, "PULL-3: pages of 4 rows at limit 2", []syncstore.PullPage{{Rows: nine[:2], More: true},
		{Rows: nine[2:], AfterRowID: "n02"}}, rec.pageList())
}

// Catches: a streamed bootstrap that loses what changes between its
// pages: a row created, changed or deleted behind or ahead of the pages
// within one pull and between pulls must reach the client through the
// commits after the pin.
func pullStreamChanges(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 12)
	pullWriteRows(t, conn, "p1", rows...)
	edit := func(r driver.Row, title string) driver.Row {
		r.ServerVersion++
		r.Values = driver.Values{"id": r.ID, "title": title, "done": true, "project_id": "p7", "owner_id": "u1",
			"updated_at": int64(1700000000001)}
		return r
	}
	// After each page: changes behind and ahead of it.
	changes := []func(ctx context.Context) error{
		func(ctx context.Context) error { // after r01…r03
			return errors.Join(pullWriteOne(ctx, conn, edit(rows[1], "changed behind the pages"), false, 6000),
				pullWriteOne(ctx, conn, rows[5], true, 6000),
				pullWriteOne(ctx, conn, todo("r00", "p7", "u1"), false, 6000))
		},
		func(ctx context.Context) error { // after r04, r05, r07
			return errors.Join(pullWriteOne(ctx, conn, edit(rows[9], "changed ahead of the pages"), false, 6000),
				pullWriteOne(ctx, conn, rows[2], true, 6000),
				pullWriteOne(ctx, conn, todo("r075", "p7", "u1"), false, 6000))
		},
	}
	n := 0
	rec := &pullRecorder{budget: 2, onPage: func(ctx context.Context, _ syncstore.PullPage) error {
		if n < len(changes) {
			n++
			return changes[n-1](ctx)
		}
		return nil
	}}
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows, sub.LimitChanges = 3, 2
	rep := newPullReplica(sub)
	for pull := 0; ; pull++ {
		if pull == 20 {
			t.Fatalf("PULL-5: the replica has not caught up after 20 pulls")
		}
		resp := pullStream(t, s, "p1", pullReq(rep.sub), rec)
		res := resp.Subscriptions[0]
		for _, e := range rec.events {
			switch e.Kind {
			case "page":
				res.Rows = append(res.Rows, e.Page.Rows...)
			case "commits":
				res.Commits = e.Commits
			}
		}
		rep.apply(t, res)
		if pull == 0 {
			// Between the two pulls of the bootstrap.
			winWrite(t, conn, "p1", winMeta(7000), winUp(tTodos, edit(rows[0], "changed between pulls")), winDel(tTodos, rows[11]))
		}
		if rep.sub.BootstrapToken == "" && rep.sub.Cursor == resp.MaxCommitSeq {
			break
		}
	}
	expectEqual(t, "PULL-5: the replica after a streamed bootstrap and the pulls after it", pullServerRows(t, conn, "p1", rep.sub), rep.sorted())
}
