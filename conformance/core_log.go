package conformance

import (
	"fmt"
	"math"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Cases for LOG-1…LOG-3: whole commits by seq range (ReadCommits). LOG-4
// (the read walks the log's primary key) is checked per driver against
// the engine's plan output, so it has no case here.
//
// Each case writes its log through core operations (winWrite), keeps what
// it wrote, and computes the expected result with logModel, a direct
// transcription of LOG-1 and LOG-2.

func init() {
	register(
		Case{Name: "LOG-1/whole-commits-every-table-in-order", Run: logWholeCommits},
		Case{Name: "LOG-1/values-round-trip-exactly", Run: logValues},
		Case{Name: "LOG-1/pruned-commits-and-other-partitions-never-appear", Run: logPrunedAndPartitions},
		Case{Name: "LOG-2/stop-after-limit-never-split", Run: logStopRule},
		Case{Name: "LOG-3/cursor-beyond-head-or-below-horizon", Run: logCursors},
		Case{Name: "LOG-3/pruner-racing-readers-never-leaves-a-gap", Run: logPrunerRacingReaders},
	)
}

// logModel returns what ReadCommits(q) must return when log holds the
// partition's retained commits, ascending by seq: the commits with
// AfterSeq < seq ≤ ThroughSeq that have changes, each whole (LOG-1),
// stopping after the commit that brings the changes to LimitChanges
// (LOG-2).
func logModel(log []driver.Commit, q driver.CommitsQuery) []driver.Commit {
	var out []driver.Commit
	n := 0
	for _, c := range log {
		if c.Seq <= q.AfterSeq || c.Seq > q.ThroughSeq || len(c.Changes) == 0 {
			continue
		}
		out = append(out, c)
		if n += len(c.Changes); n >= q.LimitChanges {
			break
		}
	}
	return out
}

// logQ is a whole-commit query.
func logQ(after, through int64, limit int) driver.CommitsQuery {
	return driver.CommitsQuery{AfterSeq: after, ThroughSeq: through, LimitChanges: limit}
}

// logWhat describes a read for failure messages.
func logWhat(rule string, q driver.CommitsQuery, why string) string {
	return fmt.Sprintf("%s: ReadCommits((%d, %d], limit %d) %s", rule, q.AfterSeq, q.ThroughSeq, q.LimitChanges, why)
}

// logServed reads q and checks it against the whole log written
// (logModel); it returns what it read.
func logServed(t T, conn driver.Conn, p string, log []driver.Commit, q driver.CommitsQuery, rule, why string) []driver.Commit {
	t.Helper()
	got, err := conn.ReadCommits(t.Context(), p, q)
	if err != nil {
		t.Errorf("%s: %v; want it served", logWhat(rule, q, why), err)
		return nil
	}
	expectEqual(t, logWhat(rule, q, why), logModel(log, q), got)
	return got
}

// logExpect reads q and checks that it fails with code and returns no
// commit, with a typed error that names no partition (ERR-1, V-10).
func logExpect(t T, conn driver.Conn, p string, q driver.CommitsQuery, code driver.Code, rule, why string) {
	t.Helper()
	got, err := conn.ReadCommits(t.Context(), p, q)
	what := logWhat(rule, q, why)
	if err == nil {
		t.Errorf("%s = seqs %v, nil; want error %s", what, seqs(got), code)
		return
	}
	errExpectTyped(t, what, err, code, p)
	if len(got) != 0 {
		t.Errorf("%s returned commits %v with its error; want none", what, seqs(got))
	}
}

// logMixed writes a log of every kind of commit on p and returns it:
// commits across the three tables, upserts and deletes, a scope move (a
// delete under the old scopes, then the upsert), empty commits, a commit
// made by the server (empty ids), and changes whose order is not the
// order of their tables or ids.
func logMixed(t T, conn driver.Conn, p string) []driver.Commit {
	t.Helper()
	t1, t2 := todo("t-b", "p7", "u1"), todo("t-a", "p8", "u2")
	u1, u2 := user("u-2", "o1", "two@example.com"), user("u-1", "o2", "one@example.com")
	k1 := rowKinds("k1", "g1", 3, driver.Values{"s": "✓ é", "i": int64(math.MinInt64), "j": driver.JSON(`{"b":1, "a":[2]}`),
		"x": []byte{0, 1, 2}})
	moved := todo("t-b", "p9", "u1")
	moved.ServerVersion = 2
	server := winMeta(1005)
	server.ClientID, server.ClientCommitID, server.ActorID = "", "", ""
	return []driver.Commit{
		winWrite(t, conn, p, winMeta(1001), winUp(tUsers, u1), winUp(tTodos, t1), winUp(tKinds, k1), winUp(tTodos, t2)),
		winWrite(t, conn, p, winMeta(1002)), // no changes (LOG-1)
		winWrite(t, conn, p, winMeta(1003), winUp(tUsers, u2)),
		winWrite(t, conn, p, winMeta(1004), winDel(tTodos, t1), winUp(tTodos, moved), winDel(tUsers, u1)),
		winWrite(t, conn, p, server, winDel(tKinds, k1)),
		winWrite(t, conn, p, winMeta(1006)),
		winWrite(t, conn, p, winMeta(1007), winDel(tTodos, t2), winUp(tKinds, rowKinds("k2", "g2", 1, nil))),
	}
}

// Catches: commits filtered by a table or a scope (a window read in
// disguise), changes of one table only, changes sorted by table or id
// instead of kept in commit order, metadata dropped or swapped, a
// server-made commit's empty ids refused or filled, empty commits
// returned, seq bounds off by one, a delete given values or a version,
// a scope move's delete lost.
func logWholeCommits(t T, h Harness) {
	conn := openStore(t, h)
	log := logMixed(t, conn, "p1")
	const rule = "LOG-1"
	for after := int64(0); after <= 7; after++ {
		for _, through := range []int64{after, after + 1, after + 3, 7, 1 << 40} {
			logServed(t, conn, "p1", log, logQ(after, through, winAll), rule, "on a mixed log")
		}
	}
	got := logServed(t, conn, "p1", log, logQ(0, 7, winAll), rule, "the whole log")
	expectEqual(t, "LOG-1: seqs of the whole log (commits 2 and 6 are empty)", []int64{1, 3, 4, 5, 7}, seqs(got))
	if len(got) == 5 {
		var tables []string
		for _, ch := range got[0].Changes {
			tables = append(tables, ch.Table+"/"+ch.RowID)
		}
		expectEqual(t, "LOG-1: commit 1's changes in their order", []string{"users/u-2", "todos/t-b", "kinds/k1", "todos/t-a"}, tables)
		for _, ch := range got[2].Changes {
			if ch.Op == driver.OpDelete && (ch.Values != nil || ch.RowVersion != 0) {
				t.Errorf("LOG-1: commit 4's delete of %s/%s carries values %v or version %d (WIN-6: neither)", ch.Table, ch.RowID, ch.Values, ch.RowVersion)
			}
		}
	}
}

// Catches: values that do not survive the log read (an integer through a
// float, a JSON text re-encoded, bytes as text, empty bytes read as
// NULL), on a read path of its own.
func logValues(t T, h Harness) {
	conn := openStore(t, h)
	rows, names := valRows("g1")
	ops := make([]winOp, len(rows))
	for i, r := range rows {
		ops[i] = winUp(tKinds, r)
	}
	for i := 0; i < len(ops); i += 25 {
		winWrite(t, conn, "p1", winMeta(1000), ops[i:min(i+25, len(ops))]...)
	}
	got, err := conn.ReadCommits(t.Context(), "p1", logQ(0, 1<<40, winAll))
	must(t, "ReadCommits", err)
	var changes []driver.Change
	for _, c := range got {
		changes = append(changes, c.Changes...)
	}
	if len(changes) != len(rows) {
		t.Fatalf("LOG-1: ReadCommits returned %d changes, want %d", len(changes), len(rows))
	}
	for i, ch := range changes {
		w := rows[i]
		if ch.RowID != w.ID || ch.RowVersion != w.ServerVersion {
			t.Errorf("LOG-1: change %d is %s version %d, want %s version %d", i, ch.RowID, ch.RowVersion, w.ID, w.ServerVersion)
			continue
		}
		valCheckValues(t, "LOG-1: ReadCommits change "+names[w.ID], w.Values, ch.Values)
		expectEqual(t, "LOG-1: ReadCommits scopes of "+names[w.ID], w.Scopes, ch.Scopes)
	}
}

// Catches: pruned commits returned, changes left behind by a prune read
// as a commit, another partition's commits read (a partition matched by
// prefix, or not at all), an unknown partition not read as empty (P-2).
func logPrunedAndPartitions(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	log := logMixed(t, conn, "p1")
	other := logMixed(t, conn, "p10")
	logMixed(t, conn, "p")
	const rule = "LOG-1"
	for _, p := range []struct {
		name string
		log  []driver.Commit
	}{{"p1", log}, {"p10", other}} {
		logServed(t, conn, p.name, p.log, logQ(0, 1<<40, winAll), rule, "beside similar partitions")
	}
	logServed(t, conn, "unknown", nil, logQ(0, 1<<40, winAll), rule, "on an unknown partition")
	must(t, "SetHorizonSeq(4)", conn.SetHorizonSeq(ctx, "p1", 4))
	_, err := conn.PruneCommitsThrough(ctx, "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)
	for after := int64(4); after <= 7; after++ {
		logServed(t, conn, "p1", log, logQ(after, 1<<40, winAll), rule, "after pruning through 3")
		logServed(t, conn, "p1", log, logQ(after, 1<<40, 1), rule, "after pruning through 3")
	}
	logServed(t, conn, "p10", other, logQ(0, 1<<40, winAll), rule, "after pruning another partition")
}

// Catches: a commit split at the limit, a read that stops before the
// limit is reached or long after it, a commit larger than the limit
// refused or dropped, a limit counted in commits instead of changes, and
// paging by the last seq returned that skips or repeats a commit.
func logStopRule(t T, h Harness) {
	conn := openStore(t, h)
	var log []driver.Commit
	sizes := []int{1, 3, 0, 2, 5, 1, 1, 4, 0, 2}
	for i, n := range sizes {
		ops := make([]winOp, n)
		for j := range ops {
			table, row := tTodos, todo(fmt.Sprintf("t%02d-%d", i, j), "p7", "u1")
			if j%2 == 1 {
				table, row = tUsers, user(fmt.Sprintf("u%02d-%d", i, j), "o1", fmt.Sprintf("e%02d-%d@example.com", i, j))
			}
			ops[j] = winUp(table, row)
		}
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(1000+i)), ops...))
	}
	const rule = "LOG-2"
	head := int64(len(sizes))
	for limit := 1; limit <= 12; limit++ {
		for after := int64(0); after <= head; after++ {
			got := logServed(t, conn, "p1", log, logQ(after, 1<<40, limit), rule, "on commits of 1, 3, 0, 2, 5, 1, 1, 4, 0, 2 changes")
			n := 0
			for _, c := range got {
				n += len(c.Changes)
			}
			if len(got) > 0 && n-len(got[len(got)-1].Changes) >= limit {
				t.Errorf("LOG-2: after %d, limit %d: the read went on past the commit that reached the limit (%d changes)", after, limit, n)
			}
		}
		// Paging by the last seq reaches every commit with changes once.
		var seen []int64
		for cursor, pages := int64(0), 0; pages <= len(sizes); pages++ {
			got, err := conn.ReadCommits(t.Context(), "p1", logQ(cursor, head, limit))
			must(t, "ReadCommits", err)
			seen = append(seen, seqs(got)...)
			n := 0
			for _, c := range got {
				n += len(c.Changes)
			}
			if n < limit { // a short page: the read reached throughSeq
				break
			}
			cursor = got[len(got)-1].Seq
		}
		expectEqual(t, fmt.Sprintf("LOG-2: seqs paged with limit %d", limit), []int64{1, 2, 4, 5, 6, 7, 8, 10}, seen)
	}
	// A commit of 5 changes comes whole and alone under limit 1…5.
	for limit := 1; limit <= 5; limit++ {
		got, err := conn.ReadCommits(t.Context(), "p1", logQ(4, head, limit))
		must(t, "ReadCommits", err)
		if len(got) != 1 || got[0].Seq != 5 || len(got[0].Changes) != 5 {
			t.Errorf("LOG-2: after 4, limit %d: got %v; want commit 5 alone, whole (5 changes)", limit, logShape(got))
		}
	}
}

