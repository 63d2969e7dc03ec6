package memdriver

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/syncstore/syncstore/driver"
)

// Retention (PR-7, CR-4, CR-5). An in-memory reference: each call sorts
// what it considers, where an engine walks an index.

// DeletePushResultsBefore deletes at most limit results recorded before
// beforeMs, oldest first (recorded time, client id, client commit id), and
// returns how many (PR-7). A result that cannot be decoded has no known
// time and is kept.
func (c *Conn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := c.s.write(ctx, partition, func(d *draft) error {
		type old struct {
			k  resultKey
			at int64
		}
		var olds []old
		for k, data := range d.p.results {
			if r, err := driver.DecodePushResult(data); err == nil && r.RecordedAtMs < beforeMs {
				olds = append(olds, old{k, r.RecordedAtMs})
			}
		}
		slices.SortFunc(olds, func(a, b old) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.k.clientID, b.k.clientID),
				cmp.Compare(a.k.clientCommitID, b.k.clientCommitID))
		})
		for _, o := range olds[:min(len(olds), limit)] {
			delete(d.resultsForWrite(), o.k)
			n++
		}
		return nil
	}, nil)
	return n, err
}

// DeleteClientRecordsBefore deletes at most limit client records not
// updated since beforeMs, oldest first (updated time, client id), and
// returns how many (CR-4). It holds the partition's write lock, so a
// concurrent put lands before (and is then not old) or after.
func (c *Conn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error) {
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := c.s.write(ctx, partition, func(d *draft) error {
		ids := slices.SortedFunc(maps.Keys(d.p.clients), func(a, b string) int {
			return cmp.Or(cmp.Compare(d.p.clients[a].UpdatedAtMs, d.p.clients[b].UpdatedAtMs), cmp.Compare(a, b))
		})
		for _, id := range ids {
			if n == int64(limit) || d.p.clients[id].UpdatedAtMs >= beforeMs {
				break
			}
			delete(d.clientsForWrite(), id)
			n++
		}
		return nil
	}, nil)
	return n, err
}

// MinClientCursor returns the smallest cursor ≥ atLeast of a client
// record updated at or after updatedSinceMs (CR-5).
func (c *Conn) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (int64, bool, error) {
	if err := c.check(ctx); err != nil {
		return 0, false, err
	}
	var floor int64
	found := false
	for _, r := range c.s.current(partition).clients {
		if r.UpdatedAtMs >= updatedSinceMs && r.Cursor >= atLeast && (!found || r.Cursor < floor) {
			floor, found = r.Cursor, true
		}
	}
	return floor, found, nil
}
