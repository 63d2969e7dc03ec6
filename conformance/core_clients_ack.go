package conformance

import (
	"fmt"
	"math"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for CR-6: a client's ack raises its record's cursor and time in
// place (Store.AckClientCursor over the driver's AckClientCursor).

func init() {
	register(
		Case{Name: "CR-6/raises-cursor-and-time-only", Run: ackRaises},
		Case{Name: "CR-6/no-record-or-another-actor-writes-nothing", Run: ackRefusals},
		Case{Name: "CR-6/cursor-beyond-the-head-invalid-argument", Run: ackBeyondHead},
		Case{Name: "CR-6/acks-racing-record-writes-never-restore-a-record", Run: ackRacingPuts},
	)
}

// ackStore returns the store of an ack case, its driver Conn, and head
// commits on partition p1.
func ackStore(t T, h Harness, head int) (driver.Conn, *syncstore.Store) {
	t.Helper()
	conn, s := vdStore(t, h)
	for i := range head {
		push(t, conn, "p1", tTodos, todo(fmt.Sprintf("t%d", i), "p7", "o1"))
	}
	return conn, s
}

// ack calls Store.AckClientCursor and fails the case on an error.
func ack(t T, s *syncstore.Store, p, clientID, actorID string, cursor, atMs int64) bool {
	t.Helper()
	ok, err := s.AckClientCursor(t.Context(), p, clientID, actorID, cursor, atMs)
	must(t, fmt.Sprintf("AckClientCursor(%q, %q, %d, %d)", clientID, actorID, cursor, atMs), err)
	return ok
}

// Catches: an ack that rewrites the record (subscriptions, actor or wire
// version lost or reset), lowers the cursor or the time (a late ack of an
// older commit, or from an instance whose clock is behind), touches
// another client's record, or leaves the retention index (CR-5) behind.
func ackRaises(t T, h Harness) {
	conn, s := ackStore(t, h, 9)
	rec := crRecord("c1") // actor "actor-ü 😀", cursor 17
	rec.Cursor, rec.UpdatedAtMs = 2, 1000
	crPut(t, conn, "p1", rec)
	other := crRecord("c2")
	other.Cursor, other.UpdatedAtMs = 1, 500
	crPut(t, conn, "p1", other)
	crPut(t, conn, "p2", rec)

	want := rec
	step := func(cursor, atMs, wantCursor, wantAt int64, why string) {
		t.Helper()
		if !ack(t, s, "p1", "c1", rec.ActorID, cursor, atMs) {
			t.Errorf("CR-6: ack %d at %d (%s) = false; want true (the record exists, bound to the actor)", cursor, atMs, why)
		}
		want.Cursor, want.UpdatedAtMs = wantCursor, wantAt
		got, _ := crGet(t, conn, "p1", "c1")
		expectEqual(t, "CR-6: record after an ack "+why, want, got)
	}
	step(5, 2000, 5, 2000, "that raises both")
	step(3, 3000, 5, 3000, "below the cursor (the cursor is never lowered)")
	step(8, 1500, 8, 3000, "with an older time (the time is never lowered)")
	step(8, 3000, 8, 3000, "that changes nothing")
	step(9, 4000, 9, 4000, "at the head")
	expectEqual(t, "CR-6: the other client's record", other, must2(crGet(t, conn, "p1", "c2")))
	expectEqual(t, "CR-6: the same client id in another partition", rec, must2(crGet(t, conn, "p2", "c1")))
	// The retention floor (CR-5) sees the raised cursor.
	got, found, err := conn.MinClientCursor(t.Context(), "p1", 3500, 0)
	must(t, "MinClientCursor", err)
	if !found || got != 9 {
		t.Errorf("CR-5/CR-6: MinClientCursor(updated since 3500) = %d, %v; want 9, true (the acked record)", got, found)
	}
	// A record whose cursor is -1 (every subscription reset) is raised too.
	rec.ClientID, rec.Cursor = "c3", -1
	crPut(t, conn, "p1", rec)
	ack(t, s, "p1", "c3", rec.ActorID, 0, 1)
	got3, _ := crGet(t, conn, "p1", "c3")
	expectEqual(t, "CR-6: cursor of a record at -1 acked at 0", int64(0), got3.Cursor)
}

// must2 drops the found flag of a crGet.
func must2(rec driver.ClientRecord, _ bool) driver.ClientRecord { return rec }

// Catches: an ack that creates a record (a client never pulled: its
// subscriptions are unknown), an ack that ignores the actor a client id
// is bound to (PULL-9), an error where there is none to report, and a
// refused ack that writes anyway.
func ackRefusals(t T, h Harness) {
	conn, s := ackStore(t, h, 4)
	ctx := t.Context()
	rec := crRecord("c1")
	rec.Cursor, rec.UpdatedAtMs = 1, 1000
	crPut(t, conn, "p1", rec)
	crPut(t, conn, "p2", driver.ClientRecord{ClientID: "c2", ActorID: "a2", Cursor: 0, UpdatedAtMs: 1})

	if ack(t, s, "p1", "c2", "a2", 3, 2000) {
		t.Errorf("CR-6: ack of a client without a record in the partition = true; want false")
	}
	if ack(t, s, "p1", "C1", rec.ActorID, 3, 2000) {
		t.Errorf("CR-6: ack of client C1 (c1 has a record) = true; want false")
	}
	if _, found := crGet(t, conn, "p1", "c2"); found {
		t.Errorf("CR-6: an ack without a record created one")
	}
	for _, actor := range []string{"actor-2", "actor-ü", "actor-ü 😀 "} {
		ok, err := s.AckClientCursor(ctx, "p1", "c1", actor, 3, 2000)
		errExpectTyped(t, fmt.Sprintf("CR-6: ack of c1 as %q (bound to another actor)", actor), err, driver.CodeClientActorMismatch, "p1")
		if ok {
			t.Errorf("CR-6: ack as another actor returned true with its error")
		}
	}
	expectEqual(t, "CR-6: record after refused acks", rec, must2(crGet(t, conn, "p1", "c1")))
	expectEqual(t, "CR-6: the other partition's record", driver.ClientRecord{ClientID: "c2", ActorID: "a2", Cursor: 0, UpdatedAtMs: 1},
		must2(crGet(t, conn, "p2", "c2")))
	// The driver alone: false for both, nothing written.
	for _, c := range []struct{ client, actor string }{{"c9", rec.ActorID}, {"c1", "actor-2"}} {
		ok, err := conn.AckClientCursor(ctx, "p1", c.client, c.actor, 3, 2000)
		must(t, "Conn.AckClientCursor", err)
		if ok {
			t.Errorf("CR-6: Conn.AckClientCursor(%q as %q) = true; want false (no record bound to that actor)", c.client, c.actor)
		}
	}
	expectEqual(t, "CR-6: record after the driver's refused acks", rec, must2(crGet(t, conn, "p1", "c1")))
	// After a rotation (REG-2) the record is gone: the ack answers false.
	_, err := conn.RotatePartitionLogEpoch(ctx, "p1", "e2", 3000)
	must(t, "RotatePartitionLogEpoch", err)
	if ack(t, s, "p1", "c1", rec.ActorID, 3, 4000) {
		t.Errorf("CR-6: ack after the partition's epoch rotated (its records deleted) = true; want false")
	}
}

// Catches: a cursor the store never issued (beyond the partition's head,
// another partition's head, a negative one) written into the record,
// where it would raise the retention floor past every commit.
func ackBeyondHead(t T, h Harness) {
	conn, s := ackStore(t, h, 3)
	ctx := t.Context()
	for i := range 6 {
		push(t, conn, "p2", tTodos, todo(fmt.Sprintf("t%d", i), "p7", "o1"))
	}
	rec := driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: 2, Cursor: 1, UpdatedAtMs: 1000,
		Subscriptions: []driver.Subscription{{ID: "s", Table: tTodos, Scopes: driver.ScopeFilter{"project": {"p7"}}}}}
	crPut(t, conn, "p1", rec)
	crPut(t, conn, "empty", rec)
	for _, c := range []struct {
		p      string
		cursor int64
		code   driver.Code
	}{
		{"p1", 4, driver.CodeInvalidArgument}, {"p1", 6, driver.CodeInvalidArgument}, {"p1", math.MaxInt64, driver.CodeInvalidArgument},
		{"p1", -1, driver.CodeInvalidArgument}, {"p1", math.MinInt64, driver.CodeInvalidArgument},
		{"empty", 1, driver.CodeInvalidArgument},
	} {
		ok, err := s.AckClientCursor(ctx, c.p, "c1", "a1", c.cursor, 2000)
		errExpectTyped(t, fmt.Sprintf("CR-6: ack at %d (head 3, or 0 on a partition without commits)", c.cursor), err, c.code, c.p)
		if ok {
			t.Errorf("CR-6: ack at %d returned true with its error", c.cursor)
		}
		expectEqual(t, fmt.Sprintf("CR-6: record after an ack at %d", c.cursor), rec, must2(crGet(t, conn, c.p, "c1")))
	}
	// The driver alone writes nothing either.
	ok, err := conn.AckClientCursor(ctx, "p1", "c1", "a1", 4, 2000)
	must(t, "Conn.AckClientCursor beyond the head", err)
	if ok {
		t.Errorf("CR-6: Conn.AckClientCursor beyond the head = true; want false")
	}
	expectEqual(t, "CR-6: record after the driver's ack beyond the head", rec, must2(crGet(t, conn, "p1", "c1")))
	// Precedence: beyond the head is refused before the record is looked at.
	_, err = s.AckClientCursor(ctx, "p1", "nobody", "a1", 4, 2000)
	errExpectTyped(t, "CR-6: ack beyond the head of a client without a record", err, driver.CodeInvalidArgument, "p1")
	// The head and 0 on a partition without commits are acked.
	if !ack(t, s, "p1", "c1", "a1", 3, 2000) || !ack(t, s, "empty", "c1", "a1", 0, 2000) {
		t.Errorf("CR-6: an ack at the head = false; want true")
	}
	// The head never drops: pruning every commit keeps an ack at it valid.
	must(t, "SetHorizonSeq(3)", conn.SetHorizonSeq(ctx, "p1", 3))
	_, err = conn.PruneCommitsThrough(ctx, "p1", 3)
	must(t, "PruneCommitsThrough(3)", err)
	if !ack(t, s, "p1", "c1", "a1", 3, 2500) {
		t.Errorf("CR-6: an ack at the head after pruning every commit = false; want true")
	}
}

