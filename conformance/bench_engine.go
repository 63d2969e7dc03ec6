package conformance

import (
	"context"
	"fmt"
	"strconv"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// W7 (docs/performance.md): W1's commits through the engine, sync.Store.Push, every
// op carrying its base version (0: the rows are new). Its time over W1's
// is the engine's own cost per commit: the replay check, the reads of the
// current rows, validation, the request digest, the result. Goal ≤ 1.25×.

// runW7 pushes commits W1-shaped commits to BenchPartition through
// Store.Push, one request each (client benchClient, commit ids c0, c1, …),
// and checks each is applied at the next seq with new rows at version 1,
// and MaxCommitSeq after (SEQ-1).
func runW7(ctx context.Context, conn driver.Conn, commits int) (w1Result, error) {
	s := syncstore.OpenConn(conn) // not closed: the harness closes conn
	if err := s.EnsureSchema(ctx, TestSchema()); err != nil {
		return w1Result{}, fmt.Errorf("W7 Store.EnsureSchema: %w", err)
	}
	s.SetRetryPolicy(syncstore.RetryPolicy{MaxAttempts: maxConflictRetries})
	res, err := timeCommits("W7", commits, func(i int) (int64, error) {
		first := i * BenchRowsPerCommit
		ops := make([]syncstore.PushOp, BenchRowsPerCommit)
		for k := range ops {
			r := BenchTodo(first + k)
			ops[k] = syncstore.PushOp{Table: benchTable, RowID: r.ID, Op: driver.OpUpsert, Values: r.Values, BaseVersion: syncstore.Version(0)}
		}
		resp, err := s.Push(ctx, BenchPartition, syncstore.PushRequest{ClientID: benchClient,
			ClientCommitID: "c" + strconv.Itoa(i), ActorID: "bench-actor", Ops: ops})
		if err != nil {
			return 0, err
		}
		if resp.Status != driver.PushApplied || resp.Replayed || len(resp.Changes) != BenchRowsPerCommit ||
			resp.Ops[0].ServerVersion != 1 {
			return 0, fmt.Errorf("push answered %s (replayed %v, %d changes), want a fresh application at version 1 (PUSH-4)",
				resp.Status, resp.Replayed, len(resp.Changes))
		}
		return resp.CommitSeq, nil
	})
	if err != nil {
		return res, err
	}
	max, err := conn.MaxCommitSeq(ctx, BenchPartition)
	if err != nil {
		return res, fmt.Errorf("W7 MaxCommitSeq: %w", err)
	}
	if max != int64(commits) {
		return res, fmt.Errorf("W7: MaxCommitSeq %d after %d commits (SEQ-1)", max, commits)
	}
	return res, nil
}
