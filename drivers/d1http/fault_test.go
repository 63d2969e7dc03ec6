package d1http

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/internal/faulttest"
	syncstore "github.com/syncstore/syncstore/sync"
)

// openOn provisions a database on srv and opens it with extra DSN params.
func openOn(t testing.TB, srv *d1test.Server, params string) *Conn {
	t.Helper()
	ctx := context.Background()
	base := "d1://acct?token=" + testToken + "&endpoint=" + srv.URL + params
	dsn, _, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	return openProvisioned(t, dsn)
}

// openProvisioned opens dsn (a provisioned database) with the suite's
// schema, closed by t.Cleanup.
func openProvisioned(t testing.TB, dsn string) *Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	return conn.(*Conn)
}

func kindsRow(id string, i int64) driver.Row {
	return driver.Row{ID: id, ServerVersion: i, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": id, "grp": "g", "s": nil, "i": i, "f": nil, "b": nil, "j": nil, "x": nil}}
}

// pushN runs n pushes through RunInTx: each reads the counter row, writes
// it + 1, writes its own row, appends a commit and stores its result.
func pushN(t *testing.T, conn *Conn, n int) {
	t.Helper()
	st := syncstore.OpenConn(conn)
	ctx := context.Background()
	for k := range n {
		id := fmt.Sprintf("push-%d", k)
		err := st.RunInTx(ctx, "p1", func(ctx context.Context, stx *syncstore.Tx) error {
			tx := stx.Driver()
			row, found, err := tx.GetRow(ctx, "kinds", "counter")
			if err != nil {
				return err
			}
			var c int64
			if found {
				c = row.Values["i"].(int64)
			}
			rows := []driver.Row{kindsRow("counter", c+1), kindsRow(id, int64(k))}
			var changes []driver.Change
			for _, r := range rows {
				if err := tx.UpsertRow(ctx, "kinds", r); err != nil {
					return err
				}
				changes = append(changes, driver.Change{Table: "kinds", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
			}
			seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: id, ActorID: "a", CreatedAtMs: 1, Changes: changes})
			if err != nil {
				return err
			}
			return tx.PutPushResult(ctx, "c1", id, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1})
		})
		if err != nil {
			t.Fatalf("push %d: %v", k, err)
		}
	}
}

// expectLog checks that exactly n pushes landed, once each: the counter,
// the dense log 1…n with one commit per push id, and every push result.
func expectLog(t *testing.T, conn *Conn, n int) {
	t.Helper()
	ctx := context.Background()
	row, found, err := conn.GetRow(ctx, "p1", "kinds", "counter")
	if err != nil || !found || row.Values["i"] != int64(n) {
		t.Errorf("counter = %v (found %v, err %v), want %d: a lost or duplicate write", row.Values["i"], found, err, n)
	}
	max, err := conn.MaxCommitSeq(ctx, "p1")
	if err != nil || max != int64(n) {
		t.Errorf("MaxCommitSeq = %d, %v; want %d", max, err, n)
	}
	commits, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}},
		AfterSeq: 0, ThroughSeq: 1 << 40, LimitChanges: 10000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for i, c := range commits {
		if c.Seq != int64(i+1) {
			t.Errorf("commit %d has seq %d: the log is not dense", i, c.Seq)
		}
		if prev, dup := seen[c.ClientCommitID]; dup {
			t.Errorf("push %s landed twice (seqs %d and %d)", c.ClientCommitID, prev, c.Seq)
		}
		seen[c.ClientCommitID] = c.Seq
	}
	for k := range n {
		id := fmt.Sprintf("push-%d", k)
		r, ok, err := conn.GetPushResult(ctx, "p1", "c1", id)
		if err != nil || !ok || r.CommitSeq != seen[id] {
			t.Errorf("push %s: result %+v found %v err %v; its commit is seq %d", id, r, ok, err, seen[id])
		}
	}
	if len(commits) != n {
		t.Errorf("%d commits, want %d", len(commits), n)
	}
}

