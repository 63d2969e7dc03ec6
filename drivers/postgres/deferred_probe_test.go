package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// Probes of the deferred Begin (a Tx begun from the max
// seq its Conn knows, guarded at Commit) against the contract, with
// several Conns on one database standing for several hosts.

// keyedCommit stages a commit under client key (client, ccid) upserting
// row id in tx and returns its seq; an empty key is a server-made commit
// (as sync.Tx allows).
func keyedCommit(ctx context.Context, tx driver.Tx, id, client, ccid string) (int64, error) {
	r := todoRow(id, "p1", "o1")
	if err := tx.UpsertRow(ctx, "todos", r); err != nil {
		return 0, err
	}
	return tx.AppendCommit(ctx, driver.CommitInput{ClientID: client, ClientCommitID: ccid, CreatedAtMs: 1, Changes: []driver.Change{
		{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}})
}

// TestDeferredLostAnswerIsNotAnotherStoresCommit (TX-10): Conn A's
// deferred Tx appends a server-made commit (no client ids) at seq 2,
// from the max 1 it knew, while Conn B has already committed its own
// server-made commit at seq 2. A's guard fails on the engine and nothing
// of A's Tx lands, but the answer is lost before A's transaction id
// arrives, so A settles by looking for "a commit at seq 2 with A's client
// ids" — and B's commit matches. Commit must not report nil for a Tx
// that did not land. (It may fail before sending COMMIT instead.)
// The same holds when both commits carry the same client key (one push
// retried on two hosts through the bare driver or RunInTx).
func TestDeferredLostAnswerIsNotAnotherStoresCommit(t *testing.T) {
	for _, key := range [][2]string{{"", ""}, {"c1", "same"}} {
		t.Run(fmt.Sprintf("key=%q", key), func(t *testing.T) { lostAnswerOnTakenSeq(t, key[0], key[1]) })
	}
}

func lostAnswerOnTakenSeq(t *testing.T, client, ccid string) {
	dsn := testdbDSN(t)
	a, proxy := openProxiedDSN(t, dsn)
	b := openDSN(t, dsn)
	ctx := t.Context()
	if seq, err := pushTodos(ctx, a, "p", 0, 1); err != nil || seq != 1 {
		t.Fatalf("A's first push: seq %d, %v; want 1", seq, err)
	}
	txb, err := b.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := keyedCommit(ctx, txb, "rb", client, ccid); err != nil || seq != 2 {
		t.Fatalf("B's commit: seq %d, %v; want 2", seq, err)
	}
	if err := txb.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err := a.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if !tx.(*Tx).deferred {
		t.Fatal("A's Tx is not deferred: the probe needs A to know the max seq")
	}
	if seq, err := keyedCommit(ctx, tx, "ra", client, ccid); err != nil || seq != 2 {
		t.Fatalf("A's commit: seq %d, %v; want 2 (from the known max 1)", seq, err)
	}
	f := proxy.Arm(faulttest.DropReply)
	defer f.Release()
	cerr := tx.Commit(ctx) // the proxy drops the answer if COMMIT goes out with the guard
	_, landed, err := b.GetRow(ctx, "p", "todos", "ra")
	if err != nil {
		t.Fatal(err)
	}
	if cerr == nil && !landed {
		t.Fatalf("Commit returned nil but nothing of the Tx landed (row ra absent; seq 2 is B's commit): TX-10")
	}
	if cerr != nil && landed {
		t.Fatalf("Commit: %v, but the Tx landed", cerr)
	}
	if max, err := b.MaxCommitSeq(ctx, "p"); err != nil || max != 2 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 2", max, err)
	}
}

