package conformance

import (
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-1 (bad input writes nothing), PULL-8 (the client record
// and the registry) and PULL-9 (a client id belongs to one actor).

func init() {
	register(
		Case{Name: "PULL-1/bad-input-typed-nothing-written", Run: pullBadInput},
		Case{Name: "PULL-8/client-record-and-partition-written", Run: pullRecordWritten},
		Case{Name: "PULL-8/record-cursor-holds-retention", Run: pullRecordHoldsRetention},
		Case{Name: "PULL-9/client-bound-to-another-actor-refused", Run: pullActorMismatch},
	)
}

// pullRegistered returns the registry entries of the store.
func pullRegistered(t T, conn driver.Conn) []driver.PartitionEntry {
	t.Helper()
	entries, err := conn.ListPartitionRegistry(t.Context(), "", 100)
	must(t, "ListPartitionRegistry", err)
	return entries
}

// Catches: a bad request reaching the driver or writing a client record
// or a registry entry, a check missing, an untyped error.
func pullBadInput(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 2)
	ok := pullSub("s", "p7", 0)
	with := func(f func(*syncstore.PullRequest)) syncstore.PullRequest {
		r := pullReq(ok)
		f(&r)
		return r
	}
	sub := func(f func(*syncstore.PullSubscription)) syncstore.PullRequest {
		sb := ok
		f(&sb)
		return pullReq(sb)
	}
	many := make([]syncstore.PullSubscription, syncstore.MaxPullSubscriptions+1)
	for i := range many {
		many[i] = pullSub(strings.Repeat("s", i+1), "p7", 0)
	}
	for _, c := range []struct {
		name string
		p    string
		req  syncstore.PullRequest
		code driver.Code
	}{
		{"empty partition", "", pullReq(ok), driver.CodeInvalidArgument},
		{"empty client id", "p1", with(func(r *syncstore.PullRequest) { r.ClientID = "" }), driver.CodeInvalidArgument},
		{"reserved client id", "p1", with(func(r *syncstore.PullRequest) { r.ClientID = `["remote-command",1]` }), driver.CodeInvalidClientID},
		{"empty actor id", "p1", with(func(r *syncstore.PullRequest) { r.ActorID = "" }), driver.CodeInvalidArgument},
		{"actor id with NUL", "p1", with(func(r *syncstore.PullRequest) { r.ActorID = "a\x00" }), driver.CodeInvalidArgument},
		{"101 subscriptions", "p1", with(func(r *syncstore.PullRequest) { r.Subscriptions = many }), driver.CodeInvalidArgument},
		{"repeated subscription id", "p1", with(func(r *syncstore.PullRequest) { r.Subscriptions = []syncstore.PullSubscription{ok, ok} }), driver.CodeInvalidArgument},
		{"empty subscription id", "p1", sub(func(s *syncstore.PullSubscription) { s.ID = "" }), driver.CodeInvalidArgument},
		{"unknown table", "p1", sub(func(s *syncstore.PullSubscription) { s.Table = "nope" }), driver.CodeUnknownTable},
		{"filter without keys", "p1", sub(func(s *syncstore.PullSubscription) { s.Scopes = driver.ScopeFilter{} }), driver.CodeScanRequiresScope},
		{"filter value not UTF-8", "p1", sub(func(s *syncstore.PullSubscription) { s.Scopes = driver.ScopeFilter{"project": {"\xff"}} }), driver.CodeInvalidArgument},
		{"cursor -2", "p1", sub(func(s *syncstore.PullSubscription) { s.Cursor = -2 }), driver.CodeInvalidArgument},
		{"limitChanges 10001", "p1", sub(func(s *syncstore.PullSubscription) { s.LimitChanges = 10001 }), driver.CodeInvalidLimit},
		{"limitChanges -1", "p1", sub(func(s *syncstore.PullSubscription) { s.LimitChanges = -1 }), driver.CodeInvalidLimit},
		{"limitRows 10001", "p1", sub(func(s *syncstore.PullSubscription) { s.LimitRows = 10001 }), driver.CodeInvalidLimit},
		{"token of garbage", "p1", sub(func(s *syncstore.PullSubscription) { s.BootstrapToken = "garbage" }), driver.CodeInvalidArgument},
	} {
		_, err := s.Pull(t.Context(), c.p, c.req)
		expectCode(t, "PULL-1: "+c.name, err, c.code)
	}
	_, found := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-1: a client record after bad pulls only", false, found)
	expectEqual(t, "PULL-1: registry after bad pulls only", []driver.PartitionEntry(nil), pullRegistered(t, conn))
	// The limits' bounds themselves are valid.
	good := pullSub("s", "p7", 0)
	good.LimitChanges, good.LimitRows = syncstore.MaxLimit, 1
	pullDo(t, s, "p1", pullReq(good))
}

// Catches: a record missing a field, a cursor taken from the first or the
// largest subscription, from a reset one, or -1 for a bootstrapping one
// (retention would prune under its pin); a registry entry not touched, its
// epoch changed by a later pull, the response's epoch not the registry's.
func pullRecordWritten(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "a", "p7", 3)
	pullTodos(t, conn, "p1", "b", "p8", 3)
	must(t, "SetHorizonSeq(2)", conn.SetHorizonSeq(t.Context(), "p1", 2))
	subs := []syncstore.PullSubscription{
		pullSub("late", "p8", 2),
		pullSub("expired", "p7", 1),
		{ID: "boot", Table: tUsers, Scopes: driver.ScopeFilter{"org": {"o1", "o2"}}, Cursor: syncstore.PullBootstrap},
		pullSub("quiet", "p9", 5),
	}
	req := pullReq(subs...)
	resp := pullDo(t, s, "p1", req)
	var got []int64
	for _, r := range resp.Subscriptions {
		got = append(got, r.NextCursor)
	}
	expectEqual(t, "PULL-8: next cursors", []int64{6, -1, 6, 6}, got)
	rec, found := crGet(t, conn, "p1", "c1")
	want := driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: 2, Cursor: 6, UpdatedAtMs: pullAt,
		Subscriptions: []driver.Subscription{
			{ID: "late", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p8"}}},
			{ID: "expired", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7"}}},
			{ID: "boot", Table: tUsers, Scopes: driver.ScopeFilter{"org": {"o1", "o2"}}},
			{ID: "quiet", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p9"}}},
		}}
	expectEqual(t, "PULL-8: record found", true, found)
	expectEqual(t, "PULL-8: client record", want, rec)
	entries := pullRegistered(t, conn)
	if len(entries) != 1 {
		t.Fatalf("PULL-8: registry holds %d entries after one pull, want 1: %+v", len(entries), entries)
	}
	expectEqual(t, "PULL-8: registry entry", driver.PartitionEntry{Partition: "p1", Epoch: resp.Epoch, UpdatedAtMs: pullAt}, entries[0])
	if resp.Epoch == "" {
		t.Errorf("PULL-8: the response's epoch is empty")
	}

	// Smaller cursors lower the record's; a later pull refreshes time and
	// subscriptions and keeps the epoch. The registry entry keeps its
	// time: this Store touched it 5 ms before (PULL-13).
	req = pullReq(pullSub("a", "p7", 3), pullSub("b", "p7", 2))
	req.AtMs, req.WireVersion = pullAt+5, 0
	req.Subscriptions[1].LimitChanges = 1
	resp2 := pullDo(t, s, "p1", req)
	rec, _ = crGet(t, conn, "p1", "c1")
	want = driver.ClientRecord{ClientID: "c1", ActorID: "a1", Cursor: 3, UpdatedAtMs: pullAt + 5, Subscriptions: []driver.Subscription{
		{ID: "a", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7"}}},
		{ID: "b", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7"}}},
	}}
	expectEqual(t, "PULL-8: client record after the second pull", want, rec)
	expectEqual(t, "PULL-8: epoch of the second pull", resp.Epoch, resp2.Epoch)
	expectEqual(t, "PULL-8: registry entry after the second pull",
		[]driver.PartitionEntry{{Partition: "p1", Epoch: resp.Epoch, UpdatedAtMs: pullAt}}, pullRegistered(t, conn))

	// Nothing left to hold: every subscription reset, or none.
	resp3 := pullDo(t, s, "p1", pullReq(pullSub("x", "p7", 1)))
	expectEqual(t, "PULL-8: reason of the only subscription", syncstore.CodeCursorExpired, resp3.Subscriptions[0].Reason)
	rec, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-8: record cursor with every subscription reset", syncstore.PullBootstrap, rec.Cursor)
	pullDo(t, s, "p1", pullReq())
	rec, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-8: record after a pull without subscriptions", driver.ClientRecord{ClientID: "c1", ActorID: "a1",
		WireVersion: 2, Cursor: -1, UpdatedAtMs: pullAt}, rec)
}

// Catches: a bootstrapping client that does not hold the log at its pin:
// a Prune during its bootstrap would expire it before it ever pulls
// incrementally (RET-1 reads the record Pull writes).
func pullRecordHoldsRetention(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullWriteRows(t, conn, "p1", pullRows("r", "p7", 4)...)
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 2
	rep := newPullReplica(sub)
	rep.apply(t, pullOne(t, s, "p1", rep.sub))
	pullWriteRows(t, conn, "p1", pullRows("z", "p7", 3)...)
	pol := retOnly(pullAt)
	got := retPrune(t, s, "p1", pol)
	expectEqual(t, "PULL-8: horizon after a Prune during the bootstrap (the pin)", int64(4), got.HorizonAfter)
	rep.sync(t, s, "p1", 10)
	expectEqual(t, "PULL-8: replica after the bootstrap", pullServerRows(t, conn, "p1", rep.sub), rep.sorted())
	got = retPrune(t, s, "p1", pol)
	expectEqual(t, "PULL-8: horizon after the client caught up", int64(7), got.HorizonAfter)
}

// Catches: the actor check missing, made after the record is written, or
// a refused pull that still writes or touches anything.
func pullActorMismatch(t T, h Harness) {
	conn, s := pullStore(t, h)
	pullTodos(t, conn, "p1", "t", "p7", 2)
	pullDo(t, s, "p1", pullReq(pullSub("s", "p7", 0)))
	before, _ := crGet(t, conn, "p1", "c1")
	req := pullReq(pullSub("other", "p7", syncstore.PullBootstrap))
	req.ActorID, req.AtMs = "a2", pullAt+1
	_, err := s.Pull(t.Context(), "p1", req)
	expectCode(t, "PULL-9: client id c1 pulled by another actor", err, driver.CodeClientActorMismatch)
	after, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "PULL-9: record after the refused pull", before, after)
	expectEqual(t, "PULL-9: registry after the refused pull", []driver.PartitionEntry{{Partition: "p1",
		Epoch: pullRegistered(t, conn)[0].Epoch, UpdatedAtMs: pullAt}}, pullRegistered(t, conn))
	// The same client id is another client in another partition, and
	// another client id is free for a2.
	pullDo(t, s, "p2", req)
	req.ClientID = "c2"
	pullDo(t, s, "p1", req)
	rec, _ := crGet(t, conn, "p1", "c2")
	expectEqual(t, "PULL-9: actor of c2", "a2", rec.ActorID)
}
