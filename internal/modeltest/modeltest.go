// Package modeltest is the model-based test of the sync engine:
// simulated clients with their own scopes make random offline edits, send
// duplicate and reordered retries, pull with small limits, abandon
// bootstraps midway, while retention prunes the log; at the end each
// client's replica must equal the server's rows for its scopes, exactly,
// and the commit sequence must be dense. Every bundled driver's tests run
// it through sync.Store (Run); a failure prints the seed, and the same
// seed replays the same run.
package modeltest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Schema is the model's: items scoped by project (one of Projects).
var Schema = driver.Schema{Version: 1, Tables: []driver.Table{{Name: "items", PrimaryKey: "id",
	Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "project_id", Type: driver.TypeString},
		{Name: "n", Type: driver.TypeInteger}, {Name: "note", Type: driver.TypeString, Nullable: true}},
	Scopes: []driver.Scope{{Variable: "project", Column: "project_id"}}}}}

// Projects are the scopes clients subscribe to; rowsPerProject ids each.
var Projects = []string{"p0", "p1", "p2"}

const rowsPerProject = 12

// Config sizes one run.
type Config struct {
	Seed    uint64
	Clients int // simulated clients (default 8)
	Steps   int // random actions over all clients (default 400)
}

// Stats is what a run did, for the test's log.
type Stats struct {
	Applied, Rejected, Replays, Pulls, Resets, Bootstraps, Abandoned, Prunes, Pruned int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d applied, %d rejected, %d replays checked, %d pulls (%d resets, %d bootstraps, %d abandoned midway), %d prunes (%d commits pruned)",
		s.Applied, s.Rejected, s.Replays, s.Pulls, s.Resets, s.Bootstraps, s.Abandoned, s.Prunes, s.Pruned)
}

// sub is a client's subscription to one project and its replica of it.
type sub struct {
	project  string
	rows     map[string]driver.Row // id → row as last pulled
	cursor   int64
	token    string
	fresh    bool // the next bootstrap page is a first page
	asOf     int64
	midBoot  bool
	lastPull int64 // virtual ms
}

// queued is an offline commit and the subscription whose rows it edits.
type queued struct {
	req sync.PushRequest
	sub *sub
}

// sent is a push a client made, kept to retry it later.
type sent struct {
	req    sync.PushRequest
	result driver.PushResult
}

type client struct {
	id      string
	subs    []*sub
	outbox  []queued
	sent    []sent
	commits int
}

// model is one run's state.
type model struct {
	t       testing.TB
	ctx     context.Context
	store   *sync.Store
	rng     *rand.Rand
	now     int64 // virtual clock, ms
	clients []*client
	applied map[int64]string // commit seq → "client/commit" of the push that made it
	stats   Stats
}

// Run runs the model on store (a fresh, empty store; Run ensures Schema)
// and returns what it did. It fails t on the first broken promise.
func Run(t testing.TB, store *sync.Store, cfg Config) Stats {
	t.Helper()
	if cfg.Clients == 0 {
		cfg.Clients = 8
	}
	if cfg.Steps == 0 {
		cfg.Steps = 400
	}
	m := &model{t: t, ctx: context.Background(), store: store, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		now: 1_700_000_000_000, applied: map[int64]string{}}
	t.Logf("model seed %d: %d clients, %d steps (replay with this seed)", cfg.Seed, cfg.Clients, cfg.Steps)
	if err := store.EnsureSchema(m.ctx, Schema); err != nil {
		t.Fatalf("seed %d: EnsureSchema: %v", cfg.Seed, err)
	}
	store.SetPushOptions(sync.PushOptions{Now: m.clock})
	for i := range cfg.Clients {
		c := &client{id: fmt.Sprintf("c%d", i)}
		// Each client follows one or two projects.
		for j, p := range Projects {
			if j == i%len(Projects) || (i%2 == 1 && j == (i+1)%len(Projects)) {
				c.subs = append(c.subs, &sub{project: p, cursor: sync.PullBootstrap, fresh: true})
			}
		}
		m.clients = append(m.clients, c)
	}
	for range cfg.Steps {
		m.now += int64(m.rng.IntN(4000))
		c := m.clients[m.rng.IntN(len(m.clients))]
		switch k := m.rng.IntN(100); {
		case k < 30:
			m.edit(c)
		case k < 50:
			m.flush(c)
		case k < 58:
			m.retry(c)
		case k < 90:
			m.pull(c, c.subs[m.rng.IntN(len(c.subs))])
		case k < 95:
			m.abandon(c)
		default:
			m.prune()
		}
	}
	// Quiesce: every outbox sent, every client at the head.
	for _, c := range m.clients {
		for len(c.outbox) > 0 {
			m.flush(c)
		}
	}
	for _, c := range m.clients {
		for _, s := range c.subs {
			m.catchUp(c, s)
		}
	}
	m.check(cfg.Seed)
	return m.stats
}

