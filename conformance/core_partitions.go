package conformance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// P cases: nothing crosses partitions (P-1), and an unknown partition
// reads as empty (P-2).

// partPush writes rows of todos in partition p in one Tx with one commit
// (client c, commit cc, created at atMs), stores res under (c, cc) when
// set, commits and returns the seq.
func partPush(t T, conn driver.Conn, p, c, cc string, atMs int64, res *driver.PushResult, rows ...driver.Row) int64 {
	t.Helper()
	ctx := t.Context()
	tx := begin(t, conn, p)
	defer tx.Rollback(context.Background())
	var changes []driver.Change
	for _, r := range rows {
		must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, r))
		changes = append(changes, upsertChange(tTodos, r))
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: c, ClientCommitID: cc, ActorID: "actor-" + p, CreatedAtMs: atMs, Changes: changes})
	must(t, "AppendCommit", err)
	if res != nil {
		r := *res
		if r.Status == driver.PushApplied {
			r.CommitSeq = seq
		}
		must(t, "PutPushResult", tx.PutPushResult(ctx, c, cc, r))
	}
	commit(t, tx)
	return seq
}

// partTodo returns a todos row whose title and version mark the partition.
func partTodo(id, title string, version int64) driver.Row {
	r := todo(id, "proj", "o1")
	r.Values["title"], r.ServerVersion = title, version
	return r
}

// partState is what one partition must read back.
type partState struct {
	rows      []driver.Row // ascending id, all in project "proj"
	commits   []driver.Commit
	results   map[[2]string]driver.PushResult
	clients   []driver.ClientRecord // ascending client id
	horizon   int64
	before    map[int64]int64 // CommitSeqBefore(t) → seq
	missingPR [][2]string     // keys that must not be found
	// rowsUnchecked skips the absence checks of rows (after a delete in
	// this partition: that the delete took effect is ROW-3's rule).
	rowsUnchecked bool
}

// partExpect checks every core read of partition p against want.
func partExpect(t T, what string, conn driver.Conn, p string, want partState) {
	t.Helper()
	ctx := t.Context()
	what = fmt.Sprintf("%s, partition %q", what, p)
	rows, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"proj"}}, Limit: 100})
	must(t, what+": ScanRows", err)
	if !want.rowsUnchecked {
		expectEqual(t, what+": ScanRows", want.rows, rowsByID(rows))
	}
	for _, r := range want.rows {
		schExpectRow(t, what, conn, p, tTodos, r)
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		if !want.rowsUnchecked && !slices.ContainsFunc(want.rows, func(r driver.Row) bool { return r.ID == id }) {
			if _, found, err := conn.GetRow(ctx, p, tTodos, id); err != nil || found {
				t.Errorf("P-1: %s: GetRow(%q) = found %v, err %v; want not found", what, id, found, err)
			}
		}
	}
	var max int64
	if n := len(want.commits); n > 0 {
		max = want.commits[n-1].Seq
	}
	gotMax, err := conn.MaxCommitSeq(ctx, p)
	must(t, what+": MaxCommitSeq", err)
	expectEqual(t, what+": MaxCommitSeq", max, gotMax)
	// The window from the horizon (below it a read is cursor_expired, HZ-4).
	win, err := conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"proj"}},
		AfterSeq: want.horizon, ThroughSeq: math.MaxInt64, LimitChanges: 1000})
	must(t, what+": ReadCommitWindow", err)
	var wantWin []driver.Commit
	for _, c := range want.commits {
		if c.Seq > want.horizon {
			wantWin = append(wantWin, c)
		}
	}
	expectEqual(t, what+": ReadCommitWindow from the horizon", wantWin, win)
	for key, res := range want.results {
		got, found, err := conn.GetPushResult(ctx, p, key[0], key[1])
		if err != nil || !found {
			t.Errorf("P-1: %s: GetPushResult(%v) = found %v, err %v", what, key, found, err)
			continue
		}
		expectEqual(t, what+": GetPushResult", res, got)
	}
	for _, key := range want.missingPR {
		if _, found, err := conn.GetPushResult(ctx, p, key[0], key[1]); err != nil || found {
			t.Errorf("P-1: %s: GetPushResult(%v) of the other partition = found %v, err %v; want not found", what, key, found, err)
		}
	}
	var cursors []driver.ClientCursor
	for _, rec := range want.clients {
		got, found, err := conn.GetClientRecord(ctx, p, rec.ClientID)
		if err != nil || !found {
			t.Errorf("P-1: %s: GetClientRecord(%q) = found %v, err %v", what, rec.ClientID, found, err)
		} else {
			expectEqual(t, what+": GetClientRecord", rec, got)
		}
		cursors = append(cursors, driver.ClientCursor{ClientID: rec.ClientID, Cursor: rec.Cursor, UpdatedAtMs: rec.UpdatedAtMs})
	}
	gotCursors, err := conn.ListClientCursors(ctx, p, "", winAll)
	must(t, what+": ListClientCursors", err)
	expectEqual(t, what+": ListClientCursors", cursors, gotCursors)
	hz, err := conn.HorizonSeq(ctx, p)
	must(t, what+": HorizonSeq", err)
	expectEqual(t, what+": HorizonSeq", want.horizon, hz)
	for at, seq := range want.before {
		got, err := conn.CommitSeqBefore(ctx, p, at)
		must(t, what+": CommitSeqBefore", err)
		expectEqual(t, fmt.Sprintf("%s: CommitSeqBefore(%d)", what, at), seq, got)
	}
}

