package conformance

import (
	"fmt"
	"slices"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for REG-1…REG-3 (the partition registry).

func init() {
	register(
		Case{Name: "REG-1/register-then-refresh-time-only", Run: regTouchRefresh},
		Case{Name: "REG-1/touch-after-rotate-keeps-epoch", Run: regTouchAfterRotate},
		Case{Name: "REG-1/empty-epoch-invalid-argument", Run: regEmptyEpoch},
		Case{Name: "REG-1/concurrent-first-touch-one-entry", Run: regConcurrentTouch},
		Case{Name: "REG-2/rotate-sets-epoch-and-deletes-client-records-only", Run: regRotate},
		Case{Name: "REG-2/rotate-registers-unknown-partition", Run: regRotateUnknown},
		Case{Name: "REG-3/ordered-paged-registered-only", Run: regListing},
	)
}

func regTouch(t T, conn driver.Conn, p string, atMs int64, epoch string) driver.PartitionEntry {
	t.Helper()
	e, err := conn.TouchPartition(t.Context(), p, atMs, epoch)
	must(t, fmt.Sprintf("TouchPartition(%d)", atMs), err)
	return e
}

func regRotateTo(t T, conn driver.Conn, p, epoch string, atMs int64) driver.PartitionEntry {
	t.Helper()
	e, err := conn.RotatePartitionLogEpoch(t.Context(), p, epoch, atMs)
	must(t, fmt.Sprintf("RotatePartitionLogEpoch(%d)", atMs), err)
	return e
}

func regList(t T, conn driver.Conn, after string, limit int) []driver.PartitionEntry {
	t.Helper()
	es, err := conn.ListPartitionRegistry(t.Context(), after, limit)
	must(t, fmt.Sprintf("ListPartitionRegistry(after %+q, limit %d)", after, limit), err)
	return es
}

func regNames(t T, conn driver.Conn, after string, limit int) []string {
	t.Helper()
	ns, err := conn.ListPartitions(t.Context(), after, limit)
	must(t, fmt.Sprintf("ListPartitions(after %+q, limit %d)", after, limit), err)
	return ns
}

// Catches: a second touch that replaces the epoch, leaves the time
// unchanged, or sets EpochRequired; a touch returning its arguments instead
// of the stored entry; a touch that changes another partition's entry.
func regTouchRefresh(t T, h Harness) {
	conn := openStore(t, h)
	first := driver.PartitionEntry{Partition: "p1", Epoch: "e1", UpdatedAtMs: 100}
	expectEqual(t, "REG-1: first touch returns the new entry", first, regTouch(t, conn, "p1", 100, "e1"))
	p2 := regTouch(t, conn, "p2", 50, "x")
	refreshed := first
	refreshed.UpdatedAtMs = 250
	expectEqual(t, "REG-1: second touch (epoch ignored) returns the stored entry", refreshed,
		regTouch(t, conn, "p1", 250, "e2"))
	expectEqual(t, "REG-1: registry after touches", []driver.PartitionEntry{refreshed, p2}, regList(t, conn, "", 10))
	refreshed.UpdatedAtMs = 300
	expectEqual(t, "REG-1: third touch", refreshed, regTouch(t, conn, "p1", 300, "e3"))
	expectEqual(t, "REG-1: registry after the third touch", []driver.PartitionEntry{refreshed, p2}, regList(t, conn, "", 10))
}

// Catches: a touch that resets EpochRequired to false or the epoch to its
// initialEpoch after a rotation (an upsert instead of a time refresh).
func regTouchAfterRotate(t T, h Harness) {
	conn := openStore(t, h)
	regTouch(t, conn, "p1", 100, "e1")
	rotated := driver.PartitionEntry{Partition: "p1", Epoch: "e2", EpochRequired: true, UpdatedAtMs: 200}
	expectEqual(t, "REG-2: rotate returns the stored entry", rotated, regRotateTo(t, conn, "p1", "e2", 200))
	rotated.UpdatedAtMs = 300
	expectEqual(t, "REG-1: touch after a rotation refreshes only the time", rotated, regTouch(t, conn, "p1", 300, "e3"))
	expectEqual(t, "REG-1: registry after the touch", []driver.PartitionEntry{rotated}, regList(t, conn, "", 10))
}

// Catches: an empty epoch accepted (by sync's validation, which runs before
// the driver) and a partition registered with it.
func regEmptyEpoch(t T, h Harness) {
	conn := openStore(t, h)
	st := syncstore.OpenConn(conn)
	_, err := st.TouchPartition(t.Context(), "p1", 100, "")
	expectCode(t, "REG-1: TouchPartition with an empty epoch", err, driver.CodeInvalidArgument)
	_, err = st.RotatePartitionLogEpoch(t.Context(), "p1", "", 100)
	expectCode(t, "REG-1: RotatePartitionLogEpoch with an empty epoch", err, driver.CodeInvalidArgument)
	expectEqual(t, "REG-1: partitions after rejected calls", []string{}, regNames(t, conn, "", 10))
	e, err := st.TouchPartition(t.Context(), "p1", 100, "e1")
	must(t, "REG-1: TouchPartition through sync with a valid epoch", err)
	expectEqual(t, "REG-1: entry registered through sync", driver.PartitionEntry{Partition: "p1", Epoch: "e1", UpdatedAtMs: 100}, e)
}

// Catches: a select-then-insert registration that is not atomic, so
// concurrent first touches fail with a constraint error, or return
// different epochs, or the last one's epoch replaces the first's.
func regConcurrentTouch(t T, h Harness) {
	conn := openStore(t, h)
	const n = 8
	entries := make([]driver.PartitionEntry, n)
	errs := make([]error, n)
	var wg gosync.WaitGroup
	for i := range n {
		wg.Go(func() {
			entries[i], errs[i] = conn.TouchPartition(t.Context(), "p1", int64(100+i), fmt.Sprintf("e%d", i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("REG-1: concurrent TouchPartition %d: %v", i, err)
		}
	}
	list := regList(t, conn, "", 10)
	if len(list) != 1 {
		t.Fatalf("REG-1: registry after concurrent first touches = %v, want one entry", list)
	}
	final := list[0]
	if final.Partition != "p1" || final.EpochRequired || !slices.Contains([]int64{100, 101, 102, 103, 104, 105, 106, 107}, final.UpdatedAtMs) {
		t.Errorf("REG-1: entry after concurrent touches = %+v, want p1, EpochRequired false, a time one touch gave", final)
	}
	for i, e := range entries {
		if e.Epoch != final.Epoch || e.EpochRequired || e.Partition != "p1" {
			t.Errorf("REG-1: concurrent touch %d returned %+v; the stored epoch is %q (the first touch's, never replaced)",
				i, e, final.Epoch)
		}
	}
}

// Catches: a rotation that leaves client records, deletes every
// partition's records, forgets EpochRequired, or changes anything else of
// the partition (rows, log, push results, horizon, MaxCommitSeq) or
// another partition's registry entry.
func regRotate(t T, h Harness) {
	conn := openStore(t, h)
	s := hzSeed(t, conn, "p1")
	must(t, "SetHorizonSeq(3)", hzSet(t, conn, "p1", 3))
	other := crRecord("client-1")
	other.Cursor = 4242
	crPut(t, conn, "p2", other)
	regTouch(t, conn, "p2", 77, "epoch-p2")
	before := hzCapture(t, conn, "p1", s)
	otherBefore, _ := crGet(t, conn, "p2", "client-1")
	cursorsBefore, err := conn.ListClientCursors(t.Context(), "p2", "", winAll)
	must(t, "ListClientCursors(p2)", err)
	if len(before.Cursors) != 2 {
		t.Fatalf("REG-2 setup: p1 has %d client records, want 2", len(before.Cursors))
	}

	rotated := driver.PartitionEntry{Partition: "p1", Epoch: "epoch-2", EpochRequired: true, UpdatedAtMs: 900}
	expectEqual(t, "REG-2: RotatePartitionLogEpoch returns the stored entry", rotated,
		regRotateTo(t, conn, "p1", "epoch-2", 900))

	want := before
	want.Cursors = nil
	want.Records = []*driver.ClientRecord{nil, nil}
	want.Registry = []driver.PartitionEntry{rotated, {Partition: "p2", Epoch: "epoch-p2", UpdatedAtMs: 77}}
	expectEqual(t, "REG-2: p1 after rotation (client records gone, all else unchanged)", want, hzCapture(t, conn, "p1", s))
	got, found := crGet(t, conn, "p2", "client-1")
	if !found {
		t.Fatalf("REG-2: rotating p1 deleted p2's client record")
	}
	expectEqual(t, "REG-2: p2's client record", otherBefore, got)
	cursors, err := conn.ListClientCursors(t.Context(), "p2", "", winAll)
	must(t, "ListClientCursors(p2)", err)
	expectEqual(t, "REG-2: p2's cursors", cursorsBefore, cursors)

	// Client records written after the rotation are kept.
	crPut(t, conn, "p1", crRecord("client-3"))
	if _, found := crGet(t, conn, "p1", "client-3"); !found {
		t.Errorf("REG-2: a client record put after the rotation is missing")
	}
}

// Catches: a rotation of a partition that was never touched failing, or
// not registering it.
func regRotateUnknown(t T, h Harness) {
	conn := openStore(t, h)
	want := driver.PartitionEntry{Partition: "p9", Epoch: "e9", EpochRequired: true, UpdatedAtMs: 42}
	expectEqual(t, "REG-2: rotate of an unregistered partition", want, regRotateTo(t, conn, "p9", "e9", 42))
	expectEqual(t, "REG-2: registry", []driver.PartitionEntry{want}, regList(t, conn, "", 10))
	want.Epoch, want.UpdatedAtMs = "e10", 43
	expectEqual(t, "REG-2: second rotation", want, regRotateTo(t, conn, "p9", "e10", 43))
	expectEqual(t, "REG-2: registry after the second rotation", []driver.PartitionEntry{want}, regList(t, conn, "", 10))
}

// Catches: listing partitions that have data but no registry entry,
// ordering under a collation, an inclusive afterPartition, a limit off by
// one, or entries whose epoch or time belong to another partition.
func regListing(t T, h Harness) {
	conn := openStore(t, h)
	names := []string{"b", "B", "a", "aa", "\u00e9", "e\u0301", "😀", "\uFFFD", "\uE000", "z", "~", "A", "10", "9", "a ", "c"}
	want := map[string]driver.PartitionEntry{}
	for i, p := range names {
		e := regTouch(t, conn, p, int64(1000+i), fmt.Sprintf("ep-%d", i))
		want[p] = driver.PartitionEntry{Partition: p, Epoch: fmt.Sprintf("ep-%d", i), UpdatedAtMs: int64(1000 + i)}
		expectEqual(t, fmt.Sprintf("REG-1: touch of %+q", p), want[p], e)
	}
	// Partitions with data but never touched are not registered.
	hzCommits(t, conn, "c-commits", 1, 2)
	must(t, "SetHorizonSeq", hzSet(t, conn, "c-commits", 1))
	crPut(t, conn, "c-clients", crRecord("client-1"))
	winWrite(t, conn, "c", winMeta(3), winUp(tTodos, todo("t", "p7", "u1"))) // a registered one with data

	sorted := slices.Clone(names)
	slices.Sort(sorted) // Go compares strings bytewise
	wantEntries := make([]driver.PartitionEntry, len(sorted))
	for i, p := range sorted {
		wantEntries[i] = want[p]
	}
	expectEqual(t, "REG-3: ListPartitions", sorted, regNames(t, conn, "", 10000))
	expectEqual(t, "REG-3: ListPartitionRegistry", wantEntries, regList(t, conn, "", 10000))

	for _, after := range []string{"b", "B", "a", "b0", "c-commits", "\u00e8", "\U0010FFFF", "0"} {
		i, _ := slices.BinarySearch(sorted, after)
		if i < len(sorted) && sorted[i] == after {
			i++
		}
		expectEqual(t, fmt.Sprintf("REG-3: ListPartitions(after %+q)", after), sorted[i:], regNames(t, conn, after, 10000))
		expectEqual(t, fmt.Sprintf("REG-3: ListPartitionRegistry(after %+q)", after), wantEntries[i:],
			regList(t, conn, after, 10000))
	}
	for _, limit := range []int{1, 3, 4, 16} {
		var gotNames []string
		var gotEntries []driver.PartitionEntry
		after := ""
		for range len(names) + 2 {
			page := regNames(t, conn, after, limit)
			entries := regList(t, conn, after, limit)
			if len(page) > limit || len(entries) > limit {
				t.Fatalf("REG-3: a page of limit %d returned %d names and %d entries", limit, len(page), len(entries))
			}
			if len(page) == 0 {
				break
			}
			gotNames, gotEntries = append(gotNames, page...), append(gotEntries, entries...)
			after = page[len(page)-1]
		}
		expectEqual(t, fmt.Sprintf("REG-3: names paged by %d", limit), sorted, gotNames)
		expectEqual(t, fmt.Sprintf("REG-3: entries paged by %d", limit), wantEntries, gotEntries)
	}
}