func (m *model) clock() time.Time { return time.UnixMilli(m.now) }

func (m *model) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("model: "+format, args...)
}

// edit queues an offline commit of 1–3 ops on distinct rows of one of the
// client's projects, each based on the version its replica holds.
func (m *model) edit(c *client) {
	s := c.subs[m.rng.IntN(len(c.subs))]
	c.commits++
	req := sync.PushRequest{ClientID: c.id, ClientCommitID: fmt.Sprintf("%s-%d", c.id, c.commits), ActorID: "u-" + c.id}
	seen := map[string]bool{}
	for range 1 + m.rng.IntN(3) {
		id := fmt.Sprintf("%s-r%d", s.project, m.rng.IntN(rowsPerProject))
		if seen[id] {
			continue
		}
		seen[id] = true
		base := int64(0)
		if r, ok := s.rows[id]; ok {
			base = r.ServerVersion
		}
		op := sync.PushOp{Table: "items", RowID: id, BaseVersion: sync.Version(base)}
		if base > 0 && m.rng.IntN(5) == 0 {
			op.Op = driver.OpDelete
		} else {
			op.Op = driver.OpUpsert
			var note any
			if m.rng.IntN(3) > 0 {
				note = fmt.Sprintf("%s wrote %d", c.id, m.rng.IntN(1000))
			}
			project := s.project
			if base > 0 && m.rng.IntN(8) == 0 {
				// The row moves to another project: its old scope's
				// subscribers must drop it (PUSH-4), the new one's get it.
				project = Projects[m.rng.IntN(len(Projects))]
			}
			op.Values = driver.Values{"id": id, "project_id": project, "n": int64(m.rng.IntN(1 << 20)), "note": note}
		}
		if m.rng.IntN(10) == 0 {
			op.BaseVersion = nil // last writer wins
		}
		req.Ops = append(req.Ops, op)
	}
	c.outbox = append(c.outbox, queued{req: req, sub: s})
}

// flush pushes the client's oldest queued commit. Applied or rejected
// (a conflict: the client drops its edit and will pull the server's row),
// it leaves the outbox; its answer is kept for later retries.
func (m *model) flush(c *client) {
	if len(c.outbox) == 0 {
		return
	}
	q := c.outbox[0]
	req := q.req
	res := m.push(req)
	if res.Replayed {
		m.fatalf("first push of %s/%s answered as a replay", req.ClientID, req.ClientCommitID)
	}
	switch res.Status {
	case driver.PushApplied:
		m.stats.Applied++
		if prev, dup := m.applied[res.CommitSeq]; dup {
			m.fatalf("commit %d made by %s and %s/%s", res.CommitSeq, prev, req.ClientID, req.ClientCommitID)
		}
		m.applied[res.CommitSeq] = req.ClientID + "/" + req.ClientCommitID
		m.ownWrites(q.sub, req, res)
	case driver.PushRejected:
		m.stats.Rejected++
	default:
		m.fatalf("push %s: status %q", req.ClientCommitID, res.Status)
	}
	c.outbox = c.outbox[1:]
	c.sent = append(c.sent, sent{req: req, result: res.PushResult})
}

