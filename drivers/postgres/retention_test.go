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
// CR-4, CR-5) on a loaded, analyzed store, custom and generic: each walks
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
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, c.pool, mode, ck.q, ck.args...)
			t.Logf("%s (%s):\n%s", ck.name, mode, plan)
			for _, bad := range []string{"Seq Scan", "Sort", "Bitmap"} {
				if strings.Contains(plan, bad) {
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
	if err := admin.QueryRow(ctx, sqlSelectMeta, metaFormat).Scan(&format); err != nil || format != "4" {
		t.Fatalf("storage format after the upgrade: %q, %v; want 4", format, err)
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
