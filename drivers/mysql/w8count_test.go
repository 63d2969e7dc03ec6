package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// TestW8Counters counts, rather than times, what W1's and W8's push
// commits cost the server (docs/performance.md "Where MariaDB's W8 time
// goes"): SHOW GLOBAL STATUS deltas per commit — statements and round
// trips, handler row operations, buffer-pool reads and pages written
// (dirty pages are flushed at the end of each phase so its writes are its
// own) — for the benchmark's push (conformance's pushCommit: 10 upserts,
// AppendCommit, PutPushResult, Commit), W1's 5,000 commits on one
// partition, then W8's round robin over SYNCSTORE_W8COUNT tenants × 20
// commits in the same store. Meant for a server of its own (the counters
// are global): SYNCSTORE_TEST_MYSQL_DSN='root@tcp(127.0.0.1:7431)/'
// SYNCSTORE_W8COUNT=2500 go test ./drivers/mysql -run TestW8Counters -v.
// SYNCSTORE_W8PROF=dir writes a CPU profile of each phase's client side
// there (w1.pprof, w8.pprof).
func TestW8Counters(t *testing.T) {
	tenants, w1 := w8countSizes(t)
	ctx := context.Background()
	c := openStore(t)
	admin := c.db
	prof := os.Getenv("SYNCSTORE_W8PROF")

	phase := func(name string, n int, run func(i int) error) { w8countPhase(t, admin, prof, name, n, run) }

	phase("w1", w1, func(i int) error {
		return w8countPush(ctx, c, conformance.BenchPartition, i*conformance.BenchRowsPerCommit, "c"+strconv.Itoa(i), int64(i+1))
	})
	names := w8countTenants(t, ctx, c, tenants)
	phase("w8", tenants*conformance.W8CommitsEach, func(i int) error {
		j := i / tenants
		return w8countPush(ctx, c, names[i%tenants], j*conformance.BenchRowsPerCommit, "c"+strconv.Itoa(j), int64(j+1))
	})
}

// w8countSizes returns the tenant count (SYNCSTORE_W8COUNT; the test
// skips without it) and W1's commits (SYNCSTORE_W8COUNT_W1, default 5,000).
func w8countSizes(t *testing.T) (tenants, w1 int) {
	tenants, _ = strconv.Atoi(os.Getenv("SYNCSTORE_W8COUNT"))
	if tenants <= 0 {
		t.Skip("SYNCSTORE_W8COUNT (the tenant count) not set")
	}
	w1 = 5000
	if s := os.Getenv("SYNCSTORE_W8COUNT_W1"); s != "" {
		w1, _ = strconv.Atoi(s)
	}
	return tenants, w1
}

