package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// listenerPIDs returns the backend pids of this database's fanout
// listeners.
func listenerPIDs(t *testing.T, dsn string) []uint32 {
	t.Helper()
	a := adminConn(t, dsn)
	rows, err := a.Query(t.Context(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, fanoutAppName)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []uint32
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		out = append(out, uint32(pid))
	}
	return out
}

func awaitWake(t *testing.T, ch <-chan driver.CommitWake, partition string, seq int64) {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case w, ok := <-ch:
			if !ok {
				t.Fatal("wake channel closed")
			}
			if w.Partition == partition && w.CommitSeq >= seq {
				return
			}
		case <-timer.C:
			t.Fatalf("no wake for seq %d within 30s", seq)
		}
	}
}

// TestFanoutCatchUpAfterListenerKilled (FAN-1): the listener's backend is
// terminated; commits made on another Conn while it is away (their
// NOTIFY reaches nobody) still produce a wake once it reconnects — a
// catch-up wake, never silence — and live wakes resume afterwards.
func TestFanoutCatchUpAfterListenerKilled(t *testing.T) {
	old := fanoutReconnectDelay
	fanoutReconnectDelay = 2 * time.Second // long enough that the commits below land while no listener exists
	t.Cleanup(func() { fanoutReconnectDelay = old })
	sub, dsn := openTest(t)
	writer := openDSN(t, dsn)
	ch, err := sub.SubscribeCommits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seq, err := pushTodos(t.Context(), writer, "a", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	awaitWake(t, ch, "a", seq)

	pids := listenerPIDs(t, dsn)
	if len(pids) != 1 {
		t.Fatalf("%d listener sessions, want 1", len(pids))
	}
	terminate(t, dsn, pids[0])
	missedA, err := pushTodos(t.Context(), writer, "a", 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	missedB, err := pushTodos(t.Context(), writer, "b", 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(listenerPIDs(t, dsn)); n != 0 {
		t.Fatalf("the listener reconnected before the missed commits landed (%d sessions); the test proves nothing", n)
	}
	awaitWake(t, ch, "a", missedA)
	awaitWake(t, ch, "b", missedB)
	if again := listenerPIDs(t, dsn); len(again) != 1 || again[0] == pids[0] {
		t.Fatalf("listener sessions after the catch-up = %v, want one new session", again)
	}
	live, err := pushTodos(t.Context(), writer, "b", 30, 1)
	if err != nil {
		t.Fatal(err)
	}
	awaitWake(t, ch, "b", live)
}

// TestFanoutOneListenerForManySubscriptions (FAN-1): 10,000
// subscriptions of one Conn share one LISTEN connection — the database
// shows one listener backend, as for one subscription, where a
// connection per subscription failed with "too many clients" near the
// 100th — and every one of them is woken by a commit. A subscriber that
// never reads holds up nobody; the listener closes with the last
// subscription, reopens with the next, and Close ends every channel.
//
// Under the race detector (at most 8,128 goroutines, and each
// subscription has one) it subscribes 1,000 times.
func TestFanoutOneListenerForManySubscriptions(t *testing.T) {
	n := 10_000
	if raceOn {
		n = 1_000
	}
	sub, dsn := openTest(t)
	writer := openDSN(t, dsn)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	chans := make([]<-chan driver.CommitWake, n)
	for i := range chans {
		ch, err := sub.SubscribeCommits(ctx)
		if err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
		chans[i] = ch
	}
	if pids := listenerPIDs(t, dsn); len(pids) != 1 {
		t.Fatalf("%d listener backends for %d subscriptions, want 1", len(pids), n)
	}
	seq, err := pushTodos(t.Context(), writer, "a", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		if i == 0 {
			continue // the slow subscriber: never read below
		}
		awaitWake(t, ch, "a", seq)
	}

	// 100 commits, more than a channel holds: the subscriber that never
	// reads delays nobody else.
	var last int64
	for i := range 100 {
		if last, err = pushTodos(t.Context(), writer, "b", 100+i, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range chans[1:] {
		awaitWake(t, ch, "b", last)
	}

	// The last subscription gone, the listener goes; the next one opens
	// it again.
	cancel()
	for _, ch := range chans {
		for range ch { // drained, then closed
		}
	}
	awaitListeners(t, dsn, 0)
	ch, err := sub.SubscribeCommits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	awaitListeners(t, dsn, 1)
	if seq, err = pushTodos(t.Context(), writer, "a", 1000, 1); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, ch, "a", seq)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	awaitListeners(t, dsn, 0)
}

// awaitListeners waits (up to 200 looks, 50 ms apart) until the database
// shows want fanout listener backends.
func awaitListeners(t *testing.T, dsn string, want int) {
	t.Helper()
	var got []uint32
	for range 200 {
		if got = listenerPIDs(t, dsn); len(got) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%d listener backends, want %d", len(got), want)
}
