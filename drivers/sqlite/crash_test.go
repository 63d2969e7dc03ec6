package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// Crash and load tests (docs/reliability.md). TestSQLiteCrashKill re-runs
// this test binary as a child (TestSQLiteCrashChild, selected by the
// crashEnvDB variable) that pushes commits into one file store, and kills
// it with SIGKILL at chosen and at random points. After every kill the
// store must open cleanly, pass PRAGMA integrity_check, hold every commit
// whole or not at all (rows, log changes and push result agree; TX-2,
// PR-4), keep a dense sequence (SEQ-1, SEQ-5) and accept the next push.

const (
	crashEnvDB   = "SYNCSTORE_CRASH_DB"   // child: the store's path
	crashEnvStop = "SYNCSTORE_CRASH_STOP" // child: "n:phase" to stop at
	crashEnvUpto = "SYNCSTORE_CRASH_UPTO" // child: idle after this commit
	crashEnvSeed = "SYNCSTORE_CRASH_SEED" // parent: replay a run's choices
	crashCommits = 100                    // commits pushed in all
	crashPart    = "P"
	crashClient  = "crash"
)

// crashPhases are the points inside a push where a child can be stopped
// (and then killed): after its upserts, after AppendCommit, after
// PutPushResult (all before Commit), and after Commit returned.
var crashPhases = []string{"upserted", "appended", "resulted", "committed"}

// crashRows returns the rows commit n writes: 1–3 rows of its own and the
// shared counter row set to n.
func crashRows(n int64) []driver.Row {
	rows := make([]driver.Row, 0, 4)
	for i := int64(0); i <= n%3; i++ {
		r := todoRow(fmt.Sprintf("c%03d-%d", n, i), "p", fmt.Sprintf("o%d", n%4))
		r.ServerVersion = n
		r.Values["updated_at"] = n*10 + i
		rows = append(rows, r)
	}
	counter := todoRow("counter", "p", "o")
	counter.ServerVersion = n
	counter.Values["updated_at"] = n
	return append(rows, counter)
}

// crashCommit returns commit n as a window read returns it.
func crashCommit(n int64) driver.Commit {
	c := driver.Commit{Seq: n, ClientID: crashClient, ClientCommitID: fmt.Sprintf("cc-%d", n), CreatedAtMs: n}
	for _, r := range crashRows(n) {
		c.Changes = append(c.Changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert,
			Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	return c
}

// crashResult returns the push result commit n stores.
func crashResult(n int64) driver.PushResult {
	r := driver.PushResult{Status: driver.PushApplied, CommitSeq: n, RecordedAtMs: n, CacheIdentity: fmt.Sprintf("ci-%d", n)}
	for range crashRows(n) {
		r.Ops = append(r.Ops, driver.OpResult{Status: driver.OpApplied})
	}
	return r
}

// crashPush pushes commit n in one Tx, calling hook after each phase.
func crashPush(ctx context.Context, c *Conn, n int64, hook func(phase string)) error {
	tx, err := c.Begin(ctx, crashPart)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	want := crashCommit(n)
	for _, r := range crashRows(n) {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return err
		}
	}
	hook("upserted")
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: want.ClientID, ClientCommitID: want.ClientCommitID,
		CreatedAtMs: want.CreatedAtMs, Changes: want.Changes})
	if err != nil {
		return err
	}
	if seq != n {
		return fmt.Errorf("AppendCommit allocated %d, want %d", seq, n)
	}
	hook("appended")
	if err := tx.PutPushResult(ctx, crashClient, want.ClientCommitID, crashResult(n)); err != nil {
		return err
	}
	hook("resulted")
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	hook("committed")
	return nil
}

