package commitwindow

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestLog(t *testing.T) {
	g := NewLog("sqlite", driver.CommitsQuery{LimitChanges: 3})
	type ch struct {
		seq       int64
		table, op string
		values    string
	}
	stopped := false
	for _, c := range []ch{
		{1, "tasks", "upsert", `{"title":["s","a"]}`},
		{2, "users", "delete", ""},
		{2, "tasks", "upsert", `{"title":["s","b"]}`},
		{2, "tasks", "delete", ""}, // commit 2 is whole though over the limit (LOG-2)
		{3, "tasks", "upsert", `{"title":["s","c"]}`},
	} {
		start, stop := g.Next(c.seq)
		if stop {
			stopped = true
			break
		}
		if start {
			g.Start(c.seq, driver.Commit{Seq: 99, ClientID: "c", CreatedAtMs: c.seq * 10, Changes: []driver.Change{{RowID: "stale"}}})
		}
		if err := g.Change(c.table, "r", c.op, `{"org":"o1"}`, []byte(c.values), c.values != "", 7); err != nil {
			t.Fatal(err)
		}
	}
	if !stopped || !g.Done() || g.Count() != 4 {
		t.Fatalf("stopped %v, Done %v, Count %d; want the read stopped at commit 3 after 4 changes", stopped, g.Done(), g.Count())
	}
	got := g.Commits()
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || len(got[0].Changes) != 1 || len(got[1].Changes) != 3 {
		t.Fatalf("commits %+v; want 1 (one change) and 2 (three)", got)
	}
	if got[1].CreatedAtMs != 20 || got[1].ClientID != "c" {
		t.Errorf("commit 2's metadata %+v", got[1])
	}
	del, up := got[1].Changes[0], got[1].Changes[1]
	if del.Table != "users" || del.Values != nil || del.RowVersion != 0 || up.Table != "tasks" || up.RowVersion != 7 || up.Values["title"] != "b" {
		t.Errorf("changes %+v, %+v; want a delete of users without values or version (WIN-6), then the upsert of tasks", del, up)
	}

	// A read that ends with the range: End appends the last commit.
	g = NewLog("sqlite", driver.CommitsQuery{LimitChanges: 10})
	g.Next(4)
	g.Start(4, driver.Commit{})
	if err := g.Change("tasks", "r", "upsert", `{}`, []byte(`{}`), true, 1); err != nil {
		t.Fatal(err)
	}
	g.End()
	if g.Done() || len(g.Commits()) != 1 {
		t.Errorf("after End: Done %v, commits %d; want not done, one commit", g.Done(), len(g.Commits()))
	}
	if err := g.Change("tasks", "r", "upsert", `not json`, nil, false, 1); err == nil {
		t.Errorf("malformed scopes: no error")
	}
}
