package sync_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// pullModelClient is one simulated client: one subscription, its replica
// built only from what Pull returned, and the cursor it last had.
type pullModelClient struct {
	id   string
	sub  sync.PullSubscription
	rows map[string]driver.Row
	// stream: the client is served through PullTo, with a random page
	// budget per pull and RestartBootstraps.
	stream bool
}

func (c *pullModelClient) apply(t *testing.T, seed uint64, head int64, r sync.PullResult) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, client %s: %s", seed, c.id, fmt.Sprintf(format, args...))
	}
	if r.NextCursor > head {
		fail("next cursor %d beyond the head %d", r.NextCursor, head)
	}
	switch {
	case r.Status == sync.PullReset:
		if r.NextCursor != sync.PullBootstrap || len(r.Rows)+len(r.Commits) != 0 {
			fail("a reset with a cursor or data: %+v", r)
		}
		c.rows = map[string]driver.Row{}
	case r.Bootstrap:
		if r.Fresh != (c.sub.BootstrapToken == "" && c.sub.Cursor == sync.PullBootstrap) && !c.stream {
			fail("fresh %v for a request with cursor %d and token %q", r.Fresh, c.sub.Cursor, c.sub.BootstrapToken)
		}
		if r.Fresh {
			c.rows = map[string]driver.Row{}
		}
		for i, row := range r.Rows {
			if i > 0 && row.ID <= r.Rows[i-1].ID {
				fail("page out of id order")
			}
			c.rows[row.ID] = row
		}
		if r.NextCursor != r.AsOfCommitSeq {
			fail("bootstrap next cursor %d, pin %d", r.NextCursor, r.AsOfCommitSeq)
		}
	default:
		if r.NextCursor < c.sub.Cursor {
			fail("cursor went back from %d to %d", c.sub.Cursor, r.NextCursor)
		}
		prev := c.sub.Cursor
		for _, cm := range r.Commits {
			if cm.Seq <= prev || cm.Seq > r.NextCursor {
				fail("commit %d outside (%d, %d]", cm.Seq, prev, r.NextCursor)
			}
			prev = cm.Seq
			for _, ch := range cm.Changes {
				if !slices.Contains(c.sub.Scopes["project"], ch.Scopes["project"]) {
					fail("change of another scope")
				}
				if ch.Op == driver.OpDelete {
					delete(c.rows, ch.RowID)
				} else {
					c.rows[ch.RowID] = driver.Row{ID: ch.RowID, ServerVersion: ch.RowVersion, Scopes: ch.Scopes, Values: ch.Values}
				}
			}
		}
	}
	c.sub.Cursor, c.sub.BootstrapToken = r.NextCursor, r.BootstrapToken
}

// TestPullModel is a seeded model test of Pull on SQLite: six clients
// with their own scopes and small random limits pull while commits
// (upserts and deletes of 30 rows, each fixed to one of three projects)
// land and Prune forces the horizon up; each client pulls at random
// moments, so its bootstraps and windows are interrupted by commits and
// prunes, and some of its cursors expire. Two of the clients pull with
// PullTo and RestartBootstraps, taking 1…3 pages per pull, and commits
// and prunes land between their pages too; their pins that fall below
// the horizon restart.
// Every response is checked as it comes (cursors never go back or past
// the head, commits in order and in scope, pages in id order), and at the
// end every client catches up and its replica equals the server's rows of
// its scope exactly. The seed is in every failure message.
func TestPullModel(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	var total pullModelStats
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		st := pullModelRun(t, seed, 250)
		total.resets += st.resets
		total.resumed += st.resumed
		total.restarts += st.restarts
		total.streamed += st.streamed
	}
	// The seeds are fixed, so these counts are too: the run must reach
	// the paths it is meant to test.
	if total.resets == 0 || total.resumed == 0 || total.restarts == 0 || total.streamed == 0 {
		t.Errorf("%d resets, %d resumed bootstraps, %d restarts, %d pulls of several pages over %d seeds; the model misses the paths it tests",
			total.resets, total.resumed, total.restarts, total.streamed, seeds)
	}
	t.Logf("over %d seeds: %d resets, %d resumed bootstraps, %d restarts, %d pulls of several pages", seeds,
		total.resets, total.resumed, total.restarts, total.streamed)
}

type pullModelStats struct{ resets, resumed, restarts, streamed int }

// pullModelSink is the sink of a streaming model client: it merges the
// pages of a pull into one result, takes budget pages, and runs between
// (a commit or a prune, at random) after every page.
type pullModelSink struct {
	budget  int
	between func()
	res     sync.PullResult
	pages   int
}

func (m *pullModelSink) Start(_ context.Context, r sync.PullResult) error {
	m.res = r
	return nil
}

func (m *pullModelSink) Page(_ context.Context, p sync.PullPage) (bool, error) {
	m.pages++
	m.res.Rows = append(m.res.Rows, p.Rows...)
	m.between()
	return m.pages < m.budget, nil
}

func (m *pullModelSink) Commits(_ context.Context, commits []driver.Commit) error {
	m.res.Commits = commits
	return nil
}

func (m *pullModelSink) End(_ context.Context, r sync.PullResult) error {
	m.res.NextCursor, m.res.BootstrapToken = r.NextCursor, r.BootstrapToken
	return nil
}

