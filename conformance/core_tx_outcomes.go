package conformance

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/internal/faulttest"
)

// Rule TX-10 (docs/contract.md): Commit tells the truth about its outcome. nil
// only if the Tx landed; an error other than
// sync.storage.commit_outcome_unknown only if nothing of it landed; an
// unknown outcome resolves by reading what the Tx wrote (its push result).

// txOutcomePushes is the size of the TX-10 storm: enough pushes for the
// random deadlines to cut some inside Commit on every engine.
const txOutcomePushes = 240

func init() {
	register(
		// Catches: a Commit that returns an error ("not written") for a
		// Tx that landed — a cancelled context while the engine's answer
		// was in flight — or nil for one that did not.
		Case{Name: "TX-10/deadline-storm-outcomes-are-true", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			storm := faulttest.OutcomeStorm{Pushes: txOutcomePushes, Workers: 2, Partitions: []string{"p1", "p2"},
				NoDeadlineEvery: 8, Seed: seed}
			counts := storm.Run(t, conn)
			t.Logf("TX-10: %d pushes: %s", txOutcomePushes, counts)
			// Whatever Commit said, the partition takes the next push (TX-6).
			must(t, "TX-10: a push after the storm", faulttest.Push(context.Background(), conn, "p1", txOutcomePushes+100))
		}},
	)
}
