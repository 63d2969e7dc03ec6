package mysql

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestPlanRetention pins the plans of the retention statements (PR-7,
// CR-4, CR-5) on a loaded, analyzed store: each walks its index in order
// (no filesort) and stops at its limit, never scanning the partition's
// results or clients; a deletion then reaches its rows by primary key.
func TestPlanRetention(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO _sync_push_results (p, client_id, client_commit_id, result, recorded_at_ms)
WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
SELECT ps.p, CONCAT('c', i), 'k', CONCAT('{"status":"rejected","recordedAtMs":', i, ',"ops":[]}'), i
FROM n, (SELECT 'p' AS p UNION ALL SELECT 'q') AS ps`,
		`INSERT INTO _sync_clients (p, client_id, actor_id, wire_version, cursor_seq, updated_at_ms, subscriptions)
WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
SELECT ps.p, CONCAT('c', i), 'u', 1, i, (i * 7) % 1000, '[]'
FROM n, (SELECT 'p' AS p UNION ALL SELECT 'q') AS ps`,
		`ANALYZE TABLE _sync_push_results, _sync_clients`,
	} {
		if _, err := c.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	expectPlan(t, "delete push results (PR-7)", explain(t, c, deletePushResultsBefore, "p", 800, 100, "p", 800),
		map[string]string{"_sync_push_results": "_sync_push_results_by_time", "r": "PRIMARY"}, false)
	expectPlan(t, "delete client records (CR-4)", explain(t, c, deleteClientRecordsBefore, "p", 800, 100, "p", 800),
		map[string]string{"_sync_clients": "_sync_clients_by_time", "r": "PRIMARY"}, false)
	expectPlan(t, "min client cursor (CR-5)", explain(t, c, minClientCursor, "p", 0, 500),
		map[string]string{"_sync_clients": "_sync_clients_by_cursor"}, false)
}

// mysqlFormat1 creates, as storage format 1 did, the tables format 2
// changed: _sync_push_results without recorded_at_ms and its index, and
// _sync_clients without _sync_clients_by_cursor — the upgrade's starting
// point; infraDDL then completes the store.
var mysqlFormat1 = []string{
	`CREATE TABLE _sync_push_results (
	p VARBINARY(255) NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	client_commit_id VARBINARY(255) NOT NULL,
	result LONGBLOB NOT NULL,
	PRIMARY KEY (p, client_id, client_commit_id)
)` + tableOpts,
	`CREATE TABLE _sync_clients (
	p VARBINARY(255) NOT NULL,
	client_id VARBINARY(255) NOT NULL,
	actor_id VARBINARY(255) NOT NULL,
	wire_version BIGINT NOT NULL,
	cursor_seq BIGINT NOT NULL,
	updated_at_ms BIGINT NOT NULL,
	subscriptions LONGBLOB NOT NULL,
	PRIMARY KEY (p, client_id),
	KEY _sync_clients_by_time (p, updated_at_ms, client_id)
)` + tableOpts,
}

// TestUpgradeFormat1 opens a store of storage format 1 from four Conns at
// once: every open succeeds (the schema lock serializes the upgrade, and
// every step checks the catalog first), the store is at format 2, every
// result keeps its record time, an undecodable one included, and the
// retention statements (FORCE INDEX on the new index among them) work on
// it (PR-7, CR-5). A second open changes nothing.
func TestUpgradeFormat1(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	raw, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("format-1 fixture: %v\n%s", err, q)
		}
	}
	for _, q := range append(append([]string{}, mysqlFormat1...), infraDDL...) {
		exec(q)
	}
	exec(insertMetaIfAbsent, metaFormat, "1")
	for _, r := range faulttest.Format1Results() {
		exec(`INSERT INTO _sync_push_results (p, client_id, client_commit_id, result) VALUES (?, ?, ?, ?)`,
			r.Partition, r.ClientID, r.ClientCommitID, []byte(r.Text))
	}
	for _, cl := range faulttest.Format1Clients() {
		exec(upsertClient, cl.Partition, cl.ClientID, "u", 1, cl.Cursor, cl.UpdatedAtMs, []byte("[]"))
	}
	start := time.Now().UnixMilli()
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	var format string
	if err := raw.QueryRowContext(ctx, selectMeta, metaFormat).Scan(&format); err != nil || format != formatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %q", format, err, formatVersion)
	}
	faulttest.CheckUpgraded(t, conns[3], start)
	again, err := Driver{}.Open(ctx, dsn) // opening an upgraded store again changes nothing
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Close()
}

// format2Reactions is _sync_reactions as storage format 2 created it:
// without the reaction record's format-3 columns.
func format2Reactions(t *testing.T) string {
	t.Helper()
	cols := `	version BIGINT NOT NULL DEFAULT 0,
	source_client_id VARBINARY(255) NOT NULL DEFAULT '',
	source_client_commit_id VARBINARY(255) NOT NULL DEFAULT '',
	completed_at_ms BIGINT NULL,
`
	if !strings.Contains(reactionsDDL[0], cols) {
		t.Fatal("the format-3 columns are no longer in reactionsDDL as this fixture expects")
	}
	return strings.Replace(reactionsDDL[0], cols, "", 1)
}

// TestUpgradeFormat2 opens a store of storage format 2 holding reactions
// with several Conns at once: it ends at format 3 and every reaction reads
// back with the record's new fields (faulttest.CheckReactionsUpgraded).
func TestUpgradeFormat2(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	raw, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("format-2 fixture: %v\n%s", err, q)
		}
	}
	for _, q := range append([]string{format2Reactions(t)}, infraDDL...) {
		exec(q)
	}
	exec(insertMetaIfAbsent, metaFormat, "2")
	for _, r := range faulttest.Format2Reactions() {
		var due any
		if r.Status == driver.ReactionPending {
			due = r.AvailableAtMs
		}
		exec(`INSERT INTO _sync_reactions (p, k, type, payload, status, attempts, max_attempts, source_commit_seq,
	created_at_ms, available_at_ms, due_at_ms, lease_owner, lease_expires_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, ?)`, r.Partition, r.Key, r.Type, []byte(r.Payload), string(r.Status),
			r.Attempts, r.MaxAttempts, r.SourceCommitSeq, r.CreatedAtMs, r.AvailableAtMs, due, r.UpdatedAtMs)
	}
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	var format string
	if err := raw.QueryRowContext(ctx, selectMeta, metaFormat).Scan(&format); err != nil || format != "3" {
		t.Fatalf("storage format after the upgrade: %q, %v; want 3", format, err)
	}
	faulttest.CheckReactionsUpgraded(t, conns[3])
}
