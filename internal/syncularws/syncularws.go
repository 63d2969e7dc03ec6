// Package syncularws gives tests a Bun workspace of upstream Syncular's
// TypeScript packages (its client, core, conformance catalog), made by
// shared/syncular/setup.sh, to run TypeScript tests of ours against our
// server with the real client. Bun comes from npm, as setup.sh installs
// it; nothing else is downloaded.
//
// The materials (shared/syncular: setup.sh beside upstream/) are found as
// package internal/upstream finds upstream/. Without them a test is
// skipped loudly — never failed, whatever SYNCSTORE_TEST_REQUIRE_DB says,
// since a machine without them cannot run upstream's client at all. With
// them, a workspace that cannot be made (no npm, no network) skips the
// test, or fails it when SYNCSTORE_TEST_REQUIRE_DB=1 (CI sets it).
//
// SYNCULAR_WORKSPACE and SYNCULAR_BUN, both set, name a ready workspace
// and its bun binary (the catalog lane passes its own); else one is made
// once per test process in a temporary directory, which Cleanup removes.
package syncularws

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/internal/upstream"
)

// Env names the variables of a ready workspace.
const (
	EnvWorkspace = "SYNCULAR_WORKSPACE"
	EnvBun       = "SYNCULAR_BUN"
)

const requireEnv = "SYNCSTORE_TEST_REQUIRE_DB"

var (
	once    gosync.Once
	ws, bun string
	made    error
	tmp     string
)

// Cleanup removes the workspace Require made, if any; call it from
// TestMain after m.Run.
func Cleanup() {
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
}

// Workspace is a Bun workspace and the bun binary that runs it.
type Workspace struct {
	Dir string
	Bun string
}

// Require returns the workspace (see the package doc), or skips or fails t.
func Require(t testing.TB) Workspace {
	t.Helper()
	up, err := upstream.Dir()
	if err != nil {
		if os.Getenv(upstream.Env) != "" {
			t.Fatalf("syncularws: %v", err)
		}
		t.Skipf("SKIP (loud): no shared/syncular materials (%v); set %s to run upstream's TypeScript client against our server", err, upstream.Env)
	}
	setup := filepath.Join(filepath.Dir(up), "setup.sh")
	once.Do(func() {
		if w, b := os.Getenv(EnvWorkspace), os.Getenv(EnvBun); w != "" && b != "" {
			ws, bun = w, b
			return
		}
		if tmp, made = os.MkdirTemp("", "syncularws-"); made != nil {
			return
		}
		ws = filepath.Join(tmp, "ws")
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", setup, ws)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if made = cmd.Run(); made != nil {
			made = fmt.Errorf("%s %s: %v\n%s%s", setup, ws, made, out.String(), errb.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		bun = strings.TrimSpace(lines[len(lines)-1])
	})
	if made != nil {
		msg := fmt.Sprintf("syncularws: no Bun workspace of upstream's packages: %v", made)
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s (%s=1 makes this a failure)", msg, requireEnv)
		}
		t.Skip("SKIP (loud): " + msg)
	}
	return Workspace{Dir: ws, Bun: bun}
}

// AddPackage copies the TypeScript package in src (a directory with a
// package.json) into the workspace as packages/name, replacing an earlier
// copy, and links its dependencies (bun install). It returns the package's
// directory relative to the workspace.
func (w Workspace) AddPackage(t testing.TB, name, src string) string {
	t.Helper()
	dst := filepath.Join(w.Dir, "packages", name)
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("syncularws: copy %s: %v", src, err)
	}
	cmd := exec.Command(w.Bun, "install", "--ignore-scripts")
	cmd.Dir = w.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("syncularws: bun install: %v\n%s", err, out)
	}
	return filepath.Join("packages", name)
}

// Test runs `bun test file` in the workspace with env added, and fails t
// with Bun's output when a test fails; Bun's output is logged either way.
func (w Workspace) Test(t testing.TB, file string, env ...string) {
	t.Helper()
	cmd := exec.Command(w.Bun, "test", "./"+filepath.ToSlash(file))
	cmd.Dir = w.Dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("bun test %s:\n%s", file, out)
	if err != nil {
		t.Fatalf("bun test %s: %v", file, err)
	}
}
