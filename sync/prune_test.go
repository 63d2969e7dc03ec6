package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// argsConn records the bounds Prune passes to the retention reads and
// deletions of the driver under it.
type argsConn struct {
	driver.Conn
	calls []string
}

func (c *argsConn) MinClientCursor(ctx context.Context, p string, since, atLeast int64) (int64, bool, error) {
	c.calls = append(c.calls, fmt.Sprintf("MinClientCursor(since %d, atLeast %d)", since, atLeast))
	return c.Conn.MinClientCursor(ctx, p, since, atLeast)
}

func (c *argsConn) CommitSeqBefore(ctx context.Context, p string, atMs int64) (int64, error) {
	c.calls = append(c.calls, fmt.Sprintf("CommitSeqBefore(%d)", atMs))
	return c.Conn.CommitSeqBefore(ctx, p, atMs)
}

func (c *argsConn) DeletePushResultsBefore(ctx context.Context, p string, before int64, limit int) (int64, error) {
	c.calls = append(c.calls, fmt.Sprintf("DeletePushResultsBefore(%d, %d)", before, limit))
	return c.Conn.DeletePushResultsBefore(ctx, p, before, limit)
}

func (c *argsConn) DeleteClientRecordsBefore(ctx context.Context, p string, before int64, limit int) (int64, error) {
	c.calls = append(c.calls, fmt.Sprintf("DeleteClientRecordsBefore(%d, %d)", before, limit))
	return c.Conn.DeleteClientRecordsBefore(ctx, p, before, limit)
}

