package conformance_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestCursorCasesCatchBrokenDrivers runs the cases of WIN-8 and HZ-4
// against wrappers of the SQLite driver that each break one promise of
// window cursors, and checks that the broken rule fails and nothing else
// does (STYLE pitfall 9).
func TestCursorCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(WIN-8|HZ-4)/`)
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
