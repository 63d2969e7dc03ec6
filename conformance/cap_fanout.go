package conformance

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Cases of the commit-fanout capability (docs/contract.md FAN-1): after a
// commit lands, every subscriber of every Conn of the same store receives
// a wake (partition, commitSeq). Wakes may repeat or coalesce (a
// subscriber reads from its cursor on any wake), so cases assert what
// must arrive — a wake naming the latest seq of each partition written —
// and what must never arrive: a wake naming a seq that is not committed.
// The reconnect half of FAN-1 (a catch-up wake after the listener's
// connection is lost) needs engine-specific fault injection and is
// checked in each driver's own tests.
//
// No case asserts a delay: wakeWait only bounds how long a case waits
// before it reports a wake as missing.

// wakeWait bounds the wait for one expected wake.
const wakeWait = 30 * time.Second

func init() {
	c := driver.CapCommitFanout
	register(
		// Catches: fanout that only wakes subscribers of the committing Conn (in-process only).
		Case{Name: "FAN-1/other-instance-is-woken", Capability: c, Run: fanOtherInstance},
		// Catches: a wake with the wrong seq, a lost partition, or only the first commit announced.
		Case{Name: "FAN-1/wake-names-partition-and-latest-seq", Capability: c, Run: fanLatestSeq},
		// Catches: a wake sent for a rolled-back or rejected transaction (NOTIFY outside the commit).
		Case{Name: "FAN-1/uncommitted-wakes-nobody", Capability: c, Run: fanUncommitted},
		// Catches: partition names mangled by the frame (truncation, escaping, ':' inside).
		Case{Name: "FAN-1/partition-names-round-trip", Capability: c, Run: fanPartitionNames},
		// Catches: a subscription that never closes its channel, leaking its listener.
		Case{Name: "FAN-1/channel-closes-when-ctx-ends", Capability: c, Run: fanCloses},
	)
}

// fanConn returns the commit-fanout half of conn or fails the case.
func fanConn(t T, conn driver.Conn) driver.CommitFanoutConn {
	t.Helper()
	f, ok := conn.(driver.CommitFanoutConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.CommitFanoutConn although the case runs for capability %s", driver.CapCommitFanout)
	}
	return f
}

// subscribe subscribes on conn until the case ends.
func subscribe(t T, conn driver.Conn) <-chan driver.CommitWake {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	ch, err := fanConn(t, conn).SubscribeCommits(ctx)
	if err != nil {
		t.Fatalf("FAN-1: SubscribeCommits: %v", err)
	}
	return ch
}

// awaitWake receives wakes until one names partition with seq ≥ want and
// returns every wake received meanwhile; it fails the case if none comes
// within wakeWait or the channel closes.
func awaitWake(t T, ch <-chan driver.CommitWake, partition string, want int64) []driver.CommitWake {
	t.Helper()
	timer := time.NewTimer(wakeWait)
	defer timer.Stop()
	var got []driver.CommitWake
	for {
		select {
		case w, ok := <-ch:
			if !ok {
				t.Fatalf("FAN-1: the wake channel closed while waiting for a wake of seq %d", want)
			}
			got = append(got, w)
			if w.Partition == partition && w.CommitSeq >= want {
				return got
			}
		case <-timer.C:
			t.Fatalf("FAN-1: no wake for seq %d of the partition within %s (received %d other wakes)", want, wakeWait, len(got))
		}
	}
}

// awaitWakes receives wakes until, for every partition of want, one names
// a seq ≥ want's, in any order, and returns every wake received; it fails
// the case if that takes longer than wakeWait or the channel closes.
func awaitWakes(t T, ch <-chan driver.CommitWake, want map[string]int64) []driver.CommitWake {
	t.Helper()
	timer := time.NewTimer(wakeWait)
	defer timer.Stop()
	var got []driver.CommitWake
	seen := map[string]bool{}
	for len(seen) < len(want) {
		select {
		case w, ok := <-ch:
			if !ok {
				t.Fatalf("FAN-1: the wake channel closed while waiting for wakes of %v", want)
			}
			got = append(got, w)
			if seq, ok := want[w.Partition]; ok && w.CommitSeq >= seq {
				seen[w.Partition] = true
			}
		case <-timer.C:
			t.Fatalf("FAN-1: no wakes for all of %v within %s (received %v)", want, wakeWait, got)
		}
	}
	return got
}

