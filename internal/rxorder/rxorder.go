// Package rxorder holds the engine-free rules of every driver's reaction
// reads: the order ClaimReactions answers in (RX-2: by CreatedAtMs
// ascending, then by key, bytewise) and which statuses ListReactions
// includes.
package rxorder

import (
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// Sort puts claimed reactions in RX-2's order: CreatedAtMs ascending,
// then Key ascending bytewise. Keys are unique in a partition, so the
// order is total.
func Sort(claimed []driver.Reaction) {
	sort.Slice(claimed, func(i, j int) bool {
		if claimed[i].CreatedAtMs != claimed[j].CreatedAtMs {
			return claimed[i].CreatedAtMs < claimed[j].CreatedAtMs
		}
		return claimed[i].Key < claimed[j].Key
	})
}

// Statuses is the order of StatusFlags' flags.
var Statuses = [4]driver.ReactionStatus{driver.ReactionPending, driver.ReactionLeased, driver.ReactionCompleted, driver.ReactionDeadLetter}

// StatusFlags returns which statuses ListReactions includes, in the order
// of Statuses (pending, leased, completed, dead_letter); all four when
// statuses is empty.
func StatusFlags(statuses []driver.ReactionStatus) [4]bool {
	if len(statuses) == 0 {
		return [4]bool{true, true, true, true}
	}
	var f [4]bool
	for _, s := range statuses {
		switch s {
		case driver.ReactionPending:
			f[0] = true
		case driver.ReactionLeased:
			f[1] = true
		case driver.ReactionCompleted:
			f[2] = true
		case driver.ReactionDeadLetter:
			f[3] = true
		}
	}
	return f
}

// SortAcross puts reactions claimed across partitions in RX-12's order:
// Partition ascending bytewise, then RX-2's order within each partition.
func SortAcross(claimed []driver.PartitionReaction) {
	sort.Slice(claimed, func(i, j int) bool {
		a, b := &claimed[i], &claimed[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.CreatedAtMs != b.CreatedAtMs {
			return a.CreatedAtMs < b.CreatedAtMs
		}
		return a.Key < b.Key
	})
}
