package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
)

// The multi-primary lane (docs/scaling.md): a 3-node MariaDB
// Galera cluster on loopback, started by .ci/galera.sh, whose server DSNs
// SYNCSTORE_TEST_GALERA_DSNS lists comma-separated. Without it these
// tests skip, loudly; SYNCSTORE_TEST_REQUIRE_GALERA=1 (set by .ci/run)
// makes that a failure.

// galeraScript is the lane's script, relative to this package.
const galeraScript = "../../.ci/galera.sh"

// galeraNodes returns the three nodes' server DSNs, or skips.
func galeraNodes(t testing.TB) []string {
	t.Helper()
	env := os.Getenv("SYNCSTORE_TEST_GALERA_DSNS")
	if env == "" {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_GALERA") == "1" {
			t.Fatal("SYNCSTORE_TEST_GALERA_DSNS is unset but SYNCSTORE_TEST_REQUIRE_GALERA=1: start the lane with .ci/galera.sh start")
		}
		t.Skip("SKIPPED: no Galera cluster (set SYNCSTORE_TEST_GALERA_DSNS from `.ci/galera.sh start`)")
	}
	nodes := strings.Split(env, ",")
	if len(nodes) != 3 {
		t.Fatalf("SYNCSTORE_TEST_GALERA_DSNS names %d nodes, want 3", len(nodes))
	}
	return nodes
}

// galeraDatabase creates a fresh database through node 1 (DDL replicates
// to every node in total order) and returns its DSN on each node; the
// database is dropped when t ends.
func galeraDatabase(t testing.TB, nodes []string) []string {
	t.Helper()
	name := "syncstore_t_" + testdb.RandomName()
	admin, err := sql.Open("mysql", nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name) })
	out := make([]string, len(nodes))
	for i, n := range nodes {
		if out[i], err = testdb.MySQLDSNFor(n, name); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// galera runs the lane's script with args.
func galera(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{galeraScript}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("galera.sh %v: %v\n%s", args, err, out)
	}
}

// TestGaleraConformance runs the whole suite through node 2 of the
// cluster, one fresh database per case: every rule holds on a Galera node
// as on a single server.
func TestGaleraConformance(t *testing.T) {
	nodes := galeraNodes(t)
	h, err := conformance.HarnessFor("mysql", Driver{}, nodes[1], declaredCaps, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = func(ct conformance.T) driver.Conn {
		ct.Helper()
		return hungConn(ct)
	}
	conformance.Run(t, h)
}

// TestGaleraStormAcrossNodes pushes to the same two partitions through
// all three nodes at once — each push a read-modify-write of one counter
// row, the worst case for certification — and kills node 3 after a third
// of the pushes, restarting it after half. A push is sent again after
// any error, to its own node first and then to the next one, as a host
// behind a load balancer would; a write conflict (a certification
// failure) is retried in place. At the end every node holds, for each
// partition, exactly the commits 1…N, each push once with its push
// result, and commit k sets the counter to k: nothing acknowledged is
// lost, nothing is applied twice, no update is lost, and no certification
// conflict surfaced as anything but write_conflict.
func TestGaleraStormAcrossNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := galeraStores(ctx, t)
	const per = 25 // pushes per writer; one writer per node and partition
	total := int64(per * len(conns) * len(galeraParts))
	var st stormStats
	ctl := killAndRestartNode3(ctx, t, func() int64 { return st.landed.Load() }, total/3, total/2, nil, nil)
	err := pushStorm(ctx, conns, per, &st)
	if err != nil {
		cancel() // the controller stops waiting for pushes that will not come
	}
	ctl.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pushes over 3 nodes (node 3 killed and restarted): %s; %d Txs found gone after a prepare",
		total, &st, guardLost(conns))
	if st.conflicts.Load() == 0 {
		t.Error("no write conflict at all: the storm did not contend across nodes")
	}
	verifyStorm(t, conns, total/int64(len(galeraParts)))
}

// TestGaleraPrepareAbort is the storm without the node kill, with every
// Tx on a new session, so that each statement of a Tx is prepared inside
// it, after the Tx took its partition's row lock: a write set of another
// node that needs the lock brute-force aborts the Tx, often while the
// server is preparing a statement — the abort MariaDB does not report
// (wsrep.go). Every node must still hold exactly the commits 1…N of each
// partition, commit k setting the counter to k. Before the guard, one
// run in three lost an update here.
func TestGaleraPrepareAbort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := galeraStores(ctx, t)
	for _, c := range conns {
		c.(*Conn).db.SetConnMaxLifetime(time.Nanosecond) // a session per Tx
	}
	const per = 20
	var st stormStats
	if err := pushStorm(ctx, conns, per, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pushes over 3 nodes, a session per Tx: %s; %d Txs found gone after a prepare",
		per*len(conns)*len(galeraParts), &st, guardLost(conns))
	if st.conflicts.Load() == 0 {
		t.Error("no write conflict at all: the storm did not contend across nodes")
	}
	verifyStorm(t, conns, int64(per*len(conns)))
}

// galeraParts are the partitions the storms push to.
var galeraParts = []string{"P", "Q"}

