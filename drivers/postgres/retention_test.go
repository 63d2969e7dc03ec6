package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// TestPlansRetention pins the plans of the retention statements (PR-7,
// CR-4, CR-5, HZ-3) on a loaded, analyzed store, custom and generic: each walks
// its index in order and stops at its limit — no sequential scan, no sort
// of the partition's results or clients — and a deletion reaches its rows
// by ctid.
func TestPlansRetention(t *testing.T) {
	c, _ := openTest(t)
	ctx := t.Context()
	for _, q := range []string{
		`INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms)
SELECT p, 'c' || i, 'k', '{"status":"rejected","recordedAtMs":' || i || ',"ops":[]}', i
FROM generate_series(1, 4000) AS i, (VALUES ('p'), ('q')) AS ps(p)`,
		`INSERT INTO _sync_clients (partition, client_id, actor_id, wire_version, cursor, updated_at_ms, subscriptions)
SELECT p, 'c' || i, 'u', 1, i, (i * 7) % 4000, '[]' FROM generate_series(1, 4000) AS i, (VALUES ('p'), ('q')) AS ps(p)`,
		`INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms)
SELECT p, i, 'c', 'k' || i, 'u', i FROM generate_series(1, 4000) AS i, (VALUES ('p'), ('q')) AS ps(p)`,
		`ANALYZE`,
	} {
		if _, err := c.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, ck := range []struct {
		name, q string
		args    []any
		want    []string
	}{
		{"delete push results (PR-7)", sqlDeletePushResultsBefore, []any{"p", int64(3000), int64(100)},
			[]string{"_sync_push_results_by_time", "Tid Scan"}},
		{"delete client records (CR-4)", sqlDeleteClientRecordsBefore, []any{"p", int64(3000), int64(100)},
			[]string{"_sync_clients_by_time", "Tid Scan"}},
		{"min client cursor (CR-5)", sqlMinClientCursor, []any{"p", int64(2000), int64(0)},
			[]string{"_sync_clients_by_cursor"}},
		// HZ-3 aggregates every retained commit before the time (few once
		// pruned): a bitmap over its index range is a fair plan.
		{"commit seq before a time (HZ-3)", sqlCommitSeqBefore, []any{"p", int64(100)},
			[]string{"_sync_commits_before"}},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			t.Logf("%s (%s):\n%s", ck.name, mode, plan)
			for _, bad := range []string{"Seq Scan", "Sort", "Bitmap"} {
				if strings.Contains(plan, bad) && !(bad == "Bitmap" && strings.Contains(ck.name, "HZ-3")) {
					t.Errorf("%s (%s): plan has a %s:\n%s", ck.name, mode, bad, plan)
				}
			}
			for _, w := range ck.want {
				if !strings.Contains(plan, w) {
					t.Errorf("%s (%s): plan does not use %s:\n%s", ck.name, mode, w, plan)
				}
			}
		}
	}
}

// pgFormat1PushResults is _sync_push_results as storage format 1 created
// it (no recorded_at_ms): the upgrade's starting point.
const pgFormat1PushResults = `CREATE TABLE _sync_push_results (
	partition text COLLATE "C" NOT NULL,
	client_id text COLLATE "C" NOT NULL,
	client_commit_id text COLLATE "C" NOT NULL,
	result text NOT NULL,
	PRIMARY KEY (partition, client_id, client_commit_id))`

// TestUpgradeFormat1 opens a store of storage format 1 (push results
// without recorded_at_ms) from four Conns at once: every open succeeds,
// the store is at format 2, every result keeps its record time (an
// undecodable one included: the upgrade never casts it) and the retention
// statements work on it (PR-7). A second open changes nothing.
func TestUpgradeFormat1(t *testing.T) {
	ctx := t.Context()
	dsn := testdbDSN(t)
	admin := adminConn(t, dsn)
	for _, q := range append([]string{pgFormat1PushResults}, infraDDL...) {
		if _, err := admin.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("format-1 fixture: %v\n%s", err, q)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := admin.Exec(ctx, q, args...); err != nil {
			t.Fatalf("format-1 fixture: %v\n%s", err, q)
		}
	}
	exec(sqlInsertMetaIfAbsent, metaFormat, "1")
	for _, r := range faulttest.Format1Results() {
		exec(`INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result) VALUES ($1, $2, $3, $4)`,
			r.Partition, r.ClientID, r.ClientCommitID, r.Text)
	}
	for _, cl := range faulttest.Format1Clients() {
		exec(sqlUpsertClient, cl.Partition, cl.ClientID, "u", int64(1), cl.Cursor, cl.UpdatedAtMs, "[]")
	}
	start := time.Now().UnixMilli()
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	var format string
	if err := admin.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format); err != nil || format != formatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %q", format, err, formatVersion)
	}
	faulttest.CheckUpgraded(t, conns[2], start)
	openDSN(t, dsn) // opening an upgraded store again changes nothing
}