func pullModelRun(t *testing.T, seed uint64, steps int) (st pullModelStats) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := openSQLite(t)
	schema := notesSchema()
	if err := s.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	table, _ := schema.Table("notes")
	projects := []string{"p1", "p2", "p3"}
	versions := map[string]int64{}
	write := func(i int) {
		err := s.RunInTx(ctx, "m", func(ctx context.Context, tx *sync.Tx) error {
			var changes []driver.Change
			used := map[string]bool{}
			for range 1 + rng.IntN(3) {
				n := rng.IntN(30)
				id := fmt.Sprintf("n%02d", n)
				if used[id] {
					continue
				}
				used[id] = true
				v := driver.Values{"id": id, "proj": projects[n%3], "body": fmt.Sprintf("write %d", i)}
				scopes := sync.ScopesOf(table, v)
				if rng.IntN(4) == 0 {
					if err := tx.DeleteRow(ctx, "notes", id); err != nil {
						return err
					}
					changes = append(changes, driver.Change{Table: "notes", RowID: id, Op: driver.OpDelete, Scopes: scopes})
					continue
				}
				versions[id]++
				row := driver.Row{ID: id, ServerVersion: versions[id], Scopes: scopes, Values: v}
				if err := tx.UpsertRow(ctx, "notes", row); err != nil {
					return err
				}
				changes = append(changes, driver.Change{Table: "notes", RowID: id, Op: driver.OpUpsert, Scopes: scopes,
					Values: v, RowVersion: row.ServerVersion})
			}
			_, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: int64(i), Changes: changes})
			return err
		})
		if err != nil {
			t.Fatalf("seed %d: write: %v", seed, err)
		}
	}
	clients := make([]*pullModelClient, 6)
	for i := range clients {
		scope := []string{projects[i%3]}
		if i == 3 {
			scope = []string{"p1", "p3"}
		}
		clients[i] = &pullModelClient{id: fmt.Sprintf("c%d", i), rows: map[string]driver.Row{}, stream: i >= 4,
			sub: sync.PullSubscription{ID: "s", Table: "notes", Scopes: driver.ScopeFilter{"project": scope},
				Cursor: sync.PullBootstrap, LimitChanges: 1 + rng.IntN(5), LimitRows: 1 + rng.IntN(4)}}
	}
	prune := func() {
		pol := sync.RetentionPolicy{ActiveWindow: time.Millisecond, ForceAge: time.Millisecond,
			MinRetainedCommits: int64(rng.IntN(8)), PushResultRetention: -1, ClientRecordRetention: -1,
			Now: func() time.Time { return time.UnixMilli(1 << 50) }}
		if pol.MinRetainedCommits == 0 {
			pol.MinRetainedCommits = -1 // 0 is the default, 1,000
		}
		if _, err := s.Prune(ctx, "m", pol); err != nil {
			t.Fatalf("seed %d: Prune: %v", seed, err)
		}
	}
	step, quiet := 0, false // quiet: the catch-up at the end writes nothing
	pull := func(c *pullModelClient) sync.PullResponse {
		req := sync.PullRequest{ClientID: c.id, ActorID: "a", AtMs: 1, Subscriptions: []sync.PullSubscription{c.sub}}
		var resp sync.PullResponse
		var err error
		var r sync.PullResult
		if c.stream {
			req.RestartBootstraps = true
			sink := &pullModelSink{budget: 1 + rng.IntN(3), between: func() {
				if quiet {
					return
				}
				switch rng.IntN(6) {
				case 0, 1:
					step++
					write(10_000 + step)
				case 2:
					prune()
				}
			}}
			resp, err = s.PullTo(ctx, "m", req, sink)
			r = sink.res
			if sink.pages > 1 {
				st.streamed++
			}
		} else {
			resp, err = s.Pull(ctx, "m", req)
			if err == nil {
				r = resp.Subscriptions[0]
			}
		}
		if err != nil {
			t.Fatalf("seed %d: client %s: Pull: %v", seed, c.id, err)
		}
		if r.Status == sync.PullReset {
			st.resets++
		}
		if c.sub.BootstrapToken != "" && r.Status == sync.PullActive {
			if r.Fresh {
				st.restarts++
			} else {
				st.resumed++
			}
		}
		c.apply(t, seed, resp.MaxCommitSeq, r)
		return resp
	}
	for i := range steps {
		switch r := rng.IntN(10); {
		case r < 4:
			write(i)
		case r < 9:
			pull(clients[rng.IntN(len(clients))])
		default:
			prune()
		}
	}
	quiet = true
	for _, c := range clients {
		for n := 0; ; n++ {
			if n == 200 {
				t.Fatalf("seed %d: client %s not caught up after 200 pulls", seed, c.id)
			}
			resp := pull(c)
			if c.sub.BootstrapToken == "" && c.sub.Cursor == resp.MaxCommitSeq {
				break
			}
		}
		var want []driver.Row
		for after := ""; ; {
			rows, err := s.ScanRows(ctx, "m", driver.ScanQuery{Table: "notes", Filter: c.sub.Scopes, AfterRowID: after, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, rows...)
			if len(rows) < 100 {
				break
			}
			after = rows[len(rows)-1].ID
		}
		got := make([]driver.Row, 0, len(c.rows))
		for _, id := range slices.Sorted(maps.Keys(c.rows)) {
			got = append(got, c.rows[id])
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("seed %d: client %s's replica differs from the server (-server +replica):\n%s", seed, c.id, d)
		}
	}
	return st
}
