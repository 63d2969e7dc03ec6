package sqlitesql_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// These tests run the reaction SQL on a bare SQLite database: the plans
// (every statement index-driven, never a scan of _sync_reactions or a sort
// of more than a bounded set) and the statements' edge behaviour that the
// driver relies on. The contract itself is checked by the conformance
// suite through the drivers.

func rxDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "rx.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	for _, s := range append(sqlitesql.ReactionsDDL, sqlitesql.ReactionsFormat3DDL...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("DDL: %v\n%s", err, s)
		}
	}
	return db
}

// plan returns the EXPLAIN QUERY PLAN detail lines of stmt.
func plan(t *testing.T, db *sql.DB, stmt string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+stmt, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN: %v\n%s", err, stmt)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	return out
}

// TestReactionPlansUseIndexes pins the plan of every reaction statement:
// each reads _sync_reactions only through the index meant for it, and no
// statement scans the table (docs/performance.md: cost must not grow with the store).
func TestReactionPlansUseIndexes(t *testing.T) {
	db := rxDB(t)
	types := `["a","b"]`
	for _, tc := range []struct {
		name  string
		stmt  string
		args  []any
		wants []string // each must appear in some plan line
	}{
		{"claim lease, all types", sqlitesql.ClaimLease, []any{"p", 1, 10, nil, "w", 2},
			[]string{"USING INDEX _sync_reactions_due (partition=? AND due_at_ms<?)", "INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"claim lease, types", sqlitesql.ClaimLease, []any{"p", 1, 10, types, "w", 2},
			[]string{"USING INDEX _sync_reactions_due (partition=? AND due_at_ms<?)"}},
		{"claim dead-letters exhausted", sqlitesql.ClaimDeadLetterExhausted, []any{"p", 1, nil, sqlitesql.ExhaustedCode},
			[]string{"USING INDEX _sync_reactions_exhausted (partition=? AND due_at_ms<?)"}},
		{"complete", sqlitesql.CompleteReaction, []any{"p", "k", "w", 1},
			[]string{"INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"extend", sqlitesql.ExtendReactionLease, []any{"p", "k", "w", 1, 2},
			[]string{"INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"fail retry", sqlitesql.FailReactionRetry, []any{"p", "k", "w", 1, 2, "c", nil},
			[]string{"INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"fail dead", sqlitesql.FailReactionDead, []any{"p", "k", "w", 1, "c", nil},
			[]string{"INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"retry", sqlitesql.RetryReaction, []any{"p", "k", 1},
			[]string{"INDEX sqlite_autoindex__sync_reactions_1 (partition=? AND key=?)"}},
		{"list", sqlitesql.ListReactions, []any{"p", 1, 1, 1, 1, types, 10, nil, nil},
			[]string{"USING INDEX _sync_reactions_list (partition=? AND status=? AND (created_at_ms,key)<(?,?))"}},
		{"list after a cursor", sqlitesql.ListReactions, []any{"p", 1, 1, 1, 1, types, 10, "k", 5},
			[]string{"USING INDEX _sync_reactions_list (partition=? AND status=? AND (created_at_ms,key)<(?,?))"}},
		{"prune", sqlitesql.PruneReactions, []any{"p", 1, 1, 10},
			[]string{"USING INDEX _sync_reactions_prune (partition=? AND status=? AND updated_at_ms<?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := plan(t, db, tc.stmt, tc.args...)
			t.Logf("plan:\n%s", strings.Join(lines, "\n"))
			all := strings.Join(lines, "\n")
			for _, l := range lines {
				if strings.HasPrefix(l, "SCAN _sync_reactions") || strings.HasPrefix(l, "SCAN r") {
					t.Errorf("plan scans the table: %q\nplan:\n%s", l, all)
				}
			}
			for _, w := range tc.wants {
				if !strings.Contains(all, w) {
					t.Errorf("plan lacks %q\nplan:\n%s", w, all)
				}
			}
			// Claims and lists walk their index in order: no sort of the
			// candidate set (only the bounded outer merge of a list/prune).
			if tc.stmt == sqlitesql.ClaimLease && strings.Contains(all, "TEMP B-TREE FOR ORDER BY") {
				t.Errorf("claim sorts its candidates instead of walking the due index in order:\n%s", all)
			}
		})
	}
}

// TestEnqueueBatchIsAtomicAndExact checks that one EnqueueReactions
// statement inserts all of a batch or none (a duplicate key anywhere), and
// that payload text and int64 times come back byte-for-byte.
func TestEnqueueBatchIsAtomicAndExact(t *testing.T) {
	ctx := context.Background()
	db := rxDB(t)
	payload := driver.JSON("{\"a\" :  [1, 2.50, \"\\u00e9<&>\u2028\"],\n\"a\": null}")
	batch, err := sqlitesql.EncodeReactionBatch([]driver.ReactionInput{
		{Key: "k1", Type: "t", Payload: payload, MaxAttempts: 3, CreatedAtMs: -9223372036854775808},
		{Key: "k2\u00e9", Type: "t", Payload: "{}", MaxAttempts: 1, CreatedAtMs: 9223372036854775807},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, sqlitesql.EnqueueReactions, "p", 7, batch); err != nil {
		t.Fatal(err)
	}
	var gotPayload string
	var created, due int64
	if err := db.QueryRowContext(ctx, `SELECT payload, created_at_ms, due_at_ms FROM _sync_reactions WHERE key = 'k1'`).Scan(&gotPayload, &created, &due); err != nil {
		t.Fatal(err)
	}
	if gotPayload != string(payload) || created != -9223372036854775808 || due != created {
		t.Errorf("stored payload %q created %d due %d; want %q and int64 min twice", gotPayload, created, due, payload)
	}
	dup, err := sqlitesql.EncodeReactionBatch([]driver.ReactionInput{
		{Key: "new", Type: "t", Payload: "{}", MaxAttempts: 1}, {Key: "k1", Type: "t", Payload: "{}", MaxAttempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, sqlitesql.EnqueueReactions, "p", 8, dup); err == nil {
		t.Fatal("a batch with a stored key was inserted")
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM _sync_reactions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d rows after a failed batch, want 2 (nothing of the batch)", n)
	}
}
