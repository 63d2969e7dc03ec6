package conformance

import (
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
)

// Cases for HZ-1…HZ-3 (horizon, pruning, CommitSeqBefore). hzSeed and
// hzCapture are shared with the REG-2 cases: they write, and read back
// through every core read, one partition's whole state.

func init() {
	register(
		Case{Name: "HZ-1/default-zero-and-never-lowered", Run: hzDefaultAndRaiseOnly},
		Case{Name: "HZ-1/above-max-commit-seq-invalid-horizon", Run: hzAboveMax},
		Case{Name: "HZ-2/prune-beyond-horizon-invalid-nothing-deleted", Run: hzPruneBeyondHorizon},
		Case{Name: "HZ-2/prune-deletes-through-and-counts", Run: hzPruneDeletesAndCounts},
		Case{Name: "HZ-2/prune-touches-nothing-else", Run: hzPruneTouchesNothingElse},
		Case{Name: "HZ-3/strictly-before-boundaries", Run: hzSeqBeforeBoundaries},
		Case{Name: "HZ-3/largest-seq-not-latest-time", Run: hzSeqBeforeLargestSeq},
		Case{Name: "HZ-3/pruned-commits-excluded", Run: hzSeqBeforePruned},
	)
}

// hzTimes are the times hzCapture asks CommitSeqBefore about.
var hzTimes = []int64{math.MinInt64, 0, 1000, 1001, 2500, 3000, 3001, 4500, 6000, 6001, math.MaxInt64}

// hzSeeded names what hzSeed wrote: the push-result keys and client ids.
type hzSeeded struct {
	results [][2]string // client id, client commit id
	clients []string
}

// hzSeed writes partition p's state: six commits created at 1000…6000
// (todos in projects p7/p8, an empty commit, a users row, a delete), each
// non-empty one with its push result stored in the same Tx, two client
// records and a registry entry.
func hzSeed(t T, conn driver.Conn, p string) hzSeeded {
	t.Helper()
	ctx := t.Context()
	a, b := todo("a", "p7", "u1"), todo("b", "p8", "u1")
	a2 := todo("a", "p7", "u2")
	a2.ServerVersion = 2
	commits := [][]winOp{
		{winUp(tTodos, a), winUp(tTodos, b)},
		nil,
		{winUp(tUsers, user("x", "o1", "x@example.com"))},
		{winUp(tTodos, a2)},
		{winDel(tTodos, b)},
		{winUp(tTodos, todo("c", "p7", "u1"))},
	}
	var s hzSeeded
	for i, ops := range commits {
		meta := winMeta(int64(1000 * (i + 1)))
		tx := begin(t, conn, p)
		for _, op := range ops {
			var err error
			if op.del {
				err = tx.DeleteRow(ctx, op.table, op.row.ID)
				meta.Changes = append(meta.Changes, deleteChange(op.table, op.row))
			} else {
				err = tx.UpsertRow(ctx, op.table, op.row)
				meta.Changes = append(meta.Changes, upsertChange(op.table, op.row))
			}
			if err != nil {
				_ = tx.Rollback(ctx)
				t.Fatalf("setup: write %s %q: %v", op.table, op.row.ID, err)
			}
		}
		seq, err := tx.AppendCommit(ctx, meta)
		if err == nil && len(ops) > 0 {
			r := driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: meta.CreatedAtMs,
				CacheIdentity: "ci-" + meta.ClientCommitID}
			for range ops {
				r.Ops = append(r.Ops, driver.OpResult{Status: driver.OpApplied})
			}
			err = tx.PutPushResult(ctx, meta.ClientID, meta.ClientCommitID, r)
			s.results = append(s.results, [2]string{meta.ClientID, meta.ClientCommitID})
		}
		if err != nil {
			_ = tx.Rollback(ctx)
			t.Fatalf("setup: commit %d: %v", i+1, err)
		}
		commit(t, tx)
	}
	for _, id := range []string{"client-1", "client-2"} {
		rec := crRecord(id)
		crPut(t, conn, p, rec)
		s.clients = append(s.clients, id)
	}
	_, err := conn.TouchPartition(ctx, p, 500, "epoch-"+p)
	must(t, "setup: TouchPartition", err)
	return s
}

