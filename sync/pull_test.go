package sync_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// callConn counts the driver calls Pull makes, by method.
type callConn struct {
	driver.Conn
	mu    gosync.Mutex
	calls map[string]int
}

func (c *callConn) count(m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[m]++
}

func (c *callConn) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *callConn) GetClientRecord(ctx context.Context, p, id string) (driver.ClientRecord, bool, error) {
	c.count("GetClientRecord")
	return c.Conn.GetClientRecord(ctx, p, id)
}

func (c *callConn) PutClientRecord(ctx context.Context, p string, r driver.ClientRecord) error {
	c.count("PutClientRecord")
	return c.Conn.PutClientRecord(ctx, p, r)
}

func (c *callConn) MaxCommitSeq(ctx context.Context, p string) (int64, error) {
	c.count("MaxCommitSeq")
	return c.Conn.MaxCommitSeq(ctx, p)
}

func (c *callConn) HorizonSeq(ctx context.Context, p string) (int64, error) {
	c.count("HorizonSeq")
	return c.Conn.HorizonSeq(ctx, p)
}

func (c *callConn) ReadCommitWindow(ctx context.Context, p string, q driver.WindowQuery) ([]driver.Commit, error) {
	c.count("ReadCommitWindow")
	return c.Conn.ReadCommitWindow(ctx, p, q)
}

func (c *callConn) ScanRows(ctx context.Context, p string, q driver.ScanQuery) ([]driver.Row, error) {
	c.count("ScanRows")
	return c.Conn.ScanRows(ctx, p, q)
}

func (c *callConn) TouchPartition(ctx context.Context, p string, at int64, epoch string) (driver.PartitionEntry, error) {
	c.count("TouchPartition")
	return c.Conn.TouchPartition(ctx, p, at, epoch)
}

