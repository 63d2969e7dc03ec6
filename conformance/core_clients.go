package conformance

import (
	"fmt"
	"maps"
	"slices"
	gosync "sync"

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
	empty, err := conn.ListClientCursors(ctx, "p1")
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
	got, err := conn.ListClientCursors(ctx, "p1")
	must(t, "ListClientCursors", err)
	expectEqual(t, "CR-2: cursors of p1 ascending bytewise by client id", wantList, got)
	expectEqual(t, "CR-2: client ids listed", sorted, crClientIDs(got))
}

// crClientIDs returns the client ids of cs in order.
func crClientIDs(cs []driver.ClientCursor) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ClientID
	}
	return out
}