// ownWrites applies an applied push to the client's replica, as a client
// does with the versions the answer carries, so its next edits are based
// on them; a later pull of the same commits changes nothing.
func (m *model) ownWrites(s *sub, req sync.PushRequest, res sync.PushResponse) {
	if s.rows == nil || s.fresh {
		return // no replica yet: the bootstrap will bring them
	}
	if len(res.Ops) != len(req.Ops) {
		m.fatalf("applied push %s has %d op results for %d ops", req.ClientCommitID, len(res.Ops), len(req.Ops))
	}
	for i, op := range req.Ops {
		if op.Op == driver.OpDelete || op.Values["project_id"] != s.project {
			delete(s.rows, op.RowID) // deleted, or moved out of this scope
			continue
		}
		s.rows[op.RowID] = driver.Row{ID: op.RowID, ServerVersion: res.Ops[i].ServerVersion,
			Scopes: driver.Scopes{"project": s.project}, Values: op.Values}
	}
}

// retry sends one of the client's earlier pushes again, in any order
// (a lost answer, a reordered network): it must answer the stored result
// and write nothing (PUSH-1).
func (m *model) retry(c *client) {
	if len(c.sent) == 0 {
		return
	}
	s := c.sent[m.rng.IntN(len(c.sent))]
	before, err := m.store.MaxCommitSeq(m.ctx, "tenant")
	if err != nil {
		m.fatalf("MaxCommitSeq: %v", err)
	}
	res := m.push(s.req)
	if !res.Replayed || !reflect.DeepEqual(res.PushResult, s.result) {
		m.fatalf("retry of %s/%s: replayed=%v result %+v, want the stored %+v", s.req.ClientID, s.req.ClientCommitID,
			res.Replayed, res.PushResult, s.result)
	}
	if after, err := m.store.MaxCommitSeq(m.ctx, "tenant"); err != nil || after != before {
		m.fatalf("retry of %s/%s moved the head %d → %d (%v)", s.req.ClientID, s.req.ClientCommitID, before, after, err)
	}
	m.stats.Replays++
}

func (m *model) push(req sync.PushRequest) sync.PushResponse {
	m.t.Helper()
	res, err := m.store.Push(m.ctx, "tenant", req)
	if err != nil {
		m.fatalf("push %s/%s: %v", req.ClientID, req.ClientCommitID, err)
	}
	return res
}

// pull makes one pull of one subscription with small limits and applies
// it to the replica.
func (m *model) pull(c *client, s *sub) (atHead bool) {
	m.t.Helper()
	ps := sync.PullSubscription{ID: s.project, Table: "items", Scopes: driver.ScopeFilter{"project": {s.project}},
		Cursor: s.cursor, BootstrapToken: s.token, LimitChanges: 1 + m.rng.IntN(4), LimitRows: 1 + m.rng.IntN(4)}
	res, err := m.store.Pull(m.ctx, "tenant", sync.PullRequest{ClientID: c.id, ActorID: "u-" + c.id, AtMs: m.now,
		Subscriptions: []sync.PullSubscription{ps}})
	if err != nil {
		m.fatalf("pull %s/%s: %v", c.id, s.project, err)
	}
	m.stats.Pulls++
	s.lastPull = m.now
	r := res.Subscriptions[0]
	if r.Status == sync.PullReset {
		if r.Reason != driver.CodeCursorExpired {
			m.fatalf("pull %s/%s: reset for %q", c.id, s.project, r.Reason)
		}
		m.stats.Resets++
		s.cursor, s.token, s.fresh, s.midBoot = sync.PullBootstrap, "", true, false
		return false
	}
	if r.Bootstrap {
		if s.fresh {
			s.rows, s.fresh, s.asOf = map[string]driver.Row{}, false, r.AsOfCommitSeq
			m.stats.Bootstraps++
		}
		for _, row := range r.Rows {
			if row.Scopes["project"] != s.project {
				m.fatalf("bootstrap of %s served row %s of scope %v", s.project, row.ID, row.Scopes)
			}
			s.rows[row.ID] = row
		}
		s.midBoot = r.BootstrapToken != ""
	}
	for _, cm := range r.Commits {
		if cm.Seq <= s.cursor {
			m.fatalf("pull %s/%s after cursor %d served commit %d", c.id, s.project, s.cursor, cm.Seq)
		}
		for _, ch := range cm.Changes {
			if ch.Op == driver.OpDelete {
				delete(s.rows, ch.RowID)
				continue
			}
			s.rows[ch.RowID] = driver.Row{ID: ch.RowID, ServerVersion: ch.RowVersion, Scopes: ch.Scopes, Values: ch.Values}
		}
	}
	if r.NextCursor < s.cursor && !r.Bootstrap {
		m.fatalf("pull %s/%s: the cursor went back %d → %d", c.id, s.project, s.cursor, r.NextCursor)
	}
	s.cursor, s.token = r.NextCursor, r.BootstrapToken
	return s.token == "" && s.cursor >= res.MaxCommitSeq
}

