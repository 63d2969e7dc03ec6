package conformance

import (
	"context"
	"fmt"
	"math"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for the driver methods under retention (PR-7, CR-4, CR-5), called
// on the bare driver.Conn; the rule that uses them, RET, is in ret_*.go.
// Their plans (index-served, never a scan of the partition) are checked
// per driver.

func init() {
	register(
		Case{Name: "PR-7/deletes-strictly-older-oldest-first", Run: prDeleteOldestFirst},
		Case{Name: "PR-7/touches-nothing-else", Run: prDeleteTouchesNothingElse},
		Case{Name: "CR-4/deletes-strictly-older-oldest-first", Run: crDeleteOldestFirst},
		Case{Name: "CR-4/touches-nothing-else", Run: crDeleteTouchesNothingElse},
		Case{Name: "CR-4/refreshed-record-survives", Run: crDeleteRefreshedSurvives},
		Case{Name: "CR-5/smallest-recent-cursor-at-or-above", Run: crMinCursor},
		Case{Name: "CR-5/follows-puts-and-deletes", Run: crMinCursorFollows},
	)
}

// retResult is a rejected push result recorded at atMs.
func retResult(atMs int64) driver.PushResult {
	return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: atMs, CacheIdentity: "ret",
		Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.rejected", Message: "no"}}}
}

// retKey is a push result's key and its record time.
type retKey struct {
	client, commit string
	atMs           int64
}

// retPutResults stores a result for every key on partition p: the even
// ones with PutPushResult and Commit, the odd ones with CommitRejected, so
// both ways of storing a result are held to the same rule.
func retPutResults(t T, conn driver.Conn, p string, keys []retKey) {
	t.Helper()
	ctx := t.Context()
	for i, k := range keys {
		tx := begin(t, conn, p)
		if i%2 == 0 {
			must(t, "setup: PutPushResult", tx.PutPushResult(ctx, k.client, k.commit, retResult(k.atMs)))
			commit(t, tx)
			continue
		}
		if err := tx.CommitRejected(ctx, k.client, k.commit, retResult(k.atMs)); err != nil {
			_ = tx.Rollback(context.Background())
			t.Fatalf("setup: CommitRejected: %v", err)
		}
	}
}

// retResultsLeft reports, per key, whether its result is still stored.
func retResultsLeft(t T, conn driver.Conn, p string, keys []retKey) []bool {
	t.Helper()
	out := make([]bool, len(keys))
	for i, k := range keys {
		_, found, err := conn.GetPushResult(t.Context(), p, k.client, k.commit)
		must(t, "GetPushResult", err)
		out[i] = found
	}
	return out
}

// Catches: `<=` instead of `<`, an order by client id alone or under a
// collation ("B" after "a"), a limit ignored or applied per client, a
// result stored by CommitRejected without its record time, results of
// another partition deleted.
func prDeleteOldestFirst(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	// Deletion order (bytewise): the two at MinInt64, -5, then the 1000s
	// as (B,k2) (a,k1) (a,k2) (e\u0301,k0) (é,k0), then 2000.
	keys := []retKey{
		{"a", "k2", 1000}, {"é", "k0", 1000}, {"B", "k2", 1000}, {"a", "k1", 1000}, {"e\u0301", "k0", 1000},
		{"z", "k0", math.MinInt64}, {"z", "k1", math.MinInt64}, {"y", "k0", -5},
		{"a", "k3", 2000}, {"a", "k4", 2999}, {"a", "k5", 3000}, {"a", "k6", math.MaxInt64},
	}
	retPutResults(t, conn, "p1", keys)
	retPutResults(t, conn, "p2", keys)
	del := func(before int64, limit int, want int64) {
		t.Helper()
		n, err := conn.DeletePushResultsBefore(ctx, "p1", before, limit)
		must(t, fmt.Sprintf("DeletePushResultsBefore(%d, %d)", before, limit), err)
		expectEqual(t, fmt.Sprintf("PR-7: results deleted by DeletePushResultsBefore(%d, limit %d)", before, limit), want, n)
	}
	left := func(what string, want []bool) {
		t.Helper()
		expectEqual(t, "PR-7: results left "+what, want, retResultsLeft(t, conn, "p1", keys))
	}
	del(math.MinInt64, 10, 0)
	left("after a bound of MinInt64", []bool{true, true, true, true, true, true, true, true, true, true, true, true})
	del(1000, 2, 2)
	left("after the two oldest went", []bool{true, true, true, true, true, false, false, true, true, true, true, true})
	del(1000, 10, 1)
	left("after every result before 1000 went", []bool{true, true, true, true, true, false, false, false, true, true, true, true})
	del(3000, 3, 3)
	left("after three of the 1000s went, bytewise", []bool{false, true, false, false, true, false, false, false, true, true, true, true})
	del(3000, 3, 3)
	left("after three more went", []bool{false, false, false, false, false, false, false, false, false, true, true, true})
	del(3000, 3, 1)
	left("after every result before 3000 went", []bool{false, false, false, false, false, false, false, false, false, false, true, true})
	del(3000, 3, 0)
	del(math.MaxInt64, 10000, 1)
	left("after a bound of MaxInt64", []bool{false, false, false, false, false, false, false, false, false, false, false, true})
	expectEqual(t, "PR-7: results of the other partition", []bool{true, true, true, true, true, true, true, true, true, true, true, true},
		retResultsLeft(t, conn, "p2", keys))
}

// Catches: a deletion that takes commits, rows, client records or the
// registry entry with the results, or lowers the horizon or max seq.
func prDeleteTouchesNothingElse(t T, h Harness) {
	retDeleteTouchesNothingElse(t, h, "PR-7", "every result", retDelResults, func(want *hzState) {
		want.Results = make([]*driver.PushResult, len(want.Results))
	})
}

// retDelResults and retDelRecords are the
// deletions retDeleteTouchesNothingElse runs, and what they delete.
func retDelResults(t T, conn driver.Conn, s hzSeeded) (int64, int) {
	n, err := conn.DeletePushResultsBefore(t.Context(), "p1", math.MaxInt64, 10000)
	must(t, "DeletePushResultsBefore", err)
	return n, len(s.results)
}

func retDelRecords(t T, conn driver.Conn, s hzSeeded) (int64, int) {
	n, err := conn.DeleteClientRecordsBefore(t.Context(), "p1", math.MaxInt64, 10000)
	must(t, "DeleteClientRecordsBefore", err)
	return n, len(s.clients)
}

// retDeleteTouchesNothingElse seeds two partitions, runs del on p1 with
// no bound, and checks that p1 then reads as before with gone applied,
// and p2 exactly as before.
func retDeleteTouchesNothingElse(t T, h Harness, rule, what string, del func(T, driver.Conn, hzSeeded) (int64, int),
	gone func(want *hzState)) {
	conn := openStore(t, h)
	s1, s2 := hzSeed(t, conn, "p1"), hzSeed(t, conn, "p2")
	before1, before2 := hzCapture(t, conn, "p1", s1), hzCapture(t, conn, "p2", s2)
	n, want := del(t, conn, s1)
	expectEqual(t, rule+": rows deleted", int64(want), n)
	after := before1
	gone(&after)
	expectEqual(t, rule+": p1 after deleting "+what, after, hzCapture(t, conn, "p1", s1))
	expectEqual(t, rule+": the other partition", before2, hzCapture(t, conn, "p2", s2))
}

// retClient stores a client record with cursor and updatedAtMs.
func retClient(t T, conn driver.Conn, p, id string, cursor, updatedAtMs int64) {
	t.Helper()
	rec := crRecord(id)
	rec.Cursor, rec.UpdatedAtMs = cursor, updatedAtMs
	crPut(t, conn, p, rec)
}

// retClientsLeft returns those of ids whose client record p still holds.
func retClientsLeft(t T, conn driver.Conn, p string, ids ...string) []string {
	t.Helper()
	out := []string{}
	for _, id := range ids {
		if _, found := crGet(t, conn, p, id); found {
			out = append(out, id)
		}
	}
	return out
}

// crDelIDs are crDeleteOldestFirst's client ids, ascending bytewise.
var crDelIDs = []string{"B", "a", "e\u0301", "m", "n", "o", "p", "é"}

// Catches: `<=` instead of `<`, ties ordered under a collation, a limit
// ignored, records of another partition deleted.
func crDeleteOldestFirst(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	for _, p := range []string{"p1", "p2"} {
		for _, c := range []struct {
			id string
			at int64
		}{{"a", 1000}, {"é", 1000}, {"B", 1000}, {"e\u0301", 1000}, {"m", math.MinInt64}, {"n", 2999}, {"o", 3000}, {"p", math.MaxInt64}} {
			retClient(t, conn, p, c.id, 7, c.at)
		}
	}
	del := func(before int64, limit int, want int64, left ...string) {
		t.Helper()
		n, err := conn.DeleteClientRecordsBefore(ctx, "p1", before, limit)
		must(t, fmt.Sprintf("DeleteClientRecordsBefore(%d, %d)", before, limit), err)
		expectEqual(t, fmt.Sprintf("CR-4: records deleted by DeleteClientRecordsBefore(%d, limit %d)", before, limit), want, n)
		expectEqual(t, fmt.Sprintf("CR-4: records left after DeleteClientRecordsBefore(%d, limit %d)", before, limit), left,
			retClientsLeft(t, conn, "p1", crDelIDs...))
	}
	del(math.MinInt64, 10, 0, "B", "a", "e\u0301", "m", "n", "o", "p", "é")
	del(1000, 10, 1, "B", "a", "e\u0301", "n", "o", "p", "é")
	del(3000, 2, 2, "e\u0301", "n", "o", "p", "é")
	del(3000, 2, 2, "n", "o", "p")
	del(3000, 2, 1, "o", "p")
	del(3000, 2, 0, "o", "p")
	del(math.MaxInt64, 10000, 1, "p")
	expectEqual(t, "CR-4: records of the other partition", crDelIDs, retClientsLeft(t, conn, "p2", crDelIDs...))
}

// Catches: a deletion that takes results, commits, rows or the registry
// entry with the records.
func crDeleteTouchesNothingElse(t T, h Harness) {
	retDeleteTouchesNothingElse(t, h, "CR-4", "every record", retDelRecords, func(want *hzState) {
		want.Cursors = nil
		want.Records = make([]*driver.ClientRecord, len(want.Records))
	})
}

// Catches: a deletion that picks old records, then deletes them by client
// id without checking their time again, so a record a pull refreshed in
// between is lost. Every round races one deletion with one refresh: the
// record must survive with the refreshed time, whichever runs first.
func crDeleteRefreshedSurvives(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	const rounds = 25
	for round := range rounds {
		for i := range 4 {
			retClient(t, conn, "p1", fmt.Sprintf("c%d", i), 1, 1000)
		}
		var wg gosync.WaitGroup
		var delErr, putErr error
		fresh := int64(5000 + round)
		wg.Go(func() { _, delErr = conn.DeleteClientRecordsBefore(ctx, "p1", 2000, 10) })
		wg.Go(func() {
			rec := crRecord("c2")
			rec.Cursor, rec.UpdatedAtMs = 9, fresh
			putErr = conn.PutClientRecord(ctx, "p1", rec)
		})
		wg.Wait()
		must(t, "CR-4: DeleteClientRecordsBefore racing a put", delErr)
		must(t, "CR-4: PutClientRecord racing a deletion", putErr)
		rec, found := crGet(t, conn, "p1", "c2")
		if !found || rec.UpdatedAtMs != fresh || rec.Cursor != 9 {
			t.Fatalf("CR-4: round %d: the refreshed record is found=%v with updatedAtMs %d, cursor %d; want it kept with %d, 9",
				round, found, rec.UpdatedAtMs, rec.Cursor, fresh)
		}
		expectEqual(t, fmt.Sprintf("CR-4: round %d: records left", round), []string{"c2"},
			retClientsLeft(t, conn, "p1", "c0", "c1", "c2", "c3"))
		_, err := conn.DeleteClientRecordsBefore(ctx, "p1", math.MaxInt64, 10)
		must(t, "cleanup: DeleteClientRecordsBefore", err)
	}
}

// crMinAsk is one MinClientCursor question and its answer.
type crMinAsk struct {
	since, atLeast int64
	want           int64
	found          bool
}

func crMinCheck(t T, conn driver.Conn, p string, asks []crMinAsk) {
	t.Helper()
	for _, a := range asks {
		got, found, err := conn.MinClientCursor(t.Context(), p, a.since, a.atLeast)
		must(t, fmt.Sprintf("MinClientCursor(%d, %d)", a.since, a.atLeast), err)
		expectEqual(t, fmt.Sprintf("CR-5: MinClientCursor(%s, since %d, at least %d)", p, a.since, a.atLeast),
			[2]any{a.want, a.found}, [2]any{got, found})
	}
}

// Catches: `>` instead of `>=` on either bound, the oldest or the first
// client's cursor instead of the smallest, negative cursors (bootstrap)
// counted, a cursor beyond 2^53 rounded, another partition's records
// counted.
func crMinCursor(t T, h Harness) {
	conn := openStore(t, h)
	for _, c := range []struct {
		id           string
		cursor, atMs int64
	}{{"a", 5, 1000}, {"b", 3, 500}, {"c", 8, 2000}, {"d", -1, 3000}, {"e", 7, 1500}, {"f", 1<<53 + 1, 4000}} {
		retClient(t, conn, "p1", c.id, c.cursor, c.atMs)
	}
	retClient(t, conn, "p2", "z", 1, 9999)
	crMinCheck(t, conn, "p1", []crMinAsk{
		{math.MinInt64, 0, 3, true}, {500, 0, 3, true}, {501, 0, 5, true}, {1000, 0, 5, true}, {1001, 0, 7, true},
		{1000, 5, 5, true}, {1000, 6, 7, true}, {1501, 0, 8, true}, {2001, 0, 1<<53 + 1, true},
		{3000, 0, 1<<53 + 1, true}, {4001, 0, 0, false}, {0, 1<<53 + 2, 0, false}, {0, 9, 1<<53 + 1, true},
	})
	crMinCheck(t, conn, "unknown", []crMinAsk{{math.MinInt64, 0, 0, false}})
}

// Catches: an answer served from a copy that puts and deletions do not
// keep (a cached floor), or from records of the old cursor.
func crMinCursorFollows(t T, h Harness) {
	conn := openStore(t, h)
	retClient(t, conn, "p1", "a", 4, 1000)
	retClient(t, conn, "p1", "b", 6, 2000)
	crMinCheck(t, conn, "p1", []crMinAsk{{0, 0, 4, true}})
	retClient(t, conn, "p1", "a", 9, 3000)
	crMinCheck(t, conn, "p1", []crMinAsk{{0, 0, 6, true}, {2500, 0, 9, true}})
	_, err := conn.DeleteClientRecordsBefore(t.Context(), "p1", 2500, 10)
	must(t, "DeleteClientRecordsBefore", err)
	crMinCheck(t, conn, "p1", []crMinAsk{{0, 0, 9, true}})
	_, err = conn.RotatePartitionLogEpoch(t.Context(), "p1", "e2", 4000)
	must(t, "RotatePartitionLogEpoch", err)
	crMinCheck(t, conn, "p1", []crMinAsk{{0, 0, 0, false}})
}

// vdPrunePolicy is a policy that, let through, would delete everything
// vdSeed wrote: every commit, result and record is old.
func vdPrunePolicy() syncstore.RetentionPolicy {
	return syncstore.RetentionPolicy{ActiveWindow: time.Millisecond, ForceAge: time.Millisecond, MinRetainedCommits: -1,
		PushResultRetention: time.Millisecond, ClientRecordRetention: time.Millisecond,
		Now: func() time.Time { return time.UnixMilli(math.MaxInt64 / 2) }}
}

// vdCallsRetentionV1: the retention calls with bad partition p (V-1),
// named with suffix n; part of vdCallsV1.
func vdCallsRetentionV1(p, n string) []vdCall {
	inv := driver.CodeInvalidArgument
	return []vdCall{
		vdS("DeletePushResultsBefore"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.DeletePushResultsBefore(ctx, p, math.MaxInt64, 10)
			return err
		}),
		vdS("DeleteClientRecordsBefore"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.DeleteClientRecordsBefore(ctx, p, math.MaxInt64, 10)
			return err
		}),
		vdS("MinClientCursor"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, _, err := s.MinClientCursor(ctx, p, 0, 0)
			return err
		}),
		vdS("Prune"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.Prune(ctx, p, vdPrunePolicy())
			return err
		}),
	}
}

// vdCallsRetentionV5: the retention calls with limit n outside 1…10,000
// (V-5, a zero Prune limit being the default), and a negative atLeast;
// part of vdCallsV5.
func vdCallsRetentionV5(n int) []vdCall {
	lim := driver.CodeInvalidLimit
	out := []vdCall{
		vdS("DeletePushResultsBefore limit", lim, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.DeletePushResultsBefore(ctx, vdP, math.MaxInt64, n)
			return err
		}),
		vdS("DeleteClientRecordsBefore limit", lim, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.DeleteClientRecordsBefore(ctx, vdP, math.MaxInt64, n)
			return err
		}),
		vdS("MinClientCursor atLeast -1", driver.CodeInvalidArgument, func(ctx context.Context, s *syncstore.Store) error {
			_, _, err := s.MinClientCursor(ctx, vdP, 0, -1)
			return err
		}),
	}
	if n != 0 {
		out = append(out, vdS("Prune RetentionPolicy.Limit", lim, func(ctx context.Context, s *syncstore.Store) error {
			pol := vdPrunePolicy()
			pol.Limit = n
			_, err := s.Prune(ctx, vdP, pol)
			return err
		}))
	}
	return out
}
