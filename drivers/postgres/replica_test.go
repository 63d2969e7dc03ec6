package postgres

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// The read-replica lane (issue 15, docs/scaling.md): a primary and a hot
// standby started by .ci/pg-replica.sh, whose server DSNs
// SYNCSTORE_TEST_PG_REPLICA holds ("PRIMARY STANDBY"). Without it the test
// skips, loudly; SYNCSTORE_TEST_REQUIRE_REPLICA=1 (set by .ci/run) makes
// that a failure.
func replicaLane(t *testing.T) (primary, standby string) {
	t.Helper()
	env := strings.Fields(os.Getenv("SYNCSTORE_TEST_PG_REPLICA"))
	if len(env) != 2 {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_REPLICA") == "1" {
			t.Fatal("SYNCSTORE_TEST_PG_REPLICA is unset but SYNCSTORE_TEST_REQUIRE_REPLICA=1: start the lane with .ci/pg-replica.sh start")
		}
		t.Skip("SKIPPED: no PostgreSQL standby (set SYNCSTORE_TEST_PG_REPLICA from `.ci/pg-replica.sh start`)")
	}
	return env[0], env[1]
}

// TestReadReplica: a store opened on the hot standby is read-only; reads
// the host marks with AllowReplica go to it and see one consistent
// earlier snapshot of the primary (REP-1, REP-2) — shown by pausing the
// standby's replay while the primary commits —; a window read whose
// cursor the standby has not reached is served by the primary (REP-3);
// unmarked reads and writes use the primary.
func TestReadReplica(t *testing.T) {
	primaryServer, standbyServer := replicaLane(t)
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, primaryServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	standbyDSN := testdb.PostgresDSNFor(standbyServer, name)

	primary, err := sync.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if err := primary.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := faulttest.Push(ctx, primary.Conn(), "p1", i); err != nil {
			t.Fatal(err)
		}
	}
	// The standby replays the database, then opens read-only.
	var replica *sync.Store
	for range 200 {
		if replica, err = sync.Open("postgres", standbyDSN); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open the standby: %v", err)
	}
	defer replica.Close()
	waitReplayed(t, replica, 3)
	if err := replica.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema on the standby (same schema, nothing to write): %v", err)
	}
	primary.SetReadReplica(replica)

	// Writes to the standby are refused, typed, before they reach it.
	if err := replica.RunInTx(ctx, "p1", func(context.Context, *sync.Tx) error { return nil }); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("a Tx on the standby: %v, want %s", err, driver.CodeInvalidArgument)
	}
	if err := replica.SetHorizonSeq(ctx, "p1", 1); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("a write on the standby: %v, want %s", err, driver.CodeInvalidArgument)
	}

	// Pause the standby's replay; the primary commits twice more.
	admin, err := pgx.Connect(ctx, standbyServer)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "SELECT pg_wal_replay_resume()") })
	for i := 3; i < 5; i++ {
		if err := faulttest.Push(ctx, primary.Conn(), "p1", i); err != nil {
			t.Fatal(err)
		}
	}
	rctx := sync.AllowReplica(ctx)
	filter := driver.ScopeFilter{"project": {"p"}}
	if got, err := primary.MaxCommitSeq(rctx, "p1"); err != nil || got != 3 {
		t.Fatalf("MaxCommitSeq from the paused replica = %d, %v; want 3 (REP-1)", got, err)
	}
	if got, err := primary.MaxCommitSeq(ctx, "p1"); err != nil || got != 5 {
		t.Fatalf("MaxCommitSeq unmarked = %d, %v; want 5 from the primary", got, err)
	}
	win, err := primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, ThroughSeq: 1 << 40, LimitChanges: 100})
	if err != nil || len(win) != 3 || win[len(win)-1].Seq != 3 {
		t.Fatalf("window from the replica: %d commits, %v; want commits 1…3, none newer than its head (REP-2)", len(win), err)
	}
	rows, err := primary.ScanRows(rctx, "p1", driver.ScanQuery{Table: "todos", Filter: filter, Limit: 100})
	if err != nil || len(rows) != 6 {
		t.Fatalf("scan from the replica: %d rows, %v; want the 6 rows of commits 1…3", len(rows), err)
	}
	// A client that pulled to 5 from the primary: the replica trails it,
	// so the primary serves the read and the cursor stays (REP-3).
	win, err = primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, AfterSeq: 5, ThroughSeq: 5, LimitChanges: 100})
	if err != nil || len(win) != 0 {
		t.Fatalf("window after cursor 5 with the replica at 3: %d commits, %v; want none and no error (REP-3)", len(win), err)
	}
	win, err = primary.ReadCommitWindow(rctx, "p1", driver.WindowQuery{Table: "todos", Filter: filter, AfterSeq: 4, ThroughSeq: 5, LimitChanges: 100})
	if err != nil || len(win) != 1 || win[0].Seq != 5 {
		t.Fatalf("window after cursor 4 with the replica at 3: %d commits, %v; want commit 5 from the primary (REP-3)", len(win), err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	waitReplayed(t, replica, 5)
	if got, err := primary.MaxCommitSeq(rctx, "p1"); err != nil || got != 5 {
		t.Fatalf("MaxCommitSeq from the resumed replica = %d, %v; want 5", got, err)
	}
}

// waitReplayed waits (bounded by polls) until the replica's p1 reaches seq.
func waitReplayed(t *testing.T, replica *sync.Store, seq int64) {
	t.Helper()
	var got int64
	var err error
	for range 400 {
		if got, err = replica.MaxCommitSeq(context.Background(), "p1"); err == nil && got >= seq {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the standby did not replay p1 to %d (at %d, %v)", seq, got, err)
}
