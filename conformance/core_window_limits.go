package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/syncstore/syncstore/driver"
)

// Cases for WIN-4…WIN-6: the stop rule, short pages, and what never
// appears in a window. Helpers are in core_window.go.

func init() {
	register(
		Case{Name: "WIN-4/stop-after-limit-reached", Run: winStopAfterLimit},
		Case{Name: "WIN-4/commit-never-split", Run: winCommitNeverSplit},
		Case{Name: "WIN-5/short-page-means-nothing-left", Run: winShortPage},
		Case{Name: "WIN-6/empty-commits-never-appear", Run: winEmptyCommits},
		Case{Name: "WIN-6/pruned-commits-never-appear", Run: winPrunedCommits},
		Case{Name: "WIN-6/upsert-and-delete-payloads", Run: winPayloads},
	)
}

// winTodos returns n todos of project with ids prefix-0…prefix-(n-1).
func winTodos(prefix, project string, n int) []winOp {
	ops := make([]winOp, n)
	for i := range ops {
		ops[i] = winUp(tTodos, todo(fmt.Sprintf("%s-%d", prefix, i), project, "u1"))
	}
	return ops
}

// Catches: a limit applied to commits instead of changes, non-matching
// changes counted towards the limit, a read that stops before the limit is
// reached or one commit after it.
func winStopAfterLimit(t T, h Harness) {
	conn := openStore(t, h)
	// Matching (project p7) changes per commit: 2, 3, 0, 1, 4; every
	// commit but the third also has a non-matching (p8) change first.
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1), append(winTodos("x1", "p8", 1), winTodos("a", "p7", 2)...)...),
		winWrite(t, conn, "p1", winMeta(2), append(winTodos("x2", "p8", 1), winTodos("b", "p7", 3)...)...),
		winWrite(t, conn, "p1", winMeta(3), winTodos("x3", "p8", 2)...),
		winWrite(t, conn, "p1", winMeta(4), append(winTodos("x4", "p8", 1), winTodos("c", "p7", 1)...)...),
		winWrite(t, conn, "p1", winMeta(5), append(winTodos("x5", "p8", 1), winTodos("d", "p7", 4)...)...),
	}
	// Matched changes after each returned commit: 2, 5, 6, 10.
	wantSeqs := map[int][]int64{
		1: {1}, 2: {1}, 3: {1, 2}, 4: {1, 2}, 5: {1, 2}, 6: {1, 2, 4},
		7: {1, 2, 4, 5}, 9: {1, 2, 4, 5}, 10: {1, 2, 4, 5}, 11: {1, 2, 4, 5}, winAll: {1, 2, 4, 5},
	}
	f := driver.ScopeFilter{"project": {"p7"}}
	for k, want := range wantSeqs {
		q := winQ(tTodos, f, 5)
		q.LimitChanges = k
		got := winRead(t, conn, "p1", q)
		expectEqual(t, fmt.Sprintf("WIN-4: seqs with limitChanges %d", k), want, seqs(got))
		expectEqual(t, fmt.Sprintf("WIN-4: window with limitChanges %d", k), winModel(log, q), got)
	}
	// Resuming after commit 2 with a limit of 1 returns commit 4 alone.
	q := winQ(tTodos, f, 5)
	q.AfterSeq, q.LimitChanges = 2, 1
	expectEqual(t, "WIN-4: seqs of (2, 5] with limitChanges 1", []int64{4}, seqs(winRead(t, conn, "p1", q)))
}

