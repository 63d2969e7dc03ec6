package sqlite

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestIndexLookupPlans pins the plans of index lookups (IXL-4; docs/performance.md:
// cost must not grow with the store): served by the declared index, the
// after-id bound and the order included, for a non-unique and a unique
// index, with a NULL value too.
func TestIndexLookupPlans(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 50; i++ {
		pushRows(t, c, "P", todoRow(string(rune('a'+i%26))+string(rune('a'+i/26)), "p1", "o"+string(rune('0'+i%3))))
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	todos, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	users, err := c.state.Table("users")
	if err != nil {
		t.Fatal(err)
	}
	byOwner, _ := todos.Def.Index("by_owner")
	byEmail, _ := users.Def.Index("by_email")
	args := func(x interface {
		IndexLookupArgs(string, driver.Index, driver.IndexQuery) ([]any, error)
	}, ix driver.Index, v any) []any {
		a, err := x.IndexLookupArgs("P", ix, driver.IndexQuery{Values: []any{v}, AfterRowID: "ab", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	checkPlans(t, c, []planCase{
		{name: "lookup through a non-unique index (IXL-4)", query: todos.IndexLookupSQL(byOwner), args: args(todos, byOwner, "o1"),
			want:      []string{"SEARCH todos USING INDEX _sync_ix_5_todos_by_owner (_sync_partition=? AND owner_id=? AND id>?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "lookup of NULL (IXL-1, IXL-4)", query: todos.IndexLookupSQL(byOwner), args: args(todos, byOwner, nil),
			want:      []string{"SEARCH todos USING INDEX _sync_ix_5_todos_by_owner (_sync_partition=? AND owner_id=? AND id>?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "lookup through a unique index (IXL-4)", query: users.IndexLookupSQL(byEmail), args: args(users, byEmail, "a@x"),
			want:      []string{"SEARCH users USING INDEX _sync_ix_5_users_by_email (_sync_partition=? AND email=?)"},
			forbidden: []string{"SCAN"}},
	})
}

// TestIndexLookupArguments: the driver's own answers, in IXL-2's order,
// to arguments sync normally rejects first, on both halves; and a
// finished Tx (TX-5).
func TestIndexLookupArguments(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "P", todoRow("a", "p1", "o1"))
	tx, err := c.Begin(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	halves := map[string]func(driver.IndexQuery) ([]driver.Row, error){
		"Conn": func(q driver.IndexQuery) ([]driver.Row, error) { return c.ScanRowsByIndex(ctx, "P", q) },
		"Tx":   func(q driver.IndexQuery) ([]driver.Row, error) { return tx.(*Tx).ScanRowsByIndex(ctx, q) },
	}
	for half, lookup := range halves {
		for _, tc := range []struct {
			q    driver.IndexQuery
			want driver.Code
		}{
			{driver.IndexQuery{Table: "nope", Index: "x", Limit: 0}, driver.CodeUnknownTable},
			{driver.IndexQuery{Table: "todos", Index: "x", Values: []any{"o1"}, Limit: 10}, driver.CodeIndexNotFound},
			{driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o1", "o2"}, Limit: 10}, driver.CodeIndexValueCountMismatch},
			{driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{int64(1)}, Limit: 10}, driver.CodeInvalidValue},
		} {
			if _, err := lookup(tc.q); driver.CodeOf(err) != tc.want {
				t.Errorf("%s lookup %+v: %v, want %s", half, tc.q, err, tc.want)
			}
		}
		rows, err := lookup(driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o1"}, Limit: 1000})
		if err != nil || len(rows) != 1 || rows[0].ID != "a" {
			t.Errorf("%s lookup of o1 = %v, %v; want row a", half, rows, err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = tx.(*Tx).ScanRowsByIndex(ctx, driver.IndexQuery{Table: "todos", Index: "by_owner", Values: []any{"o1"}, Limit: 10})
	if driver.CodeOf(err) != driver.CodeTxFinished {
		t.Errorf("lookup on a finished Tx: %v, want %s", err, driver.CodeTxFinished)
	}
}
