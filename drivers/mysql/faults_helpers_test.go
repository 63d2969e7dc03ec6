package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// Helpers of faults_test.go: a store with an admin connection that kills
// and inspects, the pushes the fault tests make, and the checks that every
// push is whole or absent.

// faultStore is a fresh store plus an admin connection to the same
// database (one connection, autocommit) used to kill and to inspect.
type faultStore struct {
	c     *Conn
	admin *sql.DB
	db    string // the database's name
}

func openFaultStore(t *testing.T) *faultStore {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := sql.OpenDB(connector)
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = admin.Close() })
	return &faultStore{c: conn.(*Conn), admin: admin, db: cfg.DBName}
}

// kill ends server connection id (KILL CONNECTION). An id that is already
// gone is not an error.
func (f *faultStore) kill(ctx context.Context, id int64) error {
	_, err := f.admin.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
	var me *mysql.MySQLError
	if err != nil && asMySQL(err, &me) && me.Number == 1094 { // unknown thread id
		return nil
	}
	return err
}

// sessions returns the ids of the store's server connections (not the
// admin's own).
func (f *faultStore) sessions(ctx context.Context) ([]int64, error) {
	rows, err := f.admin.QueryContext(ctx,
		"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", f.db)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// expectNoOpenTx waits (at most 20 s: the server rolls back a killed or
// abandoned session asynchronously, and database/sql releases a cancelled
// Tx's connection from a watcher goroutine) until no InnoDB transaction
// belongs to a session of the store's database and the pool has no
// connection in use (TX-6).
func (f *faultStore) expectNoOpenTx(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const q = `SELECT COUNT(*) FROM information_schema.INNODB_TRX x
		JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id
		WHERE p.DB = ? AND p.ID <> CONNECTION_ID()`
	var n, inUse int
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := f.admin.QueryRowContext(ctx, q, f.db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		inUse = f.c.db.Stats().InUse
		if (n == 0 && inUse == 0) || time.Now().After(end) {
			break
		}
	}
	if n != 0 {
		t.Errorf("%d transactions of the store are still open on the server (TX-6)", n)
	}
	if inUse != 0 {
		t.Errorf("%d pool connections still in use 20 s after every call returned (TX-6: a leaked connection)", inUse)
	}
}

// faultRows returns the two rows push i writes.
func faultRows(i int) []driver.Row {
	return []driver.Row{todoRow(fmt.Sprintf("r%04d-a", i), "p", "o"), todoRow(fmt.Sprintf("r%04d-b", i), "p", fmt.Sprintf("o%d", i%5))}
}

func faultKey(i int) string { return fmt.Sprintf("cc-%04d", i) }

// faultCommit returns push i's commit as a window read returns it.
func faultCommit(i int, seq int64) driver.Commit {
	c := driver.Commit{Seq: seq, ClientID: "f", ClientCommitID: faultKey(i), CreatedAtMs: int64(i)}
	for _, r := range faultRows(i) {
		c.Changes = append(c.Changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert,
			Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	return c
}

func faultResult(i int, seq int64) driver.PushResult {
	return driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: int64(i),
		CacheIdentity: fmt.Sprintf("ci-%d", i), Ops: []driver.OpResult{{Status: driver.OpApplied}, {Status: driver.OpApplied}}}
}

// faultPush pushes i as a host would: inside one Tx it returns early when
// i's push result is already stored (a retry), else writes its rows, one
// commit, a reaction and the push result, and commits. hook, if set, runs
// after each step with the Tx. It reports whether this call landed i.
func faultPush(ctx context.Context, c *Conn, partition string, i int, hook func(step string, tx *Tx)) (bool, error) {
	if hook == nil {
		hook = func(string, *Tx) {}
	}
	dtx, err := c.Begin(ctx, partition)
	if err != nil {
		return false, err
	}
	tx := dtx.(*Tx)
	defer func() { _ = tx.Rollback(context.Background()) }()
	hook("begun", tx)
	if _, ok, err := tx.GetPushResult(ctx, "f", faultKey(i)); err != nil || ok {
		return false, err
	}
	for _, r := range faultRows(i) {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return false, err
		}
	}
	hook("upserted", tx)
	want := faultCommit(i, 0)
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: want.ClientID, ClientCommitID: want.ClientCommitID,
		CreatedAtMs: want.CreatedAtMs, Changes: want.Changes})
	if err != nil {
		return false, err
	}
	err = tx.EnqueueReactions(ctx, seq, []driver.ReactionInput{{Key: "rx-" + faultKey(i), Type: "t",
		Payload: driver.JSON(fmt.Sprintf(`{"i":%d}`, i)), MaxAttempts: 1000, CreatedAtMs: int64(i)}})
	if err != nil {
		return false, err
	}
	hook("appended", tx)
	if err := tx.PutPushResult(ctx, "f", faultKey(i), faultResult(i, seq)); err != nil {
		return false, err
	}
	hook("resulted", tx)
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// faultVerify checks partition after pushes 0…n-1: the log is dense and
// holds each push at most once, whole (its changes, rows, push result and
// reaction); pushes not in the log left nothing; pushes in mustLand are in
// it. It returns how many landed.
func faultVerify(t *testing.T, c *Conn, partition string, n int, mustLand map[int]bool) int {
	t.Helper()
	ctx := context.Background()
	max, err := c.MaxCommitSeq(ctx, partition)
	if err != nil {
		t.Fatal(err)
	}
	win, err := c.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(win)) != max {
		t.Fatalf("log holds %d commits, MaxCommitSeq is %d", len(win), max)
	}
	rows, err := c.ScanRows(ctx, partition, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p"}}, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	gotRows := map[string]driver.Row{}
	for _, r := range rows {
		gotRows[r.ID] = r
	}
	rx, err := c.ListReactions(ctx, partition, driver.ReactionListQuery{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	gotRx := map[string]driver.Reaction{}
	for _, r := range rx {
		gotRx[r.Key] = r
	}
	landed := map[int]int64{}
	for k, cm := range win {
		if cm.Seq != int64(k+1) {
			t.Fatalf("commit %d has seq %d: sequence not dense (SEQ-1)", k+1, cm.Seq)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(cm.ClientCommitID, "cc-"))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("commit %d has an unknown key", cm.Seq)
		}
		if _, dup := landed[i]; dup {
			t.Fatalf("push %d landed twice", i)
		}
		landed[i] = cm.Seq
		if d := cmp.Diff(faultCommit(i, cm.Seq), cm, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("commit %d is not push %d whole (-want +got):\n%s", cm.Seq, i, d)
		}
	}
	wantRows := map[string]driver.Row{}
	for i := range n {
		seq, ok := landed[i]
		if mustLand[i] && !ok {
			t.Fatalf("push %d returned success but its commit is missing", i)
		}
		r, has, err := c.GetPushResult(ctx, partition, "f", faultKey(i))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if has {
				t.Fatalf("push %d: push result stored without its commit", i)
			}
			if _, has := gotRx["rx-"+faultKey(i)]; has {
				t.Fatalf("push %d: reaction stored without its commit", i)
			}
			continue
		}
		if d := cmp.Diff(faultResult(i, seq), r, cmpopts.EquateEmpty()); !has || d != "" {
			t.Fatalf("push %d (commit %d): push result found=%v (-want +got):\n%s", i, seq, has, d)
		}
		if x, has := gotRx["rx-"+faultKey(i)]; !has || x.SourceCommitSeq != seq {
			t.Fatalf("push %d (commit %d): reaction found=%v source=%d", i, seq, has, x.SourceCommitSeq)
		}
		for _, row := range faultRows(i) {
			wantRows[row.ID] = row
		}
	}
	if d := cmp.Diff(wantRows, gotRows, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("rows are not exactly those of the landed pushes (-want +got):\n%s", d)
	}
	if len(rx) != len(landed) {
		t.Fatalf("%d reactions for %d landed pushes", len(rx), len(landed))
	}
	return len(landed)
}

