// Package faulttest holds what the drivers' fault and load tests share:
// the pushes a storm makes, the check that afterwards every push is whole or
// absent and the sequence dense (TX-2, TX-6, SEQ-1, PR-3), and the
// read-modify-write counter push of the concurrent-writer tests (SEQ-4,
// TX-1). Only driver.Conn is used, so every engine's test runs the same
// checks; each driver keeps only its own push (hooks into its Tx) and its
// own way of killing sessions.
package faulttest

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
)

// todo returns a row of the conformance schema's todos table.
func todo(id, project, owner string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{"id": id, "title": "title " + id, "done": false,
			"project_id": project, "owner_id": owner, "updated_at": int64(1700000000000)}}
}

// Store is what Verify reads: the core and the reactions capability.
type Store interface {
	driver.Conn
	driver.ReactionsConn
}

// Rows returns the two rows push i writes.
func Rows(i int) []driver.Row {
	return []driver.Row{todo(fmt.Sprintf("r%04d-a", i), "p", "o"), todo(fmt.Sprintf("r%04d-b", i), "p", fmt.Sprintf("o%d", i%5))}
}

func Key(i int) string { return fmt.Sprintf("cc-%04d", i) }

// Commit returns push i's commit as a window read returns it.
func Commit(i int, seq int64) driver.Commit {
	c := driver.Commit{Seq: seq, ClientID: "f", ClientCommitID: Key(i), CreatedAtMs: int64(i)}
	for _, r := range Rows(i) {
		c.Changes = append(c.Changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert,
			Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	return c
}

func Result(i int, seq int64) driver.PushResult {
	return driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: int64(i),
		CacheIdentity: fmt.Sprintf("ci-%d", i), Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied}}}
}

// Verify checks partition after pushes 0…n-1: the log is dense and
// holds each push at most once, whole (its changes, rows, push result and
// reaction); pushes not in the log left nothing; pushes in mustLand are in
// it. It returns how many landed.
func Verify(t testing.TB, c Store, partition string, n int, mustLand map[int]bool) int {
	t.Helper()
	ctx := context.Background()
	max, err := c.MaxCommitSeq(ctx, partition)
	if err != nil {
		t.Fatal(err)
	}
	win, err := c.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(win)) != max {
		t.Fatalf("log holds %d commits, MaxCommitSeq is %d", len(win), max)
	}
	rows, err := c.ScanRows(ctx, partition, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p"}}, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	gotRows := map[string]driver.Row{}
	for _, r := range rows {
		gotRows[r.ID] = r
	}
	rx, err := c.ListReactions(ctx, partition, driver.ReactionListQuery{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	gotRx := map[string]driver.Reaction{}
	for _, r := range rx {
		gotRx[r.Key] = r
	}
	landed := map[int]int64{}
	for k, cm := range win {
		if cm.Seq != int64(k+1) {
			t.Fatalf("commit %d has seq %d: sequence not dense (SEQ-1)", k+1, cm.Seq)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(cm.ClientCommitID, "cc-"))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("commit %d has an unknown key", cm.Seq)
		}
		if _, dup := landed[i]; dup {
			t.Fatalf("push %d landed twice", i)
		}
		landed[i] = cm.Seq
		if d := cmp.Diff(Commit(i, cm.Seq), cm, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("commit %d is not push %d whole (-want +got):\n%s", cm.Seq, i, d)
		}
	}
	wantRows := map[string]driver.Row{}
	for i := range n {
		seq, ok := landed[i]
		if mustLand[i] && !ok {
			t.Fatalf("push %d returned success but its commit is missing", i)
		}
		r, has, err := c.GetPushResult(ctx, partition, "f", Key(i))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if has {
				t.Fatalf("push %d: push result stored without its commit", i)
			}
			if _, has := gotRx["rx-"+Key(i)]; has {
				t.Fatalf("push %d: reaction stored without its commit", i)
			}
			continue
		}
		if d := cmp.Diff(Result(i, seq), r, cmpopts.EquateEmpty()); !has || d != "" {
			t.Fatalf("push %d (commit %d): push result found=%v (-want +got):\n%s", i, seq, has, d)
		}
		if x, has := gotRx["rx-"+Key(i)]; !has || x.SourceCommitSeq != seq {
			t.Fatalf("push %d (commit %d): reaction found=%v source=%d", i, seq, has, x.SourceCommitSeq)
		}
		for _, row := range Rows(i) {
			wantRows[row.ID] = row
		}
	}
	if d := cmp.Diff(wantRows, gotRows, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("rows are not exactly those of the landed pushes (-want +got):\n%s", d)
	}
	if len(rx) != len(landed) {
		t.Fatalf("%d reactions for %d landed pushes", len(rx), len(landed))
	}
	return len(landed)
}

