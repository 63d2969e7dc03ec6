package sqlite

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestMultiValuePaging checks the bounded multi-value reads (window rounds
// and scan bounds) against a brute-force model: random commits over skewed
// project/owner values, paged with many limits and filters, must return
// exactly the model's commits and rows (WIN-1…WIN-5, SCAN-1…SCAN-3).
func TestMultiValuePaging(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	rng := rand.New(rand.NewSource(7))
	projects := []string{"p0", "p0", "p0", "p0", "p1", "p2", "p3"} // skewed
	owners := []string{"o0", "o1", "o2"}
	type change struct {
		seq  int64
		id   string
		proj string
		own  string
	}
	var log []change
	rows := map[string]change{}
	for i := 0; i < 120; i++ {
		tx, err := c.Begin(ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		var changes []driver.Change
		var staged []change
		for k := 0; k < 1+rng.Intn(4); k++ {
			id := fmt.Sprintf("r%03d", rng.Intn(200))
			r := todoRow(id, projects[rng.Intn(len(projects))], owners[rng.Intn(len(owners))])
			if err := tx.UpsertRow(ctx, "todos", r); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, driver.Change{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
			staged = append(staged, change{id: id, proj: r.Scopes["project"], own: r.Scopes["owner"]})
		}
		seq, err := tx.AppendCommit(ctx, driver.CommitInput{Changes: changes})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range staged {
			s.seq = seq
			log = append(log, s)
			rows[s.id] = s
		}
	}
	filters := []driver.ScopeFilter{
		{"project": {"p0", "p1"}},
		{"project": {"p1", "p2", "p3"}},
		{"project": {"p0", "p1", "p2", "p3", "nope"}},
		{"project": {"p0", "p3"}, "owner": {"o1", "o2"}},
		{"owner": {"o0", "o2"}, "project": {"p0", "p1", "p2"}},
	}
	in := func(v string, vs []string) bool {
		for _, x := range vs {
			if x == v {
				return true
			}
		}
		return false
	}
	for fi, f := range filters {
		matches := func(proj, own string) bool {
			if vs, ok := f["project"]; ok && !in(proj, vs) {
				return false
			}
			if vs, ok := f["owner"]; ok && !in(own, vs) {
				return false
			}
			return true
		}
		// Window: page through with the stop rule; concatenated pages must
		// equal the matching changes of the log, in order.
		var want []string
		for _, ch := range log {
			if matches(ch.proj, ch.own) {
				want = append(want, fmt.Sprintf("%d/%s", ch.seq, ch.id))
			}
		}
		for _, limit := range []int{1, 2, 3, 7, 50, 1000} {
			var got []string
			after := int64(0)
			for {
				page, err := c.ReadCommitWindow(ctx, "P", driver.WindowQuery{Table: "todos", Filter: f, AfterSeq: after, ThroughSeq: 1000, LimitChanges: limit})
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for i, cm := range page {
					for _, ch := range cm.Changes {
						got = append(got, fmt.Sprintf("%d/%s", cm.Seq, ch.RowID))
					}
					n += len(cm.Changes)
					if i < len(page)-1 && n >= limit {
						t.Fatalf("filter %d limit %d: page continues past the stop rule (WIN-4)", fi, limit)
					}
				}
				if n < limit {
					break
				}
				after = page[len(page)-1].Seq
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("filter %d limit %d: window pages\n got %v\nwant %v", fi, limit, got, want)
			}
		}
		// Scan: page by last id; pages must equal the matching current rows.
		var wantIDs []string
		for id, r := range rows {
			if matches(r.proj, r.own) {
				wantIDs = append(wantIDs, id)
			}
		}
		sort.Strings(wantIDs)
		for _, limit := range []int{1, 3, 10, 1000} {
			var got []string
			after := ""
			for {
				page, err := c.ScanRows(ctx, "P", driver.ScanQuery{Table: "todos", Filter: f, AfterRowID: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rowIDs(page)...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].ID
			}
			if fmt.Sprint(got) != fmt.Sprint(wantIDs) {
				t.Errorf("filter %d limit %d: scan pages\n got %v\nwant %v", fi, limit, got, wantIDs)
			}
		}
	}
}
