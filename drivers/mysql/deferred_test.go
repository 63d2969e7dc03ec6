package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// The Tx's kept writes and its lazy TX-8 savepoint (stage.go): every
// operation that sends writes ahead of Commit, errors that now surface
// where the kept writes are sent, ends of contexts. The buffer a caller
// reuses after a call is conformance's TX-12 case.

// deferredState is everything of partition p a Tx could have left behind.
func deferredState(t *testing.T, c *Conn, p string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, q := range []string{
		"SELECT COUNT(*) FROM todos WHERE _sync_partition = ?",
		"SELECT COUNT(*) FROM users WHERE _sync_partition = ?",
		"SELECT COUNT(*) FROM kinds WHERE _sync_partition = ?",
		"SELECT COUNT(*) FROM _sync_commits WHERE p = ?",
		"SELECT COUNT(*) FROM _sync_changes WHERE p = ?",
		"SELECT COUNT(*) FROM _sync_change_scopes WHERE p = ?",
		"SELECT COUNT(*) FROM _sync_push_results WHERE p = ?",
		"SELECT COUNT(*) FROM _sync_reactions WHERE p = ?",
		"SELECT COUNT(*) FROM _sync_blob_refs WHERE p = ?",
		"SELECT COALESCE(MAX(max_seq), -1) FROM _sync_partitions WHERE p = ?",
		"SELECT COALESCE(SUM(title = 'changed'), 0) FROM todos WHERE _sync_partition = ?",
	} {
		var n int64
		if err := c.db.QueryRowContext(ctx, q, p).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		fmt.Fprintf(&b, "%s=%d\n", q[strings.Index(q, "FROM")+5:strings.Index(q, " WHERE")], n)
	}
	var host int
	if err := c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM review_host").Scan(&host); err == nil {
		fmt.Fprintf(&b, "review_host=%d\n", host)
	}
	return b.String()
}

// expectNothingLanded fails unless partition p holds what before saw
// (what: the rule, for the message) and its next commit takes seq 2 (SEQ-2).
func expectNothingLanded(t *testing.T, c *Conn, before, what string) {
	t.Helper()
	if after := deferredState(t, c, "p"); after != before {
		t.Errorf("%s:\n%s\nwant\n%s", what, after, before)
	}
	if seq := pushRows(t, c, "p", todoRow("next", "p0", "o0")); seq != 2 {
		t.Errorf("SEQ-2: next seq %d, want 2", seq)
	}
}

