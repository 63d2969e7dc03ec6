package postgres

import (
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
