package upstream

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirFromEnv(t *testing.T) {
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "docs", "SPEC.md"), []byte("# SPEC"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, tree)
	if d, err := Dir(); err != nil || d != tree {
		t.Fatalf("Dir() = %q, %v; want %q", d, err, tree)
	}
	// Set but wrong is an error, never a fallback.
	t.Setenv(Env, filepath.Join(tree, "nope"))
	if d, err := Dir(); err == nil {
		t.Fatalf("Dir() = %q with %s pointing nowhere", d, Env)
	}
}

func TestDirFound(t *testing.T) {
	t.Setenv(Env, "")
	d := Require(t)
	if !isTree(d) {
		t.Fatalf("Require returned %q, which has no %s", d, marker)
	}
}
