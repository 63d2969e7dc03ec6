// Package rxorder is the order every driver's ClaimReactions answers in
// (RX-2): by CreatedAtMs ascending, then by key, bytewise.
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
