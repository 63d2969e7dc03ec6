package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/internal/syncularws"
	"github.com/syncstore/syncstore/internal/testdb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	syncularws.Cleanup()
	os.Exit(code)
}

// TestDemo builds the demo host, starts it on a fresh store of each
// driver and runs client/demo.test.ts against it: upstream's real
// SyncClient (bun:sqlite replica, HTTP transport, WebSocket realtime).
// Without shared/syncular it is skipped loudly (package syncularws).
func TestDemo(t *testing.T) {
	w := syncularws.Require(t)
	pkg := w.AddPackage(t, "syncular-demo-test", "client")
	bin := filepath.Join(t.TempDir(), "syncular")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, d := range []string{"sqlite", "postgres", "mysql", "d1http"} {
		t.Run(d, func(t *testing.T) {
			url := startDemo(t, bin, d, demoStore(t, d))
			w.Test(t, filepath.Join(pkg, "demo.test.ts"), "SYNCULAR_DEMO_URL="+url)
		})
	}
}

// demoStore returns the DSN of a fresh, empty store of driver d, removed
// when t ends.
func demoStore(t *testing.T, d string) string {
	switch d {
	case "sqlite":
		return filepath.Join(t.TempDir(), "demo.db")
	case "postgres":
		return testdb.NewPostgres(t)
	case "mysql":
		return testdb.NewMySQL(t)
	case "d1http":
		srv := d1test.NewServer("t")
		t.Cleanup(srv.Close)
		dsn, drop, err := d1http.Driver{}.Provision(t.Context(), "d1://acct?token=t&endpoint="+srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = drop(t.Context()) })
		return dsn
	}
	t.Fatalf("no store for driver %q", d)
	return ""
}

// startDemo runs the demo host on dsn and returns its base URL; it is
// stopped with SIGTERM when t ends and must exit cleanly.
func startDemo(t *testing.T, bin, d, dsn string) string {
	t.Helper()
	cmd := exec.Command(bin, "-driver", d, "-dsn", dsn, "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the demo host did not exit cleanly on SIGTERM: %v", err)
		}
	})
	// The first line says where it listens; EOF means it exited.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	const ready = "syncular demo: serving on "
	if err != nil || !strings.HasPrefix(line, ready) {
		t.Fatalf("the demo host did not start: %q, %v", line, err)
	}
	url, _, _ := strings.Cut(strings.TrimPrefix(line, ready), " ")
	return url
}
