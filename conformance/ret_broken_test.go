package conformance_test

import (
	"context"
	"math"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestRetentionCasesCatchBrokenDrivers runs the retention cases (PR-7,
// CR-4, CR-5, RET) against wrappers of the SQLite driver that each get one
// retention method wrong, and checks that exactly the expected rules fail.
func TestRetentionCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(PR-7|CR-4|CR-5|RET-[0-9]+)/`)
	runBroken(t, []brokenDriver{
		{name: "results-deleted-at-the-cutoff", match: match, want: []string{"PR-7", "RET-5", "RET-11"},
			wrap: func(c driver.Conn) driver.Conn { return &resultsAtCutoff{connWrap{c}} }},
		{name: "records-deleted-past-the-limit", match: match, want: []string{"CR-4", "RET-6"},
			wrap: func(c driver.Conn) driver.Conn { return &recordsPastLimit{connWrap{c}} }},
		// RET-8 may fail too: its concurrent Prunes delete the inactive
		// records while others compute the floor, so whether a wrong floor
		// is met depends on the interleaving (seen once in CI).
		{name: "floor-counts-inactive-records", match: match, want: []string{"CR-5", "RET-1", "RET-10", "RET-11"}, also: []string{"RET-8"},
			wrap: func(c driver.Conn) driver.Conn { return &floorOfEveryRecord{connWrap{c}} }},
		{name: "no-cursor-reported-as-zero", match: match, want: []string{"CR-5", "RET-3", "RET-10"},
			wrap: func(c driver.Conn) driver.Conn { return &noCursorAsZero{connWrap{c}} }},
	})
}

// resultsAtCutoff deletes results recorded at beforeMs too (`<=`).
type resultsAtCutoff struct{ connWrap }

func (c *resultsAtCutoff) DeletePushResultsBefore(ctx context.Context, p string, beforeMs int64, limit int) (int64, error) {
	if beforeMs < math.MaxInt64 {
		beforeMs++
	}
	return c.Conn.DeletePushResultsBefore(ctx, p, beforeMs, limit)
}

// recordsPastLimit deletes every old record, whatever the limit.
type recordsPastLimit struct{ connWrap }

func (c *recordsPastLimit) DeleteClientRecordsBefore(ctx context.Context, p string, beforeMs int64, _ int) (int64, error) {
	return c.Conn.DeleteClientRecordsBefore(ctx, p, beforeMs, 10000)
}

// floorOfEveryRecord counts every record as recent.
type floorOfEveryRecord struct{ connWrap }

func (c *floorOfEveryRecord) MinClientCursor(ctx context.Context, p string, _, atLeast int64) (int64, bool, error) {
	return c.Conn.MinClientCursor(ctx, p, math.MinInt64, atLeast)
}

// noCursorAsZero answers "no active cursor" as a cursor of 0 found, so
// the floor would hold the whole log.
type noCursorAsZero struct{ connWrap }

func (c *noCursorAsZero) MinClientCursor(ctx context.Context, p string, since, atLeast int64) (int64, bool, error) {
	cur, found, err := c.Conn.MinClientCursor(ctx, p, since, atLeast)
	if err == nil && !found {
		return 0, true, nil
	}
	return cur, found, err
}
