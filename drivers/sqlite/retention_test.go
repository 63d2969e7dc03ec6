package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestPlansRetention pins the plans of the retention statements (PR-7,
// CR-4, CR-5; d1http runs the same SQL): each walks its index in order
// and stops at its limit, never scanning the partition's results or
// clients, never sorting.
func TestPlansRetention(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := range 200 {
		rec := driver.ClientRecord{ClientID: string(rune('a'+i%26)) + string(rune('a'+i/26)), ActorID: "u", Cursor: int64(i), UpdatedAtMs: int64(i * 7 % 200)}
		if err := c.PutClientRecord(ctx, "P", rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, c, []planCase{
		{name: "delete push results (PR-7)", query: sqlitesql.DeletePushResultsBefore, args: []any{"P", 100, 10},
			want: []string{"_sync_push_results USING PRIMARY KEY (partition=? AND client_id=? AND client_commit_id=?)",
				"SEARCH _sync_push_results USING COVERING INDEX _sync_push_results_by_time (partition=? AND recorded_at_ms<?)"},
			forbidden: []string{"SCAN _sync_push_results", "TEMP B-TREE"}},
		{name: "delete client records (CR-4)", query: sqlitesql.DeleteClientRecordsBefore, args: []any{"P", 100, 10},
			want: []string{"_sync_clients USING PRIMARY KEY (partition=? AND client_id=?)",
				"SEARCH _sync_clients USING COVERING INDEX _sync_clients_by_time (partition=? AND updated_at_ms<?)"},
			forbidden: []string{"SCAN _sync_clients", "TEMP B-TREE"}},
		{name: "min client cursor (CR-5)", query: sqlitesql.MinClientCursor, args: []any{"P", 100, 0},
			want:      []string{"SEARCH _sync_clients USING COVERING INDEX _sync_clients_by_cursor (partition=? AND cursor>?)"},
			forbidden: []string{"SCAN _sync_clients", "TEMP B-TREE"}},
	})
}

// TestUpgradeFormat1 opens a store of storage format 1 (its push results
// without recorded_at_ms) from four Conns at once: every open succeeds,
// the store is at format 2, every result keeps its record time and the
// retention statements work on it (PR-7). A second open changes nothing.
func TestUpgradeFormat1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("format-1 fixture: %v\n%s", err, q)
		}
	}
	for _, q := range append(append([]string{}, sqlitesql.Format1DDL...), sqlitesql.InfraDDL...) {
		exec(q)
	}
	exec(sqlitesql.Format1InsertMeta)
	for _, r := range faulttest.Format1Results() {
		exec(sqlitesql.Format1InsertPushResult, r.Partition, r.ClientID, r.ClientCommitID, r.Text)
	}
	for _, c := range faulttest.Format1Clients() {
		exec(sqlitesql.UpsertClient, c.Partition, c.ClientID, "u", 1, c.Cursor, c.UpdatedAtMs, "[]")
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixMilli()
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, path) })
	var format string
	if err := conns[0].(*Conn).queryRow(ctx, conns[0].(*Conn).reader(), sqlitesql.SelectMeta, []any{sqlitesql.MetaFormat}, &format); err != nil || format != sqlitesql.FormatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %q", format, err, sqlitesql.FormatVersion)
	}
	faulttest.CheckUpgraded(t, conns[1], start)
	openDSN(t, path) // opening an upgraded store again changes nothing
}

// TestUpgradeFormat2 opens a store of storage format 2 holding reactions
// (InfraDDL's layout, the format recorded as 2) with several Conns at
// once: the store ends at format 3 and every reaction reads back with the
// record's new fields (faulttest.CheckReactionsUpgraded).
func TestUpgradeFormat2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("format-2 fixture: %v\n%s", err, q)
		}
	}
	for _, q := range append(append([]string{}, sqlitesql.InfraDDL...), sqlitesql.RetentionDDL...) {
		exec(q)
	}
	exec(sqlitesql.InsertMetaIfAbsent, sqlitesql.MetaFormat, "2")
	for _, r := range faulttest.Format2Reactions() {
		var due any
		if r.Status == driver.ReactionPending {
			due = r.AvailableAtMs
		}
		exec(sqlitesql.Format2InsertReaction, r.Partition, r.Key, r.Type, string(r.Payload), string(r.Status), r.Attempts,
			r.MaxAttempts, r.SourceCommitSeq, r.CreatedAtMs, r.AvailableAtMs, due, r.UpdatedAtMs)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, path) })
	var format string
	if err := conns[0].(*Conn).queryRow(ctx, conns[0].(*Conn).reader(), sqlitesql.SelectMeta, []any{sqlitesql.MetaFormat}, &format); err != nil || format != "3" {
		t.Fatalf("storage format after the upgrade: %q, %v; want 3", format, err)
	}
	faulttest.CheckReactionsUpgraded(t, conns[1])
	openDSN(t, path) // opening an upgraded store again changes nothing
}
