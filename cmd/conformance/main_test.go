package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/internal/testdb"
)

// childEnv makes this test binary run the command itself (main) with its
// arguments, so a test can signal a real CLI process.
const childEnv = "SYNCSTORE_CONFORMANCE_CLI_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSIGTERMDropsEveryProvisionedDatabase runs the CLI against a real
// PostgreSQL server as a child process, sends it SIGTERM while a case
// runs, and checks that it exits 130, reports the running case
// INTERRUPTED (not FAIL) after the cases it finished, and that no
// database it created (syncstore_t_…) is left on the server. The child
// tags its connections with an application_name of its own; a watcher
// records every database they use for as long as the child lives.
func TestSIGTERMDropsEveryProvisionedDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI against PostgreSQL")
	}
	server := testdb.PostgresServer(t)
	app := fmt.Sprintf("syncstore_cli_sigterm_%d", os.Getpid())
	base, err := withAppName(server, app)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(ctx) }) // after the drops registered below

	// ROW-4 finishes quickly; RX-3 (8 claimers, 10,000 reactions) runs
	// for seconds: the signal arrives while it runs.
	cmd := exec.Command(os.Args[0], "-driver", "postgres", "-dsn", base, "-run", `^(ROW-4/missing-row-reads-not-found|RX-3/)`)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	seen := watchDatabases(t, server, app, exited)

	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "PASS  ROW-4  ") {
			break // RX-3 starts next
		}
	}
	// Wait until RX-3's database is in use (one more than so far), then
	// interrupt; bounded so a broken run fails instead of hanging.
	before := len(seen.names())
	for deadline := time.Now().Add(time.Minute); len(seen.names()) == before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	out.Write(rest)
	err = cmd.Wait()
	close(exited)
	seen.wait()
	t.Cleanup(func() { // never leave a database behind, even when the test fails
		for _, name := range seen.names() {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		}
	})

	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("the CLI ended with %v, want exit status 130 (interrupted); stderr:\n%s", err, stderr.String())
	}
	report := out.String()
	if !strings.Contains(report, "\nINTERRUPTED  RX-3  RX-3/") || strings.Contains(report, "FAIL") ||
		!strings.HasSuffix(report, "1 passed, 0 failed, 0 skipped, 0 not implemented, 1 interrupted\n") {
		t.Errorf("report does not say RX-3 was interrupted after ROW-4 passed:\n%s", report)
	}
	if len(seen.names()) == 0 {
		t.Fatalf("no database of the run was seen; the test checked nothing")
	}
	t.Logf("the run used %d databases: %v", len(seen.names()), seen.names())
	for _, name := range seen.names() {
		var exists bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("database %s, created by the interrupted run, is still on the server", name)
		}
	}
}

// withAppName returns the pgx DSN dsn with application_name set.
func withAppName(dsn, app string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " application_name=" + app, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dbSet is the provisioned databases a watcher saw in use.
type dbSet struct {
	mu   gosync.Mutex
	seen map[string]bool
	done chan struct{}
}

func (s *dbSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.seen {
		out = append(out, n)
	}
	return out
}

func (s *dbSet) wait() { <-s.done }

// watchDatabases records, until exited is closed, every syncstore_t_
// database that a connection with application_name app uses.
func watchDatabases(t *testing.T, server, app string, exited <-chan struct{}) *dbSet {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	s := &dbSet{seen: map[string]bool{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer conn.Close(ctx)
		for {
			rows, err := conn.Query(ctx, `SELECT DISTINCT datname FROM pg_stat_activity
				WHERE application_name = $1 AND datname LIKE 'syncstore\_t\_%'`, app)
			if err == nil {
				names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
				s.mu.Lock()
				for _, n := range names {
					s.seen[n] = true
				}
				s.mu.Unlock()
			}
			select {
			case <-exited:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return s
}
