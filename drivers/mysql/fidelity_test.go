package mysql

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestFloatBits proves the engine's traps are handled (VAL-1): InnoDB's
// DOUBLE stores -0.0 as 0 (the driver keeps the sign beside it), and
// subnormals survive the binary protocol, through GetRow and ScanRows.
func TestFloatBits(t *testing.T) {
	ctx := context.Background()
	c := openStore(t)
	vals := []float64{math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, 2.2250738585072014e-308}
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range vals {
		id := string(rune('a' + i))
		row := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
			Values: driver.Values{"id": id, "grp": "g", "s": nil, "i": nil, "f": f, "b": nil, "j": nil, "x": nil}}
		if err := tx.UpsertRow(ctx, "kinds", row); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(vals) {
		t.Fatalf("got %d rows, want %d", len(rows), len(vals))
	}
	for i, f := range vals {
		got, _ := rows[i].Values["f"].(float64)
		if math.Float64bits(got) != math.Float64bits(f) {
			t.Errorf("ScanRows: float %d: got bits %#x, want %#x", i, math.Float64bits(got), math.Float64bits(f))
		}
		row, ok, err := c.GetRow(ctx, "p", "kinds", rows[i].ID)
		if err != nil || !ok {
			t.Fatalf("GetRow: %v %v", ok, err)
		}
		if g := row.Values["f"].(float64); math.Float64bits(g) != math.Float64bits(f) {
			t.Errorf("GetRow: float %d: got bits %#x, want %#x", i, math.Float64bits(g), math.Float64bits(f))
		}
	}
}

// TestBytewiseNoPad proves ids and scope values compare bytewise with no
// padding: "a", "A", "a ", "é" and "e" are five rows, ordered by their
// bytes, and a scope filter on "a" does not match "a " (SCAN-1).
func TestBytewiseNoPad(t *testing.T) {
	ctx := context.Background()
	c := openStore(t)
	ids := []string{"a", "A", "a ", "é", "e", "e\u0301"}
	for _, id := range ids {
		pushRows(t, c, "p", todoRow(id, id, "o"))
	}
	rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"owner": {"o"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.ID)
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ids: got %q, want %q (bytewise)", got, want)
	}
	for _, id := range ids {
		rows, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {id}}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].ID != id {
			t.Errorf("scope %q matched %d rows (%v), want exactly its own", id, len(rows), rows)
		}
		cs, err := c.ReadCommitWindow(ctx, "p", driver.WindowQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {id}},
			ThroughSeq: 100, LimitChanges: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Changes[0].RowID != id {
			t.Errorf("window for scope %q: got %v, want exactly its own change", id, cs)
		}
	}
}

// TestKeyLimits proves the documented key-length limits are enforced as
// limits: a scope value over 255 characters is CodeInvalidValue naming
// the column, and an index over three string columns is CodeSchemaInvalid.
func TestKeyLimits(t *testing.T) {
	ctx := context.Background()
	c := openStore(t)
	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	row := todoRow("r", "p", "o")
	row.Values["project_id"] = string(slices.Repeat([]rune("é"), 256))
	err = tx.UpsertRow(ctx, "todos", row)
	var de *driver.Error
	if driver.CodeOf(err) != driver.CodeInvalidValue || !errorAs(err, &de) || de.Column != "project_id" {
		t.Errorf("256-character scope value: got %v, want CodeInvalidValue on project_id", err)
	}
	row.Values["project_id"] = string(slices.Repeat([]rune("é"), 255))
	if err := tx.UpsertRow(ctx, "todos", row); err != nil {
		t.Errorf("255-character scope value: %v", err)
	}
	s := driver.Schema{Version: 1, Tables: []driver.Table{{Name: "wide", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "a", Type: driver.TypeString},
			{Name: "b", Type: driver.TypeString}, {Name: "c", Type: driver.TypeString}},
		Scopes:  []driver.Scope{{Variable: "a", Column: "a"}},
		Indexes: []driver.Index{{Name: "abc", Columns: []string{"a", "b", "c"}}}}}}
	if err := c.EnsureSchema(ctx, s); driver.CodeOf(err) != driver.CodeSchemaInvalid {
		t.Errorf("index over three string columns: got %v, want CodeSchemaInvalid", err)
	}
}
