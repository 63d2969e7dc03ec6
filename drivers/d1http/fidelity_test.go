package d1http

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestWindowIntegersExact: row versions and commit times beyond 2^53
// survive the JSON transport of a window read (the double rounds numbers
// as D1 does, so only text-cast columns can pass).
func TestWindowIntegersExact(t *testing.T) {
	for _, q := range []string{sqlitesql.WindowSingle, sqlitesql.WindowList} {
		if w := d1sql.D1Window(q); !strings.Contains(w, "CAST(ch.row_version AS TEXT)") || !strings.Contains(w, "CAST(c.created_at_ms AS TEXT)") {
			t.Errorf("D1Window did not cast the integers of:\n%s", w)
		}
	}
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "")
	ctx := context.Background()
	row := kindsRow("big", 1<<53+1)
	row.Values["i"] = int64(math.MinInt64)
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "kinds", row); err != nil {
		t.Fatal(err)
	}
	ch := driver.Change{Table: "kinds", RowID: "big", Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: row.ServerVersion}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: "k", CreatedAtMs: math.MaxInt64, Changes: []driver.Change{ch}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g"}}, ThroughSeq: 1, LimitChanges: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("window: %v %v", got, err)
	}
	if got[0].CreatedAtMs != math.MaxInt64 || got[0].Changes[0].RowVersion != 1<<53+1 || got[0].Changes[0].Values["i"] != int64(math.MinInt64) {
		t.Errorf("window commit = %+v; want exact MaxInt64 time, 2^53+1 version, MinInt64 value", got[0])
	}
	r, _, err := conn.GetRow(ctx, "p1", "kinds", "big")
	if err != nil || r.ServerVersion != 1<<53+1 || r.Values["i"] != int64(math.MinInt64) {
		t.Errorf("GetRow = %+v, %v", r, err)
	}
}
