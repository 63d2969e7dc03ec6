package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/internal/testlane"
)

// Load and fault storms (docs/reliability.md), as for MySQL in
// drivers/mysql/faults_test.go: 1,000 pushes with random context
// deadlines, random server-side terminations (pg_terminate_backend) during
// pushes and reaction claims, and 16 concurrent writers per partition.
// Afterwards every commit is whole or absent (rows, log, push result and
// reaction agree; TX-2, TX-6), sequences are dense (SEQ-1, SEQ-4), no
// session of the store is left in a transaction (TX-6: pg_stat_activity
// shows none idle in transaction) and the store takes the next push.

const stormAdminApp = "syncstore-storm-admin"

// stormStore is a fresh store plus an admin pool on the same database,
// marked by its application_name so it can leave itself out.
type stormStore struct {
	c     *Conn
	admin *pgxpool.Pool
}

func openStormStore(t *testing.T) *stormStore {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.NewPostgres(t)
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = stormAdminApp
	cfg.MaxConns = 2
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return &stormStore{c: conn.(*Conn), admin: admin}
}

// terminateRandom ends one random backend of the store's database (not
// an admin one) and reports whether there was one.
func (s *stormStore) terminateRandom(ctx context.Context, rng *rand.Rand) bool {
	rows, err := s.admin.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name <> $1 AND pid <> pg_backend_pid()`, stormAdminApp)
	if err != nil {
		return false
	}
	var pids []int32
	for rows.Next() {
		var pid int32
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	if len(pids) == 0 {
		return false
	}
	_, err = s.admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pids[rng.IntN(len(pids))])
	return err == nil
}

// expectNoOpenTx waits (at most 20 s: the server ends an abandoned
// session's transaction asynchronously, and the driver may release a
// cancelled Tx's connection from a watcher goroutine) until no session of
// the store is inside a transaction and the pool has no connection
// acquired.
func (s *stormStore) expectNoOpenTx(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const q = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name <> $1 AND pid <> pg_backend_pid()
		AND (xact_start IS NOT NULL OR state LIKE 'idle in transaction%')`
	var n int
	var acquired int32
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := s.admin.QueryRow(ctx, q, stormAdminApp).Scan(&n); err != nil {
			t.Fatal(err)
		}
		acquired = s.c.pool.Stat().AcquiredConns()
		if (n == 0 && acquired == 0) || time.Now().After(end) {
			break
		}
	}
	if n != 0 {
		t.Errorf("%d sessions of the store are still in a transaction (TX-6)", n)
	}
	if acquired != 0 {
		t.Errorf("%d pool connections still acquired 20 s after every call returned (TX-6: a leaked connection)", acquired)
	}
}

// stormPush pushes i as a host would: inside one Tx it returns early when
// i's push result is already stored (a retry), else writes its rows, one
// commit, a reaction and the push result, and commits. It reports whether
// this call landed i.
func stormPush(ctx context.Context, c *Conn, partition string, i int) (bool, error) {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, ok, err := tx.GetPushResult(ctx, "f", faulttest.Key(i)); err != nil || ok {
		return false, err
	}
	for _, r := range faulttest.Rows(i) {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return false, err
		}
	}
	want := faulttest.Commit(i, 0)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: want.ClientID, ClientCommitID: want.ClientCommitID,
		CreatedAtMs: want.CreatedAtMs, Changes: want.Changes})
	if err != nil {
		return false, err
	}
	err = tx.(driver.ReactionsTx).EnqueueReactions(ctx, seq, []driver.ReactionInput{{Key: "rx-" + faulttest.Key(i), Type: "t",
		Payload: driver.JSON(fmt.Sprintf(`{"i":%d}`, i)), MaxAttempts: 1000, CreatedAtMs: int64(i)}})
	if err != nil {
		return false, err
	}
	if err := tx.PutPushResult(ctx, "f", faulttest.Key(i), faulttest.Result(i, seq)); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// TestPostgresCancelStorm: 1,000 pushes from 8 goroutines over two
