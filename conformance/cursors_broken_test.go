package conformance_test

import (
	"context"
	"regexp"
	"slices"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestCursorCasesCatchBrokenDrivers runs the cases of WIN-8, HZ-4 and
// CR-3 against wrappers of the SQLite driver that each break one promise
// of cursors and paging, and checks that the broken rule fails and
// nothing else does.
func TestCursorCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(WIN-8|HZ-4|CR-3)/`)
	broken := []brokenDriver{
		// The flaw HZ-4 was written for: a cursor below the horizon is
		// served with whatever is retained after the horizon.
		{name: "expired-cursor-served-from-the-horizon", want: []string{"HZ-4"},
			wrap: func(c driver.Conn) driver.Conn { return &curServeExpired{connWrap{c}} }},
		{name: "cursor-ahead-served-empty", want: []string{"WIN-8"},
			wrap: func(c driver.Conn) driver.Conn { return &curAheadEmpty{connWrap{c}} }},
		// WIN-8 reads at the head after pruning everything: the horizon.
		{name: "cursor-at-the-horizon-refused", want: []string{"HZ-4"}, also: []string{"WIN-8"},
			wrap: func(c driver.Conn) driver.Conn { return &curHorizonInclusive{connWrap{c}} }},
		// HZ-4's cases read through 1<<40 as well.
		{name: "through-beyond-the-head-refused", want: []string{"WIN-8"}, also: []string{"HZ-4"},
			wrap: func(c driver.Conn) driver.Conn { return &curThroughRefused{connWrap{c}} }},
		{name: "client-cursors-ignore-the-limit", want: []string{"CR-3"},
			wrap: func(c driver.Conn) driver.Conn { return &crIgnoreLimit{connWrap{c}} }},
		{name: "client-cursors-after-inclusive", want: []string{"CR-3"},
			wrap: func(c driver.Conn) driver.Conn { return &crAfterInclusive{connWrap{c}} }},
		{name: "client-cursors-paged-by-offset", want: []string{"CR-3"},
			wrap: func(c driver.Conn) driver.Conn { return &crByOffset{connWrap: connWrap{c}, offsets: map[string]int{}} }},
	}
	for i := range broken {
		broken[i].match = match
	}
	runBroken(t, broken)
}

// ---- HZ-4: a read below the horizon is answered from the horizon ----

type curServeExpired struct{ connWrap }

func (c *curServeExpired) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommitWindow(ctx, p, q)
	if driver.CodeOf(err) != driver.CodeCursorExpired {
		return out, err
	}
	hz, herr := c.Conn.HorizonSeq(ctx, p)
	if herr != nil {
		return nil, herr
	}
	q.AfterSeq, q.ThroughSeq = hz, max(q.ThroughSeq, hz)
	return c.Conn.ReadCommitWindow(ctx, p, q)
}

// ---- WIN-8: a cursor beyond the head reads as an empty window ----

type curAheadEmpty struct{ connWrap }

func (c *curAheadEmpty) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommitWindow(ctx, p, q)
	if driver.CodeOf(err) == driver.CodeCursorAhead {
		return nil, nil
	}
	return out, err
}

// ---- HZ-4: `afterSeq <= horizon` instead of `afterSeq < horizon` ----

type curHorizonInclusive struct{ connWrap }

func (c *curHorizonInclusive) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	hz, err := c.Conn.HorizonSeq(ctx, p)
	if err != nil {
		return nil, err
	}
	if hz > 0 && q.AfterSeq == hz {
		return nil, driver.Errorf(driver.CodeCursorExpired, "window cursor at the horizon")
	}
	return c.Conn.ReadCommitWindow(ctx, p, q)
}

// ---- WIN-8: a throughSeq beyond the head taken for a cursor ahead ----

type curThroughRefused struct{ connWrap }

func (c *curThroughRefused) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	m, err := c.Conn.MaxCommitSeq(ctx, p)
	if err != nil {
		return nil, err
	}
	if q.ThroughSeq > m {
		return nil, driver.Errorf(driver.CodeCursorAhead, "window bound beyond the head")
	}
	return c.Conn.ReadCommitWindow(ctx, p, q)
}

// ---- CR-3: every cursor after the position, whatever the limit ----

type crIgnoreLimit struct{ connWrap }

func (c *crIgnoreLimit) ListClientCursors(ctx context.Context, p, after string, limit int) ([]driver.ClientCursor, error) {
	return c.Conn.ListClientCursors(ctx, p, after, 10000)
}

// ---- CR-3: the position itself is listed again (`>=`) ----

type crAfterInclusive struct{ connWrap }

func (c *crAfterInclusive) ListClientCursors(ctx context.Context, p, after string, limit int) ([]driver.ClientCursor, error) {
	all, err := c.Conn.ListClientCursors(ctx, p, "", 10000)
	if err != nil {
		return nil, err
	}
	i, _ := slices.BinarySearchFunc(all, after, func(cc driver.ClientCursor, id string) int {
		switch {
		case cc.ClientID < id:
			return -1
		case cc.ClientID > id:
			return 1
		}
		return 0
	})
	return all[i:min(len(all), i+limit)], nil
}

// ---- CR-3: pages by offset, remembered per position ----

// crByOffset pages with OFFSET: the position maps to the count of records
// listed before it, so a record put before the position shifts every
// later page (one record listed twice).
type crByOffset struct {
	connWrap
	mu      gosync.Mutex
	offsets map[string]int // partition + "\x00" + last id of a page → records listed through it
}

func (c *crByOffset) ListClientCursors(ctx context.Context, p, after string, limit int) ([]driver.ClientCursor, error) {
	all, err := c.Conn.ListClientCursors(ctx, p, "", 10000)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	off := 0
	if after != "" {
		o, ok := c.offsets[p+"\x00"+after]
		if !ok { // a position this wrapper did not hand out: find it once
			o = len(all)
			for i, cc := range all {
				if cc.ClientID > after {
					o = i
					break
				}
			}
		}
		off = o
	}
	page := all[min(off, len(all)):min(off+limit, len(all))]
	if len(page) > 0 {
		c.offsets[p+"\x00"+page[len(page)-1].ClientID] = off + len(page)
	}
	return page, nil
}