// w8countTenants registers W8's tenants (their registry rows, as W8's
// setup does) and returns their partitions.
func w8countTenants(t *testing.T, ctx context.Context, c *Conn, tenants int) []string {
	at := time.Now().UnixMilli()
	names := make([]string, tenants)
	for k := range names {
		names[k] = conformance.W8Partition(k)
		if _, err := c.TouchPartition(ctx, names[k], at, "e"+strconv.Itoa(k)); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestW8CountersEngine is TestW8Counters' two phases through the engine
// (W7's push: sync.Store.Push, every op a create at base version 0), on a
// store of its own: what the engine's push adds to the driver's per
// commit — the client binding (CR-7), the create guard (PUSH-18), its
// reads — in W1's shape and in W8's.
func TestW8CountersEngine(t *testing.T) {
	tenants, w1 := w8countSizes(t)
	ctx := context.Background()
	c := openStore(t)
	s := syncstore.OpenConn(c)
	if err := s.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	push := func(partition string, first int, commitID string, want int64) error {
		ops := make([]syncstore.PushOp, conformance.BenchRowsPerCommit)
		for k := range ops {
			r := conformance.BenchTodo(first + k)
			ops[k] = syncstore.PushOp{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values,
				BaseVersion: syncstore.Version(0)}
		}
		resp, err := s.Push(ctx, partition, syncstore.PushRequest{ClientID: "bench-client", ClientCommitID: commitID,
			ActorID: "bench-actor", Ops: ops})
		if err == nil && (resp.Status != driver.PushApplied || resp.CommitSeq != want) {
			err = fmt.Errorf("push answered %s at seq %d, want applied at %d", resp.Status, resp.CommitSeq, want)
		}
		return err
	}
	prof := os.Getenv("SYNCSTORE_W8PROF")
	w8countPhase(t, c.db, prof, "engine-w1", w1, func(i int) error {
		return push(conformance.BenchPartition, i*conformance.BenchRowsPerCommit, "c"+strconv.Itoa(i), int64(i+1))
	})
	names := w8countTenants(t, ctx, c, tenants)
	w8countPhase(t, c.db, prof, "engine-w8", tenants*conformance.W8CommitsEach, func(i int) error {
		j := i / tenants
		return push(names[i%tenants], j*conformance.BenchRowsPerCommit, "c"+strconv.Itoa(j), int64(j+1))
	})
}

// w8countPhase runs n commits (run) between two flushes of the dirty
// pages and logs the counters' deltas per commit.
func w8countPhase(t *testing.T, admin *sql.DB, prof, name string, n int, run func(i int) error) {
	flushDirty(t, admin)
	before := globalStatus(t, admin)
	filesBefore := fileIO(t, admin)
	if prof != "" {
		f, err := os.Create(prof + "/" + name + ".pprof")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for i := range n {
		if err := run(i); err != nil {
			t.Fatalf("%s commit %d: %v", name, i, err)
		}
	}
	d := time.Since(start)
	if prof != "" {
		pprof.StopCPUProfile()
	}
	flushDirty(t, admin)
	after := globalStatus(t, admin)
	filesAfter := fileIO(t, admin)
	t.Logf("%s: %d commits in %v (%.0f/s, not a benchmark)", name, n, d, float64(n)/d.Seconds())
	var lines []string
	for k, a := range after {
		if delta := a - before[k]; delta != 0 && countedStatus(k) {
			lines = append(lines, fmt.Sprintf("  %-42s %10.3f", k, float64(delta)/float64(n)))
		}
	}
	sort.Strings(lines)
	t.Logf("%s per commit:\n%s", name, strings.Join(lines, "\n"))
	lines = lines[:0]
	for f, a := range filesAfter {
		b := filesBefore[f]
		if a[0] != b[0] || a[1] != b[1] {
			lines = append(lines, fmt.Sprintf("  %-40s reads %7.3f  writes %7.3f", f,
				float64(a[0]-b[0])/float64(n), float64(a[1]-b[1])/float64(n)))
		}
	}
	sort.Strings(lines)
	if len(lines) > 0 {
		t.Logf("%s file reads and writes per commit (performance_schema):\n%s", name, strings.Join(lines, "\n"))
	}
}

// w8countPush is conformance's pushCommit (bench_workloads.go): one
// W1-shaped commit that must get seq want.
func w8countPush(ctx context.Context, c *Conn, partition string, first int, clientCommitID string, want int64) error {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	n := conformance.BenchRowsPerCommit
	changes := make([]driver.Change, n)
	ops := make([]driver.OpResult, n)
	for k := range changes {
		r := conformance.BenchTodo(first + k)
		if err := tx.UpsertRow(ctx, conformance.BenchTable, r); err != nil {
			return err
		}
		changes[k] = driver.Change{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values,
			RowVersion: r.ServerVersion, Scopes: r.Scopes}
		ops[k] = driver.OpResult{Status: driver.OpApplied}
	}
	at := int64(1_700_000_000_000) + int64(first)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "bench-client", ClientCommitID: clientCommitID,
		ActorID: "bench-actor", CreatedAtMs: at, Changes: changes})
	if err != nil {
		return err
	}
	if seq != want {
		return fmt.Errorf("seq %d, want %d", seq, want)
	}
	res := driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: at, Ops: ops}
	if err := tx.PutPushResult(ctx, "bench-client", clientCommitID, res); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// countedStatus reports whether a SHOW GLOBAL STATUS counter is one to
// print per commit.
func countedStatus(k string) bool {
	for _, p := range []string{"Com_", "Handler_", "Innodb_buffer_pool_read", "Innodb_pages_", "Innodb_data_",
		"Innodb_rows_", "Questions", "Bytes_", "Innodb_os_log_written", "Innodb_buffer_pool_pages_flushed"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// fileIO reads performance_schema's read and write counts of each
// InnoDB file, when performance_schema is on (empty otherwise).
func fileIO(t *testing.T, db *sql.DB) map[string][2]int64 {
	t.Helper()
	m := map[string][2]int64{}
	rows, err := db.Query(`SELECT FILE_NAME, COUNT_READ, COUNT_WRITE FROM performance_schema.file_summary_by_instance
WHERE EVENT_NAME LIKE 'wait/io/file/innodb/%'`)
	if err != nil {
		return m
	}
	defer rows.Close()
	for rows.Next() {
		var f string
		var r, w int64
		if err := rows.Scan(&f, &r, &w); err != nil {
			t.Fatal(err)
		}
		if i := strings.LastIndex(f, "/"); i >= 0 {
			f = f[i+1:]
		}
		m[f] = [2]int64{r, w}
	}
	return m
}

// globalStatus reads SHOW GLOBAL STATUS's numeric counters.
func globalStatus(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SHOW GLOBAL STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// flushDirty makes InnoDB write its dirty pages now and waits until it
// has (at most a minute), so a phase's counters hold its own writes.
func flushDirty(t *testing.T, db *sql.DB) {
	t.Helper()
	var old float64
	if err := db.QueryRow("SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = ?", old) }()
	for range 600 {
		var k string
		var dirty int64
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&k, &dirty); err != nil {
			t.Fatal(err)
		}
		if dirty < 10 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Log("dirty pages did not drain within a minute")
}
