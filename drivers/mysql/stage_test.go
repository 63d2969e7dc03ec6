package mysql

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

// kindsRow returns a kinds row (every column type, all nullable but the
// key and scope).
func kindsRow(id, grp string, s string, f float64, x []byte) driver.Row {
	return driver.Row{ID: id, ServerVersion: 3, Scopes: driver.Scopes{"grp": grp},
		Values: driver.Values{"id": id, "grp": grp, "s": s, "i": int64(math.MinInt64), "f": f, "b": true,
			"j": driver.JSON(`{"b":1, "a":[ 2 ]}`), "x": x}}
}

// TestStagedUpserts: upserts staged in a Tx are written in multi-row
// statements split by table, by row count and by size, in the order of
// the calls, before any other operation (TX-3), and read back exactly
// (VAL-1: -0.0, empty bytes); a table with a unique index is written row
// by row in between (SCH-10). The commit's 70 changes and 140 scope
// entries are split the same way. Everything lands once, whole.
func TestStagedUpserts(t *testing.T) {
	c := openStore(t)
	c.stmtBytes = 4000 // a few rows per statement: exercises the size split
	ctx := context.Background()
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	want := map[string]driver.Row{}
	var changes []driver.Change
	upsert := func(table string, r driver.Row) {
		t.Helper()
		if err := tx.UpsertRow(ctx, table, r); err != nil {
			t.Fatalf("UpsertRow %s %s: %v", table, r.ID, err)
		}
		want[table+"/"+r.ID] = r
		changes = append(changes, driver.Change{Table: table, RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes,
			Values: r.Values, RowVersion: r.ServerVersion})
	}
	for i := range 70 {
		r := todoRow(fmt.Sprintf("t%03d", i), fmt.Sprint("p", i%3), fmt.Sprint("o", i%5))
		r.Values["title"] = strings.Repeat("é", i*20) // 0…2,760 bytes
		upsert("todos", r)
	}
	again := todoRow("t005", "p9", "o9") // the same row twice in one staged statement: the last wins
	upsert("todos", again)
	upsert("kinds", kindsRow("k1", "g", "neg zero", math.Copysign(0, -1), []byte{}))
	upsert("users", driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"},
		Values: driver.Values{"id": "u1", "org": "o", "email": "u1@example.com"}})
	upsert("kinds", kindsRow("k2", "g", "", 1.5, []byte{0, 1}))
	got, found, err := tx.GetRow(ctx, "todos", "t005")
	if err != nil || !found {
		t.Fatalf("GetRow in the Tx: %v %v", found, err)
	}
	if d := cmp.Diff(again, got); d != "" {
		t.Errorf("TX-3: staged row read in the Tx (-want +got):\n%s", d)
	}
	rows, err := tx.ScanRows(ctx, driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("ScanRows in the Tx: %d rows, %v", len(rows), err)
	}
	if f := rows[0].Values["f"].(float64); f != 0 || !math.Signbit(f) {
		t.Errorf("VAL-1: staged -0.0 read back as %v", f)
	}
	// Unstaged after a read: a delete of a staged-then-written row.
	upsert("todos", todoRow("gone", "p0", "o0"))
	if err := tx.DeleteRow(ctx, "todos", "gone"); err != nil {
		t.Fatal(err)
	}
	delete(want, "todos/gone")
	changes = append(changes, driver.Change{Table: "todos", RowID: "gone", Op: driver.OpDelete, Scopes: driver.Scopes{"project": "p0", "owner": "o0"}})
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "k", CreatedAtMs: 7, Changes: changes})
	if err != nil || seq != 1 {
		t.Fatalf("AppendCommit: %d %v", seq, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for key, w := range want {
		table, id, _ := strings.Cut(key, "/")
		got, found, err := c.GetRow(ctx, "p", table, id)
		if err != nil || !found {
			t.Fatalf("GetRow %s: %v %v", key, found, err)
		}
		if d := cmp.Diff(w, got); d != "" {
			t.Errorf("ROW-1: %s (-want +got):\n%s", key, d)
		}
	}
	for _, table := range []string{"todos", "kinds", "users"} {
		var n int
		if err := c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteIdent(table)+" WHERE _sync_partition = 'p'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		wantN := 0
		for key := range want {
			if strings.HasPrefix(key, table+"/") {
				wantN++
			}
		}
		if n != wantN {
			t.Errorf("%s holds %d rows, want %d", table, n, wantN)
		}
	}
	// The log: every change once, in order, with its values (WIN-1, WIN-2).
	page, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p0", "p1", "p2", "p9"}},
		ThroughSeq: 1, LimitChanges: 1000})
	if err != nil || len(page) != 1 {
		t.Fatalf("ReadCommitWindow: %d commits, %v", len(page), err)
	}
	var wantTodos []driver.Change
	for _, ch := range changes {
		if ch.Table == "todos" {
			wantTodos = append(wantTodos, ch)
		}
	}
	if d := cmp.Diff(wantTodos, page[0].Changes); d != "" {
		t.Errorf("WIN-2: the commit's todos changes (-want +got):\n%s", d)
	}
	var scopes int
	if err := c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM _sync_change_scopes WHERE p = 'p' AND seq = 1").Scan(&scopes); err != nil || scopes != 2*73+2+1 {
		t.Errorf("change-scope entries: %d (%v), want %d", scopes, err, 2*73+2+1)
	}
}

