package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Workloads across the nodes of a cluster (docs/scaling.md): the standard
// workload's figures when a store is reached through several database
// nodes or read from a replica. Each returns rates in the units of the
// workload it names.

// BenchW6aAcross runs W6a (8 goroutines × 500 W1-shaped commits, each on
// its own partition) with goroutine g pushing through conns[g mod
// len(conns)] — Conns of one store on different nodes of a multi-primary
// cluster — and checks every partition's sequence is dense. It returns
// commits/s.
func BenchW6aAcross(ctx context.Context, conns []driver.Conn) (float64, error) {
	if len(conns) == 0 {
		return 0, fmt.Errorf("BenchW6aAcross: no Conn")
	}
	t, err := runW6Across(ctx, conns, false)
	if err != nil {
		return 0, err
	}
	return t.rate(), nil
}

// ReplicaReadRates are W2 and W3 measured on the primary and on a replica.
type ReplicaReadRates struct {
	W2Primary, W2Replica float64 // matched changes/s
	W3Primary, W3Replica float64 // rows/s
}

// BenchReadsFromReplica runs W1 (commits commits; 5,000 is the standard)
// on primary (a Conn of a fresh store, schema ensured), waits until
// replica (a Conn of the same store on a replica, schema ensured) has
// applied them, then runs W2 and W3 on each, interleaved twice (primary,
// replica, primary, replica), and returns the better rate of each, so
// neither side is measured cold.
func BenchReadsFromReplica(ctx context.Context, primary, replica driver.Conn, commits int) (ReplicaReadRates, error) {
	var r ReplicaReadRates
	if _, err := runW1(ctx, primary, commits); err != nil {
		return r, err
	}
	for {
		got, err := replica.MaxCommitSeq(ctx, BenchPartition)
		if err != nil {
			return r, err
		}
		if got >= int64(commits) {
			break
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	sides := []struct {
		conn     driver.Conn
		w2, w3   *float64
		nodeName string
	}{{primary, &r.W2Primary, &r.W3Primary, "primary"}, {replica, &r.W2Replica, &r.W3Replica, "replica"}}
	for range 2 {
		for _, m := range sides {
			t, err := runW2(ctx, m.conn, commits)
			if err != nil {
				return r, fmt.Errorf("%s: %w", m.nodeName, err)
			}
			*m.w2 = max(*m.w2, t.rate())
			t, err = runW3(ctx, m.conn, commits)
			if err != nil {
				return r, fmt.Errorf("%s: %w", m.nodeName, err)
			}
			*m.w3 = max(*m.w3, t.rate())
		}
	}
	return r, nil
}