// Catches: a commit cut at the limit (the rest of its changes would be
// lost by a pager that resumes after its seq).
func winCommitNeverSplit(t T, h Harness) {
	conn := openStore(t, h)
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1), winTodos("a", "p7", 1)...),
		winWrite(t, conn, "p1", winMeta(2), winTodos("b", "p7", 7)...),
		winWrite(t, conn, "p1", winMeta(3), winTodos("c", "p7", 1)...),
	}
	f := driver.ScopeFilter{"project": {"p7"}}
	for _, c := range []struct {
		after       int64
		limit       int
		wantSeqs    []int64
		wantChanges int
	}{
		{0, 1, []int64{1}, 1},
		{0, 2, []int64{1, 2}, 8},
		{0, 7, []int64{1, 2}, 8},
		{0, 8, []int64{1, 2}, 8},
		{0, 9, []int64{1, 2, 3}, 9},
		{1, 1, []int64{2}, 7},
		{1, 3, []int64{2}, 7},
		{1, 8, []int64{2, 3}, 8},
	} {
		q := winQ(tTodos, f, 3)
		q.AfterSeq, q.LimitChanges = c.after, c.limit
		got := winRead(t, conn, "p1", q)
		what := fmt.Sprintf("WIN-4: window (%d, 3] with limitChanges %d", c.after, c.limit)
		expectEqual(t, what+": seqs", c.wantSeqs, seqs(got))
		expectEqual(t, what+": number of changes", c.wantChanges, len(winRowIDs(got)))
		expectEqual(t, what, winModel(log, q), got)
	}
}

// winRandomLog writes n commits of 0…4 random changes on partition p: todo
// upserts over a pool of 12 ids in projects p1…p3 and owners u1/u2 (so rows
// move between scopes), deletes of existing todos, and users upserts. It
// returns the log.
func winRandomLog(t T, conn driver.Conn, p string, n int) []driver.Commit {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	current := map[string]driver.Row{}
	var log []driver.Commit
	for i := range n {
		var ops []winOp
		used := map[string]bool{}
		for range rng.IntN(5) {
			id := fmt.Sprintf("r%02d", rng.IntN(12))
			switch {
			case used[id]:
				continue
			case rng.IntN(6) == 0:
				u := fmt.Sprintf("x%02d", rng.IntN(4))
				if used[u] {
					continue
				}
				used[u] = true
				ops = append(ops, winUp(tUsers, user(u, fmt.Sprintf("o%d", rng.IntN(2)), u+"@example.com")))
			case rng.IntN(4) == 0 && current[id].ID != "":
				used[id] = true
				ops = append(ops, winDel(tTodos, current[id]))
				delete(current, id)
			default:
				used[id] = true
				r := todo(id, fmt.Sprintf("p%d", 1+rng.IntN(3)), fmt.Sprintf("u%d", 1+rng.IntN(2)))
				r.ServerVersion = int64(i + 1)
				ops = append(ops, winUp(tTodos, r))
				current[id] = r
			}
		}
		log = append(log, winWrite(t, conn, p, winMeta(int64(1000+i)), ops...))
	}
	return log
}

// Catches: a page cut short while matching changes remain in the window —
// a limit applied to candidate index entries before the other filter keys,
// the table or de-duplication are applied, or a limit counted over
// non-matching changes. The pager resumes after the last returned seq and
// stops at the first short page; the seqs it collects must be every
// matching commit. (Whether a commit is returned whole is WIN-4's case.)
func winShortPage(t T, h Harness) {
	conn := openStore(t, h)
	log := winRandomLog(t, conn, "p1", 60)
	filters := []driver.ScopeFilter{
		{"project": {"p1"}},
		{"project": {"p1", "p3"}, "owner": {"u2"}},
		{"owner": {"u1"}, "project": {"p2"}},
	}
	for _, f := range filters {
		for _, through := range []int64{60, 45} {
			for _, limit := range []int{1, 2, 3, 7} {
				q := winQ(tTodos, f, through)
				q.LimitChanges = limit
				what := fmt.Sprintf("WIN-5: filter %v, through %d, limitChanges %d", winFmt(f), through, limit)
				want := seqs(winModel(log, winQ(tTodos, f, through)))
				expectEqual(t, what+": seqs collected by paging", want, winPageSeqs(t, conn, log, q, what))
			}
		}
	}
}

