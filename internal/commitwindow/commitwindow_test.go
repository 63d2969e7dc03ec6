package commitwindow

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
)

type cand struct {
	seq    int64
	org    string
	op     driver.Op
	values string
}

// feed runs cands through g as a driver's read does; it reports whether
// the read stopped early.
func feed(t *testing.T, g *Grouper, cands []cand) bool {
	t.Helper()
	for _, c := range cands {
		start, stop := g.Next(c.seq)
		if stop {
			return true
		}
		if start {
			g.Start(c.seq, driver.Commit{ClientID: "c", CreatedAtMs: c.seq * 10})
		}
		scopes := `{"org":"` + c.org + `","team":"t1"}`
		if err := g.Change("r", string(c.op), scopes, []byte(c.values), c.values != "", 7); err != nil {
			t.Fatal(err)
		}
	}
	g.End()
	return false
}

func TestGrouper(t *testing.T) {
	q := driver.WindowQuery{Table: "tasks", Filter: driver.ScopeFilter{"team": {"t1"}, "org": {"o1"}}, LimitChanges: 2}
	g := New("sqlite", q, "team")
	stopped := feed(t, g, []cand{
		{1, "o1", driver.OpUpsert, `{"title":["s","a"]}`},
		{1, "o2", driver.OpUpsert, `{"title":["s","b"]}`}, // another org: not matched (WIN-3)
		{2, "o2", driver.OpDelete, ""},                    // no change matches: commit 2 is left out
		{3, "o1", driver.OpDelete, ""},
		{3, "o1", driver.OpUpsert, `{"title":["s","c"]}`}, // commit 3 is whole though over the limit (WIN-4)
		{4, "o1", driver.OpUpsert, `{"title":["s","d"]}`}, // after the limit: not read
	})
	if !stopped || !g.Done() {
		t.Fatalf("stopped %v, Done %v; want the read stopped at commit 4", stopped, g.Done())
	}
	got := g.Commits()
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 || len(got[0].Changes) != 1 || len(got[1].Changes) != 2 {
		t.Fatalf("commits %+v; want 1 (one change) and 3 (two)", got)
	}
	if got[1].CreatedAtMs != 30 || got[1].ClientID != "c" {
		t.Errorf("commit 3's metadata %+v", got[1])
	}
	del, up := got[1].Changes[0], got[1].Changes[1]
	if del.Values != nil || del.RowVersion != 0 || up.RowVersion != 7 || up.Values["title"] != "c" {
		t.Errorf("changes %+v, %+v; want a delete without values or version (WIN-6), then the upsert", del, up)
	}
	if g.Matched() != 3 {
		t.Errorf("Matched = %d, want 3", g.Matched())
	}

	// A read that ends below the limit is not done; a malformed value fails.
	g = New("sqlite", q, "team")
	if feed(t, g, []cand{{1, "o1", driver.OpDelete, ""}}); g.Done() {
		t.Error("Done after one matched change of a limit of 2")
	}
	g.Next(2)
	g.Start(2, driver.Commit{})
	err := g.Change("r", string(driver.OpUpsert), `{"org":"o1","team":"t1"}`, []byte("{"), true, 1)
	if driver.CodeOf(err) != driver.CodeInternal {
		t.Errorf("malformed values: %v, want internal", err)
	}
}