// TestDeferredEdges: a deferred Tx rolled back, cancelled before Commit,
// with a commit and no upserts, reading its own writes, rejected after
// upserts, colliding on a unique index after another Conn moved the max,
// and using As; retention from another Conn in between. After each the
// log is dense and the next push takes the next seq.
func TestDeferredEdges(t *testing.T) {
	a, dsn := openTest(t)
	b := openDSN(t, dsn)
	admin := adminConn(t, dsn)
	ctx := t.Context()
	if _, err := admin.Exec(ctx, `CREATE TABLE host_side (k text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	want := int64(0) // the partition's max seq
	next := 100
	push := func(c *Conn) {
		t.Helper()
		seq, err := pushTodos(ctx, c, "p", next, 2)
		next += 10
		if driver.CodeOf(err) == driver.CodeWriteConflict {
			seq, err = pushTodos(ctx, c, "p", next, 2)
			next += 10
		}
		if err != nil || seq != want+1 {
			t.Fatalf("push: seq %d, %v; want %d", seq, err, want+1)
		}
		want++
	}
	begin := func(c *Conn) *Tx {
		t.Helper()
		tx, err := c.Begin(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return tx.(*Tx)
	}
	checkMax := func(what string) {
		t.Helper()
		for _, c := range []*Conn{a, b} {
			if max, err := c.MaxCommitSeq(ctx, "p"); err != nil || max != want {
				t.Fatalf("%s: MaxCommitSeq = %d, %v; want %d", what, max, err, want)
			}
		}
		var n, lo, hi int64
		if err := admin.QueryRow(ctx, `SELECT count(*), coalesce(min(seq),0), coalesce(max(seq),0) FROM _sync_commits WHERE partition = 'p'`).Scan(&n, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if hi != want || (n > 0 && n != hi-lo+1) {
			t.Fatalf("%s: log %d commits in [%d, %d]; want dense through %d", what, n, lo, hi, want)
		}
	}
	push(a)
	push(a) // A knows the max now

	// Rollback of a deferred Tx with a commit staged: nothing consumed.
	tx := begin(a)
	if !tx.deferred {
		t.Fatal("A's Tx is not deferred")
	}
	if _, err := stageTodos(ctx, tx, 900, 2, "rolled"); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	push(a)
	checkMax("after a rolled-back deferred Tx")

	// Begin's ctx ends before Commit: nothing written, the Tx is over.
	cctx, cancel := context.WithCancel(ctx)
	tx2, err := a.Begin(cctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stageTodos(cctx, tx2, 910, 2, "cancelled"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := tx2.Commit(cctx); err == nil {
		t.Fatal("Commit after Begin's ctx ended: nil")
	}
	if _, found, _ := b.GetPushResult(ctx, "p", "c1", "cancelled"); found {
		t.Fatal("the cancelled Tx left its push result")
	}
	push(a)
	checkMax("after a cancelled deferred Tx")

	// A commit with no upserts, then one reading its own writes (TX-3).
	tx = begin(a)
	if seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "bare", CreatedAtMs: 1}); err != nil || seq != want+1 {
		t.Fatalf("bare commit: seq %d, %v; want %d", seq, err, want+1)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want++
	tx = begin(a)
	if err := tx.UpsertRow(ctx, "todos", todoRow("own", "p1", "o1")); err != nil {
		t.Fatal(err)
	}
	if seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "own", CreatedAtMs: 1}); err != nil || seq != want+1 {
		t.Fatalf("commit: seq %d, %v; want %d", seq, err, want+1)
	}
	if _, found, err := tx.GetRow(ctx, "todos", "own"); err != nil || !found {
		t.Fatalf("the Tx does not see its own upsert: %v, %v (TX-3)", found, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want++
	checkMax("after a bare commit and a read")

	// CommitRejected after upserts and a commit (TX-8): only the result.
	tx = begin(a)
	if _, err := stageTodos(ctx, tx, 920, 2, "rej"); err != nil {
		t.Fatal(err)
	}
	if err := tx.CommitRejected(ctx, "c1", "rej2", driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1, Ops: []driver.OpResult{}}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.GetRow(ctx, "p", "todos", "r0000920"); found {
		t.Fatal("a rejected Tx's upsert landed (TX-8)")
	}
	if r, found, _ := b.GetPushResult(ctx, "p", "c1", "rej2"); !found || r.Status != driver.PushRejected {
		t.Fatalf("the rejected result: %+v, %v", r, found)
	}
	if _, found, _ := b.GetPushResult(ctx, "p", "c1", "rej"); found {
		t.Fatal("a rejected Tx's staged push result landed (TX-8)")
	}
	push(a)
	checkMax("after a rejected deferred Tx")

	// Retention from B between two pushes of A: A's known max still holds.
	if err := b.SetHorizonSeq(ctx, "p", want); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PruneCommitsThrough(ctx, "p", want); err != nil {
		t.Fatal(err)
	}
	push(a)
	checkMax("after B pruned the log")

	// B commits; A's deferred Tx collides on a unique index after staging a
	// commit: the upsert opens the engine transaction, finds the max moved
	// and fails write_conflict, nothing written.
	push(b)
	tx = begin(a)
	if !tx.deferred {
		t.Fatal("A's Tx is not deferred")
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "uniq", CreatedAtMs: 1}); err != nil {
		t.Fatal(err)
	}
	u := driver.Row{ID: "u1", ServerVersion: 1, Scopes: driver.Scopes{"org": "o"}, Values: driver.Values{"id": "u1", "org": "o", "email": "x@y"}}
	if err := tx.UpsertRow(ctx, "users", u); driver.CodeOf(err) != driver.CodeWriteConflict {
		t.Fatalf("unique upsert on a stale max: %v; want write_conflict", err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("Commit after the conflict: nil")
	}
	push(a)
	checkMax("after a unique upsert on a stale max")

	// As in a deferred Tx (TX-11): host writes vanish with Rollback, land
	// with Commit; on a stale max with a commit staged As answers false.
	for _, commit := range []bool{false, true} {
		tx = begin(a)
		if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("as%v", commit), CreatedAtMs: 1}); err != nil {
			t.Fatal(err)
		}
		var h pgx.Tx
		if !tx.As(&h) {
			t.Fatal("As on a deferred Tx: false")
		}
		if _, err := h.Exec(ctx, `INSERT INTO host_side VALUES ($1)`, fmt.Sprint(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want++
		} else {
			_ = tx.Rollback(ctx)
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM host_side WHERE k = $1`, fmt.Sprint(commit)).Scan(&n); err != nil || n != map[bool]int{false: 0, true: 1}[commit] {
			t.Fatalf("host write after commit=%v: %d rows, %v", commit, n, err)
		}
	}
	checkMax("after As")

	// A's guard failed above, so p's Begins go to the engine for a while
	// (partgate.Backoff): the stale As is probed on partition q.
	for i, c := range []*Conn{a, b} {
		if seq, err := pushTodos(ctx, c, "q", 1000+10*i, 1); err != nil || seq != int64(i+1) {
			t.Fatalf("push to q: seq %d, %v; want %d", seq, err, i+1)
		}
	}
	txq, err := a.Begin(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = txq.Rollback(context.Background()) }()
	if !txq.(*Tx).deferred {
		t.Fatal("A's Tx of q is not deferred")
	}
	if seq, err := txq.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "asstale", CreatedAtMs: 1}); err != nil || seq != 2 {
		t.Fatalf("stale commit: seq %d, %v; want 2 (from A's known max)", seq, err)
	}
	var h pgx.Tx
	if txq.(*Tx).As(&h) {
		t.Fatal("As on a stale max with a commit staged: true (its seq is taken)")
	}
	if err := txq.Commit(ctx); err == nil {
		t.Fatal("Commit after As failed: nil")
	}
	if seq, err := pushTodos(ctx, a, "q", 1100, 1); err != nil || seq != 3 {
		t.Fatalf("A's next push to q: seq %d, %v; want 3", seq, err)
	}
	push(a)
	checkMax("at the end")
}