// winPageSeqs pages through q (resuming after the last returned seq) until
// a short page, checks that each short page is final — per the log and per
// a fresh read of (last seq, through] — and returns the collected seqs.
func winPageSeqs(t T, conn driver.Conn, log []driver.Commit, q driver.WindowQuery, what string) []int64 {
	t.Helper()
	var out []int64
	for range len(log) + 2 {
		page := winRead(t, conn, "p1", q)
		for _, c := range page {
			if c.Seq <= q.AfterSeq || c.Seq > q.ThroughSeq {
				t.Fatalf("%s: page after %d returned seq %d outside the window", what, q.AfterSeq, c.Seq)
			}
		}
		out = append(out, seqs(page)...)
		if len(page) > 0 {
			q.AfterSeq = page[len(page)-1].Seq
		}
		if len(winRowIDs(page)) >= q.LimitChanges {
			continue
		}
		rest := q
		rest.LimitChanges = winAll
		if left := winModel(log, rest); len(left) > 0 {
			t.Errorf("%s: a short page (%d changes) ended at seq %d, but matching commits %v remain", what,
				len(winRowIDs(page)), q.AfterSeq, seqs(left))
		}
		if left := winRead(t, conn, "p1", rest); len(left) > 0 {
			t.Errorf("%s: a short page ended at seq %d, but reading on returns commits %v", what, q.AfterSeq, seqs(left))
		}
		return out
	}
	t.Fatalf("%s: paging did not end after %d pages", what, len(log)+2)
	return nil
}

// Catches: an empty commit returned (with no changes), or one that stops a
// read as if it had reached the limit.
func winEmptyCommits(t T, h Harness) {
	conn := openStore(t, h)
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1), winTodos("a", "p7", 1)...),
		winWrite(t, conn, "p1", winMeta(2)),
		winWrite(t, conn, "p1", winMeta(3)),
		winWrite(t, conn, "p1", winMeta(4), winTodos("b", "p7", 1)...),
	}
	// The empty commits are real commits: they took seqs 2 and 3.
	expectEqual(t, "WIN-6 setup: seqs allocated to the commits", []int64{1, 2, 3, 4}, seqs(log))
	f := driver.ScopeFilter{"project": {"p7"}}
	for _, c := range []struct {
		after, through int64
		limit          int
		want           []int64
	}{
		{0, 4, winAll, []int64{1, 4}},
		{1, 3, winAll, nil},
		{1, 4, 1, []int64{4}},
		{0, 4, 1, []int64{1}},
		{0, 4, 2, []int64{1, 4}},
	} {
		q := winQ(tTodos, f, c.through)
		q.AfterSeq, q.LimitChanges = c.after, c.limit
		got := winRead(t, conn, "p1", q)
		what := fmt.Sprintf("WIN-6: window (%d, %d] limit %d", c.after, c.through, c.limit)
		expectEqual(t, what+": seqs", c.want, seqs(got))
		for _, cm := range got {
			if len(cm.Changes) == 0 {
				t.Errorf("%s: commit %d returned with no changes", what, cm.Seq)
			}
		}
		expectEqual(t, what, winModel(log, q), got)
	}
}