// TestStagedUpsertFailureAborts: a staged row the engine rejects (a
// string that is not UTF-8, which sync would have refused: V-3) fails the
// Tx's next operation and aborts the Tx; Commit fails, nothing of it
// lands and the partition takes the next push (TX-6, SEQ-2).
func TestStagedUpsertFailureAborts(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	pushRows(t, c, "p", todoRow("base", "p0", "o0"))
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.UpsertRow(ctx, "todos", todoRow("ok", "p0", "o0")); err != nil {
		t.Fatal(err)
	}
	bad := todoRow("bad", "p0", "o0")
	bad.Values["title"] = "\xff\xfe"
	if err := tx.UpsertRow(ctx, "todos", bad); err != nil {
		t.Fatalf("UpsertRow of a staged row failed at once: %v", err)
	}
	_, _, err = tx.GetRow(ctx, "todos", "ok")
	if err == nil || driver.CodeOf(err) == "" {
		t.Fatalf("the read after a rejected staged row: %v, want a *driver.Error", err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("later", "p0", "o0")); driver.CodeOf(err) != driver.CodeUnavailable {
		t.Errorf("UpsertRow in the aborted Tx: %v, want %s (TX-6)", err, driver.CodeUnavailable)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("TX-6: Commit of an aborted Tx succeeded")
	}
	for _, id := range []string{"ok", "bad", "later"} {
		if _, found, err := c.GetRow(ctx, "p", "todos", id); err != nil || found {
			t.Errorf("TX-6: row %s of the aborted Tx: found %v (%v)", id, found, err)
		}
	}
	if seq := pushRows(t, c, "p", todoRow("next", "p0", "o0")); seq != 2 {
		t.Errorf("SEQ-2: the next push got seq %d, want 2", seq)
	}
}

// TestReservedSeq: Begin reserves the next seq in the partition's row;
// a Tx that commits without a commit, with two, or that is rejected or
// rolled back leaves max_seq exactly at its last commit (SEQ-1…SEQ-3,
// SEQ-5, TX-8), for a new partition too (P-2).
func TestReservedSeq(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	expectMax := func(what string, want int64) {
		t.Helper()
		got, err := c.MaxCommitSeq(ctx, "p")
		if err != nil || got != want {
			t.Fatalf("%s: MaxCommitSeq %d (%v), want %d", what, got, err, want)
		}
	}
	run := func(fn func(tx driver.Tx) error) {
		t.Helper()
		tx, err := c.Begin(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if err := fn(tx); err != nil {
			t.Fatal(err)
		}
	}
	appendOne := func(tx driver.Tx, k string) (int64, error) {
		return tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: k, CreatedAtMs: 1,
			Changes: []driver.Change{{Table: "todos", RowID: k, Op: driver.OpDelete, Scopes: driver.Scopes{"project": "p0", "owner": "o0"}}}})
	}
	run(func(tx driver.Tx) error { return tx.Commit(ctx) })
	expectMax("a new partition's empty Tx", 0)
	run(func(tx driver.Tx) error { return tx.Rollback(ctx) })
	expectMax("a new partition's rolled-back Tx", 0)
	run(func(tx driver.Tx) error {
		for want := int64(1); want <= 2; want++ {
			if seq, err := appendOne(tx, fmt.Sprint("a", want)); err != nil || seq != want {
				return fmt.Errorf("SEQ-3: seq %d (%v), want %d", seq, err, want)
			}
		}
		return tx.Commit(ctx)
	})
	expectMax("two commits in one Tx", 2)
	run(func(tx driver.Tx) error {
		if err := tx.PutPushResult(ctx, "c", "only-a-result", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	expectMax("a Tx without a commit", 2)
	run(func(tx driver.Tx) error {
		if _, err := appendOne(tx, "rejected"); err != nil {
			return err
		}
		return tx.CommitRejected(ctx, "c", "rejected", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1})
	})
	expectMax("a rejected Tx", 2)
	run(func(tx driver.Tx) error {
		if _, err := appendOne(tx, "rolled-back"); err != nil {
			return err
		}
		return tx.Rollback(ctx)
	})
	expectMax("a rolled-back Tx", 2)
	run(func(tx driver.Tx) error {
		if seq, err := appendOne(tx, "next"); err != nil || seq != 3 {
			return fmt.Errorf("SEQ-2: seq %d (%v), want 3", seq, err)
		}
		return tx.Commit(ctx)
	})
	expectMax("the next commit", 3)
}

// TestLargeRowsSplitByPacket: rows whose values together exceed the
// server's max_allowed_packet land in one commit: staged upserts and
// changes are split so each statement's values stay within half of it
// (Conn.stmtBytes), and every value reads back byte for byte.
func TestLargeRowsSplitByPacket(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	var maxPacket int
	if err := c.db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&maxPacket); err != nil {
		t.Fatal(err)
	}
	if c.stmtBytes != maxPacket/2 {
		t.Fatalf("stmtBytes %d, want half of max_allowed_packet %d", c.stmtBytes, maxPacket)
	}
	size := min(maxPacket/4, 4<<20)
	n := maxPacket/size + 2 // together more than one packet
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var changes []driver.Change
	for i := range n {
		big := bytes.Repeat([]byte{byte(i), 0}, size/2)
		r := kindsRow(fmt.Sprint("k", i), "g", strings.Repeat("x", 10), 1, big)
		if err := tx.UpsertRow(ctx, "kinds", r); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "kinds", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 3})
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "k", CreatedAtMs: 1, Changes: changes}); err != nil {
		t.Fatalf("AppendCommit of %d × %d bytes: %v", n, size, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		got, found, err := c.GetRow(ctx, "p", "kinds", fmt.Sprint("k", i))
		if err != nil || !found {
			t.Fatalf("GetRow k%d: %v %v", i, found, err)
		}
		if x := got.Values["x"].([]byte); !bytes.Equal(x, bytes.Repeat([]byte{byte(i), 0}, size/2)) {
			t.Fatalf("VAL-1: k%d's %d bytes did not read back", i, len(x))
		}
	}
	page, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, ThroughSeq: 1, LimitChanges: 100})
	if err != nil || len(page) != 1 || len(page[0].Changes) != n {
		t.Fatalf("ReadCommitWindow: %v", err)
	}
	for i, ch := range page[0].Changes {
		if x := ch.Values["x"].([]byte); len(x) != size || x[0] != byte(i) {
			t.Fatalf("change %d: %d bytes", i, len(x))
		}
	}
}

