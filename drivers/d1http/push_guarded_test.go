package d1http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	syncstore "github.com/syncstore/syncstore/sync"
)

// w7Push is one docs/performance.md W7 push: W1's commit i through
// Store.Push, every op a create (base version 0).
func w7Push(ctx context.Context, s *syncstore.Store, i int) (syncstore.PushResponse, error) {
	cm := conformance.W1Commit(i)
	ops := make([]syncstore.PushOp, len(cm.Rows))
	for k, r := range cm.Rows {
		ops[k] = syncstore.PushOp{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values,
			BaseVersion: syncstore.Version(0)}
	}
	return s.Push(ctx, conformance.BenchPartition, syncstore.PushRequest{ClientID: cm.ClientID,
		ClientCommitID: cm.ClientCommitID, ActorID: cm.ActorID, Ops: ops})
}

// sqlHeads returns each statement's text up to its first "(".
func sqlHeads(b []stmt) []string {
	out := make([]string, len(b))
	for i, s := range b {
		out[i] = strings.SplitN(s.SQL, "(", 2)[0]
	}
	return out
}

// TestGuardedPushRequests pins the cost of a W7 push: through
// guarded writes (PUSH-9) a push of creates is ONE request once the Conn
// has committed in the partition, as W1's commit (TestPushCommitStatements),
// where the read-first push (BeginPush) took 2; and its batch has W1's 8
// statements and the client binding's 2 after the stamp guard (CR-7), the
// 10 rows ONE insert without ON CONFLICT (a row present fails it on the
// key) after ONE guard that none of them has a tombstone (ROW-5), the
// result one too. The Store's first push to the partition
// touches the registry first (REG-4). A push of updates at their
// base versions is one request too, its rows guarded by ONE statement
// before their upsert. A stale update's guard fails (1 request, nothing
// written), Push reads and rejects it (2 more), and the next push is
// again 1 request: a failed guard is not a lost race, the partition's
// counters stay known.
func TestGuardedPushRequests(t *testing.T) { onLanes(t, testGuardedPushRequests) }