// hzState is a partition's state as every core read reports it.
type hzState struct {
	MaxSeq    int64
	Horizon   int64
	Todos     []driver.Row
	Users     []driver.Row
	TodoLog   []driver.Commit
	UserLog   []driver.Commit
	SeqBefore []int64 // CommitSeqBefore at each of hzTimes
	Results   []*driver.PushResult
	Cursors   []driver.ClientCursor
	Records   []*driver.ClientRecord
	Registry  []driver.PartitionEntry // the whole registry
}

// hzTodoQ and hzUserQ are the window queries hzCapture reads, from the
// partition's horizon.
var (
	hzTodoQ = driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7", "p8"}}, ThroughSeq: math.MaxInt64, LimitChanges: winAll}
	hzUserQ = driver.WindowQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o1"}}, ThroughSeq: math.MaxInt64, LimitChanges: winAll}
)

// hzCapture reads partition p's state (s names the keys to read).
func hzCapture(t T, conn driver.Conn, p string, s hzSeeded) hzState {
	t.Helper()
	ctx := t.Context()
	var st hzState
	var err error
	st.MaxSeq, err = conn.MaxCommitSeq(ctx, p)
	must(t, "MaxCommitSeq", err)
	st.Horizon, err = conn.HorizonSeq(ctx, p)
	must(t, "HorizonSeq", err)
	st.Todos, err = conn.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p7", "p8"}}, Limit: winAll})
	must(t, "ScanRows(todos)", err)
	st.Todos = scanSorted(st.Todos)
	st.Users, err = conn.ScanRows(ctx, p, driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o1"}}, Limit: winAll})
	must(t, "ScanRows(users)", err)
	st.Users = scanSorted(st.Users)
	// The log as a client at the horizon reads it: below the horizon a
	// read is cursor_expired (HZ-4).
	todoQ, userQ := hzTodoQ, hzUserQ
	todoQ.AfterSeq, userQ.AfterSeq = st.Horizon, st.Horizon
	st.TodoLog = winRead(t, conn, p, todoQ)
	st.UserLog = winRead(t, conn, p, userQ)
	for _, at := range hzTimes {
		seq, err := conn.CommitSeqBefore(ctx, p, at)
		must(t, "CommitSeqBefore", err)
		st.SeqBefore = append(st.SeqBefore, seq)
	}
	for _, k := range s.results {
		r, found, err := conn.GetPushResult(ctx, p, k[0], k[1])
		must(t, "GetPushResult", err)
		if found {
			st.Results = append(st.Results, &r)
		} else {
			st.Results = append(st.Results, nil)
		}
	}
	st.Cursors, err = conn.ListClientCursors(ctx, p, "", winAll)
	must(t, "ListClientCursors", err)
	for _, id := range s.clients {
		rec, found, err := conn.GetClientRecord(ctx, p, id)
		must(t, "GetClientRecord", err)
		if found {
			st.Records = append(st.Records, &rec)
		} else {
			st.Records = append(st.Records, nil)
		}
	}
	st.Registry, err = conn.ListPartitionRegistry(ctx, "", winAll)
	must(t, "ListPartitionRegistry", err)
	return st
}

// hzPruned returns the state expected after pruning through seq, derived
// from before (what the driver answered before the prune, so a window or
// CommitSeqBefore bug is reported by its own rule, not here): commits ≤ seq
// gone from window reads; CommitSeqBefore no longer answers a pruned seq
// (hzSeed's creation times grow with seq, so it then answers 0);
// everything else unchanged.
func hzPruned(before hzState, seq int64) hzState {
	want := before
	retained := func(cs []driver.Commit) []driver.Commit {
		var out []driver.Commit
		for _, c := range cs {
			if c.Seq > seq {
				out = append(out, c)
			}
		}
		return out
	}
	want.TodoLog, want.UserLog = retained(before.TodoLog), retained(before.UserLog)
	want.SeqBefore = nil
	for _, s := range before.SeqBefore {
		if s <= seq {
			s = 0
		}
		want.SeqBefore = append(want.SeqBefore, s)
	}
	return want
}

func hzSet(t T, conn driver.Conn, p string, seq int64) error {
	t.Helper()
	return conn.SetHorizonSeq(t.Context(), p, seq)
}

func hzGet(t T, conn driver.Conn, p string) int64 {
	t.Helper()
	h, err := conn.HorizonSeq(t.Context(), p)
	must(t, "HorizonSeq", err)
	return h
}

// hzCommits writes one todos commit per createdAt on partition p.
func hzCommits(t T, conn driver.Conn, p string, createdAt ...int64) {
	t.Helper()
	for i, at := range createdAt {
		winWrite(t, conn, p, winMeta(at), winUp(tTodos, todo(fmt.Sprintf("%s-%d", p, i), "p7", "u1")))
	}
}

// Catches: a horizon that starts non-zero, or that a lower value moves
// back (a plain UPDATE instead of max(current, seq)).
func hzDefaultAndRaiseOnly(t T, h Harness) {
	conn := openStore(t, h)
	expectEqual(t, "HZ-1: horizon of an unknown partition", int64(0), hzGet(t, conn, "p1"))
	hzCommits(t, conn, "p1", 1, 2, 3, 4, 5)
	expectEqual(t, "HZ-1: horizon of a partition with commits", int64(0), hzGet(t, conn, "p1"))
	for _, c := range []struct{ set, want int64 }{{3, 3}, {2, 3}, {0, 3}, {3, 3}, {4, 4}, {1, 4}, {5, 5}, {5, 5}} {
		must(t, fmt.Sprintf("HZ-1: SetHorizonSeq(%d)", c.set), hzSet(t, conn, "p1", c.set))
		expectEqual(t, fmt.Sprintf("HZ-1: horizon after SetHorizonSeq(%d)", c.set), c.want, hzGet(t, conn, "p1"))
	}
}

// Catches: a horizon raised past the partition's MaxCommitSeq (or checked
// against another partition's), or changed by the rejected call.
func hzAboveMax(t T, h Harness) {
	conn := openStore(t, h)
	expectCode(t, "HZ-1: SetHorizonSeq(1) on an empty partition", hzSet(t, conn, "p1", 1), driver.CodeInvalidHorizon)
	expectEqual(t, "HZ-1: horizon after a rejected SetHorizonSeq", int64(0), hzGet(t, conn, "p1"))
	hzCommits(t, conn, "p2", 1, 2, 3, 4, 5)
	hzCommits(t, conn, "p1", 1, 2, 3)
	must(t, "SetHorizonSeq(2)", hzSet(t, conn, "p1", 2))
	for _, seq := range []int64{4, 5, math.MaxInt64} {
		expectCode(t, fmt.Sprintf("HZ-1: SetHorizonSeq(%d) with MaxCommitSeq 3", seq), hzSet(t, conn, "p1", seq),
			driver.CodeInvalidHorizon)
		expectEqual(t, fmt.Sprintf("HZ-1: horizon after rejected SetHorizonSeq(%d)", seq), int64(2), hzGet(t, conn, "p1"))
	}
	must(t, "HZ-1: SetHorizonSeq(3) = MaxCommitSeq", hzSet(t, conn, "p1", 3))
	expectEqual(t, "HZ-1: horizon raised to MaxCommitSeq", int64(3), hzGet(t, conn, "p1"))
	expectCode(t, "HZ-1: SetHorizonSeq(4) at horizon 3", hzSet(t, conn, "p1", 4), driver.CodeInvalidHorizon)
	expectEqual(t, "HZ-1: horizon of the other partition", int64(0), hzGet(t, conn, "p2"))
}

// Catches: a prune that ignores the horizon, clamps the bound to it, or
// deletes part of the range before failing.
func hzPruneBeyondHorizon(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	n, err := conn.PruneCommitsThrough(ctx, "empty", 1)
	expectCode(t, "HZ-2: PruneCommitsThrough(1) at horizon 0", err, driver.CodeInvalidHorizon)
	expectEqual(t, "HZ-2: commits removed by a rejected prune", int64(0), n)
	n, err = conn.PruneCommitsThrough(ctx, "empty", 0)
	must(t, "HZ-2: PruneCommitsThrough(0) at horizon 0", err)
	expectEqual(t, "HZ-2: commits removed through 0", int64(0), n)

	s := hzSeed(t, conn, "p1")
	must(t, "SetHorizonSeq(2)", hzSet(t, conn, "p1", 2))
	before := hzCapture(t, conn, "p1", s)
	for _, seq := range []int64{3, 6, 7} {
		n, err := conn.PruneCommitsThrough(ctx, "p1", seq)
		expectCode(t, fmt.Sprintf("HZ-2: PruneCommitsThrough(%d) at horizon 2", seq), err, driver.CodeInvalidHorizon)
		expectEqual(t, fmt.Sprintf("HZ-2: commits removed by rejected PruneCommitsThrough(%d)", seq), int64(0), n)
		expectEqual(t, fmt.Sprintf("HZ-2: state after rejected PruneCommitsThrough(%d)", seq), before,
			hzCapture(t, conn, "p1", s))
	}
}

// Catches: a wrong count (changes counted, empty commits skipped), commits
// above the bound deleted, pruned commits still found by CommitSeqBefore,
// a second prune that counts again, or anything else of the partition
// changed (the window read from the horizon included).
func hzPruneDeletesAndCounts(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	s := hzSeed(t, conn, "p1")
	must(t, "SetHorizonSeq(4)", hzSet(t, conn, "p1", 4))
	before := hzCapture(t, conn, "p1", s)
	if len(before.TodoLog) == 0 {
		t.Fatalf("HZ-2 setup: the window read from the horizon returns no commit (%v): a prune that deletes too much cannot be observed",
			seqs(before.TodoLog))
	}
	var through int64
	// Commit 2 is empty: it is a commit, and is counted.
	for _, c := range []struct{ seq, want int64 }{{2, 2}, {2, 0}, {1, 0}, {4, 2}, {4, 0}, {0, 0}} {
		n, err := conn.PruneCommitsThrough(ctx, "p1", c.seq)
		must(t, fmt.Sprintf("HZ-2: PruneCommitsThrough(%d)", c.seq), err)
		expectEqual(t, fmt.Sprintf("HZ-2: commits removed by PruneCommitsThrough(%d)", c.seq), c.want, n)
		through = max(through, c.seq)
		expectEqual(t, fmt.Sprintf("HZ-2: state after PruneCommitsThrough(%d)", c.seq), hzPruned(before, through),
			hzCapture(t, conn, "p1", s))
	}
}

// Catches: a prune that deletes rows, push results, client records or the
// registry entry with the commits, lowers MaxCommitSeq or the horizon, or
// deletes the same seqs in another partition.
func hzPruneTouchesNothingElse(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	s1 := hzSeed(t, conn, "p1")
	s2 := hzSeed(t, conn, "p2")
	must(t, "SetHorizonSeq(p1, 6)", hzSet(t, conn, "p1", 6))
	must(t, "SetHorizonSeq(p2, 3)", hzSet(t, conn, "p2", 3))
	before1, before2 := hzCapture(t, conn, "p1", s1), hzCapture(t, conn, "p2", s2)
	n, err := conn.PruneCommitsThrough(ctx, "p1", 6)
	must(t, "HZ-2: PruneCommitsThrough(p1, 6)", err)
	expectEqual(t, "HZ-2: commits removed", int64(6), n)
	after1 := hzCapture(t, conn, "p1", s1)
	expectEqual(t, "HZ-2: p1 after pruning every commit", hzPruned(before1, 6), after1)
	if len(after1.TodoLog)+len(after1.UserLog) != 0 {
		t.Errorf("HZ-2: window reads still return %v and %v after pruning every commit", seqs(after1.TodoLog), seqs(after1.UserLog))
	}
	expectEqual(t, "HZ-2: the other partition after pruning p1", before2, hzCapture(t, conn, "p2", s2))
	// The next commit after pruning everything continues the sequence.
	next := winWrite(t, conn, "p1", winMeta(7000), winUp(tTodos, todo("d", "p7", "u1")))
	expectEqual(t, "HZ-2: seq of the first commit after pruning", int64(7), next.Seq)
}

// Catches: `created_at <= t` instead of `<`, a wrong answer at either end
// of the int64 range, or an unknown partition that is not 0.
func hzSeqBeforeBoundaries(t T, h Harness) {
	conn := openStore(t, h)
	hzCommits(t, conn, "p1", 1000, 2000, 2000, 3000)
	for _, c := range []struct{ at, want int64 }{
		{math.MinInt64, 0}, {0, 0}, {999, 0}, {1000, 0}, {1001, 1}, {1999, 1}, {2000, 1}, {2001, 3},
		{3000, 3}, {3001, 4}, {math.MaxInt64, 4},
	} {
		got, err := conn.CommitSeqBefore(t.Context(), "p1", c.at)
		must(t, fmt.Sprintf("CommitSeqBefore(%d)", c.at), err)
		expectEqual(t, fmt.Sprintf("HZ-3: CommitSeqBefore(%d)", c.at), c.want, got)
	}
	got, err := conn.CommitSeqBefore(t.Context(), "unknown", math.MaxInt64)
	must(t, "CommitSeqBefore on an unknown partition", err)
	expectEqual(t, "HZ-3: CommitSeqBefore on an unknown partition", int64(0), got)
}

// Catches: the seq of the latest-created commit before t (ORDER BY
// created_at DESC LIMIT 1) instead of the largest seq created before t,
// which differ when creation times are not monotonic (clock skew).
func hzSeqBeforeLargestSeq(t T, h Harness) {
	conn := openStore(t, h)
	hzCommits(t, conn, "p1", 1000, 1400, 1200, 900)
	for _, c := range []struct{ at, want int64 }{
		{900, 0}, {901, 4}, {1000, 4}, {1001, 4}, {1200, 4}, {1201, 4}, {1400, 4}, {1401, 4},
	} {
		got, err := conn.CommitSeqBefore(t.Context(), "p1", c.at)
		must(t, fmt.Sprintf("CommitSeqBefore(%d)", c.at), err)
		expectEqual(t, fmt.Sprintf("HZ-3: CommitSeqBefore(%d) with commits created at 1000, 1400, 1200, 900", c.at), c.want, got)
	}
	conn2 := openStore(t, h)
	hzCommits(t, conn2, "p1", 1000, 1400, 1200)
	for _, c := range []struct{ at, want int64 }{{1000, 0}, {1001, 1}, {1201, 3}, {1400, 3}, {1401, 3}, {1500, 3}} {
		got, err := conn2.CommitSeqBefore(t.Context(), "p1", c.at)
		must(t, fmt.Sprintf("CommitSeqBefore(%d)", c.at), err)
		expectEqual(t, fmt.Sprintf("HZ-3: CommitSeqBefore(%d) with commits created at 1000, 1400, 1200", c.at), c.want, got)
	}
}

// Catches: CommitSeqBefore answered from an index or table that pruning
// does not clean, so it returns a seq that no longer exists.
func hzSeqBeforePruned(t T, h Harness) {
	conn := openStore(t, h)
	hzCommits(t, conn, "p1", 1000, 2000, 3000)
	must(t, "SetHorizonSeq(2)", hzSet(t, conn, "p1", 2))
	_, err := conn.PruneCommitsThrough(t.Context(), "p1", 2)
	must(t, "PruneCommitsThrough(2)", err)
	for _, c := range []struct{ at, want int64 }{{1001, 0}, {2001, 0}, {2500, 0}, {3000, 0}, {3001, 3}, {math.MaxInt64, 3}} {
		got, err := conn.CommitSeqBefore(t.Context(), "p1", c.at)
		must(t, fmt.Sprintf("CommitSeqBefore(%d)", c.at), err)
		expectEqual(t, fmt.Sprintf("HZ-3: CommitSeqBefore(%d) after pruning through 2", c.at), c.want, got)
	}
}