// TestSQLiteCrashChild is the child process of TestSQLiteCrashKill; it is
// skipped unless crashEnvDB is set. It pushes commits max+1 … 100 (or
// only up to crashEnvUpto, then idles), and when crashEnvStop names a
// commit and phase it prints "CRASH STOP" there and sleeps until killed.
func TestSQLiteCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvDB)
	if path == "" {
		t.Skip("child of TestSQLiteCrashKill; runs only when " + crashEnvDB + " is set")
	}
	stopN, stopPhase, upto := int64(-1), "", int64(crashCommits)
	if s := os.Getenv(crashEnvUpto); s != "" {
		upto, _ = strconv.ParseInt(s, 10, 64)
	}
	if s := os.Getenv(crashEnvStop); s != "" {
		n, phase, _ := strings.Cut(s, ":")
		stopN, _ = strconv.ParseInt(n, 10, 64)
		stopPhase = phase
	}
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, path)
	if err != nil {
		t.Fatalf("child Open: %v", err)
	}
	c := conn.(*Conn)
	if err := c.EnsureSchema(ctx, testSchema()); err != nil {
		t.Fatalf("child EnsureSchema: %v", err)
	}
	fmt.Println("CRASH READY")
	for {
		m, err := c.MaxCommitSeq(ctx, crashPart)
		if err != nil {
			t.Fatalf("child MaxCommitSeq: %v", err)
		}
		if m >= crashCommits {
			_ = c.Close()
			return
		}
		if m >= upto {
			time.Sleep(time.Hour) // killed here
		}
		n := m + 1
		err = crashPush(ctx, c, n, func(phase string) {
			if n == stopN && phase == stopPhase {
				fmt.Println("CRASH STOP")
				time.Sleep(time.Hour) // killed here
			}
		})
		if err != nil {
			t.Fatalf("child push %d: %v", n, err)
		}
	}
}

// TestSQLiteCrashKill: a child pushing 100 commits is killed with SIGKILL
// at a chosen phase of a chosen commit, or after a random delay; after each
// kill the store is verified and takes one more push from the parent.
// Rounds cycle through the three kill modes of crashRunChild; a run is
// bounded (about 45 s at most, a few seconds normally).
// SYNCSTORE_CRASH_SEED=n replays a run's choices (kill timing still
// varies with the machine).
func TestSQLiteCrashKill(t *testing.T) {
	if os.Getenv(crashEnvDB) != "" {
		t.Skip("inside the child")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashEnvSeed); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (%s=%d replays it)", seed, crashEnvSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	path := t.TempDir() + "/crash.db"
	deadline := time.Now().Add(45 * time.Second)
	kills, stops, rounds := 0, 0, 40
	if faulttest.RaceEnabled() {
		rounds = 20 // a child under -race starts slowly
	}
	m := crashVerifyAndPush(t, path, true)
	for round := 0; m < crashCommits; round++ {
		last := round >= rounds || time.Now().After(deadline)
		env := []string{crashEnvDB + "=" + path}
		want := int64(-1) // exact max after the kill, when known
		mode := round % 3
		switch {
		case last:
			mode = -1
		case mode == 0: // a chosen phase of a chosen commit
			n := min(m+1+rng.Int64N(4), crashCommits)
			phase := crashPhases[rng.IntN(len(crashPhases))]
			env = append(env, fmt.Sprintf("%s=%d:%s", crashEnvStop, n, phase))
			want = n - 1
			if phase == "committed" {
				want = n
			}
		default: // a random moment among the next few commits
			env = append(env, fmt.Sprintf("%s=%d", crashEnvUpto, m+1+rng.Int64N(5)))
		}
		killed := crashRunChild(t, env, mode, rng)
		if killed {
			kills++
			if mode == 0 {
				stops++
			}
		} else if mode == 0 {
			t.Fatalf("round %d: the child was not stopped at its chosen point", round)
		}
		m = crashVerifyAndPush(t, path, m < crashCommits)
		if want >= 0 && m != min(want+1, crashCommits) {
			t.Fatalf("round %d: after a stop at commit %d the max seq is %d, want %d (+1 parent push)", round, want, m, min(want+1, crashCommits))
		}
	}
	if kills < 12 || stops < 5 {
		t.Fatalf("only %d kills (%d at chosen phases): the test did not exercise crashes", kills, stops)
	}
	t.Logf("%d kills (%d at chosen phases), %d commits verified", kills, stops, m)
}