// partitions, each under a context that ends after a random 0–15 ms (one
// in five without a deadline). Afterwards no session of the store is in a
// transaction, every push that returned success landed, every other push
// is whole or absent, sequences are dense, and each partition takes the
// next push (TX-6, SEQ-1, PR-4).
func TestPostgresCancelStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	s := openStormStore(t)
	const pushes, workers = 1000, 8
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	parts := []string{"P", "Q"}
	var (
		next     atomic.Int64
		mu       gosync.Mutex
		wg       gosync.WaitGroup
		mustLand = map[string]map[int]bool{"P": {}, "Q": {}}
		failed   atomic.Int64
		bad      = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := int(next.Add(1) - 1); i < pushes; i = int(next.Add(1) - 1) {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(5) != 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(15_000))*time.Microsecond)
				}
				p := parts[i%2]
				ok, err := stormPush(ctx, s.c, p, i)
				cancel()
				switch {
				case err == nil && ok:
					mu.Lock()
					mustLand[p][i] = true
					mu.Unlock()
				case err == nil:
					bad <- fmt.Errorf("push %d found its result already stored", i)
					return
				case driver.CodeOf(err) == "":
					bad <- fmt.Errorf("push %d: error %v is not a *driver.Error (ERR-1)", i, err)
					return
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatal(err)
	}
	t.Logf("%d of %d pushes failed on their context", failed.Load(), pushes)
	if failed.Load() < 50 || failed.Load() > pushes-50 {
		t.Fatalf("%d failed pushes: the storm did not mix landed and cancelled pushes", failed.Load())
	}
	s.expectNoOpenTx(t)
	for k, p := range parts {
		landed := faulttest.Verify(t, s.c, p, pushes, mustLand[p])
		if ok, err := stormPush(context.Background(), s.c, p, pushes+k); err != nil || !ok {
			t.Fatalf("%s: push after the storm: %v", p, err)
		}
		if got := faulttest.Verify(t, s.c, p, pushes+2, mustLand[p]); got != landed+1 {
			t.Fatalf("%s: %d landed after one more push, want %d", p, got, landed+1)
		}
	}
}