func init() {
	register(
		// Catches a driver that leaves the partition out of any key or
		// query: shared row ids, commit counters, push-result keys, client
		// records, horizons or deletes leaking between partitions.
		Case{Name: "P-1/same-keys-live-independently", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			a1, a2, b1 := partTodo("r1", "in p1", 1), partTodo("r2", "also p1", 2), partTodo("r1", "in p2", 7)
			resA := driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1000, CacheIdentity: "A",
				Ops: []driver.OpResult{{Status: driver.OpApplied}}}
			resB := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5000, CacheIdentity: "B",
				Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.denied", Message: "no"}}}
			expectEqual(t, "P-1: first commit of p1", int64(1), partPush(t, conn, "p1", "c", "cc1", 1000, &resA, a1))
			expectEqual(t, "P-1: second commit of p1", int64(2), partPush(t, conn, "p1", "c", "cc2", 2000, nil, a2))
			expectEqual(t, "P-1: first commit of p2 (own sequence)", int64(1), partPush(t, conn, "p2", "c", "cc1", 5000, &resB, b1))
			recA := driver.ClientRecord{ClientID: "c", ActorID: "actor-a", WireVersion: 1, Cursor: 2, UpdatedAtMs: 2100,
				Subscriptions: []driver.Subscription{{ID: "s1", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"proj"}}}}}
			recB := driver.ClientRecord{ClientID: "c", ActorID: "actor-b", WireVersion: 2, Cursor: 1, UpdatedAtMs: 5100}
			recB2 := driver.ClientRecord{ClientID: "d", ActorID: "actor-d", WireVersion: 2, Cursor: 0, UpdatedAtMs: 5200}
			must(t, "PutClientRecord", conn.PutClientRecord(ctx, "p1", recA))
			must(t, "PutClientRecord", conn.PutClientRecord(ctx, "p2", recB))
			must(t, "PutClientRecord", conn.PutClientRecord(ctx, "p2", recB2))
			must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 1))
			resA.CommitSeq = 1

			commitOf := func(seq int64, cc string, at int64, p string, r driver.Row) driver.Commit {
				return driver.Commit{Seq: seq, ClientID: "c", ClientCommitID: cc, ActorID: "actor-" + p, CreatedAtMs: at,
					Changes: []driver.Change{upsertChange(tTodos, r)}}
			}
			p1 := partState{rows: []driver.Row{a1, a2}, horizon: 1,
				commits: []driver.Commit{commitOf(1, "cc1", 1000, "p1", a1), commitOf(2, "cc2", 2000, "p1", a2)},
				results: map[[2]string]driver.PushResult{{"c", "cc1"}: resA}, clients: []driver.ClientRecord{recA},
				before: map[int64]int64{1500: 1, 3000: 2, 6000: 2}}
			p2 := partState{rows: []driver.Row{b1},
				commits: []driver.Commit{commitOf(1, "cc1", 5000, "p2", b1)},
				results: map[[2]string]driver.PushResult{{"c", "cc1"}: resB}, clients: []driver.ClientRecord{recB, recB2},
				before:    map[int64]int64{1500: 0, 3000: 0, 6000: 1},
				missingPR: [][2]string{{"c", "cc2"}}}
			partExpect(t, "P-1: after the writes", conn, "p1", p1)
			partExpect(t, "P-1: after the writes", conn, "p2", p2)

			// Delete and prune in p1: p2 keeps its row and commit.
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			must(t, "P-1: DeleteRow(r1) in p1", tx.DeleteRow(ctx, tTodos, "r1"))
			commit(t, tx)
			n, err := conn.PruneCommitsThrough(ctx, "p1", 1)
			must(t, "P-1: PruneCommitsThrough(p1, 1)", err)
			expectEqual(t, "P-1: commits pruned in p1", int64(1), n)
			p1.rows, p1.commits, p1.before, p1.rowsUnchecked = []driver.Row{a2}, p1.commits[1:], map[int64]int64{1500: 0, 3000: 2}, true
			partExpect(t, "P-1: after a delete and a prune in p1", conn, "p1", p1)
			partExpect(t, "P-1: after a delete and a prune in p1", conn, "p2", p2)
			expectEqual(t, "P-1: next commit of p2", int64(2), partPush(t, conn, "p2", "c", "cc3", 6000, nil, partTodo("r3", "p2 again", 1)))
			expectEqual(t, "P-1: next commit of p1", int64(3), partPush(t, conn, "p1", "c", "cc3", 6000, nil, partTodo("r3", "p1 again", 1)))
		}},
		// Catches a driver that builds keys by concatenating partition and
		// id (with ":" "/" "|" "." or nothing), matches partitions with
		// LIKE, folds case, ignores trailing spaces, or normalizes Unicode.
		Case{Name: "P-1/similar-partition-names-never-collide", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			parts := []string{"a", "A", "a ", " a", "ab", "a:b", "a/b", "a|b", "a.b", "a_b", "a%", "a\u00e9", "ae\u0301", "a\\b"}
			wrote := map[string][]driver.Row{}
			for i, p := range parts {
				rows := []driver.Row{partTodo("x", fmt.Sprintf("row x of partition %d", i), int64(i))}
				if p == "a" {
					for _, id := range []string{"b:x", "b/x", "b|x", "b.x", "bx", "b\\x"} {
						rows = append(rows, partTodo(id, "row "+id+" of partition a", 100))
					}
				}
				slices.SortFunc(rows, func(x, y driver.Row) int { return strings.Compare(x.ID, y.ID) })
				wrote[p] = rows
				res := driver.PushResult{Status: driver.PushApplied, RecordedAtMs: int64(i), CacheIdentity: fmt.Sprint(i), Ops: []driver.OpResult{}}
				partPush(t, conn, p, "c", "k", int64(1000+i), &res, rows...)
				must(t, "PutClientRecord", conn.PutClientRecord(ctx, p, driver.ClientRecord{ClientID: "c", ActorID: "a", Cursor: int64(i), UpdatedAtMs: int64(i)}))
			}
			for i, p := range parts {
				what := fmt.Sprintf("P-1: partition %q", p)
				rows, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"proj"}}, Limit: 100})
				must(t, what+": ScanRows", err)
				expectEqual(t, what+": ScanRows", wrote[p], rowsByID(rows))
				res, found, err := conn.GetPushResult(ctx, p, "c", "k")
				if err != nil || !found {
					t.Errorf("%s: GetPushResult = found %v, err %v", what, found, err)
				} else {
					expectEqual(t, what+": GetPushResult cache identity", fmt.Sprint(i), res.CacheIdentity)
				}
				cur, err := conn.ListClientCursors(ctx, p, "", winAll)
				must(t, what+": ListClientCursors", err)
				expectEqual(t, what+": ListClientCursors", []driver.ClientCursor{{ClientID: "c", Cursor: int64(i), UpdatedAtMs: int64(i)}}, cur)
				win, err := conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"proj"}},
					ThroughSeq: 10, LimitChanges: 100})
				must(t, what+": ReadCommitWindow", err)
				if len(win) != 1 || win[0].CreatedAtMs != int64(1000+i) || len(win[0].Changes) != len(wrote[p]) {
					t.Errorf("%s: ReadCommitWindow = %+v; want the partition's one commit, created at %d, with %d changes",
						what, win, 1000+i, len(wrote[p]))
				}
			}
		}},
		// Catches a driver that errors on, or invents data for, a
		// partition it has never seen (including inside a Tx), or
		// registers a partition merely because it was read.
		Case{Name: "P-2/unknown-partition-reads-empty", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			res := driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1, Ops: []driver.OpResult{}}
			partPush(t, conn, "p1", "c", "cc1", 1000, &res, partTodo("r1", "t", 1))
			must(t, "PutClientRecord", conn.PutClientRecord(ctx, "p1", driver.ClientRecord{ClientID: "c", ActorID: "a", Cursor: 1, UpdatedAtMs: 1}))
			must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 1))
			for _, p := range []string{"unknown", "P1", "p1 ", "p", "p10"} {
				partExpect(t, "P-2: unknown partition", conn, p, partState{missingPR: [][2]string{{"c", "cc1"}}})
				if _, found, err := conn.GetClientRecord(ctx, p, "c"); err != nil || found {
					t.Errorf("P-2: GetClientRecord in unknown partition %q = found %v, err %v; want not found", p, found, err)
				}
				got, err := conn.CommitSeqBefore(ctx, p, math.MaxInt64)
				must(t, "CommitSeqBefore", err)
				expectEqual(t, "P-2: CommitSeqBefore(max int64) of unknown partition "+p, int64(0), got)
				tx := begin(t, conn, p)
				r := rowTxReader(tx)
				rowExpectMissing(t, "P-2: inside a Tx on unknown partition "+p, r, tTodos, "r1")
				rows, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"proj"}}, Limit: 10})
				if err != nil || len(rows) != 0 {
					t.Errorf("P-2: Tx.ScanRows on unknown partition %q = %d rows, err %v; want none", p, len(rows), err)
				}
				if _, found, err := tx.GetPushResult(ctx, "c", "cc1"); err != nil || found {
					t.Errorf("P-2: Tx.GetPushResult on unknown partition %q = found %v, err %v; want not found", p, found, err)
				}
				must(t, "Rollback", tx.Rollback(ctx))
			}
			listed, err := conn.ListPartitions(ctx, "", 10000)
			must(t, "ListPartitions", err)
			if slices.Contains(listed, "unknown") {
				t.Errorf("P-2/REG-3: reading an unknown partition registered it: ListPartitions = %q", listed)
			}
		}},
	)
}
