package mysql

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/replicatest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// TestReadReplica runs the read-replica checks (internal/replicatest,
// REP-1…REP-3) on the MariaDB replica lane started by
// .ci/mariadb-replica.sh, whose server DSNs SYNCSTORE_TEST_MYSQL_REPLICA
// holds ("PRIMARY REPLICA"); the replica's SQL thread is stopped to pause
// it. Without the lane the test skips, loudly;
// SYNCSTORE_TEST_REQUIRE_REPLICA=1 (set by .ci/run) makes that a failure.
func TestReadReplica(t *testing.T) {
	dsn, replicaDSN, replicaServer := mysqlReplicaLane(t)
	primary, err := sync.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	admin, err := sql.Open("mysql", replicaServer)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	slave := func(stmt string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := admin.ExecContext(context.Background(), stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	replicatest.Run(t, replicatest.Lane{Primary: primary,
		OpenReplica: func() (*sync.Store, error) { return sync.Open("mysql", replicaDSN) },
		Pause:       slave("STOP SLAVE SQL_THREAD"), Resume: slave("START SLAVE SQL_THREAD")})
}

// mysqlReplicaLane skips without the lane, else provisions a fresh
// database on the primary and returns its DSN there and on the replica,
// and the replica server's DSN.
func mysqlReplicaLane(t testing.TB) (dsn, replicaDSN, replicaServer string) {
	t.Helper()
	env := strings.Fields(os.Getenv("SYNCSTORE_TEST_MYSQL_REPLICA"))
	if len(env) != 2 {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_REPLICA") == "1" {
			t.Fatal("SYNCSTORE_TEST_MYSQL_REPLICA is unset but SYNCSTORE_TEST_REQUIRE_REPLICA=1: start the lane with .ci/mariadb-replica.sh start")
		}
		t.Skip("SKIPPED: no MariaDB replica (set SYNCSTORE_TEST_MYSQL_REPLICA from `.ci/mariadb-replica.sh start`)")
	}
	dsn, drop, err := Driver{}.Provision(context.Background(), env[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	replicaDSN, err = testdb.MySQLDSNFor(env[1], name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, replicaDSN, env[1]
}

// BenchmarkReplicaReads: W2 and W3 on the primary and on the replica
// after W1 (docs/scaling.md). Run with -benchtime 1x.
func BenchmarkReplicaReads(b *testing.B) {
	dsn, replicaDSN, _ := mysqlReplicaLane(b)
	ctx := context.Background()
	primary, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer primary.Close()
	replicatest.Bench(b, primary, func() (driver.Conn, error) { return Driver{}.Open(ctx, replicaDSN) })
}