// crashRunChild runs one child. mode 0 waits for the child's stop line;
// mode 1 kills a random 0–12 ms after the child is ready, mode 2 a random
// 0–40 ms after it starts (possibly while it opens the store); mode -1 lets
// it finish. It reports whether the child was killed before it exited.
func crashRunChild(t *testing.T, env []string, mode int, rng *rand.Rand) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	var tail strings.Builder
	var wg gosync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			tail.WriteString(sc.Text() + "\n")
			lines <- sc.Text()
		}
	})
	kill := func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
	switch mode {
	case 0, 1:
		for l := range lines {
			if mode == 0 && l == "CRASH STOP" {
				kill()
				break
			}
			if mode == 1 && l == "CRASH READY" {
				time.Sleep(time.Duration(rng.IntN(12_000)) * time.Microsecond)
				kill()
				break
			}
		}
	case 2:
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		kill()
	}
	for range lines { // drain until the pipe closes
	}
	wg.Wait()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("child failed: %v\nstdout:\n%s\nstderr:\n%s", err, tail.String(), stderr.String())
	}
	return false
}

// crashVerifyAndPush opens the store at path as a restarted server would,
// verifies it (see crashVerify) and, when push is set, pushes the next
// commit and verifies again. It returns the max seq.
func crashVerifyAndPush(t *testing.T, path string, push bool) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	c := conn.(*Conn)
	defer func() { _ = c.Close() }()
	if err := c.EnsureSchema(ctx, testSchema()); err != nil {
		t.Fatalf("EnsureSchema after kill: %v", err)
	}
	crashIntegrity(t, path)
	m := crashVerify(t, c)
	if !push || m >= crashCommits {
		return m
	}
	if err := crashPush(ctx, c, m+1, func(string) {}); err != nil {
		t.Fatalf("push %d after kill: %v", m+1, err)
	}
	if got := crashVerify(t, c); got != m+1 {
		t.Fatalf("after the parent's push the max seq is %d, want %d", got, m+1)
	}
	return m + 1
}

// crashIntegrity runs PRAGMA integrity_check on the file.
func crashIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check = %q, %v", res, err)
	}
}

// crashVerify checks that commits 1…max are exactly those pushed, each
// whole (log changes, rows and push result), and that nothing of commit
// max+1 exists. It returns max.
func crashVerify(t *testing.T, c *Conn) int64 {
	t.Helper()
	ctx := context.Background()
	m, err := c.MaxCommitSeq(ctx, crashPart)
	if err != nil {
		t.Fatal(err)
	}
	win, err := c.ReadCommitWindow(ctx, crashPart, driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var wantLog []driver.Commit
	wantRows := map[string]driver.Row{}
	for n := int64(1); n <= m; n++ {
		wantLog = append(wantLog, crashCommit(n))
		for _, r := range crashRows(n) {
			wantRows[r.ID] = r
		}
	}
	if d := cmp.Diff(wantLog, win, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("commit log after a kill (max seq %d) is not commits 1…%d whole (-want +got):\n%s", m, m, d)
	}
	rows, err := c.ScanRows(ctx, crashPart, driver.ScanQuery{Table: "todos", Filter: driver.ScopeFilter{"project": {"p"}}, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	gotRows := map[string]driver.Row{}
	for _, r := range rows {
		gotRows[r.ID] = r
	}
	if d := cmp.Diff(wantRows, gotRows, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("rows after a kill (max seq %d) are not those of commits 1…%d (-want +got):\n%s", m, m, d)
	}
	for n := int64(1); n <= m+1; n++ {
		got, ok, err := c.GetPushResult(ctx, crashPart, crashClient, fmt.Sprintf("cc-%d", n))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n <= m && !ok:
			t.Fatalf("commit %d landed without its push result", n)
		case n <= m:
			if d := cmp.Diff(crashResult(n), got, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("push result of commit %d (-want +got):\n%s", n, d)
			}
		case ok:
			t.Fatalf("push result of commit %d is stored, but the commit is not (max seq %d)", n, m)
		}
	}
	return m
}

// TestSQLiteSixteenWriters: 16 goroutines push to each of two partitions
// at once, every push a read-modify-write of a counter row plus a push
// result. Each partition's sequence is exactly 1…N, no update is lost and
// every push result names the commit that carries its key (TX-1, SEQ-4,
// PR-3). Counts are smaller under -race.
func TestSQLiteSixteenWriters(t *testing.T) {
	per := 12
	if faulttest.RaceEnabled() {
		per = 4
	}
	c, _ := openTest(t)
	faulttest.SixteenWriters(t, c, per)
}