// TestDeferredHostsPushDense (SEQ-4, PUSH-1, PUSH-7): three Conns on one
// database push to two partitions at once (faulttest.HostsPush: Push,
// bare driver pushes deferred when the Conn knows the max, RunInTx);
// besides its checks, the log itself holds each push exactly once, at
// seqs 1…N.
func TestDeferredHostsPushDense(t *testing.T) {
	first, dsn := openTest(t)
	conns := []driver.Conn{first, openDSN(t, dsn), openDSN(t, dsn)}
	keys, conflicts := faulttest.HostsPush(t, conns, conformance.TestSchema(), 12)
	t.Logf("%d write conflicts retried", conflicts)
	admin := adminConn(t, dsn)
	for part, landed := range keys {
		rows, err := admin.Query(t.Context(), `SELECT seq, client_commit_id FROM _sync_commits WHERE partition = $1 ORDER BY seq`, part)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		n := int64(0)
		for rows.Next() {
			var seq int64
			var key string
			if err := rows.Scan(&seq, &key); err != nil {
				t.Fatal(err)
			}
			if n++; seq != n {
				t.Errorf("%s: commit %d has seq %d (SEQ-4)", part, n, seq)
			}
			if seen[key] {
				t.Errorf("%s: push %s twice in the log", part, key)
			}
			seen[key] = true
		}
		rows.Close()
		if n != int64(len(landed)) {
			t.Errorf("%s: %d commits in the log; %d pushes landed", part, n, len(landed))
		}
	}
}

// TestCommitAfterBeginCtxEnded (TX-6, Begin's doc): once Begin's ctx has
// ended the Tx is rolled back, so a Commit on another, live ctx must not
// land it — deferred (the Conn knows the max) or live (a new partition).
// The rollback runs from a context.AfterFunc, so a Commit made right
// after cancel could race ahead of it; 20 rounds of each kind.
func TestCommitAfterBeginCtxEnded(t *testing.T) {
	c, _ := openTest(t)
	ctx := t.Context()
	if _, err := pushTodos(ctx, c, "p", 0, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		part := "p"
		if i%2 == 1 {
			part = fmt.Sprintf("n%d", i)
		}
		cctx, cancel := context.WithCancel(ctx)
		tx, err := c.Begin(cctx, part)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("k%d", i)
		if _, err := stageTodos(cctx, tx, 100+i, 1, key); err != nil {
			t.Fatal(err)
		}
		cancel()
		err = tx.Commit(ctx)
		_, found, rerr := c.GetPushResult(ctx, part, "c1", key)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err == nil || found {
			t.Fatalf("round %d (%s): Commit after Begin's ctx ended: %v, landed %v; want an error, nothing written", i, part, err, found)
		}
	}
}