// galeraStores opens a store with the conformance schema on each node of
// a fresh database, closed when t ends.
func galeraStores(ctx context.Context, t *testing.T) []driver.Conn {
	t.Helper()
	dsns := galeraDatabase(t, galeraNodes(t))
	conns := make([]driver.Conn, len(dsns))
	for i, dsn := range dsns {
		c, err := Driver{}.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("open node %d: %v", i+1, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			t.Fatalf("EnsureSchema on node %d: %v", i+1, err)
		}
		if !c.(*Conn).wsrep {
			t.Fatalf("node %d: the store did not see wsrep on", i+1)
		}
		conns[i] = c
	}
	return conns
}

// guardLost is how many Txs the stores' wsrep guards found gone after a
// prepare (wsrep.go).
func guardLost(conns []driver.Conn) int64 {
	var n int64
	for _, c := range conns {
		n += c.(*Conn).guard.lost.Load()
	}
	return n
}

// stormStats counts what a storm met.
type stormStats struct {
	landed, conflicts, failovers, unknown atomic.Int64
}

func (s *stormStats) String() string {
	return fmt.Sprintf("%d certification/lock conflicts retried, %d fail-overs, %d unknown outcomes",
		s.conflicts.Load(), s.failovers.Load(), s.unknown.Load())
}

// pushStorm runs one writer per node and partition, each pushing per
// counter pushes (faulttest.CounterPushOnce) with pushAnywhere; it
// returns the first error a writer gave up on.
func pushStorm(ctx context.Context, conns []driver.Conn, per int, st *stormStats) error {
	var wg gosync.WaitGroup
	errs := make(chan error, len(conns)*len(galeraParts))
	for _, p := range galeraParts {
		for home := range conns {
			wg.Go(func() {
				for i := range per {
					key := fmt.Sprintf("n%d-%s-%03d", home+1, p, i)
					if err := pushAnywhere(ctx, conns, home, p, key, st); err != nil {
						errs <- fmt.Errorf("%s: %w", key, err)
						return
					}
					st.landed.Add(1)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// verifyStorm checks every partition on every node once it has applied
// the partition's n commits (faulttest.VerifyCounterLog).
func verifyStorm(t *testing.T, conns []driver.Conn, n int64) {
	t.Helper()
	for i, c := range conns {
		for _, p := range galeraParts {
			waitApplied(t, c, p, n, i+1)
			faulttest.VerifyCounterLog(t, c, p, n)
		}
	}
}

// pushAnywhere sends push key until it has landed once: to node home
// first, to the next node after an error that says the node failed, and
// again in place after a write conflict. Any other error is returned.
func pushAnywhere(ctx context.Context, conns []driver.Conn, home int, p, key string, st *stormStats) error {
	node := home
	wait := 2 * time.Millisecond
	for ctx.Err() == nil {
		err := faulttest.CounterPushOnce(ctx, conns[node], p, key)
		switch code := driver.CodeOf(err); {
		case err == nil:
			return nil
		case code == driver.CodeWriteConflict:
			st.conflicts.Add(1)
		case code == driver.CodeUnavailable || code == driver.CodeCommitOutcomeUnknown:
			if code == driver.CodeCommitOutcomeUnknown {
				st.unknown.Add(1)
			}
			st.failovers.Add(1)
			node = (node + 1) % len(conns)
		default:
			return fmt.Errorf("node %d: %w", node+1, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
	return ctx.Err()
}

// waitApplied waits (bounded by polls, not time) until node has applied
// the partition's n commits: Galera applies replicated write sets after
// certification, so a node may briefly trail.
func waitApplied(t *testing.T, c driver.Conn, p string, n int64, node int) {
	t.Helper()
	var got int64
	var err error
	for range 600 {
		if got, err = c.MaxCommitSeq(context.Background(), p); err == nil && got >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node %d: partition %s at commit %d (%v), want %d", node, p, got, err, n)
}

// BenchmarkGaleraW6a: W6a (8 goroutines, each pushing 500 commits to its
// own partition) through one node of the cluster, then spread over all
// three (docs/scaling.md). Run with -benchtime 1x; commits/s.
func BenchmarkGaleraW6a(b *testing.B) {
	nodes := galeraNodes(b)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			dsns := galeraDatabase(b, nodes)
			ctx := context.Background()
			conns := make([]driver.Conn, n)
			for i := range conns {
				c, err := Driver{}.Open(ctx, dsns[i])
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if err := c.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
					b.Fatal(err)
				}
				conns[i] = c
			}
			for range b.N {
				rate, err := conformance.BenchW6aAcross(ctx, conns)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(rate, "commits/s")
			}
		})
	}
}

// killAndRestartNode3 runs a storm's controller: it SIGKILLs node 3 once
// progress() reaches killAt and starts it again once it reaches
// restartAt (or ctx ends first), calling down before the kill and up
// after the restart (either may be nil). A test that ends in between
// restarts the node in its cleanup, so the cluster is left whole. Wait
// on the returned group before checking the nodes.
func killAndRestartNode3(ctx context.Context, t *testing.T, progress func() int64, killAt, restartAt int64, down, up func()) *gosync.WaitGroup {
	t.Helper()
	killed, restarted := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-killed:
			select {
			case <-restarted:
			default:
				galera(t, "restart", "3") // leave the cluster whole
			}
		default:
		}
	})
	ctl := new(gosync.WaitGroup)
	ctl.Go(func() {
		for progress() < killAt && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if down != nil {
			down()
		}
		galera(t, "kill", "3")
		close(killed)
		for progress() < restartAt && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		galera(t, "restart", "3")
		if up != nil {
			up()
		}
		close(restarted)
	})
	return ctl
}
