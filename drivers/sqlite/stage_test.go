package sqlite

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// stageStrings are values whose JSON text needs escaping or is not ASCII.
var stageStrings = []string{"plain", `q"uote \ back`, "<a> & b", "tab\tnl\n", "😀 e\u0301", "\u2028\u2029", "中文"}

// stageChanges is a commit of n changes of kinds with scopes and values
// that exercise every escape, deletes included.
func stageChanges(n int) []driver.Change {
	out := make([]driver.Change, n)
	for i := range out {
		s := stageStrings[i%len(stageStrings)]
		id := fmt.Sprintf("r%03d %s", i, s)
		if i%5 == 4 {
			out[i] = driver.Change{Table: "kinds", RowID: id, Op: driver.OpDelete, Scopes: driver.Scopes{"grp": s}}
			continue
		}
		out[i] = driver.Change{Table: "kinds", RowID: id, Op: driver.OpUpsert, RowVersion: int64(i + 1),
			Scopes: driver.Scopes{"grp": s, "z" + s: s + s},
			Values: driver.Values{"id": id, "grp": s, "s": s, "i": int64(math.MinInt64 + i), "f": 0.1 * float64(i),
				"b": i%2 == 0, "j": driver.JSON(`{"k": "` + s + `", "k": [1 , 2]}`), "x": []byte{0, byte(i), 0xff}, "n": nil}}
	}
	return out
}

// TestChangeRowsStoreWhatJSONEachStored: the multi-row inserts of the
// push path store exactly, byte for byte and type for type, what the
// json_each statements (still used by D1) store for the same changes —
// the on-disk layout is unchanged — also across statement chunks (more
// than MaxChangeRows changes, more than MaxChangeScopeRows entries).
func TestChangeRowsStoreWhatJSONEachStored(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for _, n := range []int{0, 1, 10, sqlitesql.MaxChangeRows + 1, 150} {
		changes := stageChanges(n)
		p := fmt.Sprintf("new%d", n)
		tx, err := c.Begin(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", Changes: changes})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		text, err := sqlitesql.ChangesJSON(changes)
		if err != nil {
			t.Fatal(err)
		}
		old := fmt.Sprintf("old%d", n)
		for _, q := range []string{sqlitesql.InsertChanges, sqlitesql.InsertChangeScopes} {
			if _, err := c.w.ExecContext(ctx, q, old, seq, text); err != nil {
				t.Fatal(err)
			}
		}
		dump := func(q, p string) []string {
			rows, err := c.r.QueryContext(ctx, q, p)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
			return out
		}
		const changesQ = `SELECT concat_ws('|', seq, typeof(idx), idx, hex(tbl), hex(row_id), op, hex(scopes), typeof(vals), hex(vals), typeof(row_version), row_version)
FROM _sync_changes WHERE partition = ? ORDER BY seq, idx`
		const scopesQ = `SELECT concat_ws('|', hex(tbl), hex(variable), hex(value), typeof(value), seq, typeof(idx), idx)
FROM _sync_change_scopes WHERE partition = ? ORDER BY tbl, variable, value, seq, idx`
		for _, q := range []string{changesQ, scopesQ} {
			got, want := dump(q, p), dump(q, old)
			if len(want) == 0 && n > 0 {
				t.Fatalf("n=%d: the json_each statements wrote nothing", n)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("n=%d: stored rows differ from json_each's (-json_each +multi-row):\n%s", n, diff)
			}
		}
	}
}

// TestStagedUpserts: upserts staged in a Tx are written in multi-row
// statements before any other operation, in order (a later upsert of the
// same id wins, a delete after an upsert deletes), across tables and
// statement chunks; reads inside the Tx see them (TX-3); Rollback and
// CommitRejected discard them (TX-2, TX-8); a table with a unique index
// still reports a collision from the UpsertRow that caused it (SCH-10).
func TestStagedUpserts(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	todos, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	n := 2*todos.MaxUpsertRows() + 3
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := tx.UpsertRow(ctx, "todos", todoRow(fmt.Sprintf("t%03d", i), "p", "o")); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			kind := driver.Row{ID: "k", Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{"id": "k", "grp": "g"}}
			if err := tx.UpsertRow(ctx, "kinds", kind); err != nil {
				t.Fatal(err)
			}
		}
	}
	again := todoRow("t001", "p2", "o2")
	again.ServerVersion = 9
	if err := tx.UpsertRow(ctx, "todos", again); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("gone", "p", "o")); err != nil {
		t.Fatal(err)
	}
	if err := tx.DeleteRow(ctx, "todos", "gone"); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("last", "p", "o")); err != nil {
		t.Fatal(err)
	}
	if row, ok, err := tx.GetRow(ctx, "todos", "last"); err != nil || !ok || row.Values["owner_id"] != "o" {
		t.Fatalf("GetRow in the Tx of a staged row: %v %v %v (TX-3)", row, ok, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p", "p2"}}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+1 {
		t.Fatalf("%d rows after commit, want %d", len(rows), n+1)
	}
	if row, ok, _ := c.GetRow(ctx, "P", "todos", "t001"); !ok || row.ServerVersion != 9 || row.Scopes["project"] != "p2" {
		t.Errorf("the later upsert of t001 did not win: %+v", row)
	}
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "gone"); ok {
		t.Errorf("a row deleted after its staged upsert exists")
	}
	if _, ok, _ := c.GetRow(ctx, "P", "kinds", "k"); !ok {
		t.Errorf("the staged row of another table is missing")
	}

	// Discarded by Rollback and by CommitRejected.
	for _, reject := range []bool{false, true} {
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.UpsertRow(ctx, "todos", todoRow("discarded", "p", "o")); err != nil {
			t.Fatal(err)
		}
		if reject {
			err = tx.CommitRejected(ctx, "c", "rej", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1, Ops: []driver.OpResult{}})
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := c.GetRow(ctx, "P", "todos", "discarded"); ok {
			t.Errorf("reject=%v: a staged row survived", reject)
		}
	}
	if _, ok, _ := c.GetPushResult(ctx, "P", "c", "rej"); !ok {
		t.Errorf("CommitRejected did not store its result")
	}

	// A unique collision is reported by its own UpsertRow, staged rows
	// before it are kept, and the Tx stays usable (SCH-10).
	tx, err = c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	user := func(id string) driver.Row {
		return driver.Row{ID: id, Scopes: driver.Scopes{"org": "o"}, Values: driver.Values{"id": id, "org": "o", "email": "same"}}
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("before", "p", "o")); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "users", user("u1")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "second user with the same email", tx.UpsertRow(ctx, "users", user("u2")), driver.CodeConstraintViolation)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "before"); !ok {
		t.Errorf("the row staged before the collision is missing")
	}

	// A value of the wrong type fails its own UpsertRow, stages nothing.
	tx, err = c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	bad := todoRow("bad", "p", "o")
	bad.Values["updated_at"] = "not an integer"
	wantCode(t, "wrong type", tx.UpsertRow(ctx, "todos", bad), driver.CodeInvalidValue)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.GetRow(ctx, "P", "todos", "bad"); ok {
		t.Errorf("a rejected row was written")
	}
}

