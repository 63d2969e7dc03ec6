package mysql

import (
	"context"
	"net"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Round trips per push commit (docs/performance.md "Raw-loop ratios per
// engine"): the client has no pipelining, so every statement
// costs one round trip, a write and a read syscall and a wake-up.

// rtCounter counts request/response exchanges on the connections dialled
// through its network: one each time the client writes after having read
// (or writes first). A command without a response (COM_STMT_CLOSE) merges
// with the next one, as it costs no wait.
type rtCounter struct{ n atomic.Int64 }

type rtConn struct {
	net.Conn
	c       *rtCounter
	mu      gosync.Mutex
	readyRT bool // the next Write starts an exchange
}

func (r *rtConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	if r.readyRT {
		r.c.n.Add(1)
		r.readyRT = false
	}
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func (r *rtConn) Read(b []byte) (int, error) {
	r.mu.Lock()
	r.readyRT = true
	r.mu.Unlock()
	return r.Conn.Read(b)
}

var rtNetSeq atomic.Int64

// openCounted opens a fresh store (TestSchema ensured) whose connections
// count their round trips in the returned counter.
func openCounted(t *testing.T) (*Conn, *rtCounter) {
	t.Helper()
	cfg, err := mysql.ParseDSN(testdb.NewMySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" {
		t.Skipf("round trips are counted over tcp; the test DSN uses %s", cfg.Net)
	}
	rc := &rtCounter{}
	network := "syncstore_rt" + itoa(rtNetSeq.Add(1))
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &rtConn{Conn: nc, c: rc}, nil
	})
	t.Cleanup(func() { mysql.DeregisterDialContext(network) })
	cfg.Net = network
	ctx := context.Background()
	dc, err := Driver{}.Open(ctx, cfg.FormatDSN())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = dc.Close() })
	if err := dc.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return dc.(*Conn), rc
}