// TestUpgradeFormat2 opens a store of storage format 2 holding reactions
// (infraDDL's layout, the format recorded as 2) with several Conns at
// once: it ends at format 3 and every reaction reads back with the
// record's new fields (faulttest.CheckReactionsUpgraded).
func TestUpgradeFormat2(t *testing.T) {
	ctx := t.Context()
	dsn := testdbDSN(t)
	admin := adminConn(t, dsn)
	for _, q := range append(append([]string{}, infraDDL...), retentionDDL...) {
		if _, err := admin.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("format-2 fixture: %v\n%s", err, q)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := admin.Exec(ctx, q, args...); err != nil {
			t.Fatalf("format-2 fixture: %v\n%s", err, q)
		}
	}
	exec(sqlInsertMetaIfAbsent, metaFormat, "2")
	for _, r := range faulttest.Format2Reactions() {
		var due *int64
		if r.Status == driver.ReactionPending {
			due = &r.AvailableAtMs
		}
		exec(`INSERT INTO _sync_reactions (partition, key, type, payload, status, attempts, max_attempts,
	source_commit_seq, created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '', 0, $12)`, r.Partition, r.Key, r.Type, string(r.Payload),
			string(r.Status), int32(r.Attempts), int32(r.MaxAttempts), r.SourceCommitSeq, r.CreatedAtMs, r.AvailableAtMs, due, r.UpdatedAtMs)
	}
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	var format string
	if err := admin.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format); err != nil || format != formatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %s", format, err, formatVersion)
	}
	faulttest.CheckReactionsUpgraded(t, conns[2])
	openDSN(t, dsn) // opening an upgraded store again changes nothing
}

