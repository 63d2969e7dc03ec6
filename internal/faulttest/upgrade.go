package faulttest

import (
	"context"
	"math"
	gosync "sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

// What every driver's TestUpgradeFormat1 shares: the push results and
// client records a store of storage format 1 holds (written by the test
// with the driver's own format-1 SQL), the opening of that store by
// several Conns at once, and the checks that the upgrade kept every
// result and gave each its record time (PR-7), and that the retention
// reads work on it (CR-5).

// Format1Result is one push result as a format-1 store holds it:
// Text is what the result column contains.
type Format1Result struct {
	Partition, ClientID, ClientCommitID string
	Text                                string
	// RecordedAtMs is the time the upgrade must give the result; Unread
	// marks a result whose time cannot be read (it gets the upgrade's).
	RecordedAtMs int64
	Unread       bool
}

// Format1Client is one client record of a format-1 store: the driver's
// fixture writes it with its own SQL (subscriptions "[]").
type Format1Client struct {
	Partition, ClientID string
	Cursor, UpdatedAtMs int64
}

// Format1Results returns the fixture's push results: applied and rejected
// ones (the optional commitSeq present and absent), negative and beyond
// 2^53 record times, one with an unknown status (readable time, yet a
// cache miss when read, PR-5), one that is not JSON, and one in another
// partition.
func Format1Results() []Format1Result {
	enc := func(r driver.PushResult) string {
		b, err := driver.EncodePushResult(r)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	applied := driver.PushResult{Status: driver.PushApplied, CommitSeq: 3, RecordedAtMs: 1000, CacheIdentity: "ci",
		Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpConflict, Code: "row.conflict", Message: `"recordedAtMs":9`,
			ServerVersion: 2, ServerRow: driver.Values{"recordedAtMs": int64(9)}}}}
	rejected := func(at int64) driver.PushResult {
		return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: at,
			Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.no", Details: `{"recordedAtMs":1}`}}}
	}
	return []Format1Result{
		{"p1", "c1", "k1", enc(applied), 1000, false},
		{"p1", "c1", "k2", enc(rejected(5000)), 5000, false},
		{"p1", "c2", "k1", enc(rejected(-7)), -7, false},
		{"p1", "c2", "k2", enc(rejected(1<<53 + 1)), 1<<53 + 1, false},
		{"p1", "c3", "k1", `{"status":"maybe","recordedAtMs":2000,"ops":[]}`, 2000, false},
		{"p1", "c3", "k2", `not json {"recordedAtMs":1}`, 0, true},
		{"p2", "c1", "k1", enc(rejected(1000)), 1000, false},
	}
}

// Format1Clients returns the fixture's client records.
func Format1Clients() []Format1Client {
	return []Format1Client{{"p1", "a", 4, 1000}, {"p1", "b", 7, 3000}, {"p2", "a", 1, 1000}}
}

