package faulttest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
)

// What every driver's TestUpgradeFormat2 shares: the reactions a store of
// storage format 2 holds (written by the test with the driver's own
// format-2 columns), and the check that the upgrade to format 3 kept each
// and gave it the new fields of the record (RX-1, RX-5, RX-11).

// Format2Reaction is one reaction as a format-2 store holds it: the
// driver's fixture writes every field with its own SQL, due_at_ms =
// AvailableAtMs while pending, NULL once completed.
type Format2Reaction struct {
	Partition string
	driver.Reaction
}

// Format2Reactions returns the fixture: a pending reaction and one
// completed at 500 (its last change), in two partitions.
func Format2Reactions() []Format2Reaction {
	base := driver.Reaction{Type: "mail", Payload: `{"to":"u1"}`, MaxAttempts: 3, SourceCommitSeq: 7,
		CreatedAtMs: 100, AvailableAtMs: 100, UpdatedAtMs: 100}
	pending := base
	pending.Key, pending.Status = "r-pending", driver.ReactionPending
	done := base
	done.Key, done.Status, done.Attempts, done.UpdatedAtMs = "r-done", driver.ReactionCompleted, 1, 500
	return []Format2Reaction{{"p1", pending}, {"p2", done}}
}

// CheckReactionsUpgraded checks, through conn, that every fixture
// reaction reads back as stored, with version 0 and empty source client
// ids (format 2 did not record them), and a completion time equal to the
// last change for the completed one.
func CheckReactionsUpgraded(t *testing.T, conn driver.Conn) {
	t.Helper()
	rc, ok := conn.(driver.ReactionsConn)
	if !ok {
		t.Fatal("the Conn has no reactions capability")
	}
	for _, f := range Format2Reactions() {
		want := f.Reaction
		if want.Status == driver.ReactionCompleted {
			want.CompletedAtMs = want.UpdatedAtMs
		}
		got, found, err := rc.GetReaction(context.Background(), f.Partition, f.Key)
		if err != nil || !found {
			t.Fatalf("GetReaction(%s) after the upgrade: found=%v, %v", f.Key, found, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("reaction %s after the upgrade to format 3 (-want +got):\n%s", f.Key, d)
		}
	}
}
