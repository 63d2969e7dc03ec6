package d1http

import (
	"context"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/internal/faulttest"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Commit outcomes (TX-10, docs/reliability.md "Commit outcomes").

// stagePush begins a Tx on p1 and stages push i in it.
func stagePush(t *testing.T, ctx context.Context, conn *Conn, i int) driver.Tx {
	t.Helper()
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := faulttest.StagePush(ctx, tx, i); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestCommitAnswerLostPastCancel: D1 applies the batch and holds its
// answer 600 ms; the caller's context ends at 200 ms. The fence that
// settles the outcome must not go out on the ended context: Commit (and
// CommitRejected) must say the batch landed, and it must be there.
func TestCommitAnswerLostPastCancel(t *testing.T) {
	for _, rejected := range []bool{false, true} {
		name := map[bool]string{false: "commit", true: "rejected"}[rejected]
		t.Run(name, func(t *testing.T) {
			srv, _ := newDouble(t)
			conn := openOn(t, srv, "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tx := stagePush(t, ctx, conn, 1)
			srv.Inject(d1test.Fault{Kind: d1test.FaultTimeoutAfter, Writes: true, Delay: 600 * time.Millisecond})
			time.AfterFunc(200*time.Millisecond, cancel)
			var err error
			if rejected {
				err = tx.CommitRejected(ctx, "f", faulttest.Key(1), faulttest.Rejected(1))
			} else {
				err = tx.Commit(ctx)
			}
			if srv.FaultsFired(d1test.FaultTimeoutAfter) != 1 {
				t.Fatalf("the fault did not fire")
			}
			if err != nil {
				t.Errorf("%s = %v; the batch landed, so it must return nil (TX-10)", name, err)
			}
			r, found, err := conn.GetPushResult(context.Background(), "p1", "f", faulttest.Key(1))
			want := faulttest.Result(1, 1)
			if rejected {
				want = faulttest.Rejected(1)
			}
			if err != nil || !found || r.Status != want.Status {
				t.Errorf("push result = %+v, found %v, err %v; want %+v", r, found, err, want)
			}
		})
	}
}

// TestCommitRejectedLosesRace: a Tx reads "no result" for (c1, k1); the
// same key is then pushed and committed by another Tx; the first Tx's
// CommitRejected must fail with write_conflict and write nothing, as
// Commit would (TX-9, TX-10), so the stored "applied" stays the only
// answer and a retry through RunInTx replays it.
func TestCommitRejectedLosesRace(t *testing.T) {
	srv, _ := newDouble(t)
	conn := openOn(t, srv, "")
	ctx := context.Background()
	tx1, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := tx1.GetPushResult(ctx, "f", faulttest.Key(1)); err != nil || found {
		t.Fatalf("GetPushResult before the race = found %v, err %v", found, err)
	}
	store := syncstore.OpenConn(conn)
	if err := store.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
		return faulttest.StagePush(ctx, tx.Driver(), 1)
	}); err != nil {
		t.Fatalf("the racing push: %v", err)
	}
	err = tx1.CommitRejected(ctx, "f", faulttest.Key(1), faulttest.Rejected(1))
	if driver.CodeOf(err) != driver.CodeWriteConflict {
		t.Errorf("CommitRejected after a racing push of the same key = %v; want %s (TX-9, TX-10)", err, driver.CodeWriteConflict)
	}
	r, found, err := conn.GetPushResult(ctx, "p1", "f", faulttest.Key(1))
	if err != nil || !found || r.Status != driver.PushApplied || r.CommitSeq != 1 {
		t.Errorf("stored result = %+v, found %v, err %v; want the racing push's applied result", r, found, err)
	}
	// The caller retries as RunInTx would: the stored result is replayed.
	var replay driver.PushResult
	if err := store.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
		r, found, err := tx.GetPushResult(ctx, "f", faulttest.Key(1))
		if err == nil && !found {
			return tx.CommitRejected(ctx, "f", faulttest.Key(1), faulttest.Rejected(1))
		}
		replay = r
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if replay.Status != driver.PushApplied {
		t.Errorf("the retry replays %+v; want the applied result", replay)
	}
}
