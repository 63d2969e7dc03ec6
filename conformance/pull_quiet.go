package conformance

import (
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-13: a pull that changes nothing in its client record
// writes none, until the record's age calls for it, and touches the
// registry at most once per PullTouchInterval of request time.

func init() {
	register(
		Case{Name: "PULL-13/quiet-pull-writes-nothing", Run: pullQuietWritesNothing},
		Case{Name: "PULL-13/changed-record-is-written", Run: pullChangedRecordWritten},
		Case{Name: "PULL-13/old-record-refreshed-active-client-holds-the-floor", Run: pullOldRecordRefreshed},
	)
}

// Catches: a pull that rewrites a record it would not change (today's
// cost: one write per pull), or touches the registry on every pull; a
// Store whose refresh age 0 still skips writes.
func pullQuietWritesNothing(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 3)
	req := pullReq(pullSub("a", "p7", 0), pullSub("b", "p8", 3))
	resp := pullDo(t, s, "p1", req)
	want, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-13: record of the first pull", driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: 2,
		Cursor: 3, UpdatedAtMs: pullAt, Subscriptions: []driver.Subscription{
			{ID: "a", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7"}}},
			{ID: "b", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p8"}}}}}, want)
	reg := []driver.PartitionEntry{{Partition: "p1", Epoch: resp.Epoch, UpdatedAtMs: pullAt}}
	expectEqual(t, "PULL-13: registry after the first pull", reg, pullRegistered(t, conn))

	// The same client, caught up, 0.5 s later: its record would change in
	// nothing but its time, and the partition was touched 0.5 s ago.
	req = pullReq(pullSub("a", "p7", 3), pullSub("b", "p8", 3))
	req.AtMs = pullAt + 500
	resp2 := pullDo(t, s, "p1", req)
	got, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-13: record after a pull that changes nothing (not written)", want, got)
	expectEqual(t, "PULL-13: registry after a pull 0.5 s after the last touch (not touched)", reg, pullRegistered(t, conn))
	expectEqual(t, "PULL-13: epoch of the quiet pull", resp.Epoch, resp2.Epoch)

	// One PullTouchInterval after the touch: the registry is touched, the
	// record (younger than the refresh age) still not written.
	req.AtMs = pullAt + syncstore.PullTouchInterval.Milliseconds()
	pullDo(t, s, "p1", req)
	got, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-13: record after a pull one touch interval later (not written)", want, got)
	expectEqual(t, "PULL-13: registry one touch interval after the last touch",
		[]driver.PartitionEntry{{Partition: "p1", Epoch: resp.Epoch, UpdatedAtMs: req.AtMs}}, pullRegistered(t, conn))

	// Refresh age 0: every pull writes its record.
	s.SetRecordRefresh(0)
	req.AtMs++
	pullDo(t, s, "p1", req)
	got, _ = crGet(t, conn, "p1", "c1")
	want.UpdatedAtMs = req.AtMs
	expectEqual(t, "PULL-13: record after a pull with refresh age 0 (written)", want, got)
}

// Catches: a change the comparison misses — cursor, wire version, a scope
// value, record scopes, a table, a subscription id, their order or count
// — so the record keeps what the client no longer has; a missing record
// not written.
func pullChangedRecordWritten(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 3)
	at := pullAt
	pull := func(what string, req syncstore.PullRequest, want driver.ClientRecord) {
		t.Helper()
		at++
		req.AtMs = at
		pullDo(t, s, "p1", req)
		got, found := crGet(t, conn, "p1", "c1")
		want.ClientID, want.ActorID, want.UpdatedAtMs = "c1", "a1", at
		expectEqual(t, "PULL-13: record found after "+what, true, found)
		expectEqual(t, "PULL-13: record after "+what+" (written)", want, got)
	}
	sub := func(id, table string, scopes driver.ScopeFilter) driver.Subscription {
		return driver.Subscription{ID: id, Table: table, Scopes: scopes}
	}
	p7 := driver.ScopeFilter{"project": {"p7"}}
	pull("the first pull", pullReq(pullSub("a", "p7", 3)), driver.ClientRecord{WireVersion: 2, Cursor: 3,
		Subscriptions: []driver.Subscription{sub("a", tTodos, p7)}})

	req := pullReq(pullSub("a", "p7", 3))
	req.WireVersion = 1
	pull("a pull of another wire version", req, driver.ClientRecord{WireVersion: 1, Cursor: 3,
		Subscriptions: []driver.Subscription{sub("a", tTodos, p7)}})

	pullTodos(t, conn, "p1", "u", "p9", 1) // the head moves to 4: the cursor with it
	pull("a pull whose cursor moved", pullReq(pullSub("a", "p7", 3)), driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tTodos, p7)}})

	two := driver.ScopeFilter{"project": {"p7", "p8"}}
	req = pullReq(pullSub("a", "p7", 4))
	req.Subscriptions[0].Scopes = two
	pull("a pull with another scope value", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tTodos, two)}})

	swapped := driver.ScopeFilter{"project": {"p8", "p7"}}
	req.Subscriptions[0].Scopes = swapped
	pull("a pull with the scope values in another order", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tTodos, swapped)}})

	asked := driver.ScopeFilter{"project": {"p7", "p8"}, "owner": {"u1"}}
	req.Subscriptions[0].RecordScopes = asked
	pull("a pull with record scopes", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tTodos, asked)}})

	users := driver.ScopeFilter{"org": {"o1"}}
	req = pullReq(syncstore.PullSubscription{ID: "a", Table: tUsers, Scopes: users, Cursor: 4})
	pull("a pull of another table", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tUsers, users)}})

	req.Subscriptions[0].ID = "b"
	pull("a pull with another subscription id", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("b", tUsers, users)}})

	req = pullReq(pullSub("a", "p7", 4), pullSub("b", "p8", 4))
	pull("a pull adding a subscription", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("a", tTodos, p7), sub("b", tTodos, driver.ScopeFilter{"project": {"p8"}})}})

	req = pullReq(pullSub("b", "p8", 4), pullSub("a", "p7", 4))
	pull("a pull with the subscriptions in another order", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("b", tTodos, driver.ScopeFilter{"project": {"p8"}}), sub("a", tTodos, p7)}})

	// The record gone (retention, RET-6): the next pull writes it again.
	n, err := conn.DeleteClientRecordsBefore(t.Context(), "p1", at+1, 10)
	must(t, "DeleteClientRecordsBefore", err)
	expectEqual(t, "PULL-13: records deleted", int64(1), n)
	pull("a pull whose record was deleted", req, driver.ClientRecord{WireVersion: 2, Cursor: 4,
		Subscriptions: []driver.Subscription{sub("b", tTodos, driver.ScopeFilter{"project": {"p8"}}), sub("a", tTodos, p7)}})
}

