package conformance

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// W8 (docs/performance.md): many tenants. A store of many
// partitions, each small, written round robin, then the reads of one of
// them: a push must not slow down with the number of partitions (goal:
// W8's commits/s ≥ 0.9 of W1's) and a partition's reads must not depend on
// the others (the same reads on a store holding only that partition's
// data are the reference), and the registry must page through all of
// them.

const (
	// W8CommitsEach is how many W1-shaped commits each W8 partition gets.
	W8CommitsEach = 20
	// w8Reads is how many times W8 repeats each read (a partition of 20
	// commits holds 10 changes and rows of project p7: one page, well
	// under a millisecond, so it takes many to make a rate).
	w8Reads = 1000
	// w8ListPage is the page size of W8's ListPartitions walk.
	w8ListPage = 1000
	// w8Alone is the partition of W8's reference reads: written, and read,
	// before the tenants exist; never registered.
	w8Alone = "w8-alone"
)

// W8Partition is the name of W8's partition k: "tenant-" and k
// zero-padded to 7 digits (so bytewise order is numeric order).
func W8Partition(k int) string {
	s := strconv.Itoa(k)
	for len(s) < 7 {
		s = "0" + s
	}
	return "tenant-" + s
}

// w8Result is one W8 run.
type w8Result struct {
	partitions int
	push       w1Result // commit i went to partition i mod partitions
	// pull and scan are the reads of one tenant after the push (w8Reads
	// times W2's and W3's read); pullAlone and scanAlone the same reads of
	// w8Alone on the store before the tenants were written.
	pull, scan, pullAlone, scanAlone timed
	// list is the ListPartitions walk: n partitions, one op per page.
	list timed
}

// runW8 runs W8 on a fresh store: partitions tenants of W8CommitsEach
// W1-shaped commits each.
//
//  1. Reference (untimed setup, then timed reads): W8CommitsEach commits to
//     w8Alone, then w8Reads pulls (W2's read: project p7, pages of 500)
//     and w8Reads bootstraps (W3's scan: p7, pages of 1,000) of it, each
//     series after one untimed read.
//  2. Every tenant is registered (TouchPartition, untimed: a server does it
//     on a client's first pull, REG-1).
//  3. Timed: partitions × W8CommitsEach commits, round robin: commit i goes
//     to tenant i mod partitions as its commit i / partitions (rows and
//     commit ids as W1's commit of that number), and must get seq
//     i / partitions + 1 (SEQ-1). Then every tenant's MaxCommitSeq is
//     checked (untimed).
//  4. Timed: the reads of step 1 on the middle tenant, each count checked.
//  5. Timed: ListPartitions from the start in pages of 1,000; it must list
//     exactly the tenants, in order (REG-3).
func runW8(ctx context.Context, conn driver.Conn, partitions int) (w8Result, error) {
	res := w8Result{partitions: partitions}
	for i := 0; i < W8CommitsEach; i++ {
		if _, err := pushCommit(ctx, conn, w8Alone, i*BenchRowsPerCommit, "c"+strconv.Itoa(i)); err != nil {
			return res, fmt.Errorf("W8 reference partition, commit %d: %w", i, err)
		}
	}
	var err error
	if res.pullAlone, res.scanAlone, err = w8ReadsOf(ctx, conn, w8Alone); err != nil {
		return res, fmt.Errorf("W8 reference partition: %w", err)
	}
	at := time.Now().UnixMilli()
	for k := 0; k < partitions; k++ {
		if _, err := conn.TouchPartition(ctx, W8Partition(k), at, "e"+strconv.Itoa(k)); err != nil {
			return res, fmt.Errorf("W8 TouchPartition: %w", err)
		}
	}
	names := make([]string, partitions)
	for k := range names {
		names[k] = W8Partition(k)
	}
	res.push, err = timeCommitsSeq("W8", partitions*W8CommitsEach, func(i int) (int64, error) {
		j := i / partitions
		return pushCommit(ctx, conn, names[i%partitions], j*BenchRowsPerCommit, "c"+strconv.Itoa(j))
	}, func(i int) int64 { return int64(i/partitions + 1) })
	if err != nil {
		return res, err
	}
	for _, p := range names {
		if max, err := conn.MaxCommitSeq(ctx, p); err != nil || max != W8CommitsEach {
			return res, fmt.Errorf("W8: MaxCommitSeq of %s is %d (%v) after %d commits (SEQ-1)", p, max, err, W8CommitsEach)
		}
	}
	if res.pull, res.scan, err = w8ReadsOf(ctx, conn, names[partitions/2]); err != nil {
		return res, fmt.Errorf("W8 tenant %s: %w", names[partitions/2], err)
	}
	res.list, err = w8List(ctx, conn, names)
	return res, err
}