// CounterPush adds one to the partition's counter row in one Tx whose
// commit carries key and stores a push result under it.
func CounterPush(ctx context.Context, c driver.Conn, partition, key string) error {
	return counterPush(ctx, c, partition, key, false)
}

// CounterPushOnce is CounterPush made idempotent as a host's push is: when
// the Tx sees key's push result (an earlier attempt landed although its
// caller was told otherwise, or was not told at all), it writes nothing
// and returns nil. So a push may be sent again after any error, to any
// node, without applying twice.
func CounterPushOnce(ctx context.Context, c driver.Conn, partition, key string) error {
	return counterPush(ctx, c, partition, key, true)
}

func counterPush(ctx context.Context, c driver.Conn, partition, key string, once bool) error {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if once {
		if _, landed, err := tx.GetPushResult(ctx, "w", key); err != nil || landed {
			return err
		}
	}
	row, ok, err := tx.GetRow(ctx, "todos", "counter")
	if err != nil {
		return err
	}
	if !ok {
		row = todo("counter", "p", "o")
		row.Values["updated_at"] = int64(0)
	}
	row.Values["updated_at"] = row.Values["updated_at"].(int64) + 1
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		return err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "w", ClientCommitID: key, CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: "counter", Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
	if err != nil {
		return err
	}
	if err := tx.PutPushResult(ctx, "w", key, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// VerifyCounterLog checks a partition written n times by CounterPush: max
// seq n, log 1…n, commit k sets the counter to k, each key's push result
// names its commit.
func VerifyCounterLog(t testing.TB, c driver.Conn, partition string, n int64) {
	t.Helper()
	ctx := context.Background()
	if m, err := c.MaxCommitSeq(ctx, partition); err != nil || m != n {
		t.Fatalf("%s: MaxCommitSeq = %d, %v; want %d", partition, m, err, n)
	}
	win, err := c.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(win)) != n {
		t.Fatalf("%s: log holds %d commits, want %d", partition, len(win), n)
	}
	keys := map[string]bool{}
	for i, cm := range win {
		if cm.Seq != int64(i+1) {
			t.Fatalf("%s: commit %d has seq %d: sequence not dense", partition, i+1, cm.Seq)
		}
		if got := cm.Changes[0].Values["updated_at"]; got != cm.Seq {
			t.Fatalf("%s: commit %d set the counter to %v: a lost update", partition, cm.Seq, got)
		}
		if keys[cm.ClientCommitID] {
			t.Fatalf("%s: key %s committed twice", partition, cm.ClientCommitID)
		}
		keys[cm.ClientCommitID] = true
		r, ok, err := c.GetPushResult(ctx, partition, "w", cm.ClientCommitID)
		if err != nil || !ok || r.CommitSeq != cm.Seq {
			t.Fatalf("%s: push result of %s = %+v, %v, %v; want commit %d", partition, cm.ClientCommitID, r, ok, err, cm.Seq)
		}
	}
}

// RaceEnabled reports whether the test binary was built with -race.
func RaceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}
