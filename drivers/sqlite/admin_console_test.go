package sqlite

import (
	"context"
	"math"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestAdminPlans pins the plans of the admin views (ADM-1): every listing
// walks an index in its order and stops at its limit.
func TestAdminPlans(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 30; i++ {
		pushRows(t, c, "P", todoRow(string(rune('a'+i%26))+string(rune('a'+i/26)), "p"+string(rune('0'+i%3)), "o1"))
		rec := driver.ClientRecord{ClientID: "c" + string(rune('a'+i)), ActorID: "a", UpdatedAtMs: int64(i)}
		if err := c.PutClientRecord(ctx, "P", rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, c, []planCase{
		{name: "client records newest first", query: sqlitesql.AdminListClients, args: []any{"P", 10},
			want:      []string{"SEARCH _sync_clients USING INDEX _sync_clients_by_time (partition=?)"},
			forbidden: []string{"SCAN _sync_clients", "TEMP B-TREE"}},
		{name: "commit metadata newest first", query: sqlitesql.AdminListCommits, args: []any{"P", int64(math.MaxInt64), 10},
			want: []string{"SEARCH c USING PRIMARY KEY (partition=? AND seq<?)",
				"SEARCH ch USING PRIMARY KEY (partition=? AND seq=?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "scope activity", query: sqlitesql.AdminScopeActivity, args: []any{"P", "todos", "project", `["p1"]`, 0, 100},
			want: []string{"SEARCH cs USING PRIMARY KEY (partition=? AND tbl=? AND variable=? AND value=? AND seq>? AND seq<?)",
				"SEARCH ch USING PRIMARY KEY (partition=? AND seq=? AND idx=?)"},
			forbidden: []string{"SCAN cs", "SCAN ch"}},
	})
}

// TestAdminArguments: the driver's own answers to arguments sync
// normally rejects first (a driver is also called directly).
func TestAdminArguments(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "P", todoRow("a", "p1", "o1"))
	check := func(what string, err error, want driver.Code) {
		t.Helper()
		if got := driver.CodeOf(err); got != want {
			t.Errorf("%s: %v, want %s", what, err, want)
		}
	}
	_, err := c.ListCommitMeta(ctx, "P", -1, 10)
	check("ListCommitMeta(before -1)", err, driver.CodeInvalidArgument)
	// Limits are sync.Store's to check (V-5, conformance V-5/limits): the
	// driver trusts them (docs/writing-a-driver.md).
	_, err = c.ScopeActivity(ctx, "P", "todos", driver.ScopeFilter{}, 0, 1)
	check("ScopeActivity(no keys)", err, driver.CodeScanRequiresScope)
	_, _, err = c.RowScopes(ctx, "P", "nope", "a")
	check("RowScopes(unknown table)", err, driver.CodeUnknownTable)
	act, err := c.ScopeActivity(ctx, "P", "todos", driver.ScopeFilter{"project": {"p1"}}, 1, 1)
	if err != nil || act != (driver.ScopeActivity{}) {
		t.Errorf("ScopeActivity over an empty range = %+v, %v; want zero", act, err)
	}
	act, err = c.ScopeActivity(ctx, "P", "todos", driver.ScopeFilter{"project": {"p1"}}, 0, 1)
	if err != nil || act != (driver.ScopeActivity{Commits: 1, Changes: 1}) {
		t.Errorf("ScopeActivity over (0, 1] = %+v, %v; want 1 commit, 1 change", act, err)
	}
}
