package conformance_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestPullCasesCatchBrokenDrivers runs the PULL cases against wrappers of
// the SQLite driver that each break one promise Pull is built on, and
// checks that the PULL rules resting on it fail, and only those (STYLE
// pitfall 9). The engine's own mistakes (a cursor moved to the head after
// a full window, a pin read after the first page, no actor check, a
// stream out of request order, a page re-pinned at a new head, a restart
// that keeps the old pin, …) were shown failing by mutating sync/pull.go
// by hand; see the commit messages.
func TestPullCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^PULL-`)
	broken := []brokenDriver{
		// HZ-4's flaw: an expired cursor is served from the horizon, so
		// the client silently misses the pruned commits.
		// The racing case's clients miss commits when the pruner passes
		// them (timing decides whether it does in a run).
		{name: "expired-cursor-served-from-the-horizon", want: []string{"PULL-2", "PULL-8", "PULL-10", "PULL-11"}, also: []string{"PULL-5"},
			wrap: func(c driver.Conn) driver.Conn { return &curServeExpired{connWrap{c}} }},
		// Paging by the last id skips the row after it (SCAN-2).
		{name: "scan-skips-the-row-after-the-page", want: []string{"PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-8", "PULL-10", "PULL-11", "PULL-12"},
			wrap: func(c driver.Conn) driver.Conn { return &pullScanSkips{connWrap{c}} }},
		// A window that stops after its first commit though under its
		// limit (WIN-5): Pull would move the cursor past the rest.
		{name: "window-stops-after-one-commit", want: []string{"PULL-2", "PULL-5", "PULL-6", "PULL-7", "PULL-11", "PULL-12"},
			wrap: func(c driver.Conn) driver.Conn { return &pullWindowShort{connWrap{c}} }},
		// Client records that are never stored by PutClientRecord: no
		// record of a pull's subscriptions and cursor. (The actor binding
		// is a Tx's BindClient, CR-7, so PULL-9 still holds.)
		{name: "client-records-not-stored", want: []string{"PULL-3", "PULL-8", "PULL-10", "PULL-11", "PULL-12", "PULL-13"},
			wrap: func(c driver.Conn) driver.Conn { return &pullRecordsLost{connWrap{c}} }},
	}
	for i := range broken {
		broken[i].match = match
	}
	runBroken(t, broken)
}

type pullScanSkips struct{ connWrap }

func (c *pullScanSkips) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	rows, err := c.Conn.ScanRows(ctx, p, q)
	if err != nil || q.AfterRowID == "" || len(rows) == 0 {
		return rows, err
	}
	return rows[1:], nil
}

type pullWindowShort struct{ connWrap }

func (c *pullWindowShort) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommitWindow(ctx, p, q)
	if err != nil || len(out) < 2 {
		return out, err
	}
	return out[:1], nil
}

type pullRecordsLost struct{ connWrap }

func (c *pullRecordsLost) PutClientRecord(context.Context, string, driver.ClientRecord) error {
	return nil
}
