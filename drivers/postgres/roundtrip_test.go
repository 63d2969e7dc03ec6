package postgres

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// countingConn counts round trips: a Read that follows a Write is the
// client waiting for the server's answer to what it sent.
type countingConn struct {
	net.Conn
	trips   *atomic.Int64
	pending atomic.Bool // bytes written since the last read
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.pending.Store(true)
	return c.Conn.Write(b)
}

func (c *countingConn) Read(b []byte) (int, error) {
	if c.pending.Swap(false) {
		c.trips.Add(1)
	}
	return c.Conn.Read(b)
}

// TestPushRoundTrips measures the round trips of one W1 push commit (10
// upserts, AppendCommit, PutPushResult, Commit) once the statements are
// prepared, and pins it: ONE pipeline (the Conn knows the partition's max
// seq, so Begin's statements ride in Commit's, Tx "Deferred Begin"). A
// push that reads (BeginPush) costs one more: its reads ride in Begin's
// pipeline. A push through the engine (sync.Store.Push) of W7's shape —
// 10 creates at base version 0 — or of updates at their base versions is
// a guarded push (PUSH-9): one round trip, as W1's.
func TestPushRoundTrips(t *testing.T) {
	cfg, err := parseConfig(withParam(testdbDSN(t), "pool_max_conns=1"))
	if err != nil {
		t.Fatal(err)
	}
	var trips atomic.Int64
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: nc, trips: &trips}, nil
	}
	c, err := open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // warm up: statements get prepared on the connection
		if _, err := pushTodos(t.Context(), c, "p", i*10, 10); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20
	before := trips.Load()
	for i := range n {
		if _, err := pushTodos(t.Context(), c, "p", 1000+i*10, 10); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(trips.Load()-before) / n
	t.Logf("round trips per push commit (10 upserts, AppendCommit, PutPushResult, Commit): %.2f", per)
	if per > 1 {
		t.Errorf("a push commit costs %.2f round trips, want ≤ 1 (Begin's statements in Commit's pipeline)", per)
	}

	// The same push enqueueing 5 reactions (RX-1): the enqueue rides in
	// the Commit pipeline.
	push := func(i int) {
		tx, err := c.Begin(t.Context(), "p")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		for j := range 10 {
			if err := tx.UpsertRow(t.Context(), "todos", todoRow(fmt.Sprintf("x%05d-%d", i, j), "p1", "o1")); err != nil {
				t.Fatal(err)
			}
		}
		seq, err := tx.AppendCommit(t.Context(), driver.CommitInput{ClientID: "c", ClientCommitID: fmt.Sprint("rx", i), CreatedAtMs: 1})
		if err != nil {
			t.Fatal(err)
		}
		var in []driver.ReactionInput
		for j := range 5 {
			in = append(in, driver.ReactionInput{Key: fmt.Sprintf("k%05d-%d", i, j), Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: 1})
		}
		if err := tx.(*Tx).EnqueueReactions(t.Context(), seq, in); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		push(i)
	}
	before = trips.Load()
	for i := range n {
		push(100 + i)
	}
	per = float64(trips.Load()-before) / n
	t.Logf("round trips per push commit enqueueing 5 reactions: %.2f", per)
	if per > 1 {
		t.Errorf("a push commit with reactions costs %.2f round trips, want ≤ 1", per)
	}

	// A push that reads its result and rows first (BeginPush): Begin's
	// pipeline with the reads, then Commit's.
	pushRead := func(i int) {
		keys := make([]driver.RowKey, 10)
		for j := range keys {
			keys[j] = driver.RowKey{Table: "todos", ID: fmt.Sprintf("r%07d", 2000+i*10+j)}
		}
		tx, _, err := c.BeginPush(t.Context(), "p", "c1", fmt.Sprint("br", i), keys)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := stageTodos(t.Context(), tx, 2000+i*10, 10, fmt.Sprint("br", i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	pushRead(0)
	before = trips.Load()
	for i := range n {
		pushRead(1 + i)
	}
	per = float64(trips.Load()-before) / n
	t.Logf("round trips per push commit through BeginPush (result and 10 rows read first): %.2f", per)
	if per > 2 {
		t.Errorf("a push commit that reads first costs %.2f round trips, want ≤ 2 (its reads in Begin's pipeline)", per)
	}

	// Store.Push of 10 creates at base 0, then of the same rows updated
	// at base 1: guarded writes, no read first (PUSH-9).
	s := syncstore.OpenConn(c)
	if err := s.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	enginePush := func(i int, base int64) {
		req := syncstore.PushRequest{ClientID: "c1", ClientCommitID: fmt.Sprint("e", i, "-", base), ActorID: "a"}
		for j := range 10 {
			r := todoRow(fmt.Sprintf("e%05d-%d", i, j), "p1", "o1")
			req.Ops = append(req.Ops, syncstore.PushOp{Table: "todos", RowID: r.ID, Op: driver.OpUpsert,
				BaseVersion: syncstore.Version(base), Values: r.Values})
		}
		resp, err := s.Push(t.Context(), "p", req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != driver.PushApplied {
			t.Fatalf("Push %d at base %d: %+v", i, base, resp)
		}
	}
	for _, base := range []int64{0, 1} {
		enginePush(0, base)
		before = trips.Load()
		for i := range n {
			enginePush(1+i, base)
		}
		per = float64(trips.Load()-before) / n
		t.Logf("round trips per Store.Push of 10 upserts at base version %d (guarded): %.2f", base, per)
		if per > 1 {
			t.Errorf("a guarded Store.Push at base %d costs %.2f round trips, want ≤ 1 (PUSH-9: no read before the writes)", base, per)
		}
	}

	// Store.Push of 5 rows each created (base 0) and updated (base 1) in
	// one commit (PUSH-10): still guarded, each update's guard checking
	// the row the create left, so no read either.
	twice := func(i int) {
		req := syncstore.PushRequest{ClientID: "c1", ClientCommitID: fmt.Sprint("t", i), ActorID: "a"}
		for j := range 5 {
			r := todoRow(fmt.Sprintf("t%05d-%d", i, j), "p1", "o1")
			for base := range int64(2) {
				req.Ops = append(req.Ops, syncstore.PushOp{Table: "todos", RowID: r.ID, Op: driver.OpUpsert,
					BaseVersion: syncstore.Version(base), Values: r.Values})
			}
		}
		resp, err := s.Push(t.Context(), "p", req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != driver.PushApplied || resp.Ops[9].ServerVersion != 2 {
			t.Fatalf("Push %d of rows written twice: %+v", i, resp)
		}
	}
	twice(0)
	before = trips.Load()
	for i := range n {
		twice(1 + i)
	}
	per = float64(trips.Load()-before) / n
	t.Logf("round trips per Store.Push of 5 rows each created and updated in one commit (guarded): %.2f", per)
	if per > 1 {
		t.Errorf("a guarded Store.Push writing rows twice costs %.2f round trips, want ≤ 1 (PUSH-10 keeps PUSH-9's guarded writes)", per)
	}
}