// checkCommitted fails the case for a wake naming a seq above the
// partition's MaxCommitSeq (a wake of something that did not commit).
func checkCommitted(t T, conn driver.Conn, wakes []driver.CommitWake) {
	t.Helper()
	for _, w := range wakes {
		max, err := conn.MaxCommitSeq(t.Context(), w.Partition)
		must(t, "MaxCommitSeq", err)
		if w.CommitSeq < 1 || w.CommitSeq > max {
			t.Errorf("FAN-1: a wake names seq %d, but the partition's committed max is %d", w.CommitSeq, max)
		}
	}
}

func fanOtherInstance(t T, h Harness) {
	if h.Reopen == nil {
		t.Skipf("FAN-1: needs Harness.Reopen for a second instance")
	}
	a := openStore(t, h)
	b := h.Reopen(t, a)
	must(t, "EnsureSchema on the second instance", b.EnsureSchema(t.Context(), TestSchema()))
	onB := subscribe(t, b)
	onA := subscribe(t, a)
	seq := push(t, a, "p1", tTodos, todo("t1", "pr", "o"))
	checkCommitted(t, a, awaitWake(t, onB, "p1", seq))
	checkCommitted(t, a, awaitWake(t, onA, "p1", seq))
	seq2 := push(t, b, "p1", tTodos, todo("t2", "pr", "o"))
	checkCommitted(t, a, awaitWake(t, onA, "p1", seq2))
}

func fanLatestSeq(t T, h Harness) {
	conn := openStore(t, h)
	other := conn
	if h.Reopen != nil {
		other = h.Reopen(t, conn)
		must(t, "EnsureSchema on the second instance", other.EnsureSchema(t.Context(), TestSchema()))
	}
	ch := subscribe(t, other)
	var last int64
	for i := range 3 {
		last = push(t, conn, "p1", tTodos, todo("t"+string(rune('a'+i)), "pr", "o"))
	}
	two := begin(t, conn, "p2")
	stage(t, two, tTodos, todo("x", "pr", "o"))
	last2 := stage(t, two, tTodos, todo("y", "pr", "o"))
	commit(t, two)
	// Wakes of different partitions may come in any order (and coalesce).
	got := awaitWakes(t, ch, map[string]int64{"p1": last, "p2": last2})
	checkCommitted(t, conn, got)
	var latest int64
	for _, w := range got {
		if w.Partition == "p2" {
			latest = max(latest, w.CommitSeq)
		}
	}
	expectEqual(t, "FAN-1: seq of p2's latest wake (a Tx with two commits announces its last)", last2, latest)
}

func fanUncommitted(t T, h Harness) {
	conn := openStore(t, h)
	ch := subscribe(t, conn)
	tx := begin(t, conn, "rolled")
	stage(t, tx, tTodos, todo("t1", "pr", "o"))
	must(t, "Rollback", tx.Rollback(t.Context()))
	rj := begin(t, conn, "rejected")
	stage(t, rj, tTodos, todo("t1", "pr", "o"))
	must(t, "CommitRejected", rj.CommitRejected(t.Context(), "c1", "cc1",
		driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1, Ops: []driver.OpResult{}}))
	marker := push(t, conn, "marker", tTodos, todo("m", "pr", "o"))
	got := awaitWake(t, ch, "marker", marker)
	checkCommitted(t, conn, got)
	for _, w := range got {
		if w.Partition == "rolled" || w.Partition == "rejected" {
			t.Errorf("FAN-1: a wake was sent for a transaction that did not commit a commit (seq %d)", w.CommitSeq)
		}
	}
}

func fanPartitionNames(t T, h Harness) {
	conn := openStore(t, h)
	ch := subscribe(t, conn)
	long := make([]byte, 255)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	for _, p := range []string{"tenant:7", "ü/🙂 +=?&%", "a\u0301\ufffd", string(long), "-_", "=="} {
		seq := push(t, conn, p, tTodos, todo("t1", "pr", "o"))
		got := awaitWake(t, ch, p, seq)
		checkCommitted(t, conn, got)
		w := got[len(got)-1]
		if w.Partition != p || w.CommitSeq != seq {
			t.Errorf("FAN-1: wake of a %d-byte partition name = (%d bytes, seq %d), want seq %d", len(p), len(w.Partition), w.CommitSeq, seq)
		}
	}
}

func fanCloses(t T, h Harness) {
	conn := openStore(t, h)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := fanConn(t, conn).SubscribeCommits(ctx)
	if err != nil {
		cancel()
		t.Fatalf("FAN-1: SubscribeCommits: %v", err)
	}
	cancel()
	timer := time.NewTimer(wakeWait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("FAN-1: the wake channel did not close within %s after its context ended", wakeWait)
		}
	}
}