// w8ReadsOf times w8Reads pulls and then w8Reads bootstraps of partition,
// which holds W8CommitsEach W1-shaped commits, and checks each count.
func w8ReadsOf(ctx context.Context, conn driver.Conn, partition string) (pull, scan timed, err error) {
	pull, err = w8Repeat("pull matched %d changes, want %d (WIN-1…WIN-5)", func(pages *[]time.Duration) (int, error) {
		return pullP7(ctx, conn, partition, W8CommitsEach, pages)
	})
	if err != nil {
		return pull, scan, fmt.Errorf("pull: %w", err)
	}
	scan, err = w8Repeat("bootstrap scanned %d rows, want %d (SCAN-1…SCAN-3)", func(pages *[]time.Duration) (int, error) {
		return scanP7(ctx, conn, partition, pages)
	})
	if err != nil {
		return pull, scan, fmt.Errorf("bootstrap: %w", err)
	}
	return pull, scan, nil
}

// w8Repeat times w8Reads calls of read, after one untimed call (so the
// first timed one does not pay for preparing statements or a cold cache:
// with pages this small it would weigh on the whole), each of which must
// return W8's count of p7 items; wrong formats a wrong count (got, want).
func w8Repeat(wrong string, read func(pages *[]time.Duration) (int, error)) (timed, error) {
	want := expectedP7(W8CommitsEach * BenchRowsPerCommit)
	t := timed{ops: make([]time.Duration, 0, w8Reads+1)}
	if _, err := read(&t.ops); err != nil {
		return t, err
	}
	t.ops = t.ops[:0]
	start := time.Now()
	for range w8Reads {
		n, err := read(&t.ops)
		if err != nil {
			return t, err
		}
		if n != want {
			return t, fmt.Errorf(wrong, n, want)
		}
		t.n += n
	}
	t.d = time.Since(start)
	return t, nil
}

// w8List pages through ListPartitions from the start and checks it lists
// exactly want (ascending) and nothing else (REG-3).
func w8List(ctx context.Context, conn driver.Conn, want []string) (timed, error) {
	t := timed{ops: make([]time.Duration, 0, len(want)/w8ListPage+2)}
	after := ""
	start := time.Now()
	clk := clockAt(start)
	for {
		page, err := conn.ListPartitions(ctx, after, w8ListPage)
		clk.lap(&t.ops)
		if err != nil {
			return t, fmt.Errorf("W8 ListPartitions: %w", err)
		}
		for _, p := range page {
			if t.n >= len(want) || p != want[t.n] {
				return t, fmt.Errorf("W8: ListPartitions gave %q as partition %d, want the %d tenants in order (REG-3)", p, t.n+1, len(want))
			}
			t.n++
		}
		if len(page) < w8ListPage {
			break
		}
		after = page[len(page)-1]
	}
	t.d = time.Since(start)
	if t.n != len(want) {
		return t, fmt.Errorf("W8: ListPartitions listed %d partitions, want %d (REG-3)", t.n, len(want))
	}
	return t, nil
}