func testGuardedPushRequests(t *testing.T, openSpy spyOpener) {
	ctx := context.Background()
	c, sp := openSpy(t, conformance.TestSchema())
	s := syncstore.OpenConn(c)
	if err := s.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		before := sp.count()
		resp, err := w7Push(ctx, s, i)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != driver.PushApplied || resp.CommitSeq != int64(i+1) || resp.Ops[0].ServerVersion != 1 {
			t.Fatalf("push %d: %s at seq %d, version %d; want applied at seq %d, version 1", i, resp.Status, resp.CommitSeq,
				resp.Ops[0].ServerVersion, i+1)
		}
		got := sp.since(before)
		want := 1
		if i == 0 {
			want = 3 // the registry touch (REG-4), and Begin reads the partition's stamp and max seq
		}
		if len(got) != want {
			t.Fatalf("push %d took %d requests, want %d", i, len(got), want)
		}
		batch := got[len(got)-1]
		wantSQL := sqlHeads([]stmt{st(d1sql.D1StampGuard), st(sqlitesql.BindClient), st(d1sql.D1BindGuard), st(d1sql.D1GuardNoTombstones), st("insert"),
			st(sqlitesql.InsertCommit), st(sqlitesql.InsertChanges), st(sqlitesql.InsertChangeScopes), st(d1sql.D1InsertPushResultGuarded),
			st(sqlitesql.SetMaxSeq), st(d1sql.D1TokenApplied)})
		wantSQL[4] = `INSERT INTO "` + conformance.BenchTable + `" AS ` + sqlitesql.UpsertAlias + ` `
		if diff := cmp.Diff(wantSQL, sqlHeads(batch)); diff != "" {
			t.Fatalf("push %d: the commit batch (-want +got):\n%s", i, diff)
		}
		if in := batch[4]; len(in.Params) != 1+len(resp.Ops) || strings.Contains(in.SQL, "ON CONFLICT") {
			t.Fatalf("push %d: the insert binds %d parameters (want 1 + %d rows) or has an ON CONFLICT clause", i, len(in.Params), len(resp.Ops))
		}
		if strings.Contains(batch[8].SQL, "ON CONFLICT") {
			t.Fatalf("push %d: the guarded result has an ON CONFLICT clause", i)
		}
	}

	// Updates at their base versions: one guard, one upsert.
	before := sp.count()
	cm := conformance.W1Commit(0)
	ops := make([]syncstore.PushOp, len(cm.Rows))
	for k, r := range cm.Rows {
		ops[k] = syncstore.PushOp{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values,
			BaseVersion: syncstore.Version(1)}
	}
	resp, err := s.Push(ctx, conformance.BenchPartition, syncstore.PushRequest{ClientID: "c", ClientCommitID: "updates", ActorID: "a", Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != driver.PushApplied || resp.Ops[0].ServerVersion != 2 {
		t.Fatalf("updates: %s, version %d; want applied at version 2", resp.Status, resp.Ops[0].ServerVersion)
	}
	got := sp.since(before)
	if len(got) != 1 {
		t.Fatalf("a push of updates took %d requests, want 1", len(got))
	}
	x := mustTable(t, c, conformance.BenchTable)
	wantSQL := sqlHeads([]stmt{st(d1sql.D1StampGuard), st(sqlitesql.BindClient), st(d1sql.D1BindGuard), st(d1sql.D1RowGuard(x)), st("upsert"),
		st(sqlitesql.InsertCommit), st(sqlitesql.InsertChanges), st(sqlitesql.InsertChangeScopes), st(d1sql.D1InsertPushResultGuarded),
		st(sqlitesql.SetMaxSeq), st(d1sql.D1TokenApplied)})
	wantSQL[4] = `INSERT INTO "` + conformance.BenchTable + `" AS ` + sqlitesql.UpsertAlias + ` `
	if diff := cmp.Diff(wantSQL, sqlHeads(got[0])); diff != "" {
		t.Fatalf("updates: the commit batch (-want +got):\n%s", diff)
	}
	if g := got[0][3]; len(g.Params) != 2 || strings.Count(g.Params[1].(string), "[") != 1+len(ops) {
		t.Fatalf("updates: the guard binds %v, want the partition and one entry per row", g.Params)
	}

	// A stale update: its guard fails the batch, Push reads and rejects.
	stale := conformance.W1Commit(0).Rows[0]
	before = sp.count()
	resp, err = s.Push(ctx, conformance.BenchPartition, syncstore.PushRequest{ClientID: "other", ClientCommitID: "stale",
		ActorID: "a", Ops: []syncstore.PushOp{{Table: conformance.BenchTable, RowID: stale.ID, Op: driver.OpUpsert,
			Values: stale.Values, BaseVersion: syncstore.Version(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != driver.PushRejected || resp.Ops[0].Status != driver.OpConflict || resp.Ops[0].ServerVersion != 2 {
		t.Fatalf("a stale update: %s, op %+v; want rejected, a conflict at version 2", resp.Status, resp.Ops[0])
	}
	if n := sp.count() - before; n != 3 {
		t.Fatalf("a stale update took %d requests, want 3 (the guarded batch, BeginPush, CommitRejected)", n)
	}
	before = sp.count()
	if _, err := w7Push(ctx, s, 3); err != nil {
		t.Fatal(err)
	}
	if n := sp.count() - before; n != 1 {
		t.Fatalf("the push after a failed guard took %d requests, want 1", n)
	}
}

// mustTable returns the ensured table name of c.
func mustTable(t *testing.T, c *Conn, name string) *sqlitesql.Table {
	t.Helper()
	x, err := c.state.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestGuardedWriteErrors: guarded creates of a table are one insert,
// guarded updates one guard and one upsert, and a row already in the
// statement starts a new one, so its guard sees the earlier write. A
// failed guard is CodeWriteConflict with nothing written, reported by
// Commit (a create over a row, an update at another version, a stored
// result) or at once (a result staged in the Tx).
func TestGuardedWriteErrors(t *testing.T) { onLanes(t, testGuardedWriteErrors) }

func testGuardedWriteErrors(t *testing.T, openSpy spyOpener) {
	ctx := context.Background()
	c, sp := openSpy(t, conformance.TestSchema())
	row := func(id string, v int64) driver.Row {
		r := conformance.BenchTodo(0)
		r.ID, r.Values["id"], r.ServerVersion = id, id, v
		return r
	}
	gtx, err := c.BeginGuarded(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	for k, g := range []struct {
		id   string
		base int64
	}{{"a", 0}, {"b", 0}, {"a", 1}, {"b", 1}, {"a", 2}} {
		if err := gtx.UpsertRowGuarded(ctx, conformance.BenchTable, row(g.id, g.base+1), g.base); err != nil {
			t.Fatalf("guarded upsert %d: %v", k, err)
		}
	}
	if err := gtx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	batch := sp.since(sp.count() - 1)[0]
	var kinds []string
	for _, s := range batch[1 : len(batch)-1] {
		switch {
		case s.SQL == d1sql.D1GuardNoTombstones:
			kinds = append(kinds, fmt.Sprintf("no tombstone %d", strings.Count(s.Params[2].(string), ",")+1))
		case strings.HasPrefix(s.SQL, "INSERT INTO _sync_d1_write_guard"):
			kinds = append(kinds, fmt.Sprintf("guard %d", strings.Count(s.Params[1].(string), "[")-1))
		case strings.Contains(s.SQL, "ON CONFLICT"):
			kinds = append(kinds, fmt.Sprintf("upsert %d", len(s.Params)-1))
		default:
			kinds = append(kinds, fmt.Sprintf("insert %d", len(s.Params)-1))
		}
	}
	if diff := cmp.Diff([]string{"no tombstone 2", "insert 2", "guard 2", "upsert 2", "guard 1", "upsert 1"}, kinds); diff != "" {
		t.Fatalf("the statements of rows a@0, b@0, a@1, b@1, a@2 (-want +got):\n%s", diff)
	}
	for id, v := range map[string]int64{"a": 3, "b": 2} {
		if r, _, err := c.GetRow(ctx, "p", conformance.BenchTable, id); err != nil || r.ServerVersion != v {
			t.Fatalf("row %s at version %d, %v; want %d", id, r.ServerVersion, err, v)
		}
	}

	for _, c2 := range []struct {
		name string
		run  func(tx driver.GuardedTx) error
	}{
		{"a create over a stored row", func(tx driver.GuardedTx) error {
			return tx.UpsertRowGuarded(ctx, conformance.BenchTable, row("b", 1), 0)
		}},
		{"an update at another version", func(tx driver.GuardedTx) error {
			return tx.UpsertRowGuarded(ctx, conformance.BenchTable, row("a", 3), 2)
		}},
		{"a result over a stored one", func(tx driver.GuardedTx) error {
			if err := tx.UpsertRowGuarded(ctx, conformance.BenchTable, row("d", 1), 0); err != nil {
				return err
			}
			return tx.PutPushResultGuarded(ctx, "c", "k", driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1})
		}},
		{"a result over a staged one", func(tx driver.GuardedTx) error {
			if err := tx.PutPushResult(ctx, "c", "k2", driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1}); err != nil {
				return err
			}
			return tx.PutPushResultGuarded(ctx, "c", "k2", driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1})
		}},
	} {
		if c2.name == "a result over a stored one" {
			tx, _ := c.Begin(ctx, "p")
			_ = tx.PutPushResult(ctx, "c", "k", driver.PushResult{Status: driver.PushApplied, RecordedAtMs: 1})
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := c.BeginGuarded(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		err = c2.run(tx)
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(ctx)
		}
		if driver.CodeOf(err) != driver.CodeWriteConflict {
			t.Fatalf("%s: %v, want %s", c2.name, err, driver.CodeWriteConflict)
		}
		if _, found, err := c.GetRow(ctx, "p", conformance.BenchTable, "d"); err != nil || found {
			t.Fatalf("%s: row d found %v, %v; want nothing written", c2.name, found, err)
		}
	}
	if r, _, err := c.GetRow(ctx, "p", conformance.BenchTable, "a"); err != nil || r.ServerVersion != 3 {
		t.Fatalf("row a at version %d, %v; want 3", r.ServerVersion, err)
	}
}
