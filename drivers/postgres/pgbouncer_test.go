package postgres

import (
	"context"
	"errors"
	"net/url"
	"os"
	gosync "sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/modeltest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// The pooler lane (docs/postgres.md "Behind PgBouncer"): PgBouncer in
// transaction mode in front of the test server, started by
// .ci/pgbouncer.sh, whose DSN SYNCSTORE_TEST_PGBOUNCER holds. Without it
// the tests skip, loudly; SYNCSTORE_TEST_REQUIRE_PGBOUNCER=1 (set by
// .ci/run) makes that a failure. Each test's database is made on the
// server directly (testdb) and reached through PgBouncer's wildcard entry.
func pgbouncerLane(t testing.TB) (bouncer *url.URL, server string) {
	t.Helper()
	env := os.Getenv("SYNCSTORE_TEST_PGBOUNCER")
	if env == "" {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_PGBOUNCER") == "1" {
			t.Fatal("SYNCSTORE_TEST_PGBOUNCER is unset but SYNCSTORE_TEST_REQUIRE_PGBOUNCER=1: start the lane with .ci/pgbouncer.sh start")
		}
		t.Skip("SKIPPED: no PgBouncer (set SYNCSTORE_TEST_PGBOUNCER from `.ci/pgbouncer.sh start`)")
	}
	u, err := url.Parse(env)
	if err != nil {
		t.Fatalf("SYNCSTORE_TEST_PGBOUNCER: %v", err)
	}
	return u, testdb.PostgresServer(t)
}