// pullNotes returns a Store over a counting Conn with notesSchema ensured
// and notes n1…n4 of p7 written, one commit each.
func pullNotes(t *testing.T) (*sync.Store, *callConn) {
	t.Helper()
	base := openSQLite(t)
	conn := &callConn{Conn: base.Conn()}
	s := sync.OpenConn(conn)
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		r := note(id)
		err := s.RunInTx(t.Context(), "p", func(ctx context.Context, tx *sync.Tx) error {
			if err := tx.UpsertRow(ctx, "notes", r); err != nil {
				return err
			}
			_, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1, Changes: []driver.Change{{Table: "notes",
				RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	conn.reset()
	return s, conn
}

func notesSub(id string, cursor int64) sync.PullSubscription {
	return sync.PullSubscription{ID: id, Table: "notes", Scopes: driver.ScopeFilter{"project": {"p7"}}, Cursor: cursor}
}

// TestPullRoundTrips pins what a pull costs: one client-record read, one
// head, one read per subscription not at the head, one record write
// unless the record would not change (PULL-13), one registry touch
// unless this Store touched the partition within PullTouchInterval,
// and one horizon read only when a bootstrap is resumed; bad input reads
// nothing, and a refused actor costs the first reads (made at once) alone.
// A streamed pull adds one scan per page after a subscription's first.
// Every pull is at one request time: the first touches the partition, the
// others answer its epoch.
func TestPullRoundTrips(t *testing.T) {
	s, conn := pullNotes(t)
	ctx := t.Context()
	boot := notesSub("boot", sync.PullBootstrap)
	boot.LimitRows = 2
	req := sync.PullRequest{ClientID: "c", ActorID: "a", AtMs: 1000, Subscriptions: []sync.PullSubscription{boot, notesSub("inc", 1), notesSub("inc2", 4)}}
	resp, err := s.Pull(ctx, "p", req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"GetClientRecord": 1, "MaxCommitSeq": 1, "ScanRows": 1, "ReadCommitWindow": 1,
		"PutClientRecord": 1, "TouchPartition": 1}
	if d := cmp.Diff(want, conn.reset()); d != "" {
		t.Errorf("calls of a pull with a new bootstrap, a window and a subscription at the head (-want +got):\n%s", d)
	}

	req.Subscriptions[0].BootstrapToken = resp.Subscriptions[0].BootstrapToken
	req.Subscriptions = append(req.Subscriptions, notesSub("boot2", sync.PullBootstrap))
	req.Subscriptions[3].BootstrapToken, req.Subscriptions[3].LimitRows = req.Subscriptions[0].BootstrapToken, 2
	req.Subscriptions[3].ID = "boot2"
	if _, err := s.Pull(ctx, "p", req); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"GetClientRecord": 1, "MaxCommitSeq": 1, "HorizonSeq": 1, "ScanRows": 2,
		"ReadCommitWindow": 1, "PutClientRecord": 1}
	if d := cmp.Diff(want, conn.reset()); d != "" {
		t.Errorf("calls of a pull resuming two bootstraps (-want +got):\n%s", d)
	}

	bad := req
	bad.Subscriptions = []sync.PullSubscription{notesSub("x", -7)}
	if _, err := s.Pull(ctx, "p", bad); driver.CodeOf(err) != sync.CodeInvalidArgument {
		t.Errorf("cursor -7: %v", err)
	}
	if got := conn.reset(); len(got) != 0 {
		t.Errorf("bad input reached the driver: %v", got)
	}
	other := req
	other.ActorID = "b"
	if _, err := s.Pull(ctx, "p", other); driver.CodeOf(err) != sync.CodeClientActorMismatch {
		t.Errorf("another actor: %v", err)
	}
	if d := cmp.Diff(map[string]int{"GetClientRecord": 1, "MaxCommitSeq": 1, "HorizonSeq": 1}, conn.reset()); d != "" {
		t.Errorf("calls of a refused pull (-want +got):\n%s", d)
	}

	// A streamed pull costs one scan per page it serves: three pages of
	// one note, the fourth left to the token.
	boot = notesSub("boot", sync.PullBootstrap)
	boot.LimitRows = 1
	req = sync.PullRequest{ClientID: "c", ActorID: "a", AtMs: 1000, Subscriptions: []sync.PullSubscription{boot}}
	if _, err := s.PullTo(ctx, "p", req, &budgetSink{budget: 3}); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"GetClientRecord": 1, "MaxCommitSeq": 1, "ScanRows": 3, "PutClientRecord": 1}
	if d := cmp.Diff(want, conn.reset()); d != "" {
		t.Errorf("calls of a pull streaming three pages (-want +got):\n%s", d)
	}
	// A token that does not verify, with RestartBootstraps, is a fresh
	// bootstrap: no horizon read. Its record is the one the pull before
	// wrote, so nothing is written.
	req.Subscriptions[0].BootstrapToken, req.RestartBootstraps = "made-up", true
	if _, err := s.Pull(ctx, "p", req); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"GetClientRecord": 1, "MaxCommitSeq": 1, "ScanRows": 1}
	if d := cmp.Diff(want, conn.reset()); d != "" {
		t.Errorf("calls of a pull restarting a bootstrap (-want +got):\n%s", d)
	}
}

// budgetSink is a PullSink that takes budget pages of each bootstrap and
// keeps nothing.
type budgetSink struct {
	budget, pages int
}

func (b *budgetSink) Start(context.Context, sync.PullResult) error { b.pages = 0; return nil }
func (b *budgetSink) Page(context.Context, sync.PullPage) (bool, error) {
	b.pages++
	return b.pages < b.budget, nil
}
func (b *budgetSink) Commits(context.Context, []driver.Commit) error { return nil }
func (b *budgetSink) End(context.Context, sync.PullResult) error     { return nil }

// TestPullTokenEveryCharacterChecked alters each character of a token in
// turn: every altered token is refused (a strict encoding and the check
// leave no character free), and no message names the partition or a scope
// value (V-10).
func TestPullTokenEveryCharacterChecked(t *testing.T) {
	s, _ := pullNotes(t)
	ctx := t.Context()
	sub := notesSub("s", sync.PullBootstrap)
	sub.LimitRows = 1
	sub.Scopes = driver.ScopeFilter{"project": {"p7", "secret-scope"}}
	req := sync.PullRequest{ClientID: "c", ActorID: "a", Subscriptions: []sync.PullSubscription{sub}}
	resp, err := s.Pull(ctx, "p", req)
	if err != nil {
		t.Fatal(err)
	}
	tok := resp.Subscriptions[0].BootstrapToken
	if tok == "" || len(tok) > 512 {
		t.Fatalf("token %q", tok)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(tok) {
		for _, c := range []byte{alphabet[(strings.IndexByte(alphabet, tok[i])+1)%64], alphabet[(strings.IndexByte(alphabet, tok[i])+33)%64]} {
			altered := tok[:i] + string(c) + tok[i+1:]
			req.Subscriptions[0].BootstrapToken = altered
			_, err := s.Pull(ctx, "p", req)
			if driver.CodeOf(err) != sync.CodeInvalidArgument {
				t.Fatalf("character %d altered: %v", i, err)
			}
			if strings.Contains(err.Error(), "secret-scope") || strings.Contains(err.Error(), altered) {
				t.Fatalf("message shows a value: %v", err)
			}
		}
	}
	req.Subscriptions[0].BootstrapToken = tok
	if _, err := s.Pull(ctx, "secret-partition", req); driver.CodeOf(err) != sync.CodeInvalidArgument ||
		strings.Contains(err.Error(), "secret") {
		t.Errorf("token of another partition: %v", err)
	}
	if _, err := s.Pull(ctx, "p", req); err != nil {
		t.Errorf("the unaltered token: %v", err)
	}
}

// TestPullStampsNow checks that a request without AtMs stamps the client
// record and the registry with the current time.
func TestPullStampsNow(t *testing.T) {
	s, _ := pullNotes(t)
	before := time.Now().UnixMilli()
	resp, err := s.Pull(t.Context(), "p", sync.PullRequest{ClientID: "c", ActorID: "a",
		Subscriptions: []sync.PullSubscription{notesSub("s", 0)}})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	rec, _, err := s.GetClientRecord(t.Context(), "p", "c")
	if err != nil {
		t.Fatal(err)
	}
	if rec.UpdatedAtMs < before || rec.UpdatedAtMs > after {
		t.Errorf("record stamped %d, want within [%d, %d]", rec.UpdatedAtMs, before, after)
	}
	if len(resp.Epoch) != 32 {
		t.Errorf("epoch %q, want 32 hex digits", resp.Epoch)
	}
}

// BenchmarkPull measures one pull on SQLite (a file store) of a partition
// holding 2,000 commits, one row each: half in the subscription's scope
// (p7), half in another (p8).
//   - quiet: a caught-up client (cursor at the head): the fixed cost.
//   - window: 100 commits of the scope after the cursor (LimitChanges 100).
//   - bootstrap: the first page of 1,000 rows.
func BenchmarkPull(b *testing.B) {
	ctx := context.Background()
	s, err := sync.Open("sqlite", filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.EnsureSchema(ctx, notesSchema()); err != nil {
		b.Fatal(err)
	}
	t, _ := notesSchema().Table("notes")
	err = s.RunInTx(ctx, "p", func(ctx context.Context, tx *sync.Tx) error {
		for i := range 2000 {
			v := driver.Values{"id": fmt.Sprintf("n%04d", i), "proj": []string{"p7", "p8"}[i%2], "body": "body"}
			r := driver.Row{ID: v["id"].(string), ServerVersion: 1, Values: v, Scopes: sync.ScopesOf(t, v)}
			if err := tx.UpsertRow(ctx, "notes", r); err != nil {
				return err
			}
			if _, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1, Changes: []driver.Change{{Table: "notes",
				RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: v, RowVersion: 1}}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		cursor int64
		want   func(sync.PullResult) bool
	}{
		{"quiet", 2000, func(r sync.PullResult) bool { return len(r.Commits) == 0 && r.NextCursor == 2000 }},
		{"window", 1800, func(r sync.PullResult) bool { return len(r.Commits) == 100 }},
		{"bootstrap", sync.PullBootstrap, func(r sync.PullResult) bool { return len(r.Rows) == 1000 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			sub := notesSub("s", c.cursor)
			sub.LimitChanges = 100
			req := sync.PullRequest{ClientID: "c", ActorID: "a", AtMs: 1, Subscriptions: []sync.PullSubscription{sub}}
			for b.Loop() {
				resp, err := s.Pull(ctx, "p", req)
				if err != nil || !c.want(resp.Subscriptions[0]) {
					b.Fatalf("pull: %v %+v", err, resp)
				}
			}
		})
	}
}

// TestPruneLowersRecordRefresh: a Prune with a short ActiveWindow lowers
// the Store's record refresh age to its policy's (PULL-13), so a client
// pulling unchanged after more than that age gets its record written and
// stays active for that window (RET-1); a longer policy never raises it.
func TestPruneLowersRecordRefresh(t *testing.T) {
	s, _ := pullNotes(t)
	pull := func(at int64) int64 {
		t.Helper()
		if _, err := s.Pull(t.Context(), "p", sync.PullRequest{ClientID: "c", ActorID: "a", AtMs: at,
			Subscriptions: []sync.PullSubscription{notesSub("s", 0)}}); err != nil {
			t.Fatal(err)
		}
		rec, _, err := s.GetClientRecord(t.Context(), "p", "c")
		if err != nil {
			t.Fatal(err)
		}
		return rec.UpdatedAtMs
	}
	const t0 = 1_700_000_000_000
	pull(t0)
	if got := pull(t0 + 10_000); got != t0 {
		t.Fatalf("default refresh: a quiet pull 10 s later wrote the record (updatedAtMs %d)", got)
	}
	prune := func(window time.Duration) {
		t.Helper()
		pol := sync.DefaultRetentionPolicy
		pol.ActiveWindow, pol.Now = window, func() time.Time { return time.UnixMilli(t0 + 20_000) }
		if _, err := s.Prune(t.Context(), "p", pol); err != nil {
			t.Fatal(err)
		}
	}
	prune(time.Hour) // refresh age 3.6 s
	if got := pull(t0 + 20_000); got != t0+20_000 {
		t.Fatalf("after a Prune with a 1 h window, a pull 20 s after the record's time left it at %d", got)
	}
	prune(30 * 24 * time.Hour) // would be 43.2 min: not raised
	if got := pull(t0 + 25_000); got != t0+25_000 {
		t.Fatalf("a Prune with a longer window raised the refresh age: updatedAtMs %d", got)
	}
}
