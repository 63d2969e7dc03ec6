package mysql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// TestGaleraStorePushStorm: every push acknowledged (PUSH-7, OUT-1,
// OUT-2) on a 3-node Galera cluster with a node killed mid-storm. 900
// pushes go through sync.Store.Push — a Store over the mysql driver on
// each node — each to a node drawn uniformly at random (seeded; the seed
// is logged, SYNCSTORE_GALERA_SEED replays one), nine writers at once,
// three per partition, every push of a partition writing the
// partition's hot row (and a users row, a table with a unique index,
// that the pushes the partition's three writers make at the same time
// share): pushes of one partition through different nodes fail
// certification and the engine retries them while the context lives.
// Node 3 is SIGKILLed (.ci/galera.sh kill) after a third of the pushes
// are acknowledged and restarted after half. A push whose node
// answers unavailable or commit_outcome_unknown is sent again, the same
// request (same client commit id), to the next node, as a host behind a
// load balancer does.
//
// It asserts: all 900 acknowledged, none answered write_conflict (the
// default RetryPolicy sets no bound), none applied twice (each key once
// in the log, at the seq its answer named), seqs 1…N dense on every node,
// no lost update (the hot row's version is N, each users row's the
// number of pushes that wrote it), none rejected, and no push answered
// unavailable that had landed (a re-send replays only after an unknown
// outcome). It logs the outcome table.
func TestGaleraStorePushStorm(t *testing.T) {
	st := runStoreStorm(t, 900, sync.RetryPolicy{})
	if st.conflicts.Load() == 0 {
		t.Error("no certification conflict retried: the storm did not contend across nodes")
	}
}

// storeStormStats counts, per push, how its first Store.Push call was
// answered and what it took to get it acknowledged.
type storeStormStats struct {
	// First Store.Push call of each push.
	ackFirst, conflictFirst, downFirst, upUnavailFirst, unknownFirst atomic.Int64
	// Pushes that needed another call, and the calls they took; unknown
	// outcomes a re-send answered Replayed (an earlier attempt had
	// landed) or applied (it had not).
	resent, resends, settledByReplay, settledByApply atomic.Int64
	// Every call answered write_conflict (must be 0), unavailable by a
	// live node, and re-sends that replayed a push no unknown outcome
	// preceded (must be 0: an unavailable that had landed).
	surfacedConflicts, liveUnavail, landedThoughUnavailable atomic.Int64
	// Attempts that reached the ops (Authorize of op 0) beyond one per
	// push: the engine's retries after a certification conflict.
	attempts, conflicts atomic.Int64
	acked               atomic.Int64
}

func (s *storeStormStats) table(total int) string {
	var b strings.Builder
	row := func(what string, n int64) { fmt.Fprintf(&b, "\n  %-62s %5d", what, n) }
	row("acknowledged on the first Store.Push call", s.ackFirst.Load())
	row("first call refused with write_conflict", s.conflictFirst.Load())
	row("first call unavailable: its node was down (re-sent elsewhere)", s.downFirst.Load())
	row("first call unavailable: its node was up (re-sent elsewhere)", s.upUnavailFirst.Load())
	row("first call commit_outcome_unknown (re-sent elsewhere)", s.unknownFirst.Load())
	row("pushes sent more than once", s.resent.Load())
	row("  calls after the first, in all", s.resends.Load())
	row("unknown outcomes settled by a re-push: had landed (Replayed)", s.settledByReplay.Load())
	row("unknown outcomes settled by a re-push: had not (applied now)", s.settledByApply.Load())
	row("calls answered write_conflict (any call)", s.surfacedConflicts.Load())
	row("calls answered unavailable by a live node", s.liveUnavail.Load())
	row("answered unavailable but had landed", s.landedThoughUnavailable.Load())
	row("attempts Push retried inside itself (reached the ops again)", s.conflicts.Load())
	fmt.Fprintf(&b, "\n  %-62s %5d/%d", "acknowledged in the end", s.acked.Load(), total)
	return b.String()
}

// stormPush is one push of the storm and what its answer said.
type stormPush struct {
	i         int
	part, key string
	client    string
	// user is the users row it writes too, shared with the two pushes of
	// its partition that the other writers of the partition make at the
	// same time: the first of them to land creates it, on a table with
	// a unique index (UPDATE by primary key, INSERT when that matched
	// nothing), the others update it.
	user string
	node int // the node it is first sent to
	seq  int64
}