// beginP begins a Tx on partition "p", rolled back when t ends.
func beginP(t *testing.T, c *Conn) *Tx {
	t.Helper()
	tx, err := c.Begin(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx.(*Tx)
}

func deferredChange(table string, r driver.Row) driver.Change {
	return driver.Change{Table: table, RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion}
}

// TestDeferredRejectAfterEarlyWrite: for every operation that sends the
// Tx's kept writes (or writes of its own) ahead of Commit, a Tx that
// stages rows, appends commits, puts a result, runs that operation, keeps
// writing, then CommitRejected, leaves exactly what was there before plus
// the rejected result (TX-8, SEQ-2), and the next commit takes seq 2.
func TestDeferredRejectAfterEarlyWrite(t *testing.T) {
	type step func(ctx context.Context, t *testing.T, tx *Tx)
	cases := map[string]step{
		"none": func(ctx context.Context, t *testing.T, tx *Tx) {},
		"GetRow": func(ctx context.Context, t *testing.T, tx *Tx) {
			if _, found, err := tx.GetRow(ctx, "todos", "s1"); err != nil || !found {
				t.Fatalf("GetRow: %v %v", found, err)
			}
		},
		"ScanRows": func(ctx context.Context, t *testing.T, tx *Tx) {
			if _, err := tx.ScanRows(ctx, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 10}); err != nil {
				t.Fatal(err)
			}
		},
		"GetPushResult": func(ctx context.Context, t *testing.T, tx *Tx) {
			if _, found, err := tx.GetPushResult(ctx, "c1", "other"); err != nil || !found {
				t.Fatalf("GetPushResult: %v %v", found, err)
			}
		},
		"DeleteRow": func(ctx context.Context, t *testing.T, tx *Tx) {
			if err := tx.DeleteRow(ctx, "todos", "base"); err != nil {
				t.Fatal(err)
			}
		},
		"SetBlobRefs": func(ctx context.Context, t *testing.T, tx *Tx) {
			if err := tx.SetBlobRefs(ctx, "todos", "s1", []string{"b1", "b2"}); err != nil {
				t.Fatal(err)
			}
		},
		"EnqueueReactions": func(ctx context.Context, t *testing.T, tx *Tx) {
			if err := tx.EnqueueReactions(ctx, 2, []driver.ReactionInput{{Key: "rk", Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: 1}}); err != nil {
				t.Fatal(err)
			}
		},
		"EnqueueReactionsMulti": func(ctx context.Context, t *testing.T, tx *Tx) {
			if err := tx.EnqueueReactions(ctx, 2, rxInputs("m", enqueueBatchRows+5, 1)); err != nil {
				t.Fatal(err)
			}
		},
		"UniqueUpsert": func(ctx context.Context, t *testing.T, tx *Tx) {
			if err := tx.UpsertRow(ctx, "users", driver.Row{ID: "u9", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"},
				Values: driver.Values{"id": "u9", "org": "o", "email": "u9@example.com"}}); err != nil {
				t.Fatal(err)
			}
		},
		"UniqueCollision": func(ctx context.Context, t *testing.T, tx *Tx) {
			err := tx.UpsertRow(ctx, "users", driver.Row{ID: "u8", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"},
				Values: driver.Values{"id": "u8", "org": "o", "email": "u1@example.com"}})
			if driver.CodeOf(err) != driver.CodeConstraintViolation {
				t.Fatalf("collision: %v", err)
			}
		},
		"AsHostWrite": func(ctx context.Context, t *testing.T, tx *Tx) {
			var h *sql.Tx
			if !tx.As(&h) {
				t.Fatal("As gave no handle")
			}
			if _, err := h.ExecContext(ctx, "INSERT INTO review_host (k) VALUES ('x')"); err != nil {
				t.Fatal(err)
			}
		},
		"AsOnly": func(ctx context.Context, t *testing.T, tx *Tx) {
			var h *sql.Tx
			if !tx.As(&h) {
				t.Fatal("As gave no handle")
			}
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			c := openStore(t)
			ctx := context.Background()
			if _, err := c.db.ExecContext(ctx, "CREATE TABLE review_host (k VARCHAR(64) PRIMARY KEY) ENGINE=InnoDB"); err != nil {
				t.Fatal(err)
			}
			base := todoRow("base", "p0", "o0")
			pushRows(t, c, "p", base)
			// a users row for the collision case
			tx0, err := c.Begin(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx0.UpsertRow(ctx, "users", driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"},
				Values: driver.Values{"id": "u1", "org": "o", "email": "u1@example.com"}}); err != nil {
				t.Fatal(err)
			}
			if err := tx0.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			before := deferredState(t, c, "p")

			tx := beginP(t, c)
			changed := todoRow("base", "p0", "o0")
			changed.Values["title"] = "changed"
			s1 := todoRow("s1", "p1", "o1")
			for _, r := range []driver.Row{changed, s1} {
				if err := tx.UpsertRow(ctx, "todos", r); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.UpsertRow(ctx, "kinds", kindsRow("k1", "g", "s", 1, nil)); err != nil {
				t.Fatal(err)
			}
			if seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "a", CreatedAtMs: 1,
				Changes: []driver.Change{deferredChange("todos", changed), deferredChange("todos", s1)}}); err != nil || seq != 2 {
				t.Fatalf("AppendCommit: %d %v", seq, err)
			}
			if err := tx.PutPushResult(ctx, "c1", "other", driver.PushResult{Status: driver.PushApplied, CommitSeq: 2, RecordedAtMs: 1}); err != nil {
				t.Fatal(err)
			}
			run(ctx, t, tx)
			s2 := todoRow("s2", "p2", "o2")
			if err := tx.UpsertRow(ctx, "todos", s2); err != nil {
				t.Fatal(err)
			}
			if seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "b", CreatedAtMs: 1,
				Changes: []driver.Change{deferredChange("todos", s2)}}); err != nil || seq != 3 {
				t.Fatalf("AppendCommit 2: %d %v", seq, err)
			}
			if err := tx.PutPushResult(ctx, "c1", "other2", driver.PushResult{Status: driver.PushApplied, CommitSeq: 3, RecordedAtMs: 1}); err != nil {
				t.Fatal(err)
			}
			rej := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 5}
			if err := tx.CommitRejected(ctx, "c1", "k", rej); err != nil {
				t.Fatalf("CommitRejected: %v", err)
			}
			got, found, err := c.GetPushResult(ctx, "p", "c1", "k")
			if err != nil || !found || got.Status != driver.PushRejected {
				t.Errorf("TX-8: rejected result: %+v %v %v", got, found, err)
			}
			expectNothingLanded(t, c, strings.Replace(before, "_sync_push_results=0", "_sync_push_results=1", 1),
				"TX-8: after CommitRejected (the rejected result alone added)")
		})
	}
}