// abandon starts a bootstrap of one of the client's subscriptions and
// leaves it after its first page; the client continues it later.
func (m *model) abandon(c *client) {
	s := c.subs[m.rng.IntN(len(c.subs))]
	if s.midBoot {
		return
	}
	s.cursor, s.token, s.fresh = sync.PullBootstrap, "", true
	m.pull(c, s)
	if s.midBoot {
		m.stats.Abandoned++
	}
}

// prune applies a short retention: clients that pulled in the last 40 s
// hold the log, commits older than 120 s go regardless, 4 are kept.
func (m *model) prune() {
	rep, err := m.store.Prune(m.ctx, "tenant", sync.RetentionPolicy{ActiveWindow: 40 * time.Second,
		ForceAge: 120 * time.Second, MinRetainedCommits: 4, PushResultRetention: -1, ClientRecordRetention: -1,
		Limit: 7, Now: m.clock})
	if err != nil {
		m.fatalf("prune: %v", err)
	}
	m.stats.Prunes++
	m.stats.Pruned += int(rep.CommitsPruned)
}

// catchUp pulls one subscription until it is at the head.
func (m *model) catchUp(c *client, s *sub) {
	for range 10_000 {
		if m.pull(c, s) {
			return
		}
	}
	m.fatalf("%s/%s did not reach the head", c.id, s.project)
}

// check compares every replica with the server's rows of its scope and
// the log's head with the applied pushes.
func (m *model) check(seed uint64) {
	m.t.Helper()
	head, err := m.store.MaxCommitSeq(m.ctx, "tenant")
	if err != nil {
		m.fatalf("MaxCommitSeq: %v", err)
	}
	if int(head) != len(m.applied) {
		m.fatalf("seed %d: head %d after %d applied pushes", seed, head, len(m.applied))
	}
	for seq := int64(1); seq <= head; seq++ {
		if _, ok := m.applied[seq]; !ok {
			m.fatalf("seed %d: no applied push answered commit %d (the sequence is not dense)", seed, seq)
		}
	}
	server := map[string]map[string]driver.Row{}
	for _, p := range Projects {
		rows, err := m.store.ScanRows(m.ctx, "tenant", driver.ScanQuery{Table: "items",
			Filter: driver.ScopeFilter{"project": {p}}, Limit: 10_000})
		if err != nil {
			m.fatalf("scan %s: %v", p, err)
		}
		server[p] = map[string]driver.Row{}
		for _, r := range rows {
			server[p][r.ID] = r
		}
	}
	for _, c := range m.clients {
		for _, s := range c.subs {
			if !reflect.DeepEqual(s.rows, server[s.project]) {
				ids := slices.Sorted(maps.Keys(server[s.project]))
				m.fatalf("seed %d: %s's replica of %s differs from the server's rows\nreplica %v\nserver  %v (ids %v)",
					seed, c.id, s.project, s.rows, server[s.project], ids)
			}
		}
	}
}

// Name is a subtest's name for seed.
func Name(seed uint64) string { return fmt.Sprintf("seed=%d", seed) }

// RunSeeds runs the model for seeds 1…seeds, each in a subtest on a fresh
// store from open (closed after it), and logs what each run did.
func RunSeeds(t *testing.T, seeds uint64, open func(t *testing.T) (*sync.Store, error)) {
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(Name(seed), func(t *testing.T) {
			store, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			t.Log(Run(t, store, Config{Seed: seed}))
		})
	}
}