// runStoreStorm runs the storm of total pushes over Stores with policy
// pol, checks every node and returns the counts.
func runStoreStorm(t *testing.T, total int, pol sync.RetryPolicy) *storeStormStats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conns := galeraStores(ctx, t)
	var st storeStormStats
	stores := make([]*sync.Store, len(conns))
	for i, c := range conns {
		stores[i] = sync.OpenConn(c) // closed with its Conn (galeraStores)
		if err := stores[i].EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		stores[i].SetRetryPolicy(pol)
		stores[i].SetPushOptions(sync.PushOptions{Authorize: func(ctx context.Context, tx *sync.Tx, in sync.AuthorizeInput) error {
			if in.Index == 0 {
				st.attempts.Add(1)
			}
			return nil
		}})
	}

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SYNCSTORE_GALERA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("SYNCSTORE_GALERA_SEED: %v", err)
		}
	}
	t.Logf("seed %d (SYNCSTORE_GALERA_SEED=%d replays the node choices)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const writers = 9
	parts := []string{"P", "Q", "R"}
	pushes := make([]*stormPush, total)
	for i := range pushes {
		w := i % writers
		pushes[i] = &stormPush{i: i, part: parts[w%len(parts)], key: fmt.Sprintf("k%04d", i),
			client: fmt.Sprintf("w%d", w), user: fmt.Sprintf("u%03d", i/writers), node: rng.IntN(len(stores))}
	}

	var nodeDown atomic.Bool // node 3 (index 2) is killed and not yet synced again
	ctl := killAndRestartNode3(ctx, t, func() int64 { return st.acked.Load() }, int64(total/3), int64(total/2),
		func() { nodeDown.Store(true) }, func() { nodeDown.Store(false) })

	start := time.Now()
	var wg gosync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < total; i += writers {
				if err := storePushAnywhere(ctx, stores, pushes[i], &nodeDown, &st); err != nil {
					errs <- fmt.Errorf("push %s: %w", pushes[i].key, err)
					return
				}
				st.acked.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	stormErr := <-errs
	if stormErr != nil {
		cancel() // the controller stops waiting for pushes that will not come
	}
	ctl.Wait()
	elapsed := time.Since(start)
	st.conflicts.Store(st.attempts.Load() - st.acked.Load())
	t.Logf("%d pushes through sync.Store.Push over 3 nodes, node 3 killed and restarted, %.1f s:%s",
		total, elapsed.Seconds(), st.table(total))
	if stormErr != nil {
		t.Fatal(stormErr)
	}
	if n := st.acked.Load(); n != int64(total) {
		t.Errorf("%d of %d pushes acknowledged", n, total)
	}
	if n := st.surfacedConflicts.Load(); n != 0 {
		t.Errorf("%d calls answered write_conflict: Push must retry certification conflicts while its context lives (OUT-2)", n)
	}
	if n := st.landedThoughUnavailable.Load(); n != 0 {
		t.Errorf("%d pushes answered an error that says nothing was written had landed (OUT-1)", n)
	}
	for i, c := range conns {
		for _, p := range parts {
			verifyStorePushes(t, c, i+1, p, pushes)
		}
	}
	return &st
}

// storePushAnywhere sends p through Store.Push until it is acknowledged:
// to its node first, to the next node after unavailable or
// commit_outcome_unknown, again in place after write_conflict (counted:
// it must not happen). Any other error, or ctx's end, is returned.
func storePushAnywhere(ctx context.Context, stores []*sync.Store, p *stormPush, nodeDown *atomic.Bool, st *storeStormStats) error {
	req := sync.PushRequest{ClientID: p.client, ClientCommitID: p.key, ActorID: "a", Ops: []sync.PushOp{
		{Table: "todos", RowID: "hot", Op: driver.OpUpsert, Values: stormValues("hot", int64(p.i))},
		{Table: "todos", RowID: "r-" + p.key, Op: driver.OpUpsert, Values: stormValues("r-"+p.key, int64(p.i))},
		{Table: "users", RowID: p.user, Op: driver.OpUpsert, Values: sync.Values{"id": p.user, "org": "o", "email": p.user + "@example.com"}},
	}}
	node := p.node
	unknown := false
	wait := 5 * time.Millisecond
	for calls := 0; ; calls++ {
		resp, err := stores[node].Push(ctx, p.part, req)
		code := driver.CodeOf(err)
		down := node == 2 && nodeDown.Load()
		if calls == 0 {
			switch {
			case err == nil:
				st.ackFirst.Add(1)
			case code == driver.CodeWriteConflict:
				st.conflictFirst.Add(1)
			case code == driver.CodeUnavailable && down:
				st.downFirst.Add(1)
			case code == driver.CodeUnavailable:
				st.upUnavailFirst.Add(1)
			case code == driver.CodeCommitOutcomeUnknown:
				st.unknownFirst.Add(1)
			}
		} else {
			st.resends.Add(1)
			if calls == 1 {
				st.resent.Add(1)
			}
		}
		switch {
		case err == nil:
			if resp.Status != driver.PushApplied || resp.CommitSeq < 1 {
				return fmt.Errorf("node %d answered %+v", node+1, resp.PushResult)
			}
			switch {
			case resp.Replayed && unknown:
				st.settledByReplay.Add(1)
			case resp.Replayed:
				st.landedThoughUnavailable.Add(1)
			case unknown:
				st.settledByApply.Add(1)
			}
			p.seq = resp.CommitSeq
			return nil
		case code == driver.CodeWriteConflict:
			st.surfacedConflicts.Add(1)
		case code == driver.CodeUnavailable || code == driver.CodeCommitOutcomeUnknown:
			if code == driver.CodeCommitOutcomeUnknown {
				unknown = true
			} else if !down {
				st.liveUnavail.Add(1)
			}
			node = (node + 1) % len(stores)
		default:
			return fmt.Errorf("node %d: %w", node+1, err)
		}
		if ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// stormValues is a todos row of project p, owner o, updated_at at.
func stormValues(id string, at int64) sync.Values {
	return sync.Values{"id": id, "title": "t", "done": false, "project_id": "p", "owner_id": "o", "updated_at": at}
}

// verifyStorePushes checks partition p on node n (conn c) once it has
// applied the partition's pushes: its log is exactly those pushes, each
// once, at seqs 1…N and at the seq its answer named, each push result
// names its commit, and the hot row's version is N (no lost update).
func verifyStorePushes(t *testing.T, c driver.Conn, n int, p string, pushes []*stormPush) {
	t.Helper()
	ctx := context.Background()
	want := map[string]*stormPush{}
	for _, sp := range pushes {
		if sp.part == p {
			want[sp.key] = sp
		}
	}
	total := int64(len(want))
	waitApplied(t, c, p, total, n)
	if m, err := c.MaxCommitSeq(ctx, p); err != nil || m != total {
		t.Fatalf("node %d, %s: MaxCommitSeq = %d, %v; want %d", n, p, m, err, total)
	}
	win, err := c.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(win)) != total {
		t.Fatalf("node %d, %s: log holds %d commits, want %d", n, p, len(win), total)
	}
	seen := map[string]bool{}
	for i, cm := range win {
		if cm.Seq != int64(i+1) {
			t.Fatalf("node %d, %s: commit %d has seq %d: sequence not dense", n, p, i+1, cm.Seq)
		}
		sp := want[cm.ClientCommitID]
		switch {
		case sp == nil:
			t.Fatalf("node %d, %s: commit %d is of key %s, not a push of this partition", n, p, cm.Seq, cm.ClientCommitID)
		case seen[cm.ClientCommitID]:
			t.Fatalf("node %d, %s: key %s committed twice", n, p, cm.ClientCommitID)
		case sp.seq != cm.Seq:
			t.Fatalf("node %d, %s: key %s was answered seq %d, logged at %d", n, p, cm.ClientCommitID, sp.seq, cm.Seq)
		}
		seen[cm.ClientCommitID] = true
		r, ok, err := c.GetPushResult(ctx, p, sp.client, sp.key)
		if err != nil || !ok || r.CommitSeq != cm.Seq {
			t.Fatalf("node %d, %s: push result of %s = %+v, %v, %v; want commit %d", n, p, sp.key, r, ok, err, cm.Seq)
		}
	}
	tx, err := c.Begin(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	hot, ok, err := tx.GetRow(ctx, "todos", "hot")
	if err != nil || !ok || hot.ServerVersion != total {
		t.Fatalf("node %d, %s: hot row version %d (found %v, %v); want %d: a lost update", n, p, hot.ServerVersion, ok, err, total)
	}
	users := map[string]int64{}
	for _, sp := range want {
		users[sp.user]++
	}
	for id, writes := range users {
		u, ok, err := tx.GetRow(ctx, "users", id)
		if err != nil || !ok || u.ServerVersion != writes {
			t.Fatalf("node %d, %s: user %s at version %d (found %v, %v); want %d: a lost update", n, p, id, u.ServerVersion, ok, err, writes)
		}
	}
}
