package postgres

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/replicatest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// The read-replica lane (docs/scaling.md): a primary and a hot
// standby started by .ci/pg-replica.sh, whose server DSNs
// SYNCSTORE_TEST_PG_REPLICA holds ("PRIMARY STANDBY"). Without it the test
// skips, loudly; SYNCSTORE_TEST_REQUIRE_REPLICA=1 (set by .ci/run) makes
// that a failure.
func replicaLane(t testing.TB) (primary, standby string) {
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

// TestReadReplica runs the read-replica checks (internal/replicatest,
// REP-1…REP-3) on the hot standby: replay is paused with
// pg_wal_replay_pause().
func TestReadReplica(t *testing.T) {
	primaryServer, standbyServer := replicaLane(t)
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, primaryServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	primary, err := sync.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	admin, err := pgx.Connect(ctx, standbyServer)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	replay := func(fn string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := admin.Exec(context.Background(), "SELECT "+fn+"()"); err != nil {
				t.Fatal(err)
			}
		}
	}
	replicatest.Run(t, replicatest.Lane{Primary: primary,
		OpenReplica: func() (*sync.Store, error) { return sync.Open("postgres", testdb.PostgresDSNFor(standbyServer, name)) },
		Pause:       replay("pg_wal_replay_pause"), Resume: replay("pg_wal_replay_resume")})
}

// BenchmarkReplicaReads: W2 and W3 on the primary and on the hot standby
// after W1 (docs/scaling.md). Run with -benchtime 1x.
func BenchmarkReplicaReads(b *testing.B) {
	primaryServer, standbyServer := replicaLane(b)
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, primaryServer)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop(context.Background()) })
	primary, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer primary.Close()
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	replicatest.Bench(b, primary, func() (driver.Conn, error) {
		return Driver{}.Open(ctx, testdb.PostgresDSNFor(standbyServer, name))
	})
}