// TestFaultsNoDuplicateNoLostWrites injects every fault kind into write
// batches and checks that each push lands exactly once.
func TestFaultsNoDuplicateNoLostWrites(t *testing.T) {
	cases := []struct {
		name string
		f    d1test.Fault
	}{
		{"429-retry-after", d1test.Fault{Kind: d1test.Fault429, RetryAfter: 1, Times: 1}},
		{"429", d1test.Fault{Kind: d1test.Fault429, Times: 3}},
		{"500-html", d1test.Fault{Kind: d1test.Fault500, Times: 3}},
		{"timeout-before-apply", d1test.Fault{Kind: d1test.FaultTimeout, Times: 2}},
		{"timeout-after-apply", d1test.Fault{Kind: d1test.FaultTimeoutAfter, Times: 2}},
		{"reset-before-apply", d1test.Fault{Kind: d1test.FaultResetBefore, Times: 3}},
		{"reset-after-apply", d1test.Fault{Kind: d1test.FaultResetAfter, Times: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := newDouble(t)
			conn := openOn(t, srv, "&request_timeout_ms=300")
			const n = 6
			f := c.f
			f.Writes = true
			srv.Inject(f)
			pushN(t, conn, n)
			if left := srv.PendingFaults(); left != 0 {
				t.Errorf("%d injected faults never fired", left)
			}
			if srv.FaultsFired(f.Kind) == 0 {
				t.Errorf("fault %s never fired", c.name)
			}
			expectLog(t, conn, n)
		})
	}
}

// TestFaultsReadsRetry injects faults into reads: they are retried and
// answer correctly.
func TestFaultsReadsRetry(t *testing.T) {
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "&request_timeout_ms=300")
	pushN(t, conn, 2)
	for _, k := range []d1test.FaultKind{d1test.Fault429, d1test.Fault500, d1test.FaultTimeout, d1test.FaultResetBefore} {
		srv.Inject(d1test.Fault{Kind: k, Reads: true, Times: 2})
		expectLog(t, conn, 2)
		if srv.FaultsFired(k) != 2 {
			t.Errorf("fault %d fired %d times, want 2", k, srv.FaultsFired(k))
		}
	}
}

// TestFaultsRawBatchExactlyOnce sends a non-idempotent batch (an append to
// a table without a key) through the write path under faults that hide
// whether it landed: it must land exactly once each time.
func TestFaultsRawBatchExactlyOnce(t *testing.T) {
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "&request_timeout_ms=300")
	ctx := context.Background()
	if _, err := conn.write(ctx, "test", st("CREATE TABLE appends (n INTEGER)")); err != nil {
		t.Fatal(err)
	}
	kinds := []d1test.FaultKind{d1test.FaultResetAfter, d1test.FaultTimeoutAfter, d1test.FaultResetBefore, d1test.Fault500}
	for i, k := range kinds {
		srv.Inject(d1test.Fault{Kind: k, Writes: true})
		if _, err := conn.write(ctx, "test", st("INSERT INTO appends (n) VALUES (?1)", i)); err != nil {
			t.Fatalf("fault %d: %v", k, err)
		}
	}
	rows, err := conn.rows(ctx, "test", "SELECT n, count(*) FROM appends GROUP BY n ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(kinds) {
		t.Fatalf("appends: %d distinct rows, want %d", len(rows), len(kinds))
	}
	for i, r := range rows {
		if n, _ := rawInt(r[1]); n != 1 {
			t.Errorf("append %d landed %d times", i, n)
		}
	}
}

// TestFaultsPersistentFailureWritesNothing: when D1 keeps failing, Commit
// returns the retryable CodeUnavailable and nothing was written.
func TestFaultsPersistentFailureWritesNothing(t *testing.T) {
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "&request_timeout_ms=300&max_attempts=3")
	ctx := context.Background()
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "kinds", kindsRow("a", 1)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(d1test.Fault{Kind: d1test.Fault429, Writes: true, Times: 3})
	start := time.Now()
	err = tx.Commit(ctx)
	if driver.CodeOf(err) != driver.CodeUnavailable || !driver.IsRetryable(err) {
		t.Fatalf("Commit under persistent 429 = %v (after %s), want retryable unavailable", err, time.Since(start))
	}
	if _, found, err := conn.GetRow(ctx, "p1", "kinds", "a"); err != nil || found {
		t.Errorf("row after a failed Commit: found %v, err %v; want nothing written", found, err)
	}
}

// TestD1SixteenWriters: 16 goroutines push to each of two partitions at
// once through the double; D1 has no locks, so lost races come back as
// write_conflict and are run again. Each partition's sequence is exactly
// 1…N with no lost update and every push result names its commit (TX-1,
// TX-9, SEQ-4, PR-3).
func TestD1SixteenWriters(t *testing.T) {
	srv, _ := newDouble(t)
	faulttest.SixteenWriters(t, openOn(t, srv, ""), 6)
}