// OpenConcurrently opens n Conns on one store at once with open and
// returns them; every open must succeed (concurrent upgrades end as one).
func OpenConcurrently(t *testing.T, n int, open func(ctx context.Context) (driver.Conn, error)) []driver.Conn {
	t.Helper()
	conns := make([]driver.Conn, n)
	errs := make([]error, n)
	var wg gosync.WaitGroup
	for i := range n {
		wg.Go(func() { conns[i], errs[i] = open(t.Context()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once on a format-1 store: %v", i+1, n, err)
		}
		t.Cleanup(func() { _ = conns[i].Close() })
	}
	return conns
}

// CheckUpgraded checks a format-1 store holding Format1Results and
// Format1Clients after conn opened (and so upgraded) it; startMs is a
// time before the upgrade. The unreadable result's time is the upgrade's,
// on the engine's clock: it must lie within a minute of the test's
// clock. It deletes the results as it checks them.
func CheckUpgraded(t *testing.T, conn driver.Conn, startMs int64) {
	t.Helper()
	ctx := t.Context()
	results := Format1Results()
	for _, r := range results {
		got, found, err := conn.GetPushResult(ctx, r.Partition, r.ClientID, r.ClientCommitID)
		want, derr := driver.DecodePushResult([]byte(r.Text))
		switch {
		case derr != nil:
			if driver.CodeOf(err) != driver.CodeIdempotencyCacheMiss {
				t.Errorf("upgraded result %s/%s (undecodable): err %v, want %s", r.ClientID, r.ClientCommitID, err, driver.CodeIdempotencyCacheMiss)
			}
		case err != nil || !found:
			t.Errorf("upgraded result %s/%s: found %v, err %v", r.ClientID, r.ClientCommitID, found, err)
		default:
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("upgraded result %s/%s changed (-want +got):\n%s", r.ClientID, r.ClientCommitID, d)
			}
		}
	}
	// Each result goes exactly when the bound passes its record time.
	endMs := time.Now().UnixMilli()
	steps := []struct {
		before int64
		want   []string // client/commit ids deleted, oldest first
	}{
		{-7, nil}, {-6, []string{"c2/k1"}}, {1000, nil}, {2001, []string{"c1/k1", "c3/k1"}}, {5001, []string{"c1/k2"}},
		{startMs - 60_000, nil}, {endMs + 60_000, []string{"c3/k2"}}, {1<<53 + 1, nil}, {1<<53 + 2, []string{"c2/k2"}},
		{math.MaxInt64, nil},
	}
	// stored: the row exists (an undecodable one reads as a cache miss).
	stored := func(p, client, commit string) bool {
		_, found, err := conn.GetPushResult(ctx, p, client, commit)
		if err != nil && driver.CodeOf(err) != driver.CodeIdempotencyCacheMiss {
			t.Fatalf("GetPushResult after the upgrade: %v", err)
		}
		return found || err != nil
	}
	left := map[string]bool{}
	for _, r := range results {
		if r.Partition == "p1" {
			left[r.ClientID+"/"+r.ClientCommitID] = true
		}
	}
	for _, s := range steps {
		n, err := conn.DeletePushResultsBefore(ctx, "p1", s.before, 10)
		if err != nil {
			t.Fatalf("DeletePushResultsBefore(%d) after the upgrade: %v", s.before, err)
		}
		if n != int64(len(s.want)) {
			t.Errorf("DeletePushResultsBefore(%d) after the upgrade deleted %d results, want %d (%v)", s.before, n, len(s.want), s.want)
		}
		for _, k := range s.want {
			delete(left, k)
		}
		for _, r := range results {
			if k := r.ClientID + "/" + r.ClientCommitID; r.Partition == "p1" && stored("p1", r.ClientID, r.ClientCommitID) != left[k] {
				t.Errorf("after DeletePushResultsBefore(%d): result %s stored %v, want %v", s.before, k, !left[k], left[k])
			}
		}
	}
	if _, found, err := conn.GetPushResult(ctx, "p2", "c1", "k1"); err != nil || !found {
		t.Errorf("the other partition's result after the deletions: found %v, err %v", found, err)
	}
	for _, want := range []struct {
		p            string
		since, floor int64
		found        bool
	}{{"p1", 0, 4, true}, {"p1", 1001, 7, true}, {"p1", 3001, 0, false}, {"p2", 0, 1, true}} {
		got, found, err := conn.MinClientCursor(ctx, want.p, want.since, 0)
		if err != nil || got != want.floor || found != want.found {
			t.Errorf("MinClientCursor(%s, since %d) after the upgrade = %d, %v, %v; want %d, %v", want.p, want.since, got, found, err,
				want.floor, want.found)
		}
	}
	n, err := conn.DeleteClientRecordsBefore(ctx, "p1", 2000, 10)
	if err != nil || n != 1 {
		t.Errorf("DeleteClientRecordsBefore(2000) after the upgrade = %d, %v; want 1", n, err)
	}
}