// logShape renders commits as seq:changes for messages.
func logShape(cs []driver.Commit) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d:%d", c.Seq, len(c.Changes))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Catches: a cursor beyond the head answered with an empty page (the
// server believes it is up to date), a cursor below the horizon served
// with what is left (a silent gap), either checked against another
// partition's counters or only once a prune removed something, a cursor
// at the horizon or the head refused, a throughSeq beyond the head
// refused, and the Store's own checks (afterSeq < 0 or > throughSeq)
// missing or not citing LOG-3.
func logCursors(t T, h Harness) {
	conn, s := vdStore(t, h)
	ctx := t.Context()
	log := logMixed(t, conn, "p1")
	other := append(logMixed(t, conn, "p2"), winWrite(t, conn, "p2", winMeta(1), winUp(tTodos, todo("x", "p7", "u1"))))
	const rule = "LOG-3"
	for _, after := range []int64{8, 9, 99, math.MaxInt64 - 1} {
		for _, through := range []int64{after, math.MaxInt64} {
			logExpect(t, conn, "p1", logQ(after, through, winAll), driver.CodeCursorAhead, rule, "with head 7")
		}
	}
	logServed(t, conn, "p1", log, logQ(7, 7, winAll), rule, "at the head")
	logServed(t, conn, "p1", log, logQ(7, math.MaxInt64, winAll), rule, "at the head")
	logServed(t, conn, "p1", log, logQ(3, math.MaxInt64, 1), rule, "through beyond the head")
	logExpect(t, conn, "unknown", logQ(1, 1<<40, winAll), driver.CodeCursorAhead, rule, "on an unknown partition (head 0)")
	logServed(t, conn, "unknown", nil, logQ(0, 0, winAll), rule, "from 0 on an unknown partition")

	must(t, "SetHorizonSeq(3)", conn.SetHorizonSeq(ctx, "p1", 3))
	for after := range int64(3) {
		logExpect(t, conn, "p1", logQ(after, 1<<40, winAll), driver.CodeCursorExpired, rule, "with horizon 3, nothing pruned yet")
		logExpect(t, conn, "p1", logQ(after, after, 1), driver.CodeCursorExpired, rule, "with horizon 3, nothing pruned yet")
	}
	_, err := conn.PruneCommitsThrough(ctx, "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)
	for after := range int64(3) {
		logExpect(t, conn, "p1", logQ(after, 1<<40, winAll), driver.CodeCursorExpired, rule, "with horizon 3, pruned through 3")
	}
	logServed(t, conn, "p1", log, logQ(3, 1<<40, winAll), rule, "at the horizon")
	logServed(t, conn, "p2", other, logQ(0, 1<<40, winAll), rule, "on a partition whose horizon is 0")
	// Pruning never lowers the head: a cursor at the head stays served.
	must(t, "SetHorizonSeq(7)", conn.SetHorizonSeq(ctx, "p1", 7))
	_, err = conn.PruneCommitsThrough(ctx, "p1", 7)
	must(t, "PruneCommitsThrough(7)", err)
	logServed(t, conn, "p1", log, logQ(7, 1<<40, winAll), rule, "at the head after pruning every commit")
	logExpect(t, conn, "p1", logQ(8, 1<<40, winAll), driver.CodeCursorAhead, rule, "after pruning every commit")

	// Through the Store: its own checks, and the driver's errors unchanged.
	for _, c := range []struct{ after, through int64 }{{1, 0}, {8, 7}, {math.MaxInt64, 1}, {-1, 5}, {math.MinInt64, 0}} {
		got, err := s.ReadCommits(ctx, "p1", logQ(c.after, c.through, winAll))
		what := fmt.Sprintf("LOG-3: Store.ReadCommits(after %d, through %d)", c.after, c.through)
		errExpectTyped(t, what, err, driver.CodeInvalidArgument, "p1")
		if err != nil && !strings.Contains(err.Error(), "LOG-3") {
			t.Errorf("%s: message %q does not cite LOG-3", what, err.Error())
		}
		if len(got) != 0 {
			t.Errorf("%s returned commits %v with its error", what, seqs(got))
		}
	}
	_, err = s.ReadCommits(ctx, "p1", logQ(8, 1<<40, winAll))
	errExpectTyped(t, "LOG-3: Store.ReadCommits beyond the head", err, driver.CodeCursorAhead, "p1")
	_, err = s.ReadCommits(ctx, "p1", logQ(6, 1<<40, winAll))
	errExpectTyped(t, "LOG-3: Store.ReadCommits below the horizon", err, driver.CodeCursorExpired, "p1")
	got, err := s.ReadCommits(ctx, "p2", logQ(0, 1<<40, winAll))
	must(t, "LOG-3: Store.ReadCommits", err)
	expectEqual(t, "LOG-3: Store.ReadCommits", logModel(other, logQ(0, 1<<40, winAll)), got)
}

// Catches: the horizon read apart from the commits (a statement, request
// or round of its own), so a prune landing in between lets pruned commits
// go missing without an error; a read in rounds whose later rounds see a
// prune its first did not; a cursor_expired that is not true. Every read
// must return exactly what the whole log holds after its cursor
// (logModel), or cursor_expired while the horizon is above the cursor.
func logPrunerRacingReaders(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	var log []driver.Commit
	for i := 1; i <= curRaceCommits; i++ {
		ops := []winOp{winUp(tTodos, todo(fmt.Sprintf("t-%d", i), "p7", "u1"))}
		if i%3 == 0 {
			ops = append(ops, winUp(tUsers, user(fmt.Sprintf("u-%d", i), "o1", fmt.Sprintf("e%d@example.com", i))))
		}
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(1000+i)), ops...))
	}
	var (
		done    atomic.Bool
		expired atomic.Int64
		served  atomic.Int64
		wg      gosync.WaitGroup
	)
	wg.Go(func() {
		defer done.Store(true)
		for hz := int64(curRaceStep); hz <= curRaceHorizon; hz += curRaceStep {
			if err := conn.SetHorizonSeq(ctx, "p1", hz); err != nil {
				t.Errorf("LOG-3: pruner: SetHorizonSeq(%d): %v", hz, err)
				return
			}
			if _, err := conn.PruneCommitsThrough(ctx, "p1", hz); err != nil {
				t.Errorf("LOG-3: pruner: PruneCommitsThrough(%d): %v", hz, err)
				return
			}
		}
	})
	for r := range curRaceReaders {
		wg.Go(func() {
			limit := 1 + 2*r
			var cursor int64
			for n := 0; n < curRaceMinRead || !done.Load(); n++ {
				if t.Failed() {
					return
				}
				q := logQ(cursor, 1<<40, limit)
				got, err := conn.ReadCommits(ctx, "p1", q)
				if driver.CodeOf(err) == driver.CodeCursorExpired {
					expired.Add(1)
					hz, herr := conn.HorizonSeq(ctx, "p1")
					if herr != nil {
						t.Errorf("LOG-3: reader %d: HorizonSeq: %v", r, herr)
						return
					}
					if hz <= cursor {
						t.Errorf("LOG-3: reader %d: cursor %d expired, but the horizon is %d (it never passed the cursor)", r, cursor, hz)
						return
					}
					if len(got) != 0 {
						t.Errorf("LOG-3: reader %d: cursor_expired at cursor %d came with commits %v", r, cursor, seqs(got))
						return
					}
					cursor = hz
					continue
				}
				if err != nil {
					t.Errorf("LOG-3: reader %d: ReadCommits after %d: %v", r, cursor, err)
					return
				}
				served.Add(1)
				if d := diff(logModel(log, q), got); d != "" {
					t.Errorf("LOG-3: reader %d: ReadCommits(after %d, limit %d) while pruning is not the log after the cursor "+
						"(a silent gap) %s", r, cursor, limit, d)
					return
				}
				if len(got) == 0 || got[len(got)-1].Seq == curRaceCommits {
					cursor = int64(n % 7) // back to an old cursor, which the pruner may have passed
					continue
				}
				cursor = got[len(got)-1].Seq
			}
		})
	}
	wg.Wait()
	t.Logf("LOG-3: %d reads served, %d cursor_expired while pruning through %d", served.Load(), expired.Load(), curRaceHorizon)
	if t.Failed() {
		return
	}
	logExpect(t, conn, "p1", logQ(curRaceHorizon-1, 1<<40, winAll), driver.CodeCursorExpired, "LOG-3", "after the race")
	logServed(t, conn, "p1", log, logQ(curRaceHorizon, 1<<40, winAll), "LOG-3", "after the race")
}