// ackRaceRounds is how many record writes race an ack in
// ackRacingPuts.
const ackRaceRounds = 60

// Catches: an ack made of a read and a write of the whole record, which
// writes back the record it read over one a Pull wrote meanwhile — the
// client's old subscriptions and wire version restored, its new ones
// lost. Round i puts record i (subscriptions and wire version i) while an
// ack races it; after the round the record must hold record i's
// subscriptions and wire version, whatever the order, and a cursor and
// time that are record i's or the ack's.
func ackRacingPuts(t T, h Harness) {
	conn, s := ackStore(t, h, 5)
	ctx := t.Context()
	recOf := func(i int) driver.ClientRecord {
		return driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: int64(i), Cursor: int64(i % 3), UpdatedAtMs: int64(1000 + i),
			Subscriptions: []driver.Subscription{{ID: fmt.Sprintf("s%d", i), Table: tTodos,
				Scopes: driver.ScopeFilter{"project": {fmt.Sprintf("p%d", i)}}}}}
	}
	crPut(t, conn, "p1", recOf(0))
	for i := 1; i <= ackRaceRounds && !t.Failed(); i++ {
		put := recOf(i)
		ackCursor, ackAt := int64(i%5), int64(1000+i-1+i%2*2)
		var wg gosync.WaitGroup
		var putErr, ackErr error
		wg.Go(func() { putErr = conn.PutClientRecord(ctx, "p1", put) })
		wg.Go(func() { _, ackErr = s.AckClientCursor(ctx, "p1", "c1", "a1", ackCursor, ackAt) })
		wg.Wait()
		must(t, "PutClientRecord", putErr)
		must(t, "AckClientCursor", ackErr)
		got, _ := crGet(t, conn, "p1", "c1")
		if got.WireVersion != put.WireVersion || diff(put.Subscriptions, got.Subscriptions) != "" {
			t.Errorf("CR-6: round %d: after a record write racing an ack the record holds wire version %d and subscriptions %v; "+
				"want the written record's (%d, %v): the ack wrote back a record it read", i, got.WireVersion, got.Subscriptions,
				put.WireVersion, put.Subscriptions)
		}
		okCursor := got.Cursor == put.Cursor || got.Cursor == max(put.Cursor, ackCursor)
		okAt := got.UpdatedAtMs == put.UpdatedAtMs || got.UpdatedAtMs == max(put.UpdatedAtMs, ackAt)
		if !okCursor || !okAt || got.ActorID != "a1" {
			t.Errorf("CR-6: round %d: record %+v after a write of %+v racing an ack at %d, %d", i, got, put, ackCursor, ackAt)
		}
	}
}
