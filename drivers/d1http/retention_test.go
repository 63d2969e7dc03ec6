package d1http

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/faulttest"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestRetentionPlans pins, on the D1 double, the plans of the statements
// retention sends (PR-7, CR-4, CR-5): each walks its index and stops at
// its limit, no scan of the partition's results or clients, no sort.
// drivers/sqlite's TestPlansRetention pins the same SQL on a loaded,
// analyzed store.
func TestRetentionPlans(t *testing.T) {
	srv, _ := newDouble(t)
	c := openOn(t, srv, "")
	for _, pc := range []struct {
		name string
		q    string
		args []any
		want []string
	}{
		{"delete push results (PR-7)", sqlitesql.DeletePushResultsBefore, []any{"P", 100, 10},
			[]string{"USING COVERING INDEX _sync_push_results_by_time (partition=? AND recorded_at_ms<?)", "_sync_push_results USING PRIMARY KEY"}},
		{"delete client records (CR-4)", sqlitesql.DeleteClientRecordsBefore, []any{"P", 100, 10},
			[]string{"USING COVERING INDEX _sync_clients_by_time (partition=? AND updated_at_ms<?)", "_sync_clients USING PRIMARY KEY"}},
		{"min client cursor (CR-5)", d1sql.D1MinClientCursor, []any{"P", 100, 0},
			[]string{"USING COVERING INDEX _sync_clients_by_cursor (partition=? AND cursor>?)"}},
	} {
		checkD1Plan(t, c, pc.name, pc.q, pc.args, pc.want, []string{"SCAN _sync", "TEMP B-TREE"})
	}
}

// checkD1Plan checks that the EXPLAIN QUERY PLAN details of q, run on c,
// contain every want and none of the forbidden fragments.
func checkD1Plan(t *testing.T, c *Conn, name, q string, args []any, want, forbidden []string) {
	t.Helper()
	rows, err := c.rows(t.Context(), "explain", "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var lines []string
	for _, r := range rows {
		s, _ := rawString(r[len(r)-1])
		lines = append(lines, s)
	}
	plan := strings.Join(lines, "\n")
	t.Logf("%s:\n%s", name, plan)
	for _, w := range want {
		if !strings.Contains(plan, w) {
			t.Errorf("%s: plan lacks %q:\n%s", name, w, plan)
		}
	}
	for _, f := range forbidden {
		if strings.Contains(plan, f) {
			t.Errorf("%s: plan contains %q:\n%s", name, f, plan)
		}
	}
}

// TestUpgradeFormat1 opens a store of storage format 1 from four Conns at
// once, on the D1 double and, when it is on, the miniflare lane (D1's
// real engine): the upgrade is one atomic batch, a Conn whose batch lost
// the race (the column already added) finds the store at format 2 and
// goes on; every result keeps its record time, an undecodable one
// included, and the retention statements work on it (PR-7, CR-5).
func TestUpgradeFormat1(t *testing.T) {
	t.Run("double", func(t *testing.T) {
		_, base := newDouble(t)
		testUpgradeFormat1(t, base)
	})
	t.Run("miniflare", func(t *testing.T) { testUpgradeFormat1(t, miniflareBase(t)) })
}

func testUpgradeFormat1(t *testing.T, base string) {
	ctx := t.Context()
	dsn, drop, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []stmt
	for _, q := range append(append(append([]string{}, sqlitesql.Format1DDL...), sqlitesql.InfraDDL...), d1sql.D1DDL...) {
		stmts = append(stmts, st(q))
	}
	stmts = append(stmts, st(sqlitesql.Format1InsertMeta))
	for _, r := range faulttest.Format1Results() {
		stmts = append(stmts, st(sqlitesql.Format1InsertPushResult, r.Partition, r.ClientID, r.ClientCommitID, r.Text))
	}
	for _, cl := range faulttest.Format1Clients() {
		stmts = append(stmts, st(sqlitesql.UpsertClient, cl.Partition, cl.ClientID, "u", 1, cl.Cursor, cl.UpdatedAtMs, "[]"))
	}
	if _, err := newClient(cfg, nil).write(ctx, "format-1 fixture", stmts); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixMilli()
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	if f, err := conns[0].(*Conn).storedFormat(ctx); err != nil || f != sqlitesql.FormatVersion {
		t.Fatalf("storage format after the upgrade: %q, %v; want %q", f, err, sqlitesql.FormatVersion)
	}
	faulttest.CheckUpgraded(t, conns[1], start)
}

// TestUpgradeFormat2 opens a store of storage format 2 holding reactions
// with several Conns at once: it ends at format 3 and every reaction reads
// back with the record's new fields (faulttest.CheckReactionsUpgraded).
func TestUpgradeFormat2(t *testing.T) {
	t.Run("double", func(t *testing.T) {
		_, base := newDouble(t)
		testUpgradeFormat2(t, base)
	})
	t.Run("miniflare", func(t *testing.T) { testUpgradeFormat2(t, miniflareBase(t)) })
}

func testUpgradeFormat2(t *testing.T, base string) {
	ctx := t.Context()
	dsn, drop, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []stmt
	for _, q := range append(append(append([]string{}, sqlitesql.InfraDDL...), d1sql.D1DDL...), sqlitesql.RetentionDDL...) {
		stmts = append(stmts, st(q))
	}
	stmts = append(stmts, st(sqlitesql.InsertMetaIfAbsent, sqlitesql.MetaFormat, "2"))
	for _, r := range faulttest.Format2Reactions() {
		var due any
		if r.Status == driver.ReactionPending {
			due = r.AvailableAtMs
		}
		stmts = append(stmts, st(sqlitesql.Format2InsertReaction, r.Partition, r.Key, r.Type, string(r.Payload), string(r.Status),
			r.Attempts, r.MaxAttempts, r.SourceCommitSeq, r.CreatedAtMs, r.AvailableAtMs, due, r.UpdatedAtMs))
	}
	if _, err := newClient(cfg, nil).write(ctx, "format-2 fixture", stmts); err != nil {
		t.Fatal(err)
	}
	conns := faulttest.OpenConcurrently(t, 4, func(ctx context.Context) (driver.Conn, error) { return Driver{}.Open(ctx, dsn) })
	if f, err := conns[0].(*Conn).storedFormat(ctx); err != nil || f != "3" {
		t.Fatalf("storage format after the upgrade: %q, %v; want 3", f, err)
	}
	faulttest.CheckReactionsUpgraded(t, conns[1])
}
