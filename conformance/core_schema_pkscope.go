package conformance

import (
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// SCH-1: a scope variable may be bound to the primary-key column itself
// (a table whose rows are their own scope, e.g. lists ← list:{id}).

func init() {
	register(Case{Name: "SCH-1/scope-on-the-primary-key-column", Run: schScopeOnPrimaryKey})
}

// schListsTable is a table whose primary key is also its scope "list";
// "owner" is a second scope, on an ordinary column.
func schListsTable(name string) driver.Table {
	return driver.Table{
		Name: name,
		Columns: []driver.Column{
			{Name: "id", Type: driver.TypeString},
			{Name: "owner", Type: driver.TypeString},
			{Name: "title", Type: driver.TypeString},
		},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "list", Column: "id"}, {Variable: "owner", Column: "owner"}},
	}
}

// Catches: a driver whose DDL for the scope index repeats the primary-key
// column (MySQL refused "KEY (partition, id, id)" with error 1060, so
// EnsureSchema failed), or whose reads for the scope assume the scope
// column is not the key. Ensured fresh and added by a migration; pushed
// (create, update, delete), pulled (bootstrap, then incrementally),
// scanned (one value, two keys, a list long enough for every driver's
// long-list path) and read from the log by that scope.
func schScopeOnPrimaryKey(t T, h Harness) {
	ctx := t.Context()
	conn := h.Open(t)
	s := syncstore.OpenConn(conn)
	const lists, boards = "lists", "boards"
	v1 := driver.Schema{Version: 1, Tables: []driver.Table{schListsTable(lists)}}
	must(t, "SCH-1: EnsureSchema of a table scoped by its primary key", s.EnsureSchema(ctx, v1))
	must(t, "SCH-1: EnsureSchema again (SCH-3)", s.EnsureSchema(ctx, v1))
	v2 := driver.Schema{Version: 2, Tables: []driver.Table{schListsTable(lists), schListsTable(boards)}}
	must(t, "SCH-1: a migration adding a table scoped by its primary key", s.EnsureSchema(ctx, v2))

	up := func(table, id, owner, title string, base *int64) syncstore.PushOp {
		return syncstore.PushOp{Table: table, RowID: id, Op: driver.OpUpsert, BaseVersion: base,
			Values: driver.Values{"id": id, "owner": owner, "title": title}}
	}
	row := func(id, owner, title string, v int64) driver.Row {
		return driver.Row{ID: id, ServerVersion: v, Scopes: driver.Scopes{"list": id, "owner": owner},
			Values: driver.Values{"id": id, "owner": owner, "title": title}}
	}
	push := func(commit string, ops ...syncstore.PushOp) {
		t.Helper()
		r := pushDo(t, s, "p1", pushReq("w1", commit, ops...))
		if r.Status != driver.PushApplied {
			t.Fatalf("SCH-1: push %s into tables scoped by their primary key: %s %+v", commit, r.Status, r.Ops)
		}
	}
	for _, table := range []string{lists, boards} {
		push("create-"+table, up(table, "l1", "u1", "one", syncstore.Version(0)), up(table, "l2", "u1", "two", nil),
			up(table, "l3", "u2", "three", nil))
		push("update-"+table, up(table, "l1", "u1", "one!", syncstore.Version(1)))
		push("delete-"+table, syncstore.PushOp{Table: table, RowID: "l2", Op: driver.OpDelete, BaseVersion: syncstore.Version(1)})
	}
	l1, l3 := row("l1", "u1", "one!", 2), row("l3", "u2", "three", 1)
	for _, table := range []string{lists, boards} {
		got, found, err := conn.GetRow(ctx, "p1", table, "l1")
		must(t, "GetRow", err)
		expectEqual(t, "SCH-1: row l1 of "+table+" after the pushes", [2]any{true, l1}, [2]any{found, got})
	}

	// Scans by the key scope: one value, with the other scope, and a list
	// longer than any driver binds value by value.
	long := []string{"l3", "l1"}
	for i := range 40 {
		long = append(long, fmt.Sprintf("x%02d", i))
	}
	for _, c := range []struct {
		name   string
		filter driver.ScopeFilter
		want   []driver.Row
	}{
		{"one value", driver.ScopeFilter{"list": {"l1"}}, []driver.Row{l1}},
		{"a deleted row's value", driver.ScopeFilter{"list": {"l2"}}, nil},
		{"two values and the other scope", driver.ScopeFilter{"list": {"l1", "l2", "l3"}, "owner": {"u2"}}, []driver.Row{l3}},
		{"the other scope alone", driver.ScopeFilter{"owner": {"u1"}}, []driver.Row{l1}},
		{"42 values", driver.ScopeFilter{"list": long}, []driver.Row{l1, l3}},
	} {
		for _, table := range []string{lists, boards} {
			rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: table, Filter: c.filter, Limit: 100})
			must(t, "ScanRows", err)
			if len(rows) == 0 {
				rows = nil
			}
			expectEqual(t, "SCH-1: scan of "+table+" by "+c.name, c.want, rows)
		}
	}

	// The log by the key scope: l1's commits only.
	got := winRead(t, conn, "p1", winQ(lists, driver.ScopeFilter{"list": {"l1"}}, math.MaxInt64))
	var changes []driver.Change
	for _, cm := range got {
		changes = append(changes, cm.Changes...)
	}
	expectEqual(t, "SCH-1: window read of lists by the key scope", []driver.Change{
		upsertChange(lists, row("l1", "u1", "one", 1)), upsertChange(lists, l1)}, changes)

	// Pull: a bootstrap of l1 and l3, then l3's update incrementally.
	sub := syncstore.PullSubscription{ID: "s1", Table: lists, Scopes: driver.ScopeFilter{"list": {"l1", "l3"}}}
	r := newPullReplica(sub)
	r.sync(t, s, "p1", 10)
	expectEqual(t, "SCH-1: rows pulled by the key scope", []driver.Row{l1, l3}, r.sorted())
	push("update-l3", up(lists, "l3", "u2", "three!", syncstore.Version(1)))
	resp := pullDo(t, s, "p1", pullReq(r.sub))
	res := resp.Subscriptions[0]
	if res.Status != syncstore.PullActive || res.Bootstrap || len(res.Commits) != 1 {
		t.Fatalf("SCH-1: incremental pull by the key scope: %+v; want one commit, not a bootstrap", res)
	}
	r.apply(t, res)
	expectEqual(t, "SCH-1: rows after the incremental pull", []driver.Row{l1, row("l3", "u2", "three!", 2)}, r.sorted())
}