// TestStageSplits: a staged statement never holds more than the table's
// maxRows rows or (beyond its first row) more than Conn.stmtBytes of
// values, and holds rows of one table only; batchLen splits the log's
// tuples the same way.
func TestStageSplits(t *testing.T) {
	c := openStore(t)
	c.stmtBytes = 1000
	ctx := context.Background()
	dtx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dtx.Rollback(ctx) }()
	tx := dtx.(*Tx)
	check := func(what string, wantRows int) {
		t.Helper()
		if tx.stageRows != wantRows {
			t.Fatalf("%s: %d rows staged, want %d", what, tx.stageRows, wantRows)
		}
		if tx.stageRows > 1 && tx.stageBytes > c.stmtBytes {
			t.Fatalf("%s: %d bytes staged in %d rows, more than %d", what, tx.stageBytes, tx.stageRows, c.stmtBytes)
		}
	}
	upsert := func(table string, r driver.Row) {
		t.Helper()
		if err := tx.UpsertRow(ctx, table, r); err != nil {
			t.Fatal(err)
		}
	}
	upsert("todos", todoRow("a", "p", "o"))
	check("one row", 1)
	big := todoRow("big", "p", "o")
	big.Values["title"] = strings.Repeat("x", 2000)
	upsert("todos", big)
	check("a row larger than stmtBytes", 1)
	upsert("todos", todoRow("b", "p", "o"))
	check("the row after it", 1)
	for i := range 20 {
		upsert("todos", todoRow(fmt.Sprint("r", i), "p", "o"))
		check(fmt.Sprint("small row ", i), tx.stageRows) // within stmtBytes
	}
	if tx.stageRows == 21 {
		t.Fatalf("21 rows of %d bytes staged in one statement of at most %d", tx.stageBytes, c.stmtBytes)
	}
	upsert("kinds", kindsRow("k", "g", "", 0, nil))
	check("another table", 1)
	c.stmtBytes = 1 << 30
	for i := range 40 {
		upsert("todos", todoRow(fmt.Sprint("s", i), "p", "o"))
	}
	x, _ := c.state.Table("todos")
	check("40 rows", 40-x.maxRows)
	if _, _, err := tx.GetRow(ctx, "todos", "s0"); err != nil {
		t.Fatal(err)
	}
	check("after a read", 0)

	tuple := func(n int) []any { return []any{strings.Repeat("v", n)} }
	for _, tc := range []struct {
		sizes           []int
		maxRows, budget int
		want            int
	}{
		{[]int{10, 10, 10}, 32, 1000, 3},
		{[]int{10, 10, 10}, 2, 1000, 2},
		{[]int{500, 500, 10}, 32, 1000, 1}, // 509 + 509 > 1000
		{[]int{5000, 10}, 32, 1000, 1},     // a large first tuple goes alone
		{[]int{10, 5000}, 32, 1000, 1},
	} {
		var tuples [][]any
		for _, n := range tc.sizes {
			tuples = append(tuples, tuple(n))
		}
		if got := batchLen(tuples, tc.maxRows, tc.budget); got != tc.want {
			t.Errorf("batchLen(%v, %d, %d) = %d, want %d", tc.sizes, tc.maxRows, tc.budget, got, tc.want)
		}
	}
}