// TestMultiRowStatementsPooled: after a commit of a new size, the next
// Begin prepares its multi-row statements on the writer's pool, so later
// transactions do not prepare them again.
func TestMultiRowStatementsPooled(t *testing.T) {
	c, _ := openTest(t)
	rows := []driver.Row{todoRow("a", "p", "o"), todoRow("b", "p", "o"), todoRow("c", "p", "o")}
	pushRows(t, c, "P", rows...)
	todos, _ := c.state.Table("todos")
	qs := []string{todos.UpsertRows(3), sqlitesql.InsertChangeRows(3), sqlitesql.InsertChangeScopeRows(6)}
	for _, q := range qs {
		if c.wr.Peek(q) != nil {
			t.Fatalf("pooled before any Begin: %.60s", q)
		}
	}
	pushRows(t, c, "P", rows...)
	for _, q := range qs {
		if c.wr.Peek(q) == nil {
			t.Errorf("not pooled after the next Begin: %.60s", q)
		}
	}
}

// TestPushReadStatementsPooled: the statements a push's Tx reads with —
// its rows and tombstones by id list (BeginPush) and the client binding
// (BindClient, CR-7) — are prepared on the writer's pool by the next
// Begin, so later pushes do not parse them again.
func TestPushReadStatementsPooled(t *testing.T) {
	c, _ := openTest(t)
	ctx := context.Background()
	todos, _ := c.state.Table("todos")
	keys := []driver.RowKey{{Table: "todos", ID: "a"}, {Table: "todos", ID: "b"}}
	push := func(n int) {
		t.Helper()
		tx, _, err := c.BeginPush(ctx, "P", "client", fmt.Sprint("commit-", n), keys)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if err := tx.(*Tx).BindClient(ctx, "client", "actor", 1); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	push(1)
	qs := []string{todos.GetIn(2), sqlitesql.TombstonesIn(2), sqlitesql.SelectClientActor, sqlitesql.BindClient}
	push(2)
	for _, q := range qs {
		if c.wr.Peek(q) == nil {
			t.Errorf("not pooled after the next push's Begin: %.70s", q)
		}
	}
}