// Catches: a prune that deletes the commit rows but leaves their changes
// or change-scope entries readable, so they come back attached to the
// window read from the horizon; or retained commits lost by a read from
// the horizon. A read from below the horizon must fail (HZ-4) rather
// than return what is left.
func winPrunedCommits(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	var log []driver.Commit
	for i := range 4 {
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(i)), winTodos(fmt.Sprintf("c%d", i), "p7", 1)...))
	}
	must(t, "SetHorizonSeq(2)", conn.SetHorizonSeq(ctx, "p1", 2))
	n, err := conn.PruneCommitsThrough(ctx, "p1", 2)
	must(t, "PruneCommitsThrough(2)", err)
	expectEqual(t, "WIN-6: commits pruned", int64(2), n)
	retained := log[2:]
	f := driver.ScopeFilter{"project": {"p7"}}
	for _, c := range []struct {
		after, through int64
		limit          int
		want           []int64
	}{
		{2, 4, winAll, []int64{3, 4}},
		{2, 2, winAll, nil},
		{2, 3, winAll, []int64{3}},
		{3, 4, winAll, []int64{4}},
		{2, 4, 1, []int64{3}},
		{2, 4, 2, []int64{3, 4}},
	} {
		q := winQ(tTodos, f, c.through)
		q.AfterSeq, q.LimitChanges = c.after, c.limit
		got := winRead(t, conn, "p1", q)
		what := fmt.Sprintf("WIN-6: window (%d, %d] limit %d after pruning through 2", c.after, c.through, c.limit)
		expectEqual(t, what+": seqs", c.want, seqs(got))
		expectEqual(t, what, winModel(retained, q), got)
	}
	for _, after := range []int64{0, 1} {
		q := winQ(tTodos, f, 4)
		q.AfterSeq = after
		got, err := conn.ReadCommitWindow(ctx, "p1", q)
		expectCode(t, fmt.Sprintf("WIN-6, HZ-4: window (%d, 4] below the horizon 2", after), err, driver.CodeCursorExpired)
		expectEqual(t, fmt.Sprintf("WIN-6, HZ-4: commits of window (%d, 4] below the horizon 2", after), []int64(nil), seqs(got))
	}
}

// Catches: upserts that lose or re-type values or the row version, deletes
// that carry the old row's values or version, and deletes stored without
// scopes (or with the scopes of an older version of the row), so a filter
// on the deleted row's scope misses the delete.
func winPayloads(t T, h Harness) {
	conn := openStore(t, h)
	r1 := todo("r", "p7", "u1")
	r1.ServerVersion = 42
	r1.Values["title"] = "naïve 😀 'quoted' \"double\""
	r1.Values["done"] = true
	r1.Values["updated_at"] = int64(math.MaxInt64)
	r2 := todo("r", "p8", "u1") // the row moves to project p8
	r2.ServerVersion = math.MinInt64
	r2.Values["updated_at"] = int64(math.MinInt64)
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1), winUp(tTodos, r1)),
		winWrite(t, conn, "p1", winMeta(2), winUp(tTodos, r2)),
		winWrite(t, conn, "p1", winMeta(3), winDel(tTodos, r2)),
	}
	p7 := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, 3))
	expectEqual(t, "WIN-6: window of project p7 (the first upsert only)", winModel(log, winQ(tTodos,
		driver.ScopeFilter{"project": {"p7"}}, 3)), p7)
	p8 := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p8"}}, 3))
	expectEqual(t, "WIN-6: seqs of project p8 (the move and the delete)", []int64{2, 3}, seqs(p8))
	expectEqual(t, "WIN-6: window of project p8", winModel(log, winQ(tTodos, driver.ScopeFilter{"project": {"p8"}}, 3)), p8)
	if len(p7) == 1 && len(p7[0].Changes) == 1 {
		ch := p7[0].Changes[0]
		expectEqual(t, "WIN-6: upsert op", driver.OpUpsert, ch.Op)
		expectEqual(t, "WIN-6: upsert row version", int64(42), ch.RowVersion)
		expectEqual(t, "WIN-6: upsert values", r1.Values, ch.Values)
	}
	if len(p8) == 2 && len(p8[1].Changes) == 1 {
		ch := p8[1].Changes[0]
		expectEqual(t, "WIN-6: delete op", driver.OpDelete, ch.Op)
		expectEqual(t, "WIN-6: delete scopes (those of the deleted row)", r2.Scopes, ch.Scopes)
		if len(ch.Values) != 0 || ch.RowVersion != 0 {
			t.Errorf("WIN-6: a delete carries values %v and row version %d, want neither", ch.Values, ch.RowVersion)
		}
	}
}
