package retentioncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/internal/upstream"
	"github.com/syncstore/syncstore/sync"
)

// client is a client record of a history.
type client struct {
	ID          string `json:"clientId"`
	Cursor      int64  `json:"cursor"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
}

// options are upstream's RetentionOptions; nil is absent.
type options struct {
	ActiveWindowMs     *int64 `json:"activeWindowMs,omitempty"`
	AgeForceMs         *int64 `json:"ageForceMs,omitempty"`
	MinRetainedCommits *int64 `json:"minRetainedCommits,omitempty"`
}

// history is one partition's state before a prune, the policy, and the
// horizon both sides must reach — or, for a documented difference
// (docs/retention.md), the horizon each reaches, or the code ours
// refuses the policy with.
type history struct {
	Name       string   `json:"name"`
	NowMs      int64    `json:"nowMs"`
	HorizonSeq int64    `json:"horizonSeq"`
	Commits    []int64  `json:"commits"` // creation times of commits 1…n
	Clients    []client `json:"clients"`
	Retention  *options `json:"retention,omitempty"`

	want int64
	diff *difference
}

type difference struct {
	ours, upstream int64
	oursCode       driver.Code // ours refuses the policy
}

func n(v int64) *int64 { return &v }

const (
	now  = int64(1_700_000_000_000)
	sec  = int64(1000)
	hour = 3600 * sec
	day  = 24 * hour
)

// times returns k creation times, from start, step apart.
func times(k int, start, step int64) []int64 {
	out := make([]int64, k)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}

// histories are the cross-check's cases. "big" force age (10¹² ms, about
// 31 years) is how upstream's options say "no force age" in JSON.
func histories() []history {
	big := n(1_000_000_000_000)
	recent := times(10, now-10*sec, sec) // commits 1…10, the last 1 s ago
	return []history{
		// Absent options: upstream's defaults (14 days, 30 days, 1,000).
		{Name: "issue: 5 commits, no client record, keep the newest 2", NowMs: now, Commits: times(5, now-5*sec, sec),
			Retention: &options{MinRetainedCommits: n(2)}, want: 3},
		{Name: "defaults: a client an hour behind, 5 commits", NowMs: now, Commits: times(5, now-5*sec, sec),
			Clients: []client{{"a", 2, now - hour}}, want: 0},
		{Name: "defaults: 1,200 commits 40 days old, a client active at 100", NowMs: now, Commits: times(1200, now-40*day, sec),
			Clients: []client{{"a", 100, now - 10*day}}, want: 200},
		{Name: "defaults: 1,200 commits 20 days old, a client active at 100", NowMs: now, Commits: times(1200, now-20*day, sec),
			Clients: []client{{"a", 100, now - 10*day}}, want: 100},
		{Name: "defaults: 1,200 commits 20 days old, the only client inactive", NowMs: now, Commits: times(1200, now-20*day, sec),
			Clients: []client{{"a", 100, now - 15*day}}, want: 200},
		{Name: "defaults: empty partition", NowMs: now, want: 0},

		// Upstream's conformance catalog (lifecycle, window).
		{Name: "catalog lifecycle: {0, 0, 0} an hour later", NowMs: now + hour, Commits: times(3, now-3*sec, sec),
			Clients: []client{{"client-a", 2, now}}, Retention: &options{n(0), n(0), n(0)}, want: 3},
		{Name: "catalog lifecycle: {0, 0, 1000} holds the horizon", NowMs: now + 2*hour, HorizonSeq: 3,
			Commits: append(times(3, now-3*sec, sec), now+hour), Clients: []client{{"client-a", 2, now}, {"bd-client", 4, now + hour}},
			Retention: &options{n(0), n(0), n(1000)}, want: 3},
		{Name: "catalog window: {minRetainedCommits: 1}, a client caught up", NowMs: now, Commits: times(8, now-8*sec, sec),
			Clients: []client{{"client-a", 8, now - 60*sec}}, Retention: &options{MinRetainedCommits: n(1)}, want: 7},
		{Name: "zeros: {0, 0, 0} on an empty partition", NowMs: now, Retention: &options{n(0), n(0), n(0)}, want: 0},

		// Zeros one at a time.
		{Name: "zero window: only records updated at now or later are active", NowMs: now, Commits: recent,
			Clients:   []client{{"a", 4, now - 1}, {"b", 6, now}, {"c", 5, now + 5*sec}},
			Retention: &options{ActiveWindowMs: n(0), AgeForceMs: big, MinRetainedCommits: n(0)}, want: 5},
		{Name: "zero window alone: the default minimum holds", NowMs: now, Commits: recent,
			Clients: []client{{"b", 6, now}}, Retention: &options{ActiveWindowMs: n(0)}, want: 0},
		{Name: "zero force age: every commit created before now", NowMs: now, Commits: times(10, now-9*sec, sec),
			Clients:   []client{{"slow", 2, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: n(0), MinRetainedCommits: n(0)}, want: 9},
		{Name: "zero minimum: a caught-up client lets the whole log go", NowMs: now, Commits: recent,
			Clients: []client{{"fast", 10, now}}, Retention: &options{MinRetainedCommits: n(0)}, want: 10},

		// Boundaries.
		{Name: "active window inclusive", NowMs: now, Commits: recent,
			Clients:   []client{{"a", 6, now}, {"b", 4, now - 10*sec}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(0)}, want: 4},
		{Name: "1 ms outside the active window", NowMs: now, Commits: recent,
			Clients:   []client{{"a", 6, now}, {"b", 4, now - 10*sec - 1}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(0)}, want: 6},
		{Name: "force age strictly before the cutoff", NowMs: now, Commits: times(10, now-19*sec, sec),
			Clients:   []client{{"slow", 2, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: n(14 * sec), MinRetainedCommits: n(0)}, want: 5},
		{Name: "minimum caps the floor", NowMs: now, Commits: recent, Clients: []client{{"fast", 9, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(3)}, want: 7},
		{Name: "minimum caps the force age", NowMs: now, Commits: recent, Clients: []client{{"slow", 2, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: n(0), MinRetainedCommits: n(4)}, want: 6},
		{Name: "minimum above the max commit seq", NowMs: now, Commits: recent, Clients: []client{{"fast", 10, now}},
			Retention: &options{MinRetainedCommits: n(11)}, want: 0},
		{Name: "horizon never lowered", NowMs: now, HorizonSeq: 8, Commits: recent,
			Clients:   []client{{"a", 8, now}, {"b", 9, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(5)}, want: 8},
		{Name: "a cursor at the horizon holds it", NowMs: now, HorizonSeq: 5, Commits: recent,
			Clients:   []client{{"a", 5, now}, {"b", 8, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(0)}, want: 5},
		{Name: "a cursor ahead of the max commit seq", NowMs: now, Commits: recent, Clients: []client{{"a", 20, now}},
			Retention: &options{MinRetainedCommits: n(0)}, want: 10},
		{Name: "inactive and active clients: the inactive one holds nothing", NowMs: now, Commits: recent,
			Clients:   []client{{"old", 2, now - 60*sec}, {"a", 7, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(0)}, want: 7},

		// The documented differences (docs/retention.md).
		{Name: "difference: an active cursor below the horizon", NowMs: now, HorizonSeq: 5, Commits: recent,
			Clients:   []client{{"expired", 3, now}, {"ahead", 8, now}},
			Retention: &options{ActiveWindowMs: n(10 * sec), AgeForceMs: big, MinRetainedCommits: n(0)},
			diff:      &difference{ours: 8, upstream: 5}},
		{Name: "difference: only a cursor of -1 is active", NowMs: now, Commits: recent, Clients: []client{{"producer", -1, now}},
			Retention: &options{MinRetainedCommits: n(2)}, diff: &difference{ours: 8, upstream: 0}},
		{Name: "difference: a push-only producer beside a caught-up reader", NowMs: now, Commits: times(8, now-8*sec, sec),
			Clients:   []client{{"client-a", 8, now - 60*sec}, {"seed", -1, now - 60*sec}},
			Retention: &options{MinRetainedCommits: n(1)}, diff: &difference{ours: 7, upstream: 0}},
		{Name: "difference: a negative force age", NowMs: now, Commits: recent, Clients: []client{{"slow", 2, now}},
			Retention: &options{AgeForceMs: n(-1), MinRetainedCommits: n(0)}, diff: &difference{ours: 2, upstream: 10}},
		{Name: "difference: a negative minimum", NowMs: now, Commits: times(3, now-3*sec, sec),
			Retention: &options{MinRetainedCommits: n(-1)}, diff: &difference{ours: 3, upstream: 4}},
		{Name: "difference: a negative active window", NowMs: now, Commits: recent, Clients: []client{{"a", 4, now}},
			Retention: &options{ActiveWindowMs: n(-1000), MinRetainedCommits: n(0)},
			diff:      &difference{upstream: 10, oursCode: driver.CodeInvalidArgument}},
	}
}

// policy maps upstream's options onto a RetentionPolicy as
// docs/retention.md says, with no push-result or client-record
// collection (upstream's prune has none).
func policy(h history) sync.RetentionPolicy {
	pol := sync.DefaultRetentionPolicy
	pol.NoDefaults = true
	if o := h.Retention; o != nil {
		if o.ActiveWindowMs != nil {
			pol.ActiveWindow = time.Duration(*o.ActiveWindowMs) * time.Millisecond
		}
		if o.AgeForceMs != nil {
			pol.ForceAge = time.Duration(*o.AgeForceMs) * time.Millisecond
		}
		if o.MinRetainedCommits != nil {
			pol.MinRetainedCommits = *o.MinRetainedCommits
		}
	}
	pol.PushResultRetention, pol.ClientRecordRetention = -1, -1
	pol.Now = func() time.Time { return time.UnixMilli(h.NowMs) }
	return pol
}

// ours prunes h on a SQLite store (partition p) and returns the horizon,
// or the error of a refused policy.
func ours(t *testing.T, s *sync.Store, p string, h history) (int64, error) {
	t.Helper()
	ctx := t.Context()
	conn := s.Conn()
	if len(h.Commits) > 0 {
		tx, err := conn.Begin(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range h.Commits {
			if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "writer", ClientCommitID: fmt.Sprintf("c%d", i+1),
				ActorID: "a", CreatedAtMs: at}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range h.Clients {
		if err := conn.PutClientRecord(ctx, p, driver.ClientRecord{ClientID: c.ID, ActorID: "a", WireVersion: 2,
			Cursor: c.Cursor, UpdatedAtMs: c.UpdatedAtMs}); err != nil {
			t.Fatal(err)
		}
	}
	if h.HorizonSeq > 0 {
		if err := conn.SetHorizonSeq(ctx, p, h.HorizonSeq); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.PruneCommitsThrough(ctx, p, h.HorizonSeq); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Prune(ctx, p, policy(h))
	return rep.HorizonAfter, err
}

// TestCrossCheck prunes every history with Store.Prune and with
// upstream's pruneCommitLog and compares the horizons with each other
// and with the ones stated.
func TestCrossCheck(t *testing.T) {
	hs := histories()
	s, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	got := make([]int64, len(hs))
	for i, h := range hs {
		hz, err := ours(t, s, fmt.Sprintf("h%d", i), h)
		got[i] = hz
		switch {
		case h.diff != nil && h.diff.oursCode != "":
			if driver.CodeOf(err) != h.diff.oursCode {
				t.Errorf("%s: Prune: %v; want code %s", h.Name, err, h.diff.oursCode)
			}
		case err != nil:
			t.Errorf("%s: Prune: %v", h.Name, err)
		case h.diff != nil && hz != h.diff.ours:
			t.Errorf("%s: our horizon %d; want %d (docs/retention.md)", h.Name, hz, h.diff.ours)
		case h.diff == nil && hz != h.want:
			t.Errorf("%s: our horizon %d; want %d", h.Name, hz, h.want)
		}
	}

	t.Run("upstream", func(t *testing.T) {
		up := runUpstream(t, hs)
		var table strings.Builder
		fmt.Fprintf(&table, "%-70s %8s %8s\n", "history", "ours", "upstream")
		for i, h := range hs {
			u, ok := up[h.Name]
			if !ok {
				t.Errorf("%s: upstream printed no horizon", h.Name)
				continue
			}
			o := fmt.Sprint(got[i])
			if h.diff != nil && h.diff.oursCode != "" {
				o = string(h.diff.oursCode)
			}
			fmt.Fprintf(&table, "%-70s %8s %8d\n", h.Name, o, u)
			switch {
			case h.diff != nil && u != h.diff.upstream:
				t.Errorf("%s: upstream's horizon %d; docs/retention.md states %d", h.Name, u, h.diff.upstream)
			case h.diff == nil && u != got[i]:
				t.Errorf("%s: upstream's horizon %d, ours %d", h.Name, u, got[i])
			}
		}
		t.Logf("horizons:\n%s", table.String())
	})
}

// runUpstream runs prune.ts over hs and returns the horizons by name.
func runUpstream(t *testing.T, hs []history) map[string]int64 {
	t.Helper()
	ws := requireWorkspace(t)
	in, err := json.Marshal(map[string]any{"histories": hs})
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("prune.ts")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ws.bun, "run", script, filepath.Join(ws.dir, "packages", "server", "src", "index-bun.ts"))
	cmd.Dir = ws.dir
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bun run prune.ts: %v\n%s%s", err, out.String(), errb.String())
	}
	var res struct {
		Horizons map[string]int64 `json:"horizons"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("prune.ts printed %q: %v", out.String(), err)
	}
	return res.Horizons
}