// TestDeferredSeqTakenAtCommit: the seq the Tx reserved is taken behind its
// back (as a Galera node applying another node's commit would): the kept
// commit log collides at Commit (or at a read that sends it). The error
// must be write_conflict, never constraint_violation, nothing of the Tx
// may land, and the partition must take the next Tx.
func TestDeferredSeqTakenAtCommit(t *testing.T) {
	for _, viaRead := range []bool{false, true} {
		t.Run(fmt.Sprint("viaRead=", viaRead), func(t *testing.T) {
			c := openStore(t)
			ctx := context.Background()
			pushRows(t, c, "p", todoRow("base", "p0", "o0"))
			tx := beginP(t, c)
			s1 := todoRow("s1", "p1", "o1")
			if err := tx.UpsertRow(ctx, "todos", s1); err != nil {
				t.Fatal(err)
			}
			if seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "a", CreatedAtMs: 1,
				Changes: []driver.Change{deferredChange("todos", s1)}}); err != nil || seq != 2 {
				t.Fatalf("AppendCommit: %d %v", seq, err)
			}
			if err := tx.PutPushResult(ctx, "c1", "a", driver.PushResult{Status: driver.PushApplied, CommitSeq: 2, RecordedAtMs: 1}); err != nil {
				t.Fatal(err)
			}
			// Another writer takes seq 2 (autocommit, no partition lock).
			if _, err := c.db.ExecContext(ctx, "INSERT INTO _sync_commits (p, seq, client_id, client_commit_id, actor_id, created_at_ms) VALUES ('p', 2, 'x', 'x', '', 1)"); err != nil {
				t.Fatal(err)
			}
			before := deferredState(t, c, "p")
			var err error
			if viaRead {
				_, _, err = tx.GetRow(ctx, "todos", "s1")
				if code := driver.CodeOf(err); code != driver.CodeWriteConflict {
					t.Errorf("TX-9: read that sent the log: %v (code %q), want write_conflict", err, code)
				}
			}
			err = tx.Commit(ctx)
			if err == nil {
				t.Fatal("Commit succeeded on a taken seq")
			}
			if code := driver.CodeOf(err); code == driver.CodeConstraintViolation || (!viaRead && code != driver.CodeWriteConflict) {
				t.Errorf("TX-9: Commit: %v (code %q), want write_conflict", err, code)
			}
			t.Logf("Commit: %v", err)
			if after := deferredState(t, c, "p"); after != before {
				t.Errorf("TX-9: nothing written:\n%s\nwant\n%s", after, before)
			}
			if _, err := c.db.ExecContext(ctx, "DELETE FROM _sync_commits WHERE p = 'p' AND seq = 2"); err != nil {
				t.Fatal(err)
			}
			if seq := pushRows(t, c, "p", todoRow("next", "p0", "o0")); seq != 2 {
				t.Errorf("SEQ-2: next seq %d, want 2", seq)
			}
		})
	}
}