// throughBouncer returns direct, a URL DSN of the server, pointed at
// PgBouncer instead (same database, user and parameters).
func throughBouncer(t conformance.T, bouncer *url.URL, direct string) string {
	t.Helper()
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatalf("dsn: %v", err)
	}
	u.Host = bouncer.Host
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// openBouncer opens, over a host pool through PgBouncer
// (QueryExecModeExec: PgBouncer 1.18 keeps no prepared statement in
// transaction mode), a Conn on the database of direct, whose
// SubscribeCommits LISTENs on direct itself (Options.ListenerDSN).
func openBouncer(t conformance.T, bouncer *url.URL, direct string) *Conn {
	t.Helper()
	c, err := OpenPool(t.Context(), hostPool(t, throughBouncer(t, bouncer, direct)), Options{ListenerDSN: direct})
	if err != nil {
		t.Fatalf("OpenPool through PgBouncer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPgBouncerConformance runs the whole suite on Conns opened with
// OpenPool over a host pool whose connections go through PgBouncer in
// transaction mode, their fanout listening on a direct connection.
func TestPgBouncerConformance(t *testing.T) {
	bouncer, server := pgbouncerLane(t)
	var dsns gosync.Map // *Conn → direct dsn
	open := func(ct conformance.T, dsn string) driver.Conn {
		ct.Helper()
		c := openBouncer(ct, bouncer, dsn)
		dsns.Store(c, dsn)
		return c
	}
	h := conformance.Harness{
		Name: "postgres-pgbouncer",
		Open: func(ct conformance.T) driver.Conn {
			ct.Helper()
			dsn, drop, err := Driver{}.Provision(ct.Context(), server)
			if err != nil {
				ct.Fatalf("provision: %v", err)
			}
			ct.Cleanup(func() { _ = drop(context.Background()) })
			return open(ct, dsn)
		},
		Reopen: func(ct conformance.T, c driver.Conn) driver.Conn {
			dsn, ok := dsns.Load(c)
			if !ok {
				ct.Fatalf("Reopen of a Conn this harness did not open")
			}
			return open(ct, dsn.(string))
		},
		Capabilities:       expectedCaps,
		ParallelPartitions: true,
		ParallelCases:      true,
		HostTable:          pgHostTable,
	}
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		return blackholed(ct, h.Open(ct).(*Conn))
	}
	conformance.Run(t, h)
}

// TestPgBouncerModel runs the engine's push/pull model test (seeds 1…2)
// on stores opened over a pool through PgBouncer.
func TestPgBouncerModel(t *testing.T) {
	bouncer, _ := pgbouncerLane(t)
	modeltest.RunSeeds(t, 2, func(t *testing.T) (*sync.Store, error) {
		return sync.OpenConn(openBouncer(t, bouncer, testdb.NewPostgres(t))), nil
	})
}

// TestPgBouncerSettle: behind PgBouncer a connection's BackendKeyData pid
// is PgBouncer's, not the server backend's. A Tx whose COMMIT answer is
// lost while its transaction is still in progress on the server is
// settled by the backend the server reported (its pg_backend_pid(), read
// with the transaction's id): that backend is ended and the outcome is
// "rolled back, nothing written" at once — by the pooler's pid, nothing
// would be ended and the look-up would end at its bound with
// commit_outcome_unknown. A deferred Tx whose answer was lost before its
// id arrived cannot be tied to a server backend through the pooler: the
// answer is commit_outcome_unknown, and indeed its transaction, still
// open on the server, commits afterwards — "nothing written" would have
// been a lie.
func TestPgBouncerSettle(t *testing.T) {
	bouncer, _ := pgbouncerLane(t)
	ctx := t.Context()
	direct := testdb.NewPostgres(t)
	c := openBouncer(t, bouncer, direct)
	if err := c.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	admin := adminConn(t, direct)
	lost := errors.New("the answer was lost")

	t.Run("xid", func(t *testing.T) {
		dtx, err := c.Begin(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = dtx.Rollback(context.Background()) }()
		tx := dtx.(*Tx)
		if tx.deferred {
			t.Fatal("the first Tx of a partition is deferred: the test needs its id from Begin")
		}
		if _, err := stageTodos(ctx, tx, 0, 2, "cc0"); err != nil {
			t.Fatal(err)
		}
		if pid := tx.pc.Conn().PgConn().PID(); uint32(tx.be.pid) == pid {
			t.Fatalf("the server's pid %d is the connection's BackendKeyData pid: this connection does not go through PgBouncer", pid)
		}
		started := time.Now()
		err = c.settleCommit(ctx, tx.xid, tx.be, tx.firstCommit(), lost)
		if code := driver.CodeOf(err); code != driver.CodeUnavailable {
			t.Fatalf("settling an open transaction through PgBouncer = %v (after %v); want unavailable: its backend ended, nothing written", err, time.Since(started))
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, tx.be.pid).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the transaction's backend %d still runs (%d, %v)", tx.be.pid, n, err)
		}
	})

	t.Run("no-xid", func(t *testing.T) {
		// A transaction through PgBouncer that has written a Tx's first
		// commit (its mark) and not committed yet: a deferred pipeline
		// whose COMMIT is still on its way.
		raw, err := pgx.Connect(ctx, throughBouncer(t, bouncer, direct))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = raw.Close(context.Background()) }()
		mark := commitMark{partition: "q", seq: 1, token: 4242}
		if _, err := raw.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(ctx, sqlInsertCommit, mark.partition, mark.seq, "c", "cc", "a", int64(1), mark.token); err != nil {
			t.Fatal(err)
		}
		be, known := directBackend(raw.PgConn())
		err = c.settleByCommit(ctx, raw.PgConn(), be, known, mark, lost)
		if code := driver.CodeOf(err); code != driver.CodeCommitOutcomeUnknown {
			t.Fatalf("settling a pipeline through PgBouncer without its id = %v; want commit_outcome_unknown (the server backend cannot be identified)", err)
		}
		if _, err := raw.Exec(ctx, "COMMIT"); err != nil {
			t.Fatalf("the open transaction, left alone: %v", err)
		}
		var n int
		if err := admin.QueryRow(ctx, sqlCommitLanded, mark.partition, mark.seq, mark.token).Scan(&n); err != nil || n != 1 {
			t.Fatalf("the commit landed after the settle: %d, %v; want 1", n, err)
		}
	})
}