// TestPruneDefaults pins DefaultRetentionPolicy as the zero policy's
// values, down to the millisecond bounds the driver receives, the
// switches (a negative ForceAge, PushResultRetention or
// ClientRecordRetention skips its call), and NoDefaults' zeros (RET-11).
func TestPruneDefaults(t *testing.T) {
	base := openSQLite(t)
	conn := &argsConn{Conn: base.Conn()}
	s := sync.OpenConn(conn)
	const now = int64(1_800_000_000_000)
	const day = int64(24 * 3600 * 1000)
	clock := func() time.Time { return time.UnixMilli(now) }
	rep, err := s.Prune(t.Context(), "p", sync.RetentionPolicy{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("MinClientCursor(since %d, atLeast 0)", now-14*day),
		fmt.Sprintf("CommitSeqBefore(%d)", now-30*day),
		fmt.Sprintf("DeletePushResultsBefore(%d, 1000)", now-90*day),
		fmt.Sprintf("DeleteClientRecordsBefore(%d, 1000)", now-90*day),
	}
	if d := cmp.Diff(want, conn.calls); d != "" {
		t.Errorf("calls of the zero policy (-want +got):\n%s", d)
	}
	if d := cmp.Diff(sync.PruneReport{NowMs: now}, rep); d != "" {
		t.Errorf("report on an empty partition (-want +got):\n%s", d)
	}
	if got := (sync.RetentionPolicy{ActiveWindow: 14 * 24 * time.Hour, ForceAge: 30 * 24 * time.Hour, MinRetainedCommits: 1000,
		PushResultRetention: 90 * 24 * time.Hour, ClientRecordRetention: 90 * 24 * time.Hour, Limit: 1000}); !cmp.Equal(got, sync.DefaultRetentionPolicy) {
		t.Errorf("DefaultRetentionPolicy = %+v; the docs state %+v", sync.DefaultRetentionPolicy, got)
	}

	conn.calls = nil
	_, err = s.Prune(t.Context(), "p", sync.RetentionPolicy{Now: clock, ActiveWindow: 1500 * time.Microsecond,
		ForceAge: -1, PushResultRetention: -time.Hour, ClientRecordRetention: -1, Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{fmt.Sprintf("MinClientCursor(since %d, atLeast 0)", now-1)}, conn.calls); d != "" {
		t.Errorf("calls with every switch off, ActiveWindow 1.5 ms (-want +got):\n%s", d)
	}

	// NoDefaults: the zero fields are zero, the limit still 1,000.
	conn.calls = nil
	_, err = s.Prune(t.Context(), "p", sync.RetentionPolicy{Now: clock, NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		fmt.Sprintf("MinClientCursor(since %d, atLeast 0)", now),
		fmt.Sprintf("CommitSeqBefore(%d)", now),
		fmt.Sprintf("DeletePushResultsBefore(%d, 1000)", now),
		fmt.Sprintf("DeleteClientRecordsBefore(%d, 1000)", now),
	}
	if d := cmp.Diff(want, conn.calls); d != "" {
		t.Errorf("calls of the zero policy with NoDefaults (-want +got):\n%s", d)
	}
}

// TestRetentionPrimitivesValidate checks group V on the primitives Prune
// runs: the driver is never called with bad input.
func TestRetentionPrimitivesValidate(t *testing.T) {
	base := openSQLite(t)
	conn := &argsConn{Conn: base.Conn()}
	s := sync.OpenConn(conn)
	ctx := t.Context()
	var nilCtx context.Context // refused before the driver
	for _, c := range []struct {
		name string
		code driver.Code
		call func() error
	}{
		{"DeletePushResultsBefore empty partition", driver.CodeInvalidArgument, func() error {
			_, err := s.DeletePushResultsBefore(ctx, "", 1, 1)
			return err
		}},
		{"DeletePushResultsBefore limit 0", driver.CodeInvalidLimit, func() error {
			_, err := s.DeletePushResultsBefore(ctx, "p", 1, 0)
			return err
		}},
		{"DeleteClientRecordsBefore limit 10001", driver.CodeInvalidLimit, func() error {
			_, err := s.DeleteClientRecordsBefore(ctx, "p", 1, 10001)
			return err
		}},
		{"DeleteClientRecordsBefore partition with NUL", driver.CodeInvalidArgument, func() error {
			_, err := s.DeleteClientRecordsBefore(ctx, "p\x00", 1, 1)
			return err
		}},
		{"MinClientCursor negative atLeast", driver.CodeInvalidArgument, func() error {
			_, _, err := s.MinClientCursor(ctx, "p", 1, -1)
			return err
		}},
		{"MinClientCursor nil ctx", driver.CodeInvalidArgument, func() error {
			_, _, err := s.MinClientCursor(nilCtx, "p", 1, 0)
			return err
		}},
		{"Prune nil ctx", driver.CodeInvalidArgument, func() error {
			_, err := s.Prune(nilCtx, "p", sync.RetentionPolicy{})
			return err
		}},
	} {
		if got := driver.CodeOf(c.call()); got != c.code {
			t.Errorf("%s: code %q, want %q", c.name, got, c.code)
		}
	}
	if len(conn.calls) != 0 {
		t.Errorf("the driver was called with bad input: %v", conn.calls)
	}
}

// A host prunes each partition on a schedule: here once, with the default
// policy on a 2,000-commit log whose clients are all caught up. The
// horizon stops 1,000 commits short of the head (MinRetainedCommits).
func ExampleStore_Prune() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	now := time.Now().UnixMilli()
	err = store.RunInTx(ctx, "tenant-1", func(ctx context.Context, tx *sync.Tx) error {
		for range 2000 {
			if _, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	err = store.PutClientRecord(ctx, "tenant-1", driver.ClientRecord{ClientID: "phone-1", ActorID: "user-1",
		Cursor: 2000, UpdatedAtMs: now})
	if err != nil {
		panic(err)
	}

	for { // a real host runs this per partition, e.g. hourly
		rep, err := store.Prune(ctx, "tenant-1", sync.RetentionPolicy{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("horizon %d → %d, %d commits pruned, more: %v\n", rep.HorizonBefore, rep.HorizonAfter, rep.CommitsPruned, rep.More)
		if !rep.More {
			break
		}
	}
	// Output:
	// horizon 0 → 1000, 1000 commits pruned, more: false
}