// TestDeferredEndedContextOnKeptWrite: AppendCommit / PutPushResult called
// with an ended context (their own, or Begin's). stage documents "An ended
// ctx (or Begin's ...) fails the call and aborts the Tx, as a statement
// run under it would (TX-6)"; before c5028fa AppendCommit and PutPushResult
// ran a statement under ctx and so failed and aborted the Tx; the postgres
// driver, which keeps them too, fails them in its op (TX-6).
func TestDeferredEndedContextOnKeptWrite(t *testing.T) {
	for _, which := range []string{"AppendCommit", "PutPushResult", "UpsertRow"} {
		t.Run(which, func(t *testing.T) {
			c := openStore(t)
			ctx := context.Background()
			pushRows(t, c, "p", todoRow("base", "p0", "o0"))
			tx := beginP(t, c)
			ended, cancel := context.WithCancel(ctx)
			cancel()
			s1 := todoRow("s1", "p1", "o1")
			opCtx := func(w string) context.Context {
				if w == which {
					return ended
				}
				return ctx
			}
			errs := map[string]error{}
			errs["UpsertRow"] = tx.UpsertRow(opCtx("UpsertRow"), "todos", s1)
			_, errs["AppendCommit"] = tx.AppendCommit(opCtx("AppendCommit"), driver.CommitInput{ClientID: "c1", ClientCommitID: "a", CreatedAtMs: 1,
				Changes: []driver.Change{deferredChange("todos", s1)}})
			errs["PutPushResult"] = tx.PutPushResult(opCtx("PutPushResult"), "c1", "a", driver.PushResult{Status: driver.PushApplied, CommitSeq: 2, RecordedAtMs: 1})
			cerr := tx.Commit(ctx)
			t.Logf("%s with an ended context: %v; Commit: %v", which, errs[which], cerr)
			if errs[which] == nil {
				t.Errorf("TX-6: %s with an ended context succeeded", which)
			}
			if cerr == nil {
				t.Errorf("TX-6: Commit succeeded after %s ran with an ended context", which)
			}
		})
	}
}

// TestDeferredBeginContextEnded: Begin's context ends after the Tx's writes
// were kept: AppendCommit/PutPushResult, Commit, and what is left.
func TestDeferredBeginContextEnded(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	pushRows(t, c, "p", todoRow("base", "p0", "o0"))
	before := deferredState(t, c, "p")
	bctx, cancel := context.WithCancel(ctx)
	dtx, err := c.Begin(bctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	tx := dtx.(*Tx)
	defer func() { _ = tx.Rollback(ctx) }()
	s1 := todoRow("s1", "p1", "o1")
	if err := tx.UpsertRow(ctx, "todos", s1); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, aerr := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "a", CreatedAtMs: 1,
		Changes: []driver.Change{deferredChange("todos", s1)}})
	perr := tx.PutPushResult(ctx, "c1", "a", driver.PushResult{Status: driver.PushApplied, CommitSeq: 2, RecordedAtMs: 1})
	cerr := tx.Commit(ctx)
	t.Logf("AppendCommit: %v; PutPushResult: %v; Commit: %v", aerr, perr, cerr)
	if aerr == nil || perr == nil {
		t.Errorf("TX-6: AppendCommit/PutPushResult after Begin's context ended succeeded (%v, %v), as UpsertRow does not", aerr, perr)
	}
	if cerr == nil {
		t.Fatal("TX-6: Commit succeeded after Begin's context ended")
	}
	if code := driver.CodeOf(cerr); code != driver.CodeUnavailable {
		t.Errorf("TX-6: Commit: code %q, want unavailable", code)
	}
	expectNothingLanded(t, c, before, "TX-6: nothing written:")
}

