package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Cases for CR-1 and CR-2 (client records).

func init() {
	register(
		Case{Name: "CR-1/round-trip-order-kept", Run: crRoundTrip},
		Case{Name: "CR-1/put-replaces", Run: crPutReplaces},
		Case{Name: "CR-1/missing-is-not-found", Run: crMissing},
		Case{Name: "CR-1/concurrent-puts-never-mix", Run: crConcurrentPuts},
		Case{Name: "CR-2/list-cursors-of-the-partition-sorted", Run: crListCursors},
		Case{Name: "CR-3/pages-reach-every-record-once", Run: crPagesReachEveryRecord},
		Case{Name: "CR-3/after-is-exclusive-and-bytewise", Run: crAfterIsExclusive},
		Case{Name: "CR-3/paging-while-clients-write", Run: crPagingWhileWriting},
	)
}

// crRecord returns a client record with subscriptions whose ids, tables and
// scope values are deliberately not in sorted order.
func crRecord(clientID string) driver.ClientRecord {
	return driver.ClientRecord{
		ClientID: clientID, ActorID: "actor-ü 😀", WireVersion: 3, Cursor: 17, UpdatedAtMs: 1700000000123,
		Subscriptions: []driver.Subscription{
			{ID: "s2", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p9", "p1", "p5", "P1", "é"}, "owner": {"u1"}}},
			{ID: "s10", Table: tUsers, Scopes: driver.ScopeFilter{"org": {"o1"}}},
			{ID: "a", Table: tTodos, Scopes: driver.ScopeFilter{"owner": {"z", "a", "m"}}},
			{ID: "s1", Table: tKinds, Scopes: driver.ScopeFilter{"grp": {"g\u0301", "\u011f"}}},
		},
	}
}

// crGet calls GetClientRecord or fails the case.
func crGet(t T, conn driver.Conn, p, clientID string) (driver.ClientRecord, bool) {
	t.Helper()
	rec, found, err := conn.GetClientRecord(t.Context(), p, clientID)
	must(t, fmt.Sprintf("GetClientRecord(%q)", clientID), err)
	return rec, found
}

// crPut calls PutClientRecord or fails the case.
func crPut(t T, conn driver.Conn, p string, rec driver.ClientRecord) {
	t.Helper()
	must(t, fmt.Sprintf("PutClientRecord(%q)", rec.ClientID), conn.PutClientRecord(t.Context(), p, rec))
}

// Catches: subscriptions or scope values re-ordered (sorted, or through an
// unordered map or a child table without a position), fields dropped or
// swapped, int64 fields narrowed.
func crRoundTrip(t T, h Harness) {
	conn := openStore(t, h)
	want := crRecord("client-1")
	crPut(t, conn, "p1", want)
	other := crRecord("client-2")
	other.ActorID, other.WireVersion, other.Cursor, other.UpdatedAtMs = "a2", 1<<40+1, 1<<53+1, -1
	other.Subscriptions = other.Subscriptions[1:2]
	crPut(t, conn, "p1", other)
	got, found := crGet(t, conn, "p1", "client-1")
	if !found {
		t.Fatalf("CR-1: GetClientRecord after PutClientRecord: not found")
	}
	expectEqual(t, "CR-1: client record", want, got)
	got, _ = crGet(t, conn, "p1", "client-2")
	expectEqual(t, "CR-1: second client record", other, got)
}

// Catches: a put that merges into the stored record (old subscriptions kept,
// appended twice) instead of replacing it, or that touches another client.
func crPutReplaces(t T, h Harness) {
	conn := openStore(t, h)
	first := crRecord("c1")
	crPut(t, conn, "p1", first)
	bystander := crRecord("c2")
	crPut(t, conn, "p1", bystander)

	second := driver.ClientRecord{ClientID: "c1", ActorID: "actor-2", WireVersion: 4, Cursor: 99, UpdatedAtMs: 1700000009999,
		Subscriptions: []driver.Subscription{{ID: "s2", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p2"}}}}}
	crPut(t, conn, "p1", second)
	got, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-1: record after a put with fewer subscriptions", second, got)

	third := second
	third.Cursor, third.Subscriptions = 100, nil
	crPut(t, conn, "p1", third)
	got, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-1: record after a put with no subscriptions", third, got)
	if len(got.Subscriptions) != 0 {
		t.Errorf("CR-1: a put with no subscriptions left %d subscriptions", len(got.Subscriptions))
	}

	crPut(t, conn, "p1", first)
	got, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-1: record after putting the first version again", first, got)
	got, _ = crGet(t, conn, "p1", "c2")
	expectEqual(t, "CR-1: the other client's record", bystander, got)
}

// Catches: a missing record reported as an error, or as found with a zero
// or another client's record (a prefix or case-insensitive match).
func crMissing(t T, h Harness) {
	conn := openStore(t, h)
	_, found := crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-1: found on an empty store", false, found)
	crPut(t, conn, "p1", crRecord("Client"))
	for _, id := range []string{"client", "Clien", "Client ", "Client2", "CLIENT"} {
		if _, found := crGet(t, conn, "p1", id); found {
			t.Errorf("CR-1: GetClientRecord(%q) found a record; only %q was put", id, "Client")
		}
	}
	if _, found := crGet(t, conn, "p1", "Client"); !found {
		t.Errorf("CR-1: GetClientRecord(%q) after its put: not found", "Client")
	}
}

// Catches: a put that is not atomic (delete subscriptions, insert the new
// ones, update the record, each on its own), so concurrent puts of one
// client leave a mix of two records. The result must be one of the puts.
func crConcurrentPuts(t T, h Harness) {
	conn := openStore(t, h)
	const n = 8
	recs := make([]driver.ClientRecord, n)
	for i := range recs {
		recs[i] = driver.ClientRecord{ClientID: "c1", ActorID: fmt.Sprintf("actor-%d", i), WireVersion: int64(i),
			Cursor: int64(100 + i), UpdatedAtMs: int64(1000 + i)}
		for j := range 1 + i%4 {
			recs[i].Subscriptions = append(recs[i].Subscriptions, driver.Subscription{
				ID: fmt.Sprintf("w%d-s%d", i, j), Table: tTodos, Scopes: driver.ScopeFilter{"project": {fmt.Sprintf("p%d", i)}}})
		}
	}
	errs := make([]error, n)
	var wg gosync.WaitGroup
	for round := range 3 {
		for i := range n {
			wg.Go(func() { errs[i] = conn.PutClientRecord(t.Context(), "p1", recs[(i+round)%n]) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("CR-1: concurrent PutClientRecord %d: %v", i, err)
			}
		}
		got, found := crGet(t, conn, "p1", "c1")
		if !found {
			t.Fatalf("CR-1: record missing after concurrent puts")
		}
		i := slices.IndexFunc(recs, func(r driver.ClientRecord) bool { return r.ActorID == got.ActorID })
		if i < 0 {
			t.Fatalf("CR-1: after concurrent puts the record has actor %q, which no put wrote", got.ActorID)
		}
		expectEqual(t, fmt.Sprintf("CR-1: record after concurrent puts (round %d) equals the put with actor %q", round,
			got.ActorID), recs[i], got)
	}
}

// Catches: cursors listed in insertion order or under a collation, records
// of another partition listed, a replaced record listed twice or with its
// old cursor.
func crListCursors(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	empty, err := conn.ListClientCursors(ctx, "p1", "", winAll)
	must(t, "ListClientCursors on an empty partition", err)
	expectEqual(t, "CR-2: cursors of an empty partition", []driver.ClientCursor{}, empty)

	clientIDs := []string{"b", "B", "a", "\u00e9", "e\u0301", "aa", "😀", "\uFFFD", "\uE000", "A", "10", "9", "a "}
	want := map[string]driver.ClientCursor{}
	for i, id := range clientIDs {
		rec := crRecord(id)
		rec.Cursor, rec.UpdatedAtMs = int64(10*i), int64(1700000000000+i)
		crPut(t, conn, "p1", rec)
		want[id] = driver.ClientCursor{ClientID: id, Cursor: rec.Cursor, UpdatedAtMs: rec.UpdatedAtMs}
	}
	// Replace one record: its new cursor is listed, once.
	moved := crRecord("a")
	moved.Cursor, moved.UpdatedAtMs, moved.Subscriptions = 12345, 1800000000000, nil
	crPut(t, conn, "p1", moved)
	want["a"] = driver.ClientCursor{ClientID: "a", Cursor: 12345, UpdatedAtMs: 1800000000000}
	// Another partition's record with the same id and one of its own.
	for _, id := range []string{"b", "c-other"} {
		rec := crRecord(id)
		rec.Cursor = 777
		crPut(t, conn, "p2", rec)
	}

	sorted := slices.Sorted(maps.Keys(want)) // Go orders strings bytewise
	wantList := make([]driver.ClientCursor, 0, len(sorted))
	for _, id := range sorted {
		wantList = append(wantList, want[id])
	}
	got, err := conn.ListClientCursors(ctx, "p1", "", winAll)
	must(t, "ListClientCursors", err)
	expectEqual(t, "CR-2: cursors of p1 ascending bytewise by client id", wantList, got)
	expectEqual(t, "CR-2: client ids listed", sorted, crClientIDs(got))
}

// crClientIDsForPaging are client ids that bytewise order sorts apart
// from case, accent, padding and numeric collations.
var crClientIDsForPaging = []string{"b", "B", "a", "\u00e9", "e\u0301", "aa", "😀", "\uFFFD", "\uE000", "A", "10", "9", "a ", "a\u00a0", "Z", "ß", "ss"}

// crPutMany puts one record per id on p, cursor i and time 1000+i for the
// i-th id, and returns their cursors ascending bytewise by client id.
func crPutMany(t T, conn driver.Conn, p string, ids []string) []driver.ClientCursor {
	t.Helper()
	out := make([]driver.ClientCursor, 0, len(ids))
	for i, id := range ids {
		rec := driver.ClientRecord{ClientID: id, ActorID: "a", WireVersion: 1, Cursor: int64(i), UpdatedAtMs: int64(1000 + i)}
		crPut(t, conn, p, rec)
		out = append(out, driver.ClientCursor{ClientID: id, Cursor: rec.Cursor, UpdatedAtMs: rec.UpdatedAtMs})
	}
	slices.SortFunc(out, func(a, b driver.ClientCursor) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out
}

// crPageAll pages p's cursors limit at a time from the start and returns
// the pages; it fails the case when a page is longer than limit or a page
// other than the last is shorter.
func crPageAll(t T, conn driver.Conn, p string, limit int) [][]driver.ClientCursor {
	t.Helper()
	var pages [][]driver.ClientCursor
	after := ""
	for range 100_000 {
		page, err := conn.ListClientCursors(t.Context(), p, after, limit)
		must(t, fmt.Sprintf("ListClientCursors(after %q, limit %d)", after, limit), err)
		if len(page) > limit {
			t.Fatalf("CR-3: ListClientCursors(after %q, limit %d) returned %d cursors", after, limit, len(page))
		}
		pages = append(pages, page)
		if len(page) < limit {
			return pages
		}
		after = page[len(page)-1].ClientID
	}
	t.Fatalf("CR-3: paging with limit %d never ended", limit)
	return nil
}

// Catches: a limit ignored or applied before the partition filter, an
// inclusive afterClientID (every page repeats the last record), pages that
// restart, skip or re-order records, or another partition's records.
func crPagesReachEveryRecord(t T, h Harness) {
	conn := openStore(t, h)
	want := crPutMany(t, conn, "p1", crClientIDsForPaging)
	crPutMany(t, conn, "p2", []string{"a", "c", "zz"})
	for _, limit := range []int{1, 2, 3, 5, len(want) - 1, len(want), len(want) + 1, winAll} {
		pages := crPageAll(t, conn, "p1", limit)
		var got []driver.ClientCursor
		for _, pg := range pages {
			got = append(got, pg...)
		}
		expectEqual(t, fmt.Sprintf("CR-3: every cursor of p1, paged %d at a time", limit), want, got)
		if wantPages := len(want)/limit + 1; len(pages) != wantPages {
			t.Errorf("CR-3: paging %d cursors %d at a time took %d pages, want %d (full pages, then one short)", len(want), limit,
				len(pages), wantPages)
		}
	}
	got, err := conn.ListClientCursors(t.Context(), "p404", "", 10)
	must(t, "ListClientCursors(p404)", err)
	expectEqual(t, "CR-3/P-2: cursors of an unknown partition", []driver.ClientCursor(nil), got)
}

// Catches: afterClientID compared under a collation, as a prefix, or
// inclusively; a position that must be an existing client id.
func crAfterIsExclusive(t T, h Harness) {
	conn := openStore(t, h)
	want := crPutMany(t, conn, "p1", crClientIDsForPaging)
	ids := make([]string, len(want))
	for i, c := range want {
		ids[i] = c.ClientID
	}
	// Positions: every id, ids that are not stored, and the edges.
	positions := append(slices.Clone(ids), "", "A0", "aa ", "ab", "e", "\U0010FFFF", "\u00e8", "zz")
	for _, after := range positions {
		var wantIDs []string
		for _, id := range ids {
			if id > after { // Go compares strings bytewise
				wantIDs = append(wantIDs, id)
			}
		}
		for _, limit := range []int{1, 3, winAll} {
			page, err := conn.ListClientCursors(t.Context(), "p1", after, limit)
			must(t, fmt.Sprintf("ListClientCursors(after %+q)", after), err)
			expectEqual(t, fmt.Sprintf("CR-3: client ids after %+q, limit %d", after, limit), wantIDs[:min(limit, len(wantIDs))],
				crClientIDs(page))
		}
	}
}

// crPagingClients is how many clients the concurrent paging case writes
// before it pages, and crPagingLimit its page size.
const (
	crPagingClients = 600
	crPagingLimit   = 250
)

// Catches: paging by offset (a record inserted before the position shifts
// every later page: one record listed twice, or one skipped), or by a
// position that moves when a record is replaced. Records present for the
// whole paging are each listed exactly once, in ascending order, however
// many records are put meanwhile.
func crPagingWhileWriting(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	ids := make([]string, crPagingClients)
	for i := range ids {
		ids[i] = fmt.Sprintf("c-%05d", i*2) // even numbers; the writer adds odd ones
	}
	crPutMany(t, conn, "p1", ids)
	var (
		stop atomic.Bool
		wg   gosync.WaitGroup
		puts atomic.Int64
	)
	wg.Go(func() {
		for i := 0; !stop.Load() && i < crPagingClients; i++ {
			// A new client before the readers' position, and a replaced one.
			n := crPagingClients - 1 - i
			if err := conn.PutClientRecord(ctx, "p1", driver.ClientRecord{ClientID: fmt.Sprintf("c-%05d", 2*n+1), ActorID: "w",
				Cursor: 1, UpdatedAtMs: 5000}); err != nil {
				t.Errorf("CR-3: concurrent PutClientRecord: %v", err)
				return
			}
			if err := conn.PutClientRecord(ctx, "p1", driver.ClientRecord{ClientID: ids[i], ActorID: "w",
				Cursor: 2, UpdatedAtMs: 6000}); err != nil {
				t.Errorf("CR-3: concurrent PutClientRecord: %v", err)
				return
			}
			puts.Add(2)
		}
	})
	seen := map[string]int{}
	last := ""
	pages := 0
	for after := ""; ; pages++ {
		// Between pages, for sure: a new client before the position (an
		// offset would shift) and the replacement of a listed one.
		if after != "" {
			crPut(t, conn, "p1", driver.ClientRecord{ClientID: fmt.Sprintf("a-%03d", pages), ActorID: "w", UpdatedAtMs: 7000})
			crPut(t, conn, "p1", driver.ClientRecord{ClientID: ids[0], ActorID: "w", Cursor: int64(pages), UpdatedAtMs: 7000})
		}
		page, err := conn.ListClientCursors(ctx, "p1", after, crPagingLimit)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("CR-3: ListClientCursors(after %q): %v", after, err)
		}
		if len(page) > crPagingLimit {
			t.Errorf("CR-3: a page of %d cursors, limit %d", len(page), crPagingLimit)
		}
		for _, c := range page {
			if c.ClientID <= last {
				t.Errorf("CR-3: client id %q listed after %q: not ascending, or listed again", c.ClientID, last)
			}
			last = c.ClientID
			seen[c.ClientID]++
		}
		if len(page) < crPagingLimit {
			break
		}
		after = page[len(page)-1].ClientID
	}
	stop.Store(true)
	wg.Wait()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("CR-3: client %q, present throughout, was listed %d times; want once", id, seen[id])
		}
	}
	t.Logf("CR-3: %d pages while %d records were put", pages+1, puts.Load())
}

// crClientIDs returns the client ids of cs in order.
func crClientIDs(cs []driver.ClientCursor) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ClientID
	}
	return out
}
