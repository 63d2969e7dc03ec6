package d1http

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// TestDeferredHostsPushDense (SEQ-4, PUSH-1, PUSH-7, TX-9): three Conns on
// one database push to two partitions at once, mixing bare driver pushes
// (begun from the stamp a Conn knows, retried on write_conflict) and
// sync.Store.Push. Afterwards each partition holds every push exactly
// once: the push results name seqs 1…N, each once, and MaxCommitSeq is N;
// a replayed Push from another Conn is answered, not applied.
func TestDeferredHostsPushDense(t *testing.T) {
	ctx := context.Background()
	srv, _ := newDouble(t)
	dsn, _, err := Driver{}.Provision(ctx, "d1://acct?token="+testToken+"&endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	conns := []*Conn{openProvisioned(t, dsn), openProvisioned(t, dsn), openProvisioned(t, dsn)}
	stores := make([]*sync.Store, len(conns))
	for i, c := range conns {
		stores[i] = sync.OpenConn(c)
		if err := stores[i].EnsureSchema(ctx, conformance.TestSchema()); err != nil {
			t.Fatal(err)
		}
	}
	parts := []string{"pa", "pb"}
	const perWorker = 10
	var mu gosync.Mutex
	var errs []error
	keys := map[string][]string{}
	var wg gosync.WaitGroup
	for h := range conns {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					part := parts[(i+w)%2]
					key := fmt.Sprintf("h%dw%di%d", h, w, i)
					r := driver.Row{ID: "r-" + key, ServerVersion: 1, Scopes: driver.Scopes{"project": "p1", "owner": "o1"},
						Values: driver.Values{"id": "r-" + key, "title": key, "done": false, "project_id": "p1", "owner_id": "o1", "updated_at": int64(1)}}
					var err error
					if i%2 == 0 {
						_, err = stores[h].Push(ctx, part, sync.PushRequest{ClientID: "c1", ClientCommitID: key, ActorID: "a",
							Ops: []sync.PushOp{{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Values: r.Values}}})
					} else {
						for range 100 {
							err = barePush(ctx, conns[h], part, key, r)
							if driver.CodeOf(err) != driver.CodeWriteConflict {
								break
							}
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
			}()
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
			if other, dup := seqs[r.CommitSeq]; dup {
				t.Errorf("%s: pushes %s and %s both at seq %d", part, other, key, r.CommitSeq)
			}
			seqs[r.CommitSeq] = key
		}
		n := int64(len(keys[part]))
		for s := int64(1); s <= n; s++ {
			if _, ok := seqs[s]; !ok {
				t.Errorf("%s: no push at seq %d of %d (SEQ-4)", part, s, n)
			}
		}
		if max, err := conns[1].MaxCommitSeq(ctx, part); err != nil || max != n {
			t.Errorf("%s: MaxCommitSeq %d, %v; %d pushes landed", part, max, err, n)
		}
		total += int(n)
	}
	if want := len(conns) * 2 * perWorker; total != want {
		t.Errorf("%d pushes landed; want %d", total, want)
	}
	resp, err := stores[2].Push(ctx, "pa", sync.PushRequest{ClientID: "c1", ClientCommitID: "h0w0i0", ActorID: "a",
		Ops: []sync.PushOp{{Table: "todos", RowID: "r-h0w0i0", Op: driver.OpUpsert, Values: driver.Values{"id": "r-h0w0i0", "title": "h0w0i0", "done": false, "project_id": "p1", "owner_id": "o1", "updated_at": int64(1)}}}})
	if err != nil || !resp.Replayed {
		t.Errorf("replayed push from another Conn: %+v, %v; want Replayed (PUSH-1)", resp, err)
	}
}

// barePush is one driver push of r under key.
func barePush(ctx context.Context, c *Conn, part, key string, r driver.Row) error {
	tx, err := c.Begin(ctx, part)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := tx.UpsertRow(ctx, "todos", r); err != nil {
		return err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: key, ActorID: "a", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}})
	if err != nil {
		return err
	}
	if err := tx.PutPushResult(ctx, "c1", key, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1, Ops: []driver.OpResult{}}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