// counterPush adds one to the partition's counter row in one Tx whose
// commit carries key and stores a push result under it.
func counterPush(ctx context.Context, c driver.Conn, partition, key string) error {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	row, ok, err := tx.GetRow(ctx, "todos", "counter")
	if err != nil {
		return err
	}
	if !ok {
		row = todoRow("counter", "p", "o")
		row.Values["updated_at"] = int64(0)
	}
	row.Values["updated_at"] = row.Values["updated_at"].(int64) + 1
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		return err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "w", ClientCommitID: key, CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: "counter", Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
	if err != nil {
		return err
	}
	if err := tx.PutPushResult(ctx, "w", key, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// verifyCounterLog checks a partition written n times by counterPush: max
// seq n, log 1…n, commit k sets the counter to k, each key's push result
// names its commit.
func verifyCounterLog(t *testing.T, c driver.Conn, partition string, n int64) {
	t.Helper()
	ctx := context.Background()
	if m, err := c.MaxCommitSeq(ctx, partition); err != nil || m != n {
		t.Fatalf("%s: MaxCommitSeq = %d, %v; want %d", partition, m, err, n)
	}
	win, err := c.ReadCommitWindow(ctx, partition, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(win)) != n {
		t.Fatalf("%s: log holds %d commits, want %d", partition, len(win), n)
	}
	keys := map[string]bool{}
	for i, cm := range win {
		if cm.Seq != int64(i+1) {
			t.Fatalf("%s: commit %d has seq %d: sequence not dense", partition, i+1, cm.Seq)
		}
		if got := cm.Changes[0].Values["updated_at"]; got != cm.Seq {
			t.Fatalf("%s: commit %d set the counter to %v: a lost update", partition, cm.Seq, got)
		}
		if keys[cm.ClientCommitID] {
			t.Fatalf("%s: key %s committed twice", partition, cm.ClientCommitID)
		}
		keys[cm.ClientCommitID] = true
		r, ok, err := c.GetPushResult(ctx, partition, "w", cm.ClientCommitID)
		if err != nil || !ok || r.CommitSeq != cm.Seq {
			t.Fatalf("%s: push result of %s = %+v, %v, %v; want commit %d", partition, cm.ClientCommitID, r, ok, err, cm.Seq)
		}
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

func asMySQL(err error, target **mysql.MySQLError) bool { return errors.As(err, target) }