// w1Push is W1's push of commit i (conformance pushCommit): ten upserts,
// AppendCommit, PutPushResult, Commit.
func w1Push(t *testing.T, c *Conn, i int) {
	t.Helper()
	ctx := context.Background()
	cm := conformance.W1Commit(i)
	tx, err := c.Begin(ctx, conformance.BenchPartition)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	changes := make([]driver.Change, len(cm.Rows))
	for k, r := range cm.Rows {
		if err := tx.UpsertRow(ctx, conformance.BenchTable, r); err != nil {
			t.Fatalf("UpsertRow: %v", err)
		}
		changes[k] = driver.Change{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes,
			Values: r.Values, RowVersion: r.ServerVersion}
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: cm.ClientID, ClientCommitID: cm.ClientCommitID,
		ActorID: cm.ActorID, CreatedAtMs: cm.CreatedAtMs, Changes: changes})
	if err != nil {
		t.Fatalf("AppendCommit: %v", err)
	}
	if seq != cm.Seq {
		t.Fatalf("commit %d got seq %d, want %d (SEQ-1)", i, seq, cm.Seq)
	}
	if err := tx.PutPushResult(ctx, cm.ClientID, cm.ClientCommitID, cm.Result(seq)); err != nil {
		t.Fatalf("PutPushResult: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// TestPushRoundTrips pins the round trips of a W1 push commit (10 rows of
// a table without a unique index, its log, its push result) once the
// pool's statements are prepared: START TRANSACTION, the partition's lock
// and seq (one INSERT … ON DUPLICATE KEY UPDATE), one 10-row upsert, the
// commit record, its changes, its scope entries, the push result, COMMIT
// — 8, as the raw loop (the writes wait for Commit, so the TX-8 savepoint
// is never needed: stage.go), against 9 with the savepoint at Begin and
// the driver's former 19.
func TestPushRoundTrips(t *testing.T) {
	c, rc := openCounted(t)
	// Warm-up: every statement gets prepared on the pool and on the
	// connection the Tx takes (database/sql hands the most recently
	// released connection to the next Begin).
	const warm, measured = 5, 20
	for i := range warm {
		w1Push(t, c, i)
	}
	before := rc.n.Load()
	for i := warm; i < warm+measured; i++ {
		w1Push(t, c, i)
	}
	per := float64(rc.n.Load()-before) / measured
	t.Logf("%.2f round trips per W1 push commit", per)
	if per != pushRoundTrips {
		t.Errorf("%.2f round trips per W1 push commit, want %d (docs/performance.md)", per, pushRoundTrips)
	}
	var got int64
	if err := c.db.QueryRowContext(context.Background(), "SELECT max_seq FROM _sync_partitions WHERE p = ?",
		conformance.BenchPartition).Scan(&got); err != nil || got != warm+measured {
		t.Fatalf("max_seq %d (%v), want %d", got, err, warm+measured)
	}
}

// pushRoundTrips is what TestPushRoundTrips expects.
const pushRoundTrips = 8

// TestEnginePushRoundTrips pins what sync.Store.Push adds to a W1 push
// commit (W7, docs/performance.md). A push of creates (base version 0 on
// every op) is written by guarded writes (PUSH-9, guarded.go): its
// statements are W1's — the creates one plain multi-row INSERT — so
// nothing but the binding below; it was one, BeginPush's read, before
// the driver was a GuardedBeginner. A push whose ops carry no base version reads first:
// one statement, the push result and the ten rows (a LEFT JOIN,
// pushread.go). Every push binds its client id (CR-7): one statement,
// bindClient, kept with the Tx's other writes. The engine's other work
// (validation, the request digest, versions) makes no round trip. A push
// that creates rows makes one more: guarded, the guard that none of the
// ids has a tombstone (guardNoTombstonesSQL); read first, the read of
// the missing rows' tombstones (readTombstonesIn) — ROW-5, PUSH-18.
func TestEnginePushRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name string
		base *int64
		want int
	}{
		{"guarded, base version 0", syncstore.Version(0), pushRoundTrips + 2},
		{"read first, no base version", nil, pushRoundTrips + 3},
		// 10 updates: one guard over them all and one multi-row upsert
		// where the creates' INSERT was (guardedRun), so what a push that
		// reads first costs — never one UPDATE per row.
		{"guarded, base version 1", syncstore.Version(1), pushRoundTrips + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			per := enginePushRoundTrips(t, c.base)
			t.Logf("%.2f round trips per Store.Push of a W1 commit (%s)", per, c.name)
			if per != float64(c.want) {
				t.Errorf("%.2f round trips per Store.Push of a W1 commit (%s), want %d", per, c.name, c.want)
			}
		})
	}
}

// enginePushRoundTrips returns the round trips per Store.Push of W1's
// commits, each op at base (nil: none), on a fresh store.
func enginePushRoundTrips(t *testing.T, base *int64) float64 {
	c, rc := openCounted(t)
	s := syncstore.OpenConn(c)
	ctx := context.Background()
	if err := s.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	pushAt := func(i int, base *int64, key string) {
		ops := make([]syncstore.PushOp, conformance.BenchRowsPerCommit)
		for k := range ops {
			r := conformance.BenchTodo(i*conformance.BenchRowsPerCommit + k)
			ops[k] = syncstore.PushOp{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values,
				BaseVersion: base}
		}
		resp, err := s.Push(ctx, conformance.BenchPartition, syncstore.PushRequest{ClientID: "bench",
			ClientCommitID: key + itoa(int64(i)), ActorID: "a", Ops: ops})
		if err != nil || resp.Status != driver.PushApplied || resp.Replayed {
			t.Fatalf("push %d: %+v, %v; want applied", i, resp.Status, err)
		}
	}
	var counted int64
	push := func(i int) {
		if base != nil && *base > 0 { // the rows at version *base first, not counted
			for v := range *base {
				pushAt(i, syncstore.Version(v), "v"+itoa(v)+"-")
			}
		}
		before := rc.n.Load()
		pushAt(i, base, "c")
		counted += rc.n.Load() - before
	}
	const warm, measured = 5, 20
	for i := range warm {
		push(i)
	}
	counted = 0
	for i := warm; i < warm+measured; i++ {
		push(i)
	}
	return float64(counted) / measured
}
