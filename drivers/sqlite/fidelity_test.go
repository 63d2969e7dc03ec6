package sqlite

import (
	"context"
	"math"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestFloatAffinity proves why float columns have no declared type: with
// REAL affinity SQLite stores an integral float as an integer, so -0.0
// comes back as +0; with BLOB affinity (no declared type, what
// sqlitesql.ColumnSQLType uses) the IEEE bits are kept.
func TestFloatAffinity(t *testing.T) {
	ctx := context.Background()
	c := openDSN(t, ":memory:")
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		decl     string
		keepsNeg bool
	}{{"REAL", false}, {"", true}} {
		if _, err := c.w.ExecContext(ctx, "CREATE TABLE f"+tc.decl+" (v "+tc.decl+")"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.w.ExecContext(ctx, "INSERT INTO f"+tc.decl+" (v) VALUES (?)", negZero); err != nil {
			t.Fatal(err)
		}
		var got float64
		if err := c.w.QueryRowContext(ctx, "SELECT v FROM f"+tc.decl).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if kept := math.Signbit(got); kept != tc.keepsNeg {
			t.Errorf("declared type %q: -0.0 came back as %v (sign kept %v, want %v)", tc.decl, got, kept, tc.keepsNeg)
		}
	}
}

// TestValueFidelity round-trips edge values through every read path
// (VAL-1): GetRow and ScanRows outside and inside a Tx, and the log.
func TestValueFidelity(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	floats := []float64{math.Copysign(0, -1), 0, 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 0.1, 1e-300, -1.5, 1, 9007199254740993}
	bytes := [][]byte{{}, {0}, {0, 0, 255}, nil}
	var rows []driver.Row
	for i, f := range floats {
		var x any
		if b := bytes[i%len(bytes)]; b != nil {
			x = b
		}
		id := string(rune('a' + i))
		rows = append(rows, driver.Row{ID: id, ServerVersion: int64(i), Scopes: driver.Scopes{"grp": "g"},
			Values: driver.Values{"id": id, "grp": "g", "s": "é\u0301😀\uFFFD", "i": int64(math.MinInt64 + i), "f": f,
				"b": i%2 == 0, "j": driver.JSON(`{"b":1,  "a":[2], "a":"\u0000"}`), "x": x}})
	}
	rows = append(rows, driver.Row{ID: "nulls", Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": "nulls", "grp": "g", "s": nil, "i": nil, "f": nil, "b": nil, "j": nil, "x": nil}})

	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	var changes []driver.Change
	for _, r := range rows {
		if err := tx.UpsertRow(ctx, "kinds", r); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "kinds", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	inTx, err := tx.ScanRows(ctx, driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "Tx.ScanRows", rows, inTx)
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "Conn.ScanRows", rows, got)
	for _, want := range rows {
		r, ok, err := c.GetRow(ctx, "P", "kinds", want.ID)
		if err != nil || !ok {
			t.Fatalf("GetRow(%s): %v %v", want.ID, ok, err)
		}
		checkRows(t, "GetRow", []driver.Row{want}, []driver.Row{r})
	}
	win, err := c.ReadCommitWindow(ctx, "P", driver.WindowQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, ThroughSeq: 1, LimitChanges: 100})
	if err != nil || len(win) != 1 {
		t.Fatalf("window: %v %v", win, err)
	}
	var fromLog []driver.Row
	for _, ch := range win[0].Changes {
		fromLog = append(fromLog, driver.Row{ID: ch.RowID, ServerVersion: ch.RowVersion, Scopes: ch.Scopes, Values: ch.Values})
	}
	checkRows(t, "ReadCommitWindow", rows, fromLog)
}

// checkRows compares rows value by value: floats by their bits, bytes
// with nil (NULL) distinct from empty.
func checkRows(t *testing.T, what string, want, got []driver.Row) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.ServerVersion != g.ServerVersion || len(w.Values) != len(g.Values) || w.Scopes["grp"] != g.Scopes["grp"] {
			t.Errorf("%s row %s: got id %s version %d, %d values", what, w.ID, g.ID, g.ServerVersion, len(g.Values))
			continue
		}
		for col, wv := range w.Values {
			gv, present := g.Values[col]
			if !present {
				t.Errorf("%s row %s: column %s missing", what, w.ID, col)
				continue
			}
			if !sameValue(wv, gv) {
				t.Errorf("%s row %s column %s: got %#v, want %#v", what, w.ID, col, gv, wv)
			}
		}
	}
}

func sameValue(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(g) == math.Float64bits(w)
	case []byte:
		g, ok := got.([]byte)
		return ok && g != nil && string(g) == string(w)
	}
	return want == got
}
