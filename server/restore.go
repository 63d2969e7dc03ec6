package server

import (
	"context"
	"time"

	"github.com/syncstore/syncstore/sync"
)

// rotatePage is how many registry entries RotateAllLogEpochs reads at once.
const rotatePage = 1000

// RotateAllLogEpochs is the last step of restoring a store from a backup
// (SPEC §2.1, the backup-restore rule; docs/syncular.md "Backup and
// restore"): it gives every partition of st's registry (REG-3) a new,
// unpredictable log epoch, as Server.RotateLogEpoch does for one, at
// time now. Run it on the restored store before any Server serves it:
// a client whose cursor or acknowledged commits are ahead of the backup
// then gets the reset response (§6.3) on its next pull, drops its local
// copy of the synced tables and bootstraps again, and its unacknowledged
// outbox is pushed once more. The rotation also deletes every auth lease
// of the partition (LEASE-5), so a lease revoked after the backup point
// cannot authorize a round again; until a live round issues a fresh one,
// a client meets sync.auth_lease_required during a resolver outage.
// Servers that ran before the restore must
// not serve the restored store: they cache each partition's epoch
// (Limits.PartitionTouchInterval) and hold realtime sessions; restart
// them on it. A partition not in the registry needs nothing: its next
// request creates a fresh epoch.
//
// The registry is walked in pages of 1,000 partitions, each rotated in
// its own call, so memory stays bounded whatever the number of
// partitions; an error stops the walk and is returned with the count
// rotated so far (run it again: rotating twice is harmless). It returns
// the partitions rotated.
func RotateAllLogEpochs(ctx context.Context, st *sync.Store, now time.Time) (int, error) {
	n := 0
	for after := ""; ; {
		page, err := st.ListPartitionRegistry(ctx, after, rotatePage)
		if err != nil {
			return n, err
		}
		for _, e := range page {
			if _, err := st.RotatePartitionLogEpoch(ctx, e.Partition, newEpoch(), now.UnixMilli()); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < rotatePage {
			return n, nil
		}
		after = page[len(page)-1].Partition
	}
}
