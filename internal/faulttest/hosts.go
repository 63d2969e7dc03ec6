package faulttest

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// HostsPush has every Conn of conns (one database, each Conn a "host"
// with its own pool and per-partition memory) push to partitions HA and
// HB at once, two goroutines per Conn, perWorker pushes each, mixing
// sync.Store.Push, bare driver pushes (begun from what the Conn knows,
// retried on write_conflict: TX-9) and sync.Store.RunInTx commits. After
// each commit another Conn's MaxCommitSeq must already show it. Then it
// checks each partition: every push's result names a distinct seq, the
// seqs are exactly 1…N and MaxCommitSeq is N (SEQ-4: no push applied
// twice, none lost), and a replayed Push from another Conn is answered,
// not applied (PUSH-1). It returns the landed keys per partition and how
// many write conflicts the bare pushes retried. schema is the conformance
// suite's (conformance.TestSchema, which this package cannot import); the
// Stores made over conns are not closed.
func HostsPush(t *testing.T, conns []driver.Conn, schema driver.Schema, perWorker int) (keys map[string][]string, conflicts int64) {
	t.Helper()
	ctx := t.Context()
	stores := make([]*sync.Store, len(conns))
	for i, c := range conns {
		stores[i] = sync.OpenConn(c)
		if err := stores[i].EnsureSchema(ctx, schema); err != nil {
			t.Fatal(err)
		}
	}
	parts := []string{"HA", "HB"}
	var mu gosync.Mutex
	var errs []error
	keys = map[string][]string{}
	var nConflicts atomic.Int64
	var wg gosync.WaitGroup
	for h := range conns {
		for w := range 2 {
			wg.Go(func() {
				other := conns[(h+1)%len(conns)]
				for i := range perWorker {
					part := parts[(i+w)%2]
					key := fmt.Sprintf("h%dw%di%d", h, w, i)
					seq, err := hostPush(ctx, stores[h], part, key, i%3, &nConflicts)
					if err == nil {
						if max, merr := other.MaxCommitSeq(ctx, part); merr != nil || max < seq {
							err = fmt.Errorf("another Conn's MaxCommitSeq = %d, %v right after commit %d", max, merr, seq)
						}
					}
					mu.Lock()
					if err != nil {
						errs = append(errs, fmt.Errorf("%s in %s: %w", key, part, err))
					} else {
						keys[part] = append(keys[part], key)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	total := 0
	for _, part := range parts {
		seqs := map[int64]string{}
		for _, key := range keys[part] {
			r, found, err := conns[0].GetPushResult(ctx, part, "c1", key)
			if err != nil || !found || r.CommitSeq < 1 {
				t.Errorf("%s: push %s: result %+v, %v, %v", part, key, r, found, err)
				continue
			}
			if o, dup := seqs[r.CommitSeq]; dup {
				t.Errorf("%s: pushes %s and %s both at seq %d", part, o, key, r.CommitSeq)
			}
			seqs[r.CommitSeq] = key
		}
		n := int64(len(keys[part]))
		for s := int64(1); s <= n; s++ {
			if _, ok := seqs[s]; !ok {
				t.Errorf("%s: no push at seq %d of %d (SEQ-4)", part, s, n)
			}
		}
		if max, err := conns[len(conns)-1].MaxCommitSeq(ctx, part); err != nil || max != n {
			t.Errorf("%s: MaxCommitSeq %d, %v; %d pushes landed", part, max, err, n)
		}
		total += int(n)
	}
	if want := len(conns) * 2 * perWorker; total != want {
		t.Errorf("%d pushes landed; want %d", total, want)
	}
	// h0w0i0 went through sync.Store.Push (kind 0).
	resp, err := stores[len(stores)-1].Push(ctx, parts[0], hostRequest("h0w0i0"))
	if err != nil || !resp.Replayed {
		t.Errorf("replayed push from another Conn: %+v, %v; want Replayed (PUSH-1)", resp, err)
	}
	return keys, nConflicts.Load()
}

func hostRow(key string) driver.Row { return todo("r-"+key, "p1", "o1") }

func hostRequest(key string) sync.PushRequest {
	r := hostRow(key)
	return sync.PushRequest{ClientID: "c1", ClientCommitID: key, ActorID: "a",
		Ops: []sync.PushOp{{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Values: r.Values}}}
}

// hostPush makes push key in part one of three ways (kind): 0
// sync.Store.Push, 1 a bare driver push retried on write_conflict, 2
// sync.Store.RunInTx; it returns the commit's seq.
func hostPush(ctx context.Context, s *sync.Store, part, key string, kind int, conflicts *atomic.Int64) (int64, error) {
	switch kind {
	case 0:
		resp, err := s.Push(ctx, part, hostRequest(key))
		return resp.CommitSeq, err
	case 1:
		for {
			seq, err := hostStage(ctx, s.Conn().Begin, part, key)
			if driver.CodeOf(err) != driver.CodeWriteConflict || conflicts.Add(1) > 100 {
				return seq, err
			}
		}
	}
	var seq int64
	err := s.RunInTx(ctx, part, func(ctx context.Context, tx *sync.Tx) error {
		var err error
		seq, err = stageHostPush(ctx, tx.Driver(), key)
		return err
	})
	return seq, err
}

// hostStage begins a Tx, stages push key and commits it.
func hostStage(ctx context.Context, begin func(context.Context, string) (driver.Tx, error), part, key string) (int64, error) {
	tx, err := begin(ctx, part)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	seq, err := stageHostPush(ctx, tx, key)
	if err != nil {
		return 0, err
	}
	return seq, tx.Commit(ctx)
}

// stageHostPush stages push key in tx: its row, its commit, its result.
func stageHostPush(ctx context.Context, tx driver.Tx, key string) (int64, error) {
	r := hostRow(key)
	if err := tx.UpsertRow(ctx, "todos", r); err != nil {
		return 0, err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: key, ActorID: "a", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}})
	if err != nil {
		return 0, err
	}
	return seq, tx.PutPushResult(ctx, "c1", key, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1, Ops: []driver.OpResult{}})
}