// workspace is a Bun workspace of upstream's packages and its bun.
type workspace struct{ dir, bun string }

const (
	envWorkspace = "SYNCULAR_WORKSPACE"
	envBun       = "SYNCULAR_BUN"
	requireEnv   = "SYNCSTORE_TEST_REQUIRE_DB"
)

var (
	wsOnce gosync.Once
	wsMade workspace
	wsErr  error
	wsTmp  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if wsTmp != "" {
		_ = os.RemoveAll(wsTmp)
	}
	os.Exit(code)
}

// requireWorkspace returns the workspace, made once per test process
// (see the package doc), or skips t — or fails it when the materials
// exist and SYNCSTORE_TEST_REQUIRE_DB=1.
func requireWorkspace(t *testing.T) workspace {
	t.Helper()
	up, err := upstream.Dir()
	setup := filepath.Join(filepath.Dir(up), "setup.sh")
	if err == nil {
		_, err = os.Stat(setup)
	}
	if err != nil {
		t.Skipf("SKIP (loud): no shared/syncular materials (%v): upstream's pruneCommitLog not run; set %s to the upstream/ directory beside setup.sh", err, upstream.Env)
	}
	wsOnce.Do(func() {
		if d, b := os.Getenv(envWorkspace), os.Getenv(envBun); d != "" && b != "" {
			wsMade = workspace{d, b}
			return
		}
		if wsTmp, wsErr = os.MkdirTemp("", "retentioncheck-"); wsErr != nil {
			return
		}
		dir := filepath.Join(wsTmp, "ws")
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", setup, dir)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if wsErr = cmd.Run(); wsErr != nil {
			wsErr = fmt.Errorf("%s %s: %v\n%s%s", setup, dir, wsErr, out.String(), errb.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		wsMade = workspace{dir, strings.TrimSpace(lines[len(lines)-1])}
	})
	if wsErr != nil {
		msg := fmt.Sprintf("no Bun workspace of upstream's packages: %v", wsErr)
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s (%s=1 makes this a failure)", msg, requireEnv)
		}
		t.Skip("SKIP (loud): " + msg)
	}
	return wsMade
}