// TestUpgradeFormat3: a format-3 store (no tx_token on _sync_commits)
// opens as format 4 with the column added and its commits kept, and a
// deferred push then writes its token (settleByCommit's mark, TX-10).
func TestUpgradeFormat3(t *testing.T) {
	c, dsn := openTest(t)
	ctx := t.Context()
	if seq, err := pushTodos(ctx, c, "p", 0, 1); err != nil || seq != 1 {
		t.Fatalf("first push: %d, %v", seq, err)
	}
	_ = c.Close()
	admin := adminConn(t, dsn)
	for _, q := range []string{`ALTER TABLE _sync_commits DROP COLUMN tx_token`,
		`UPDATE _sync_meta SET value = '3' WHERE key = 'format'`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("format-3 fixture: %v", err)
		}
	}
	c2 := openDSN(t, dsn)
	var format string
	if err := admin.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format); err != nil || format != formatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %s", format, err, formatVersion)
	}
	for i := 1; i <= 2; i++ { // the second push is deferred: the Conn knows the max
		if seq, err := pushTodos(ctx, c2, "p", i*10, 1); err != nil || seq != int64(i+1) {
			t.Fatalf("push after the upgrade: %d, %v; want %d", seq, err, i+1)
		}
	}
	var untokened, tokened int
	if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tx_token IS NULL), count(*) FILTER (WHERE tx_token IS NOT NULL) FROM _sync_commits WHERE partition = 'p'`).Scan(&untokened, &tokened); err != nil {
		t.Fatal(err)
	}
	if untokened != 1 || tokened != 2 {
		t.Fatalf("commits without / with a token: %d / %d; want 1 (the one before the upgrade) / 2", untokened, tokened)
	}
}

// format4Store makes a store of storage format 4 (HZ-3 served by
// _sync_commits_by_time, no _sync_commits_before) holding commits commits
// in partition "p", runs the extra statements on it, and returns its DSN
// and an admin connection.
func format4Store(t *testing.T, commits int, extra ...string) (string, *pgx.Conn) {
	t.Helper()
	c, dsn := openTest(t)
	for i := range commits {
		if _, err := pushTodos(t.Context(), c, "p", i*10, 1); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close()
	admin := adminConn(t, dsn)
	for _, q := range append([]string{`DROP INDEX _sync_commits_before`,
		`CREATE INDEX _sync_commits_by_time ON _sync_commits (partition, created_at_ms, seq)`,
		`UPDATE _sync_meta SET value = '4' WHERE key = 'format'`}, extra...) {
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatalf("format-4 fixture: %v\n%s", err, q)
		}
	}
	return dsn, admin
}

// TestUpgradeFormat4: a format-4 store (HZ-3 served by
// _sync_commits_by_time, which led with the bare partition) opens as
// format 5 with _sync_commits_before built and the old index dropped,
// and HZ-3 answers as before. The drop never blocks the log's readers:
// while a transaction that has read the log stays open, the Open ends
// within retiredDropTimeout, another session reads the log meanwhile
// without waiting, and the index is dropped by the next Open.
func TestUpgradeFormat4(t *testing.T) {
	ctx := t.Context()
	dsn, admin := format4Store(t, 3, `UPDATE _sync_commits SET created_at_ms = seq * 1000 WHERE partition = 'p'`)
	indexes := func() (before, byTime bool) {
		t.Helper()
		if err := admin.QueryRow(ctx, `SELECT to_regclass('_sync_commits_before') IS NOT NULL, to_regclass('_sync_commits_by_time') IS NOT NULL`).Scan(&before, &byTime); err != nil {
			t.Fatal(err)
		}
		return before, byTime
	}

	// A reader's open transaction: DROP INDEX CONCURRENTLY waits for it.
	reader := adminConn(t, dsn)
	rtx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rtx.Rollback(context.Background()) }()
	var n int
	if err := rtx.QueryRow(ctx, `SELECT count(*) FROM _sync_commits WHERE partition = 'p'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("reader: %d commits, %v", n, err)
	}
	saved := retiredDropTimeout
	// A read blocked behind the drop would wait until the drop is
	// cancelled, 4 s; an unblocked one takes milliseconds, so its 2 s
	// deadline tells the two apart even on a loaded machine.
	retiredDropTimeout = 4 * time.Second
	defer func() { retiredDropTimeout = saved }()
	opened := make(chan error, 1)
	go func() {
		c2, err := Driver{}.Open(ctx, dsn)
		if err == nil {
			_ = c2.Close()
		}
		opened <- err
	}()
	// While the Open waits for the reader, another session reads the log.
	other := adminConn(t, dsn)
	deadline := time.Now().Add(10 * time.Second)
	for waiting := false; !waiting; {
		if time.Now().After(deadline) {
			t.Fatal("the Open never waited on the reader's transaction")
		}
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'DROP INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := other.QueryRow(rctx, `SELECT count(*) FROM _sync_commits WHERE partition = 'p'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("a read of the log while the old index is dropped: %d commits, %v", n, err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open while a reader holds the log: %v", err)
	}
	var format string
	if err := admin.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format); err != nil || format != formatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %s", format, err, formatVersion)
	}
	if before, _ := indexes(); !before {
		t.Fatal("no _sync_commits_before after the upgrade")
	}
	_ = rtx.Rollback(ctx)

	c3 := openDSN(t, dsn)
	if before, byTime := indexes(); !before || byTime {
		t.Fatalf("after a second Open: _sync_commits_before %v, _sync_commits_by_time %v; want true, false", before, byTime)
	}
	for at, want := range map[int64]int64{1000: 0, 1001: 1, 3000: 2, 9000: 3} {
		if got, err := c3.CommitSeqBefore(ctx, "p", at); err != nil || got != want {
			t.Errorf("CommitSeqBefore(%d) = %d, %v; want %d", at, got, err, want)
		}
	}
}

// TestUpgradeDropsOnlyItsOwnSchema: the retired index is looked for and
// dropped in the store's own schema. A store in s1 opened with
// search_path s1, public must leave alone the _sync_commits_by_time of a
// format-4 store in public, which still serves that store's HZ-3 (an
// unqualified name resolved along the search path and dropped it).
func TestUpgradeDropsOnlyItsOwnSchema(t *testing.T) {
	dsn, admin := format4Store(t, 1, `CREATE SCHEMA s1`)
	if !strings.HasPrefix(dsn, "postgres://") {
		t.Skip("the test DSN is not a URL")
	}
	c1, err := Driver{}.Open(t.Context(), dsn+"&search_path=s1,public")
	if err != nil {
		t.Fatal(err)
	}
	_ = c1.Close()
	var s1Format, publicFormat string
	var publicByTime bool
	if err := admin.QueryRow(t.Context(), `SELECT (SELECT value FROM s1._sync_meta WHERE key = 'format'),
		(SELECT value FROM public._sync_meta WHERE key = 'format'), to_regclass('public._sync_commits_by_time') IS NOT NULL`).Scan(&s1Format, &publicFormat, &publicByTime); err != nil {
		t.Fatal(err)
	}
	if s1Format != formatVersion || publicFormat != "4" || !publicByTime {
		t.Fatalf("s1's store at format %s, public's at %s with _sync_commits_by_time %v; want %s, 4, true", s1Format, publicFormat, publicByTime, formatVersion)
	}
}
