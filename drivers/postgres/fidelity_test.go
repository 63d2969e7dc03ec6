package postgres

import (
	"math"
	"sync"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// TestFloatsAreBitExact: float8 in the binary protocol keeps every bit —
// -0.0, the smallest subnormal, the largest finite — through GetRow,
// ScanRows and the commit log (VAL-1).
func TestFloatsAreBitExact(t *testing.T) {
	c, _ := openTest(t)
	ctx := t.Context()
	floats := []float64{math.Copysign(0, -1), 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64 * 3, 0.1, 1.0 / 3, 2.2250738585072014e-308}
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var changes []driver.Change
	for i, f := range floats {
		id := string(rune('a' + i))
		row := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
			Values: driver.Values{"id": id, "grp": "g", "s": nil, "i": int64(math.MinInt64), "f": f, "b": true, "j": nil, "x": []byte{}}}
		if err := tx.UpsertRow(ctx, "kinds", row); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "kinds", RowID: id, Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1})
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "cc", CreatedAtMs: 1, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(where string, id string, v driver.Values) {
		t.Helper()
		want := floats[id[0]-'a']
		got, ok := v["f"].(float64)
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: float of row %s = %v (bits %x), want bits %x", where, id, v["f"], math.Float64bits(got), math.Float64bits(want))
		}
		if b, ok := v["x"].([]byte); !ok || b == nil || len(b) != 0 {
			t.Errorf("%s: empty bytes of row %s came back as %#v", where, id, v["x"])
		}
		if v["s"] != nil || v["j"] != nil {
			t.Errorf("%s: NULLs of row %s came back as %#v, %#v", where, id, v["s"], v["j"])
		}
	}
	for i := range floats {
		id := string(rune('a' + i))
		row, found, err := c.GetRow(ctx, "p", "kinds", id)
		if err != nil || !found {
			t.Fatalf("GetRow: %v %v", found, err)
		}
		check("GetRow", id, row.Values)
	}
	rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 100})
	if err != nil || len(rows) != len(floats) {
		t.Fatalf("ScanRows: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		check("ScanRows", r.ID, r.Values)
	}
	win, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, ThroughSeq: 1, LimitChanges: 100})
	if err != nil || len(win) != 1 {
		t.Fatalf("ReadCommitWindow: %d commits, %v", len(win), err)
	}
	for _, ch := range win[0].Changes {
		check("ReadCommitWindow", ch.RowID, ch.Values)
	}
}

// TestConcurrentEnsureSchema (SCH-7): two Conns (as two processes, each
// with its own pool) create and then migrate the same database at the
// same time; both succeed and the result is the newer schema.
func TestConcurrentEnsureSchema(t *testing.T) {
	dsn := testdbDSN(t)
	open := func() driver.Conn {
		c, err := Driver{}.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	conns := []driver.Conn{open(), open(), open()}
	v1 := conformance.TestSchema()
	v2 := conformance.TestSchema()
	v2.Version = 2
	v2.Tables[0].Columns = append(v2.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
	v2.Tables = append(v2.Tables, driver.Table{Name: "extra", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "g", Type: driver.TypeString}},
		Scopes:  []driver.Scope{{Variable: "g", Column: "g"}}})
	for _, s := range []driver.Schema{v1, v2} {
		var wg sync.WaitGroup
		errs := make([]error, len(conns))
		for i, c := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = c.EnsureSchema(t.Context(), s) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("version %d, conn %d: EnsureSchema: %v", s.Version, i, err)
			}
		}
	}
	tx, err := conns[1].Begin(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	row := todoRow("t1", "pr", "o")
	row.Values["note"] = "n"
	if err := tx.UpsertRow(t.Context(), "todos", row); err != nil {
		t.Fatalf("write to the migrated table: %v", err)
	}
	if err := tx.UpsertRow(t.Context(), "extra", driver.Row{ID: "e", Scopes: driver.Scopes{"g": "g"}, Values: driver.Values{"id": "e", "g": "g"}}); err != nil {
		t.Fatalf("write to the added table: %v", err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}
