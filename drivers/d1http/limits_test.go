package d1http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestCommitChangesInParts: a commit whose changes pass one bound
// value's budget goes in parts (InsertChanges, then D1InsertChangesFrom
// with the idx of each part's first change), in the one Commit batch, and
// the log reads back in idx order; a small commit keeps its two
// statements.
func TestCommitChangesInParts(t *testing.T) {
	onLanes(t, func(t *testing.T, open spyOpener) {
		conn, s := open(t, conformance.TestSchema())
		ctx := context.Background()
		commit := func(id string, sizes ...int) []driver.Change {
			tx, err := conn.Begin(ctx, "p1")
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var changes []driver.Change
			for i, n := range sizes {
				row := kindsRow(fmt.Sprintf("%s-%d", id, i), 1)
				row.Values["s"] = strings.Repeat(string(rune('a'+i)), n)
				if err := tx.UpsertRow(ctx, "kinds", row); err != nil {
					t.Fatal(err)
				}
				changes = append(changes, driver.Change{Table: "kinds", RowID: row.ID, Op: driver.OpUpsert, Scopes: row.Scopes,
					Values: row.Values, RowVersion: 1})
			}
			if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: id, ActorID: "a", CreatedAtMs: 1, Changes: changes}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			return changes
		}
		for _, c := range []struct {
			sizes []int
			froms int // D1InsertChangesFrom statements
		}{
			{[]int{10, 10}, 0},
			{[]int{700_000, 700_000, 700_000, 10, 700_000}, 1}, // parts [0 1] [2 3 4]
			{[]int{900_000, 900_000, 10, 900_000}, 2},          // parts [0] [1 2] [3]
		} {
			before := s.count()
			want := commit(fmt.Sprint("k", len(c.sizes)), c.sizes...)
			var inserts, froms int
			for _, b := range s.since(before) {
				for _, q := range b {
					switch q.SQL {
					case sqlitesql.InsertChanges:
						inserts++
					case d1sql.D1InsertChangesFrom:
						froms++
					}
				}
			}
			if inserts != 1 || froms != c.froms {
				t.Errorf("%v: %d InsertChanges and %d D1InsertChangesFrom, want 1 and %d", c.sizes, inserts, froms, c.froms)
			}
			seq, err := conn.MaxCommitSeq(ctx, "p1")
			if err != nil {
				t.Fatal(err)
			}
			got, err := conn.ReadCommits(ctx, "p1", driver.CommitsQuery{AfterSeq: seq - 1, ThroughSeq: seq, LimitChanges: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(got[0].Changes) != len(want) {
				t.Fatalf("%v: read %d commits", c.sizes, len(got))
			}
			for i, ch := range got[0].Changes {
				if ch.RowID != want[i].RowID || ch.Values["s"] != want[i].Values["s"] {
					t.Errorf("%v: change %d is row %s (%d bytes), want %s", c.sizes, i, ch.RowID, len(fmt.Sprint(ch.Values["s"])), want[i].RowID)
				}
			}
		}
	})
}

// TestRowBudget: a row whose encoding passes d1RowBudget is refused with
// CodePushTooLarge, nothing staged and the Tx usable; bytes travel as hex,
// so 890,000 bytes fit and 910,000 do not.
func TestRowBudget(t *testing.T) {
	onLanes(t, func(t *testing.T, open spyOpener) {
		conn, _ := open(t, conformance.TestSchema())
		ctx := context.Background()
		tx, err := conn.Begin(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		big := kindsRow("big", 1)
		big.Values["x"] = make([]byte, 910_000)
		if err := tx.UpsertRow(ctx, "kinds", big); driver.CodeOf(err) != driver.CodePushTooLarge {
			t.Fatalf("a row of 910,000 bytes: %v, want %s", err, driver.CodePushTooLarge)
		}
		fits := kindsRow("fits", 1)
		fits.Values["x"] = make([]byte, 890_000)
		if err := tx.UpsertRow(ctx, "kinds", fits); err != nil {
			t.Fatalf("a row of 890,000 bytes: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"big": false, "fits": true} {
			row, found, err := conn.GetRow(ctx, "p1", "kinds", id)
			if err != nil || found != want {
				t.Fatalf("row %s: found %v, %v; want found %v", id, found, err, want)
			}
			if found && len(row.Values["x"].([]byte)) != 890_000 {
				t.Errorf("row %s read back with %d bytes", id, len(row.Values["x"].([]byte)))
			}
		}
	})
}

// TestWideTableRefused: D1 holds at most 100 columns per table and the
// driver adds two, so a table of 99 columns is schema_invalid before
// anything is sent; 98 are created, with their scope indexes.
func TestWideTableRefused(t *testing.T) {
	onLanes(t, func(t *testing.T, open spyOpener) {
		conn, s := open(t, conformance.TestSchema())
		ctx := context.Background()
		wide := func(n int) driver.Schema {
			cols := []driver.Column{{Name: "id", Type: driver.TypeString}}
			for i := 1; i < n; i++ {
				cols = append(cols, driver.Column{Name: fmt.Sprintf("c%d", i), Type: driver.TypeString, Nullable: true})
			}
			sc := conformance.TestSchema()
			sc.Version++
			sc.Tables = append(sc.Tables, driver.Table{Name: "wide", Columns: cols, PrimaryKey: "id"})
			return sc
		}
		before := s.count()
		if err := conn.EnsureSchema(ctx, wide(99)); driver.CodeOf(err) != driver.CodeSchemaInvalid {
			t.Fatalf("99 columns: %v, want %s", err, driver.CodeSchemaInvalid)
		}
		if n := s.count() - before; n != 0 {
			t.Errorf("99 columns: %d requests sent, want 0", n)
		}
		// With scopes on the primary key and on a column: each scope
		// index covers the row in 100 columns, no column twice.
		sc := wide(98)
		w := &sc.Tables[len(sc.Tables)-1]
		w.Columns[1].Nullable = false
		w.Scopes = []driver.Scope{{Variable: "k", Column: "id"}, {Variable: "g", Column: "c1"}}
		if err := conn.EnsureSchema(ctx, sc); err != nil {
			t.Fatalf("98 columns: %v", err)
		}
		for _, f := range []driver.ScopeFilter{{"k": {"a"}}, {"g": {"b"}}} {
			if _, err := conn.ScanRows(ctx, "p", driver.ScanQuery{Table: "wide", Filter: f, Limit: 10}); err != nil {
				t.Fatalf("98 columns: ScanRows %v: %v", f, err)
			}
		}
	})
}
