package conformance

import (
	"fmt"
	"maps"
	"slices"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Helpers of the PULL cases (pull_*.go): sync.Store.Pull over any driver.
// Setup writes commits with the core primitives (winWrite), never with
// the push engine, so a PULL case fails only for a pull.

// pullAt is the time PULL cases stamp their pulls with (epoch ms).
const pullAt = int64(1_700_000_500_000)

// pullStore returns a fresh store and a sync.Store over it with
// TestSchema ensured through the Store (Pull checks tables against it).
func pullStore(t T, h Harness) (driver.Conn, *syncstore.Store) {
	t.Helper()
	conn := openStore(t, h)
	s := syncstore.OpenConn(conn)
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	return conn, s
}

// pullReq returns a request of client "c1" for actor "a1" at pullAt.
func pullReq(subs ...syncstore.PullSubscription) syncstore.PullRequest {
	return syncstore.PullRequest{ClientID: "c1", ActorID: "a1", WireVersion: 2, AtMs: pullAt, Subscriptions: subs}
}

// pullSub returns subscription id on todos of project at cursor.
func pullSub(id, project string, cursor int64) syncstore.PullSubscription {
	return syncstore.PullSubscription{ID: id, Table: tTodos, Scopes: driver.ScopeFilter{"project": {project}}, Cursor: cursor}
}

// pullDo runs Pull or fails the case.
func pullDo(t T, s *syncstore.Store, p string, req syncstore.PullRequest) syncstore.PullResponse {
	t.Helper()
	resp, err := s.Pull(t.Context(), p, req)
	must(t, "Pull", err)
	if len(resp.Subscriptions) != len(req.Subscriptions) {
		t.Fatalf("Pull returned %d subscription results for %d subscriptions", len(resp.Subscriptions), len(req.Subscriptions))
	}
	return resp
}

// pullOne pulls one subscription and returns its result.
func pullOne(t T, s *syncstore.Store, p string, sub syncstore.PullSubscription) syncstore.PullResult {
	t.Helper()
	return pullDo(t, s, p, pullReq(sub)).Subscriptions[0]
}

// pullTodos writes n commits on p, commit i (1…n) upserting todo
// "<prefix><i>" of project; it returns the rows written.
func pullTodos(t T, conn driver.Conn, p, prefix, project string, n int) []driver.Row {
	t.Helper()
	var rows []driver.Row
	for i := 1; i <= n; i++ {
		r := todo(fmt.Sprintf("%s%d", prefix, i), project, "u1")
		winWrite(t, conn, p, winMeta(int64(1000*i)), winUp(tTodos, r))
		rows = append(rows, r)
	}
	return rows
}

// pullReplica is a client's copy of one subscription's rows, built only
// from what Pull returned: bootstrap pages, then commits applied in order.
type pullReplica struct {
	rows   map[string]driver.Row
	sub    syncstore.PullSubscription
	pulls  int
	resets int
}

func newPullReplica(sub syncstore.PullSubscription) *pullReplica {
	sub.Cursor = syncstore.PullBootstrap
	return &pullReplica{rows: map[string]driver.Row{}, sub: sub}
}

// apply takes one result into the replica and moves its cursor and token.
func (r *pullReplica) apply(t T, res syncstore.PullResult) {
	t.Helper()
	r.pulls++
	switch {
	case res.Status == syncstore.PullReset:
		r.resets++
		r.rows = map[string]driver.Row{}
	case res.Bootstrap:
		if res.Fresh || r.sub.BootstrapToken == "" {
			r.rows = map[string]driver.Row{} // a first page replaces the rows
		}
		for _, row := range res.Rows {
			r.rows[row.ID] = row
		}
	default:
		for _, c := range res.Commits {
			for _, ch := range c.Changes {
				if ch.Op == driver.OpDelete {
					delete(r.rows, ch.RowID)
					continue
				}
				r.rows[ch.RowID] = driver.Row{ID: ch.RowID, ServerVersion: ch.RowVersion, Scopes: ch.Scopes, Values: ch.Values}
			}
		}
	}
	r.sub.Cursor, r.sub.BootstrapToken = res.NextCursor, res.BootstrapToken
}

// sync pulls until the replica is bootstrapped and caught up with the
// partition's head (at most max pulls).
func (r *pullReplica) sync(t T, s *syncstore.Store, p string, max int) {
	t.Helper()
	for range max {
		resp := pullDo(t, s, p, pullReq(r.sub))
		r.apply(t, resp.Subscriptions[0])
		if r.sub.BootstrapToken == "" && r.sub.Cursor == resp.MaxCommitSeq {
			return
		}
	}
	t.Fatalf("replica of %s not caught up after %d pulls (cursor %d)", r.sub.ID, max, r.sub.Cursor)
}

// sorted returns the replica's rows ascending by id.
func (r *pullReplica) sorted() []driver.Row {
	out := make([]driver.Row, 0, len(r.rows))
	for _, id := range slices.Sorted(maps.Keys(r.rows)) {
		out = append(out, r.rows[id])
	}
	return out
}

// pullServerRows returns every current row of sub's scope, ascending by id.
func pullServerRows(t T, conn driver.Conn, p string, sub syncstore.PullSubscription) []driver.Row {
	t.Helper()
	var out []driver.Row
	after := ""
	for {
		rows, err := conn.ScanRows(t.Context(), p, driver.ScanQuery{Table: sub.Table, Filter: sub.Scopes, AfterRowID: after, Limit: 500})
		must(t, "ScanRows", err)
		out = append(out, rows...)
		if len(rows) < 500 {
			return out
		}
		after = rows[len(rows)-1].ID
	}
}
