package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
)

// pgBin holds the PostgreSQL 15 server binaries a test starts a server
// of its own with (the Debian/Ubuntu layout; CI installs them).
const pgBin = "/usr/lib/postgresql/15/bin"

// ownServer is a PostgreSQL server a test starts on a temporary
// directory and a free loopback port, so it can restart it (the shared
// test server is never restarted). It runs as the postgres user when the
// test runs as root (initdb refuses root).
type ownServer struct {
	dir  string
	port int
	run  func(name string, args ...string) *exec.Cmd
}

// startOwnServer initdb's and starts a server with conf appended to its
// postgresql.conf; it is stopped and removed when t ends. Without the
// binaries the test skips, loudly — or fails with
// SYNCSTORE_TEST_REQUIRE_DB=1.
func startOwnServer(t *testing.T, conf string) *ownServer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_DB") == "1" {
			t.Fatalf("no PostgreSQL server binaries in %s, but SYNCSTORE_TEST_REQUIRE_DB=1", pgBin)
		}
		t.Skipf("SKIPPED: no PostgreSQL server binaries in %s to start a server of the test's own", pgBin)
	}
	dir, err := os.MkdirTemp("", "syncstore-ownpg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &ownServer{dir: dir, run: exec.Command}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.run = func(name string, args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
	}
	t.Cleanup(func() {
		_ = s.run(filepath.Join(pgBin, "pg_ctl"), "-D", s.data(), "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s.exec(t, "initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nmax_connections = 30\n%s\n", s.port, dir, conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s.start(t)
	return s
}

func (s *ownServer) data() string { return filepath.Join(s.dir, "data") }

func (s *ownServer) exec(t *testing.T, tool string, args ...string) {
	t.Helper()
	if out, err := s.run(filepath.Join(pgBin, tool), args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, out)
	}
}

func (s *ownServer) start(t *testing.T) {
	t.Helper()
	s.exec(t, "pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "start")
}

// crash stops the server at once (pg_ctl -m immediate: no shutdown
// checkpoint, WAL not yet written is lost, as in a crash) and starts it
// again.
func (s *ownServer) crash(t *testing.T) {
	t.Helper()
	s.exec(t, "pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	s.start(t)
}

func (s *ownServer) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// crashConf keeps a transaction's WAL records in the server's buffers
// until something flushes them (its commit): no background WAL or page
// writes, no checkpoint, no autovacuum. A crash then loses the
// assignment of an open transaction's id, and the restarted server hands
// the same id out again — what a real crash does to a transaction whose
// records were not yet written.
const crashConf = `wal_writer_delay = 10000
bgwriter_lru_maxpages = 0
checkpoint_timeout = 3600
autovacuum = off
fsync = off`

// TestSettleAcrossServerRestart: a Tx's COMMIT answer is lost and the
// server restarts (crash) before the outcome is settled (TX-10).
//
//   - by id: the Tx read its transaction id at Begin; the crash lost the
//     id's records, and the restarted server handed the id to another
//     transaction, which committed. pg_xact_status now says "committed"
//     for a Tx that never landed; the settle must notice the restart
//     (the postmaster's start time differs) and decide by the Tx's
//     commit in the log: rolled back, nothing written.
//   - by backend: a deferred Tx's answer was lost before its id arrived;
//     the connection's backend had pid P on the old server, and on the
//     restarted one P is an unrelated session. The settle must not end
//     it (a pid is only signalled on the incarnation it was read on) and
//     must decide by the log: rolled back.
func TestSettleAcrossServerRestart(t *testing.T) {
	s := startOwnServer(t, crashConf)
	ctx := t.Context()
	lost := errors.New("the answer was lost")
	admin, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE store"); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close(ctx)
	c := openDSN(t, s.dsn("store"))
	if _, err := pushTodos(ctx, c, "p", 0, 1); err != nil {
		t.Fatal(err)
	}

	// A Tx on a new partition: a locked Begin, which reads its id.
	dtx, err := c.Begin(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	tx := dtx.(*Tx)
	if tx.deferred || tx.xid == 0 || tx.be == (backend{}) {
		t.Fatalf("Begin on a new partition read no id/backend (deferred %v, xid %d, backend %+v)", tx.deferred, tx.xid, tx.be)
	}
	if _, err := stageTodos(ctx, tx, 10, 2, "cc10"); err != nil {
		t.Fatal(err)
	}
	// A deferred Tx's connection, its backend as the server reported it.
	oldBackend := tx.be

	s.crash(t)

	// The restarted server hands the Tx's id out again, to a transaction
	// that commits.
	other, err := pgx.Connect(ctx, s.dsn("store"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close(context.Background()) }()
	reused := false
	for range 5 {
		var xid int64
		if err := other.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		if xid == tx.xid {
			reused = true
			break
		}
	}
	if !reused {
		t.Fatalf("the restarted server did not hand out the Tx's id %d again: the crash did not lose its records, the test shows nothing", tx.xid)
	}
	var status string
	if err := other.QueryRow(ctx, sqlXactStatusOnly, tx.xid).Scan(&status); err != nil || status != "committed" {
		t.Fatalf("pg_xact_status of the reused id = %q, %v; want committed (the trap the settle must not fall into)", status, err)
	}

	t.Run("by-id", func(t *testing.T) {
		err := c.settleCommit(ctx, tx.xid, tx.be, tx.firstCommit(), lost)
		if code := driver.CodeOf(err); code != driver.CodeUnavailable {
			t.Fatalf("settle after a restart = %v; want unavailable (the Tx never landed: its id is another transaction's now)", err)
		}
	})

	t.Run("by-backend", func(t *testing.T) {
		// An unrelated session of the restarted server under the pid the
		// lost connection's backend had (pid reuse, made certain).
		var pid int32
		if err := other.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		be := backend{pid: pid, start: oldBackend.start}
		err := c.settleByCommit(ctx, tx.pc.Conn().PgConn(), be, true, *tx.firstCommit(), lost)
		if code := driver.CodeOf(err); code != driver.CodeUnavailable {
			t.Fatalf("settle after a restart = %v; want unavailable (the Tx never landed)", err)
		}
		if err := other.Ping(ctx); err != nil {
			t.Fatalf("the restarted server's session under the old backend's pid was ended: %v", err)
		}
	})
	_ = tx.Rollback(ctx)
	var n int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM _sync_commits WHERE partition = 'q'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("commits of the lost Tx in the log: %d, %v; want 0", n, err)
	}
}
