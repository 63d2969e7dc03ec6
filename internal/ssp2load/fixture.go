package ssp2load

import (
	"context"
	"fmt"
	"math"

	"github.com/syncstore/syncstore/sync"
)

// mulberry32 is upstream's deterministic row generator (fixture.ts
// seededRandom), in uint32 arithmetic: the same seed gives the same
// floats in [0, 1).
type mulberry32 uint32

func (m *mulberry32) next() float64 {
	*m += 0x6d2b79f5
	t := uint32(*m)
	t = (t ^ (t >> 15)) * (t | 1)
	t ^= t + (t^(t>>7))*(t|61)
	return float64(t^(t>>14)) / 4294967296
}

var words = [...]string{"triage", "review", "deploy", "refactor", "document", "benchmark", "migrate", "polish", "inspect", "archive"}

// RowID is upstream's rowId: "row-" and the index in seven digits.
func RowID(i int) string { return fmt.Sprintf("row-%07d", i) }

// rowValues is upstream's rowValues(index, project, rand), calling rand
// in the same order.
func rowValues(i int, project string, rnd *mulberry32) sync.Values {
	w := func(n int) string {
		return words[int(math.Floor(rnd.next()*float64(len(words)*n)))%len(words)]
	}
	w1 := w(1)
	w2 := w(2)
	return sync.Values{
		"id":            RowID(i),
		"project_id":    project,
		"title":         fmt.Sprintf("%s %s #%d", w1, w2, i),
		"done":          rnd.next() < 0.3,
		"priority":      int64(math.Floor(rnd.next() * 5)),
		"updated_at_ms": int64(1_750_000_000_000 + i),
	}
}

// seed pushes n storm rows in commits of sync.MaxPushOps.
func seed(ctx context.Context, st *sync.Store, n int) error {
	rnd := mulberry32(0x10adb6)
	for start := 0; start < n; start += sync.MaxPushOps {
		end := min(start+sync.MaxPushOps, n)
		ops := make([]sync.PushOp, 0, end-start)
		for i := start; i < end; i++ {
			ops = append(ops, sync.PushOp{Table: Table, RowID: RowID(i), Op: sync.OpUpsert, Values: rowValues(i, StormProject, &rnd)})
		}
		res, err := st.Push(ctx, Partition, sync.PushRequest{
			ClientID: seedClient, ClientCommitID: fmt.Sprintf("seed-%d", start), ActorID: ActorID, Ops: ops,
		})
		if err != nil {
			return fmt.Errorf("ssp2load: seed rows %d…%d: %w", start, end-1, err)
		}
		if res.CommitSeq == 0 {
			return fmt.Errorf("ssp2load: seed rows %d…%d were rejected: %+v", start, end-1, res.PushResult)
		}
	}
	return nil
}