// TestDeferredKeptWritesOrder: upserts of two tables interleaved with
// several commits (SEQ-3), a row upserted again after the commit that
// logged it, a result put twice (PR-3), everything split into many
// statements by a small stmtBytes, with a read in the middle: Commit lands
// all of it, in the order made, and max_seq is the last seq.
func TestDeferredKeptWritesOrder(t *testing.T) {
	c := openStore(t)
	c.stmtBytes = 1500
	ctx := context.Background()
	pushRows(t, c, "p", todoRow("base", "p0", "o0"))
	tx := beginP(t, c)
	var last driver.Row
	for round := range 3 {
		var changes []driver.Change
		for i := range 40 {
			r := todoRow(fmt.Sprintf("r%02d", i), fmt.Sprint("p", i%3), "o")
			r.Values["title"] = fmt.Sprintf("round %d %s", round, strings.Repeat("x", i*10))
			if err := tx.UpsertRow(ctx, "todos", r); err != nil {
				t.Fatal(err)
			}
			if err := tx.UpsertRow(ctx, "kinds", kindsRow(fmt.Sprintf("k%02d", i), "g", fmt.Sprint(round), 1, nil)); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, deferredChange("todos", r))
			last = r
		}
		seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprint("cc", round), CreatedAtMs: 1, Changes: changes})
		if err != nil || seq != int64(2+round) {
			t.Fatalf("AppendCommit %d: %d %v", round, seq, err)
		}
		if err := tx.PutPushResult(ctx, "c1", "k", driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1}); err != nil {
			t.Fatal(err)
		}
		if round == 1 {
			got, found, err := tx.GetPushResult(ctx, "c1", "k")
			if err != nil || !found || got.CommitSeq != 2 {
				t.Errorf("TX-3/PR-3: GetPushResult in the Tx: %+v %v %v", got, found, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, found, err := c.GetRow(ctx, "p", "todos", last.ID)
	if err != nil || !found || got.Values["title"] != last.Values["title"] {
		t.Errorf("ROW-2: last write wins: %v %v %v", got.Values["title"], found, err)
	}
	k, _, _ := c.GetRow(ctx, "p", "kinds", "k05")
	if k.Values["s"] != "2" {
		t.Errorf("kinds k05 s = %v, want 2", k.Values["s"])
	}
	pr, _, _ := c.GetPushResult(ctx, "p", "c1", "k")
	if pr.CommitSeq != 2 {
		t.Errorf("PR-3: first writer wins: %d", pr.CommitSeq)
	}
	var maxSeq, commits, changes int64
	_ = c.db.QueryRowContext(ctx, "SELECT max_seq FROM _sync_partitions WHERE p = 'p'").Scan(&maxSeq)
	_ = c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM _sync_commits WHERE p = 'p'").Scan(&commits)
	_ = c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM _sync_changes WHERE p = 'p'").Scan(&changes)
	if maxSeq != 4 || commits != 4 || changes != 1+120 {
		t.Errorf("SEQ-3: max_seq %d commits %d changes %d, want 4 4 121", maxSeq, commits, changes)
	}
	if seq := pushRows(t, c, "p", todoRow("next", "p0", "o0")); seq != 5 {
		t.Errorf("SEQ-1: next seq %d, want 5", seq)
	}
}

// TestDeferredLogValueTooLong: a change-scope value longer than its column
// (sync refuses it, V-2; the driver alone does not): the kept log fails at
// Commit. Nothing may land, the error is typed, the partition goes on.
func TestDeferredLogValueTooLong(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	pushRows(t, c, "p", todoRow("base", "p0", "o0"))
	before := deferredState(t, c, "p")
	tx := beginP(t, c)
	r := todoRow("s1", "p1", "o1")
	if err := tx.UpsertRow(ctx, "todos", r); err != nil {
		t.Fatal(err)
	}
	ch := deferredChange("todos", r)
	ch.Scopes = driver.Scopes{"project": strings.Repeat("v", 1100), "owner": "o1"}
	_, aerr := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "a", CreatedAtMs: 1, Changes: []driver.Change{ch}})
	cerr := tx.Commit(ctx)
	t.Logf("AppendCommit: %v; Commit: %v", aerr, cerr)
	if aerr == nil && cerr == nil {
		t.Fatal("a change-scope value over its column landed")
	}
	expectNothingLanded(t, c, before, "nothing written:")
}
