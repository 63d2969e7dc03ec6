package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
)

// terminate ends backend pid from the server side, as an operator or a
// failover would, and waits until it is gone.
func terminate(t *testing.T, dsn string, pid uint32) {
	t.Helper()
	a := adminConn(t, dsn)
	if _, err := a.Exec(t.Context(), "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
		t.Fatalf("pg_terminate_backend: %v", err)
	}
	for range 200 {
		var n int
		if err := a.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("backend %d still alive after pg_terminate_backend", pid)
}

// idleInTx counts this database's sessions idle in transaction, except
// the given pids.
func idleInTx(t *testing.T, dsn string, except ...uint32) int {
	t.Helper()
	a := adminConn(t, dsn)
	ex := make([]int32, len(except))
	for i, p := range except {
		ex[i] = int32(p)
	}
	var n int
	err := a.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> ALL($1::int4[])`, ex).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually retries fn while it fails with a retryable error (a pool
// connection killed under it is discovered by its next use), at most 5
// times.
func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	var err error
	for range 5 {
		if err = fn(); err == nil || !driver.IsRetryable(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestKilledMidTransaction: the Tx's backend is terminated between its
// writes and Commit (TX-6): Commit fails with a retryable error, nothing
// of the Tx is visible, and the store keeps working.
func TestKilledMidTransaction(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	row := todoRow("t1", "pr", "o")
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tx.GetRow(ctx, "todos", "t1"); err != nil { // flushes the upsert to the server
		t.Fatal(err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: "t1", Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}}); err != nil {
		t.Fatal(err)
	}
	terminate(t, dsn, tx.(*Tx).pc.Conn().PgConn().PID())
	err = tx.Commit(ctx)
	if err == nil || !driver.IsRetryable(err) {
		t.Fatalf("Commit on a killed backend = %v, want a retryable error", err)
	}
	if max, err := c.MaxCommitSeq(ctx, "p"); err != nil || max != 0 {
		t.Fatalf("MaxCommitSeq after the failed commit = %d, %v; want 0", max, err)
	}
	if _, found, err := c.GetRow(ctx, "p", "todos", "t1"); err != nil || found {
		t.Fatalf("GetRow after the failed commit = found %v, %v; want not found", found, err)
	}
	eventually(t, "push after the kill", func() error { _, err := pushTodos(ctx, c, "p", 0, 3); return err })
	if max, _ := c.MaxCommitSeq(ctx, "p"); max != 1 {
		t.Fatalf("MaxCommitSeq after a push = %d, want 1 (the failed commit consumed nothing)", max)
	}
}

// TestKilledRightAfterCommit: the backend that just committed is
// terminated; the commit is whole and the store keeps working (its pool
// discards the dead connection on its next use).
func TestKilledRightAfterCommit(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	pid := tx.(*Tx).pc.Conn().PgConn().PID()
	if err := tx.UpsertRow(ctx, "todos", todoRow("t1", "pr", "o")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: "t1", Op: driver.OpDelete, Scopes: driver.Scopes{"project": "pr", "owner": "o"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	terminate(t, dsn, pid)
	var max int64
	eventually(t, "MaxCommitSeq after the kill", func() (err error) { max, err = c.MaxCommitSeq(ctx, "p"); return err })
	if max != 1 {
		t.Fatalf("MaxCommitSeq = %d, want 1", max)
	}
	var found bool
	eventually(t, "GetRow after the kill", func() (err error) { _, found, err = c.GetRow(ctx, "p", "todos", "t1"); return err })
	if !found {
		t.Fatal("the committed row is missing")
	}
	eventually(t, "push after the kill", func() error { _, err := pushTodos(ctx, c, "p", 10, 3); return err })
	if max, _ := c.MaxCommitSeq(ctx, "p"); max != 2 {
		t.Fatalf("MaxCommitSeq after another push = %d, want 2", max)
	}
}

// TestCancelledPushLeavesNoIdleSession: a push whose context is cancelled
// mid-transaction — with no Rollback call — and a Begin cancelled while it
// waits for the partition (the Conn's gate: the holder's Begin may be
// deferred) leave no session idle in transaction
// (TX-6), and later pushes work.
func TestCancelledPushLeavesNoIdleSession(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	pctx, cancel := context.WithCancel(ctx)
	tx, err := c.Begin(pctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(pctx, "users", driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"},
		Values: driver.Values{"id": "u1", "org": "o", "email": "e"}}); err != nil {
		t.Fatal(err)
	}
	cancel() // the caller walks away: no Rollback
	waitNoIdle(t, dsn)
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("Commit after the context ended succeeded")
	}

	// Begin cancelled while another Tx holds the partition.
	holder, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.Begin(wctx, "p")
	wcancel()
	if !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Begin behind a held partition with an ending context = %v, want CodeUnavailable", err)
	}
	var except []uint32 // the holder's session, if it has one (a deferred Tx has none yet)
	if pc := holder.(*Tx).pc; pc != nil {
		except = append(except, pc.Conn().PgConn().PID())
	}
	waitNoIdle(t, dsn, except...)
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pushTodos(ctx, c, "p", 0, 2); err != nil {
		t.Fatalf("push after the cancellations: %v", err)
	}
	if max, _ := c.MaxCommitSeq(ctx, "p"); max != 1 {
		t.Fatalf("MaxCommitSeq = %d, want 1", max)
	}
}

// waitNoIdle waits (bounded) until no session but except is idle in
// transaction; the rollback after a cancel runs asynchronously.
func waitNoIdle(t *testing.T, dsn string, except ...uint32) {
	t.Helper()
	for range 200 {
		if idleInTx(t, dsn, except...) == 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("%d session(s) left idle in transaction (TX-6)", idleInTx(t, dsn, except...))
}

// TestSmallPoolSurvivesConcurrentPushes: a pool of 2 connections, 2
// goroutines × 50 full pushes on one partition plus a reader: no
// deadlock (a Tx never takes a second connection) and the sequence is
// dense 1…100 (SEQ-4).
func TestSmallPoolSurvivesConcurrentPushes(t *testing.T) {
	dsn := withParam(testdbDSN(t), "pool_max_conns=2")
	c := openDSN(t, dsn)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := pushTodos(ctx, c, "p", g*1000+i*10, 10); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1", "p2"}},
				ThroughSeq: 1 << 40, LimitChanges: 50}); err != nil {
				errs <- err
				return
			}
			if _, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"owner": {"o3"}}, Limit: 20}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := c.pool.Stat(); st.MaxConns() != 2 {
		t.Fatalf("pool size = %d, want 2", st.MaxConns())
	}
	var all []string
	for i := range 20 {
		all = append(all, fmt.Sprintf("p%d", i))
	}
	win, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": all},
		ThroughSeq: 1000, LimitChanges: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for i, cm := range win {
		if cm.Seq != int64(i+1) {
			t.Fatalf("commit %d has seq %d: the sequence is not dense", i, cm.Seq)
		}
	}
	if len(win) != 100 {
		t.Fatalf("%d commits, want 100", len(win))
	}
}

// TestTxUsesOneConnection: with a pool of 1, every operation of a Tx
// (reads, unique upserts, commit, CommitRejected) completes, so none
// asks the pool for a second connection.
func TestTxUsesOneConnection(t *testing.T) {
	c := openDSN(t, withParam(testdbDSN(t), "pool_max_conns=1"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, reject := range []bool{false, true} {
		tx, err := c.Begin(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		u := driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"}, Values: driver.Values{"id": "u1", "org": "o", "email": "e1"}}
		steps := []func() error{
			func() error { return tx.UpsertRow(ctx, "users", u) },
			func() error { return tx.UpsertRow(ctx, "todos", todoRow("t1", "pr", "o")) },
			func() error { _, _, err := tx.GetRow(ctx, "todos", "t1"); return err },
			func() error {
				_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"pr", "x"}}, Limit: 5})
				return err
			},
			func() error { _, _, err := tx.GetPushResult(ctx, "c", "cc"); return err },
			func() error {
				_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", CreatedAtMs: 1})
				return err
			},
		}
		for i, s := range steps {
			if err := s(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if reject {
			err = tx.CommitRejected(ctx, "c", "cc2", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1, Ops: []driver.OpResult{}})
		} else {
			err = tx.Commit(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if max, err := c.MaxCommitSeq(ctx, "p"); err != nil || max != 1 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 1", max, err)
	}
}

// TestDeferredCommitRetriesDeadIdleConnections is
// TestBeginRetriesDeadIdleConnections for a deferred Tx: the Conn knows
// the partition from a first push, so the second push sends nothing until
// Commit, whose pipeline meets a connection that died while idle. Nothing
// of it ran (the backend was gone before it was sent; the commit is not
// in the log), so Commit sends it again on another connection and the
// push lands on its first attempt, once.
func TestDeferredCommitRetriesDeadIdleConnections(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	if _, err := pushTodos(ctx, c, "p", 0, 3); err != nil {
		t.Fatal(err)
	}
	n := terminateIdlePool(t, c, dsn)
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if !tx.(*Tx).deferred {
		t.Fatal("the second push's Tx is not deferred: the test does not reach Commit's retry")
	}
	_ = tx.Rollback(ctx)
	if _, err := pushTodos(ctx, c, "p", 3, 3); err != nil {
		t.Fatalf("the first deferred push after %d idle connections were terminated: %v", n, err)
	}
	if got, err := c.MaxCommitSeq(ctx, "p"); err != nil || got != 2 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 2 (each push once)", got, err)
	}
}

// terminateIdlePool fills c's pool with live connections, parks them
// idle and has the server end every one (an operator, a failover, a
// proxy's idle timeout); it returns how many.
func terminateIdlePool(t *testing.T, c *Conn, dsn string) int {
	t.Helper()
	n := int(c.pool.Config().MaxConns)
	held := make([]*pgxpool.Conn, 0, n)
	for range n {
		pc, err := c.pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, pc)
	}
	for _, pc := range held {
		pid := pc.Conn().PgConn().PID()
		pc.Release()
		terminate(t, dsn, pid)
	}
	return n
}

// TestBeginRetriesDeadIdleConnections: every idle connection of the pool
// is terminated by the server while it sits in the pool (an operator, a
// failover, a proxy's idle timeout). Begin sends nothing that can commit,
// so it retries on another connection instead of handing the dead one's
// failure to the caller: the first push after the terminations lands on
// its first attempt.
func TestBeginRetriesDeadIdleConnections(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	n := terminateIdlePool(t, c, dsn)
	// Pinging an idle connection before use would hide the dead ones from
	// Begin; the pool pings only connections idle for a second or more.
	if _, err := pushTodos(ctx, c, "p", 0, 3); err != nil {
		t.Fatalf("the first push after %d idle connections were terminated: %v", n, err)
	}
	if got, err := c.MaxCommitSeq(ctx, "p"); err != nil || got != 1 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 1", got, err)
	}
}