// TestPostgresTerminateStorm: while 6 writers push (retrying a failed push
// until its result is stored, as a host does) and 3 workers claim and
// complete reactions, a killer terminates a random backend of the store.
// Afterwards every push landed exactly once and whole, each reaction was
// completed at most once, every reaction can still be claimed and
// completed, and no session is left in a transaction.
//
// The storm is paced by counts, never by the clock, so a slow machine
// sees the same storm as a fast one: the killer terminates at most one
// backend per landed push (so pushes always make progress), and a writer
// that lands a push waits while fewer than one termination per
// stormLandedPerKill landed pushes has happened (so every run has at
// least pushes/stormLandedPerKill − 1 terminations). A termination fails
// at most the one operation using that backend, so a push that failed
// more often than there were terminations is a livelock, not bad luck.
func TestPostgresTerminateStorm(t *testing.T) {
	testlane.RequireFull(t, "a storm")
	s := openStormStore(t)
	ctx := context.Background()
	const pushes, writers, claimers, stormLandedPerKill = 160, 6, 3, 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var (
		next, kills, landed, pushErrs, claimErrs atomic.Int64
		clock                                    atomic.Int64 // logical ms for leases
		done                                     = make(chan struct{})
		wg, bg                                   gosync.WaitGroup
		completedMu                              gosync.Mutex
		completed                                = map[string]int{}
	)
	bg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(rng.IntN(3000)) * time.Microsecond):
			}
			if kills.Load() > landed.Load() {
				continue // at most one termination per landed push
			}
			if s.terminateRandom(ctx, rng) {
				kills.Add(1)
			}
		}
	})
	for w := range claimers {
		bg.Go(func() {
			owner := fmt.Sprint("w", w)
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.c.ClaimReactions(ctx, "P", driver.ClaimRequest{Owner: owner, NowMs: clock.Add(1), LeaseMs: 200, Limit: 5})
				if err != nil {
					claimErrs.Add(1)
					continue
				}
				for _, r := range got {
					if ok, err := s.c.CompleteReaction(ctx, "P", r.Key, owner, clock.Load()); err == nil && ok {
						completedMu.Lock()
						completed[r.Key]++
						completedMu.Unlock()
					}
				}
			}
		})
	}
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < pushes; i = int(next.Add(1) - 1) {
				for attempt := 0; ; attempt++ {
					_, err := stormPush(ctx, s.c, "P", i)
					if err == nil {
						break
					}
					pushErrs.Add(1)
					if driver.CodeOf(err) == "" || !driver.IsRetryable(err) {
						errs <- fmt.Errorf("push %d attempt %d: %v (ERR-1: a terminated backend is retryable)", i, attempt, err)
						return
					}
					if int64(attempt) > kills.Load()+1 {
						errs <- fmt.Errorf("push %d failed %d times but only %d backends were terminated: %v", i, attempt+1, kills.Load(), err)
						return
					}
				}
				for n := landed.Add(1); n > stormLandedPerKill*(kills.Load()+1); {
					select { // let the killer catch up with the pushes
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d terminations, %d failed push attempts, %d failed claims", kills.Load(), pushErrs.Load(), claimErrs.Load())
	if min := int64(pushes/stormLandedPerKill - 1); kills.Load() < min {
		t.Fatalf("only %d terminations, want at least %d: the pacing is broken", kills.Load(), min)
	}
	// pgxpool notices a terminated idle connection only when it next uses
	// it: that one call fails with the retryable CodeUnavailable (ERR-1),
	// which a host retries. Check that, then drop the dead connections so
	// the verification below reads data, not the pool's leftovers.
	for range 3 {
		if _, err := s.c.MaxCommitSeq(ctx, "P"); err != nil && !driver.IsRetryable(err) {
			t.Fatalf("a read after the storm failed with a non-retryable error: %v", err)
		}
	}
	s.c.pool.Reset()
	all := map[int]bool{}
	for i := range pushes {
		all[i] = true
	}
	if got := faulttest.Verify(t, s.c, "P", pushes, all); got != pushes {
		t.Fatalf("%d pushes landed, want %d", got, pushes)
	}
	for k, n := range completed {
		if n > 1 {
			t.Fatalf("reaction %s completed %d times (RX-3, RX-5)", k, n)
		}
	}
	for now := int64(1 << 40); ; now++ {
		var got []driver.Reaction
		var err error
		for range 5 { // a pool connection terminated in the storm fails its next use once
			if got, err = s.c.ClaimReactions(ctx, "P", driver.ClaimRequest{Owner: "drain", NowMs: now, LeaseMs: 1, Limit: 100}); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			if ok, err := s.c.CompleteReaction(ctx, "P", r.Key, "drain", now); err != nil || !ok {
				t.Fatalf("complete %s after the storm: %v %v", r.Key, ok, err)
			}
		}
	}
	rx, err := s.c.ListReactions(ctx, "P", driver.ReactionListQuery{Statuses: []driver.ReactionStatus{driver.ReactionCompleted}, Limit: 10_000})
	if err != nil || len(rx) != pushes {
		t.Fatalf("%d reactions completed after the drain, want %d (%v)", len(rx), pushes, err)
	}
	s.expectNoOpenTx(t)
}

// TestPostgresSixteenWriters: 16 goroutines push to each of two partitions
// at once, each push a read-modify-write of a counter row plus a push
// result: each partition's sequence is exactly 1…N with no lost update
// (TX-1, SEQ-4, PR-3). Counts are smaller under -race.
func TestPostgresSixteenWriters(t *testing.T) {
	s := openStormStore(t)
	per := 10
	if faulttest.RaceEnabled() {
		per = 5
	}
	faulttest.SixteenWriters(t, s.c, per)
	s.expectNoOpenTx(t)
}