// Catches: a quiet record never refreshed (its client, still pulling,
// falls out of the active window and its floor goes: RET-1), or refreshed
// before its age calls for it.
func pullOldRecordRefreshed(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 5)
	pol := retOnly(0) // an active window of 10 s, every other rule off
	r := pol.RecordRefresh().Milliseconds()
	expectEqual(t, "PULL-13: RecordRefresh of a 10 s active window", int64(10), r)
	s.SetRecordRefresh(pol.RecordRefresh())
	w := pol.ActiveWindow.Milliseconds()
	// One change per pull, from cursor 1: the record's cursor is 2.
	sub := pullSub("a", "p7", 1)
	sub.LimitChanges = 1
	stamp := func(what string, atMs, wantUpdated int64) {
		t.Helper()
		req := pullReq(sub)
		req.AtMs = atMs
		res := pullDo(t, s, "p1", req).Subscriptions[0]
		expectEqual(t, "PULL-13: next cursor", int64(2), res.NextCursor)
		got, _ := crGet(t, conn, "p1", "c1")
		expectEqual(t, "PULL-13: record's updatedAtMs after "+what, wantUpdated, got.UpdatedAtMs)
		expectEqual(t, "PULL-13: record's cursor after "+what, int64(2), got.Cursor)
	}
	stamp("the first pull", pullAt, pullAt)
	stamp("a pull one ms short of the refresh age", pullAt+r-1, pullAt)
	stamp("a pull at the refresh age", pullAt+r, pullAt+r)
	last := pullAt + 2*r - 1
	stamp("a pull one ms short of the refresh age again", last, pullAt+r)
	// A Prune W − R after the client's last pull still counts it active:
	// the floor is its cursor.
	pol = retOnly(last + w - r)
	rep := retPrune(t, s, "p1", pol)
	expectEqual(t, "PULL-13: a client that pulled W − R before the Prune is active (RET-1)", true, rep.Active)
	expectEqual(t, "PULL-13: horizon held at the client's cursor (RET-1)", int64(2), rep.HorizonAfter)
}
