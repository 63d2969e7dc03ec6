package conformance

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// A concurrency case of PULL-5: clients bootstrap and pull while a writer
// commits and a pruner expires their cursors.

func init() {
	register(Case{Name: "PULL-5/clients-racing-writer-and-pruner-converge", Run: pullRacing})
}

// pullRaceWrite is commit i of the racing writer: an upsert or a delete
// of one of 24 todos (ids fixed to project p7 or p8 by their number).
func pullRaceWrite(ctx context.Context, conn driver.Conn, i int) error {
	n := (i * 7) % 24
	project := "p7"
	if n%3 == 0 {
		project = "p8"
	}
	row := todo(fmt.Sprintf("w%02d", n), project, "u1")
	row.ServerVersion = int64(i)
	row.Values["title"] = fmt.Sprintf("write %d", i)
	return pullWriteOne(ctx, conn, row, i%5 == 0, int64(1000*i))
}

// pullWriteOne commits an upsert (or, with del, a delete) of one todo on
// p1 without a T, for goroutines, retrying a lost optimistic race (TX-9).
func pullWriteOne(ctx context.Context, conn driver.Conn, row driver.Row, del bool, createdAtMs int64) error {
	for attempt := 0; ; attempt++ {
		tx, err := conn.Begin(ctx, "p1")
		if err == nil {
			meta := winMeta(createdAtMs)
			if del {
				err = tx.DeleteRow(ctx, tTodos, row.ID)
				meta.Changes = []driver.Change{deleteChange(tTodos, row)}
			} else {
				err = tx.UpsertRow(ctx, tTodos, row)
				meta.Changes = []driver.Change{upsertChange(tTodos, row)}
			}
			if err == nil {
				if _, err = tx.AppendCommit(ctx, meta); err == nil {
					err = tx.Commit(ctx)
				}
			}
			_ = tx.Rollback(context.Background())
		}
		if err == nil || driver.CodeOf(err) != driver.CodeWriteConflict || attempt == 50 {
			return err
		}
	}
}

// Catches: a bootstrap pin or a next cursor that lets a commit racing the
// pull slip between pages or windows, a reset that is not a reset (a
// client resuming past pruned commits), a record cursor that does not
// hold the floor. Three clients (small pages and windows) pull p7's todos
// while a writer makes 80 commits and a pruner alternately prunes to the
// active-cursor floor and forces the horizon to 4 commits behind the
// head; once the writer stops, every client catches up and its replica
// equals the server's rows exactly.
func pullRacing(t T, h Harness) {
	conn, s := pullStore(t, h)
	ctx := t.Context()
	for i := 1; i <= 20; i++ {
		must(t, "setup: write", pullRaceWrite(ctx, conn, i))
	}
	const writes = 80
	var written atomic.Int64
	var writerDone atomic.Bool
	var wg gosync.WaitGroup
	errs := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer writerDone.Store(true)
		for i := 21; i <= 20+writes; i++ {
			if err := pullRaceWrite(ctx, conn, i); err != nil {
				errs <- fmt.Errorf("writer, commit %d: %w", i, err)
				return
			}
			written.Add(1)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		floor := retOnly(pullAt)
		force := retOnly(pullAt)
		force.ForceAge, force.MinRetainedCommits = time.Millisecond, 4
		force.Now = func() time.Time { return time.UnixMilli(1 << 50) }
		for k := 0; !writerDone.Load(); k++ {
			pol := floor
			if k%2 == 1 {
				pol = force
			}
			if _, err := s.Prune(ctx, "p1", pol); err != nil {
				errs <- fmt.Errorf("pruner: %w", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	reps := make([]*pullReplica, 3)
	for c := range reps {
		sub := pullSub("s", "p7", syncstore.PullBootstrap)
		sub.LimitRows, sub.LimitChanges = 2+c, 1+c
		reps[c] = newPullReplica(sub)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, client := reps[c], fmt.Sprintf("client-%d", c)
			// Pulls while the writer runs are not counted: how many fit in
			// its 80 commits depends on the machine's speed. Once it has
			// stopped, the client must catch up within 5000 pulls.
			for after := 0; after < 5000; {
				done := writerDone.Load()
				if done {
					after++
				}
				if ctx.Err() != nil {
					errs <- fmt.Errorf("%s: %w", client, ctx.Err())
					return
				}
				req := pullReq(r.sub)
				req.ClientID = client
				resp, err := s.Pull(ctx, "p1", req)
				if err != nil {
					errs <- fmt.Errorf("%s: Pull: %w", client, err)
					return
				}
				r.apply(t, resp.Subscriptions[0])
				if done && r.sub.BootstrapToken == "" && r.sub.Cursor == resp.MaxCommitSeq {
					return
				}
			}
			errs <- fmt.Errorf("%s: not caught up after 5000 pulls", client)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("PULL-5: %v", err)
	}
	if t.Failed() {
		return
	}
	want := pullServerRows(t, conn, "p1", reps[0].sub)
	for c, r := range reps {
		t.Logf("client %d: %d pulls, %d resets", c, r.pulls, r.resets)
		expectEqual(t, fmt.Sprintf("PULL-5: replica of client %d after %d pulls", c, r.pulls), want, r.sorted())
	}
}
