package memdriver

import (
	"context"
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// ReadCommits returns the whole commits selected by q, oldest first
// (LOG-1…LOG-3): every change of each, copied. The cursor is checked
// against the horizon and head of the same immutable partition version
// the commits are read from: below the horizon → CodeCursorExpired
// (HZ-4), beyond the head → CodeCursorAhead (WIN-8). The retained log is
// sorted by seq, so the read starts with a binary search and stops at the
// stop rule (LOG-2, LOG-4).
func (c *Conn) ReadCommits(ctx context.Context, partition string, q driver.CommitsQuery) ([]driver.Commit, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	p := c.s.current(partition)
	if err := driver.CheckWindowCursor(q.AfterSeq, p.horizon, p.maxSeq); err != nil {
		return nil, err
	}
	var out []driver.Commit
	total := 0
	start := sort.Search(len(p.commits), func(i int) bool { return p.commits[i].Seq > q.AfterSeq })
	for _, cm := range p.commits[start:] {
		if cm.Seq > q.ThroughSeq || total >= q.LimitChanges {
			break
		}
		if len(cm.Changes) == 0 {
			continue // LOG-1: a commit without changes never appears
		}
		cm.Changes = cloneChanges(cm.Changes)
		out = append(out, cm)
		total += len(cm.Changes)
	}
	return out, nil
}
